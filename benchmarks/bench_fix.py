"""Benchmark ``python -m pytest_eagle3 fix`` on the Kimi-K2.5-shaped draft of bench_contracts.py, and the training
layer search ``fix`` runs with a target's weights.

Usage::

    python benchmarks/bench_fix.py [--workdir DIR] [--keep] [--to ENGINES]
    python benchmarks/bench_fix.py --search [--repeats N]

Builds (or reuses) the ~2 GB SpecForge-layout draft, then runs in fresh interpreters, one at a time:

* ``baseline``: ``python -c "import torch, pytest"`` (the import floor of any run);
* ``fix``: ``python -m pytest_eagle3 fix LARGE OUT --to ENGINES`` (solve, stream the copy, then the
  contracts on the copy in a child interpreter, whose peak is folded into ``ru_maxrss`` too).

Peak RSS as in bench_contracts.py (``os.wait4`` rusage of each child). Prints wall seconds, peak RSS,
RSS above the baseline, and the copy's size; the goal is peak RSS(fix) - RSS(baseline) <= 128 MB.
Exit status 0 when the goal holds and both runs exited 0.

``--search``: ``fix ... --to vllm==0.34.0 --target examples/demo-target`` (the target's weights: the measurement,
the layer search, the predictions and the measured proof) on ``examples/demo-draft-sglang`` as shipped (its config
names the training layers) and on a copy whose config names layers [0, 1, 2], round-robin ``--repeats`` times.
Prints the median wall seconds, the peak RSS, the layer sets searched and the figure reached; run it with
``PYTHONPATH`` at another tree to compare two versions on one machine.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_contracts import (
    LARGE_SPEC,
    MB,
    RSS_GOAL_MB,
    Case,
    build_draft,
    harness_rss_mb,
    run_once,
    warm_page_cache,
)

BASELINE_CODE = "import torch, pytest"
DEFAULT_ENGINES = "sglang==0.5.23,vllm==0.33.0"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SEARCH_ENGINE = "vllm==0.34.0"
SEARCHED = re.compile(r"searched (\d+) of (\d+) layer sets")
AFTER = re.compile(r"predicted acceptance, [^:]+: before ([^,]+), after (\d+\.\d+)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="where the large draft is built (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir's draft for the next run")
    parser.add_argument("--to", default=DEFAULT_ENGINES, help=f"engines for fix (default {DEFAULT_ENGINES})")
    parser.add_argument("--search", action="store_true",
                        help=f"measure fix with the demo target's weights on {SEARCH_ENGINE} instead (the layer search)")
    parser.add_argument("--repeats", type=int, default=3, help="--search: rounds, each case once per round (default 3)")
    args = parser.parse_args(argv)
    if args.search:
        return search(args.repeats)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-fix-"))
    workdir.mkdir(parents=True, exist_ok=True)
    large, out = workdir / "large", workdir / "large-fixed"
    shutil.rmtree(out, ignore_errors=True)
    try:
        took = build_draft(LARGE_SPEC, large)
        size = sum(f.stat().st_size for f in large.iterdir()) / MB
        print(f"large draft: {large} ({size:,.0f} MB), {'reused' if took is None else f'built in {took:.1f} s'}")
        warm_page_cache([large])
        py = sys.executable
        results = {}
        for case in (Case("baseline", (py, "-c", BASELINE_CODE), workdir),
                     Case("fix", (py, "-m", "pytest_eagle3", "fix", str(large), str(out), "--to", args.to), workdir)):
            sample, tail = run_once(case)
            results[case.name] = sample
            if sample.returncode != 0:
                print(f"{case.name} exited {sample.returncode}:\n{tail}")
        if harness_rss_mb() >= results["baseline"].rss_mb:
            raise RuntimeError("harness peak RSS reached the baseline's: children's ru_maxrss would echo it")
        base = results["baseline"].rss_mb
        print(f"{'case':10} {'wall s':>8} {'peak RSS MB':>12} {'above baseline MB':>18} {'rc':>3}")
        for name, r in results.items():
            print(f"{name:10} {r.wall_s:8.2f} {r.rss_mb:12.1f} {r.rss_mb - base:18.1f} {r.returncode:>3}")
        copied = sum(f.stat().st_size for f in out.iterdir()) / MB if out.is_dir() else 0.0
        above = results["fix"].rss_mb - base
        ok = above <= RSS_GOAL_MB and all(r.returncode == 0 for r in results.values())
        print(f"copy: {copied:,.0f} MB; goal: peak RSS above baseline <= {RSS_GOAL_MB:.0f} MB: "
              f"{'PASS' if ok else 'FAIL'} ({above:.1f} MB)")
        return 0 if ok else 1
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def search(repeats: int) -> int:
    """``fix`` with the target's weights on the demo draft as shipped and naming the wrong layers: wall, RSS, sets."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-fix-search-"))
    try:
        wrong = workdir / "wrong-ids"
        shutil.copytree(EXAMPLES / "demo-draft-sglang", wrong)
        config = json.loads((wrong / "config.json").read_text())
        config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [0, 1, 2]
        (wrong / "config.json").write_text(json.dumps(config, indent=2))
        drafts = {"as shipped": EXAMPLES / "demo-draft-sglang", "ids [0, 1, 2]": wrong}
        runs: dict[str, list[tuple[float, float, int, str]]] = {name: [] for name in drafts}
        for _ in range(repeats):
            for name, draft in drafts.items():
                out = workdir / "out"
                argv = (sys.executable, "-m", "pytest_eagle3", "fix", str(draft), str(out), "--to", SEARCH_ENGINE,
                        "--target", str(EXAMPLES / "demo-target"), "--force")
                sample, tail = run_once(Case(name, argv, workdir))
                runs[name].append((sample.wall_s, sample.rss_mb, sample.returncode, tail))
                shutil.rmtree(out, ignore_errors=True)
        print(f"fix --to {SEARCH_ENGINE} --target examples/demo-target, median of {repeats} (round-robin)")
        print(f"{'draft':14} {'wall s':>8} {'peak RSS MB':>12} {'rc':>3} {'sets searched':>14}  predicted after")
        for name, samples in runs.items():
            tail = samples[-1][3]
            sets = SEARCHED.search(tail)
            after = AFTER.search(tail)
            print(f"{name:14} {statistics.median(s[0] for s in samples):8.2f} {max(s[1] for s in samples):12.1f} "
                  f"{max(s[2] for s in samples):>3} {f'{sets[1]} of {sets[2]}' if sets else '-':>14}  "
                  f"{after[2] if after else '-'} (before {after[1] if after else '-'})")
        return 0 if all(s[2] == 0 for samples in runs.values() for s in samples) else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
