"""Wall time of the main job as the engine list grows: the default selection, every engine, and an older tree.

    python benchmarks/bench_engines.py [--rounds 3] [--against REV]

Each round is a fresh process running the README's main job on the demo pair (``pytest -p no:cacheprovider -q
--eagle3-ckpt=examples/demo-draft --eagle3-ckpt=examples/demo-draft-sglang --eagle3-target=examples/demo-target``),
once with the default engine selection and once with ``--eagle3-engine=all`` (every engine's newest release).
With ``--against REV`` the default run is repeated on that commit (checked out in a temporary git worktree), and
the ratio this tree / REV is printed next to the bound the project keeps: 1.3 x.

Prints one JSON line per measurement: ``{"run": ..., "median_s": ..., "rounds": [...], "rows": N}``, then the
ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN_JOB = ("-p", "no:cacheprovider", "-q", "--eagle3-ckpt=examples/demo-draft",
            "--eagle3-ckpt=examples/demo-draft-sglang", "--eagle3-target=examples/demo-target")
#: The bound on the main job's wall time against the tree before the engines were added.
BOUND = 1.3


def _rows(report: Path) -> int:
    """The verdict rows the run reported (checkpoint x engine version, ``any`` rows included)."""
    data = json.loads(report.read_text())
    return sum(len(c["engines"]) for c in data["checkpoints"])


def _time_main_job(tree: Path, extra: tuple[str, ...], rounds: int) -> tuple[list[float], int]:
    """Wall times of ``rounds`` fresh main-job processes in ``tree``, and the rows the last one reported."""
    times, rows = [], 0
    env = {**os.environ, "PYTHONPATH": str(tree), "EAGLE3_PROGRESS": "0"}
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "verdict.json"
        for _ in range(rounds):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pytest", *MAIN_JOB, *extra, f"--eagle3-report={report}"],
                                  cwd=tree, env=env, capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - started)
            if done.returncode not in (0, 1):
                raise SystemExit(f"the main job in {tree} exited {done.returncode}:\n{done.stdout[-2000:]}")
            rows = _rows(report)
    return times, rows


def _print(run: str, times: list[float], rows: int) -> float:
    median = statistics.median(times)
    print(json.dumps({"run": run, "median_s": round(median, 2), "rounds": [round(t, 2) for t in times],
                      "rows": rows}))
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="a commit whose main job is the baseline")
    args = parser.parse_args()
    default = _print("default engines", *_time_main_job(ROOT, (), args.rounds))
    every = _print("--eagle3-engine=all", *_time_main_job(ROOT, ("--eagle3-engine=all",), args.rounds))
    print(json.dumps({"ratio": "all / default", "value": round(every / default, 3)}))
    if args.against:
        with tempfile.TemporaryDirectory() as work:
            old = Path(work) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), args.against],
                           check=True)
            try:
                base = _print(f"default engines at {args.against}", *_time_main_job(old, (), args.rounds))
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=True)
        for name, value in (("default / base", default / base), ("all / base", every / base)):
            print(json.dumps({"ratio": name, "value": round(value, 3), "bound": BOUND, "within": value <= BOUND}))


if __name__ == "__main__":
    main()
