"""The GPU end-to-end tests: ``pytest -m gpu`` from the clone selects them, without other flags.

The subject is the bundled demo pair (``examples/demo-draft``, ``examples/demo-draft-sglang`` on
``examples/demo-target``): the main job runs with ``cuda`` as the reference and prediction device, and each
live engine serves the pair on the GPU. Without a visible CUDA device each test skips naming it (the ``gpu``
marker); without the engine's GPU build the live test skips naming the engine's interpreter option.
To check your own draft on a GPU, give it: ``pytest -m gpu --eagle3-ckpt=DRAFT --eagle3-target=TARGET``
collects the contracts with ``cuda`` as the device.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the reference on CUDA needs transformers (pip install -e '.[test]')")

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]
PAIR = ("demo-draft", "demo-draft-sglang")
#: The main job's failing contracts per (checkpoint, engine), as on CPU (.ci/run): the device changes no verdict.
MAIN_JOB = {
    ("demo-draft", "any"): [],
    ("demo-draft", "sglang"): ["engine.architecture"],
    ("demo-draft", "vllm"): [],
    ("demo-draft-sglang", "any"): [],
    ("demo-draft-sglang", "sglang"): [],
    ("demo-draft-sglang", "vllm"): ["engine.acceptance", "engine.aux_layers"],
}


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs",
            *(f"--eagle3-ckpt=examples/{name}" for name in PAIR), "--eagle3-target=examples/demo-target", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, timeout=1800)


def _failing(report: dict[str, object]) -> dict[tuple[str, str], list[str]]:
    return {(Path(c["path"]).name, e["engine"]): e["failing"]  # type: ignore[index]
            for c in report["checkpoints"] for e in c["engines"]}  # type: ignore[attr-defined]


def test_main_job_on_cuda_gives_the_cpu_verdicts(tmp_path: Path) -> None:
    """Reference and predicted acceptance on CUDA: the same verdicts as the CPU main job, the same reading."""
    report = tmp_path / "report.json"
    done = _pytest("--eagle3-device=cuda", f"--eagle3-report={report}")
    assert done.returncode == 1, done.stdout[-3000:]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert _failing(data) == MAIN_JOB
    for ckpt in data["checkpoints"]:
        reference = ckpt["reference"]
        assert reference["mean_acceptance_length"] > 3.3, reference
        assert reference["inferred"]["convention"] == reference["declared_convention"], reference


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_live_engine_serves_the_demo_pair_on_the_gpu(engine: str, tmp_path: Path) -> None:
    """The engine's GPU build serves both drafts; its counters match the prediction made on CUDA."""
    from pytest_eagle3.live.interpreter import inspect_engine
    from pytest_eagle3.probes.run import find_engine_python

    python = find_engine_python(engine)
    install = inspect_engine(engine, python) if python else None
    if install is None or install.why_unusable() or install.cpu_build:
        option = f"--eagle3-{engine}-python"
        why = install.why_unusable() if install else f"no interpreter with {engine}"
        pytest.skip(f"{why or 'a CPU build'}: set EAGLE3_{engine.upper()}_PYTHON (as {option}) to a venv with "
                    f"{engine}'s GPU build")
    report = tmp_path / "report.json"
    done = _pytest("-m", "engine", "--eagle3-device=cuda", f"--eagle3-engine={engine}", f"--eagle3-{engine}-python={python}",
                   f"--eagle3-report={report}")
    data = json.loads(report.read_text(encoding="utf-8"))
    rows = {(Path(c["path"]).name, e["engine"], e["version"]): e for c in data["checkpoints"] for e in c["engines"]}
    served = [row for (_, name, version), row in rows.items() if name == engine]
    assert served and all(row["version"] == str(install.version) for row in served), rows.keys()
    assert all(row["verdict"] != "not run" for row in served), done.stdout[-3000:]
