"""Behaviour probes: the engine's own draft-class pieces against the reference forward of what the producer trained.

    python -m pytest_eagle3.probes.behaviour --python /venv-vllm/bin/python [--out probes/behaviour_results.json]
    python -m pytest_eagle3.probes.behaviour --engine mlx-vlm --python /venv-mlx/bin/python
    python -m pytest_eagle3.probes.behaviour --engine sglang --python /venv-sglang/bin/python

For each case of :data:`CASES` of the engine (the probe cases whose draft layout the reference reads and the engine
loads: Llama decoder drafts), the engine's interpreter runs its script of :data:`SCRIPTS` (vLLM: the class's
``combine_hidden_states``, ``compute_logits``, final norm and embedding; mlx-vlm: the drafter's
``_prepare_target_hidden``, ``_logits`` and ``_draft_to_target``; SGLang: the draft model's ``forward`` up to its
first decoder layer, its final norm, ``_compute_lm_head`` and ``hot_token_id``; on one fixed input) and this process runs
``reference/draft.py`` on the same checkpoint and input:

- ``combine``: the engine's output against ``ReferenceDraft.project`` with every module the checkpoint has and
  without each of ``fc_norm`` / ``input_norm``: ``applied`` (matches the trained path), ``loaded-not-applied``
  (matches the path without that module: acceptance is predicted without it) or ``differs``;
- ``logits``: each row's best target id against the reference's lm_head and d2t offsets (``as-trained`` or
  ``differs``).

Results are merged into ``--out`` per (engine, version), like the loader probes' ``results.json``; the default test
run (``tests/test_behaviour_probes.py``) reads the records without the engine installed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.releases import VLLM

SCHEMA = "pytest-eagle3/behaviour-results/1"
DEFAULT_OUT = Path(__file__).with_name("behaviour_results.json")
#: The engines with a behaviour probe (``Probe.behaviour_script``): the script each one's interpreter runs, and the
#: cases whose draft the reference forward reads (Llama decoder layer) and the engine loads.
_PROBED = [e for e in REGISTRY if e.interpreter.probe is not None and e.interpreter.probe.behaviour_script is not None]
SCRIPTS = {e.name: Path(__file__).with_name(str(e.interpreter.probe.behaviour_script)) for e in _PROBED if e.interpreter.probe is not None}
CASES = {e.name: e.interpreter.probe.behaviour_cases for e in _PROBED if e.interpreter.probe is not None}
#: Modules of the fc path the comparison can find missing, and the checkpoint tensors they are.
MODULES = {"fc_norm": "fc_norm.", "input_norm": "input_norm."}
#: Relative tolerance of a match (bfloat16 / float32 round-off of one RMSNorm and one matmul).
TOLERANCE = 2e-2


def _distance(a: Any, b: Any) -> float:
    import torch

    x, y = torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32)
    if x.shape != y.shape:
        return float("inf")
    return float((x - y).abs().max() / (y.abs().max() + 1e-6))


def compare(draft: Path, engine_out: dict[str, Any]) -> dict[str, Any]:
    """The verdicts of one case: what the engine's pieces did against the reference of what was trained."""
    import torch

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.draft import ReferenceDraft

    found: dict[str, Any] = {"draft_class": engine_out.get("draft_class"), "error": engine_out.get("error")}
    if engine_out.get("error") or not isinstance(engine_out.get("combine"), list):
        found["combine"] = {"verdict": "not run", "error": engine_out.get("error") or engine_out.get("combine")}
        return found
    ref = ReferenceDraft.from_checkpoint(Checkpoint.open(draft))
    inputs = engine_out["inputs"]
    if "aux" in inputs:  # the engine's script wrote the inputs it drew
        aux, h = torch.tensor(inputs["aux"]), torch.tensor(inputs["h"])
    else:  # vllm_behaviour.py: torch's generator, seed 0
        gen = torch.Generator().manual_seed(0)
        rows = len(engine_out["combine"])
        aux = torch.randn(rows, inputs["aux_width"], generator=gen)
        h = torch.randn(rows, inputs["hidden"], generator=gen)
    trained = ref.project(aux).tolist()
    distances = {"as-trained": _distance(engine_out["combine"], trained)}
    present = [m for m, prefix in MODULES.items() if any(k.startswith(prefix) for k in ref.weights)]
    for module in present:
        without = ReferenceDraft(ref.spec, {k: v for k, v in ref.weights.items() if not k.startswith(MODULES[module])})
        distances[f"without {module}"] = _distance(engine_out["combine"], without.project(aux).tolist())
    best = min(distances, key=lambda k: distances[k])
    verdict = "differs" if distances[best] > TOLERANCE else "applied" if best == "as-trained" else \
        f"loaded-not-applied: {best.removeprefix('without ')}"
    found["combine"] = {"verdict": verdict, "modules": present,
                        "distances": {k: round(v, 6) for k, v in distances.items()}}
    logits = engine_out.get("logits")
    if isinstance(logits, dict) and "argmax" in logits:
        from pytest_eagle3.reference.draft import rms_norm

        normed = rms_norm(h, ref.weights["norm.weight"], ref.spec.rms_norm_eps) if logits.get("normed") else h
        scores = torch.nn.functional.linear(normed, ref.weights["lm_head.weight"])
        ids = scores.argmax(dim=-1)
        targets = ref.target_ids()
        expected = [int(targets[i]) if targets is not None else int(i) for i in ids]
        found["logits"] = {"verdict": "as-trained" if logits["argmax"] == expected else "differs",
                           "engine": logits["argmax"], "reference": expected}
    return found


def probe_all(python: str, root: Path, engine: str = VLLM) -> tuple[str, str, dict[str, Any]]:
    """Run the behaviour probe of ``engine`` on every case in ``python``: (python, version, results)."""
    from pytest_eagle3.probes.cases import write_all

    target, drafts = write_all(root, CASES[engine])
    results: dict[str, Any] = {}
    version = "?"
    for name, draft in drafts.items():
        out = root / f"{name}.behaviour.json"
        done = subprocess.run([python, str(SCRIPTS[engine]), "--draft", str(draft), "--target", str(target),
                               "--out", str(out)], capture_output=True, text=True, timeout=900, check=False)
        if not out.is_file():
            results[name] = {"combine": {"verdict": "probe-error"}, "error": done.stderr[-600:]}
            continue
        engine_out = json.loads(out.read_text())
        version = engine_out.get("version") or version
        results[name] = compare(draft, engine_out)
    return engine, version, results


def main(argv: list[str] | None = None) -> int:
    """The command line: probe the behaviours in each ``--python`` and record them."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", action="append", required=True, help="an engine interpreter (repeatable)")
    parser.add_argument("--engine", choices=sorted(SCRIPTS), default=VLLM, help="the engine of every --python")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    out = Path(args.out)
    data: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    data.setdefault("schema", SCHEMA)
    data["cases"] = {engine: list(cases) for engine, cases in CASES.items()}
    runs = data.setdefault("runs", {})
    for python in args.python:
        with tempfile.TemporaryDirectory(prefix="eagle3-behaviour-") as tmp:
            engine, version, results = probe_all(python, Path(tmp), args.engine)
        runs[f"{engine}=={version}"] = {"engine": engine, "version": version,
                                        "date": datetime.date.today().isoformat(), "results": results}
        print(f"{engine}=={version}: " + ", ".join(f"{n} {r['combine']['verdict']}" for n, r in results.items()))
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
