"""The probe runner without an engine: interpreter lookup and how a broken probe is reported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_eagle3.probes.harness import SCHEMA, empty_result
from pytest_eagle3.probes.run import find_engine_python, run_probe, run_probes


def test_empty_result_has_every_schema_key() -> None:
    result = empty_result("vllm")
    assert result["schema"] == SCHEMA
    assert set(result) == {
        "schema", "engine", "version", "draft_class", "outcome", "stage", "error", "parameters", "shapes",
        "uninitialised", "dropped", "draft_to_target", "aux_layer_ids", "captured_inputs_of",
        "aux_layer_ids_other_mode", "fc_input_width", "fc_applied", "norms", "embed_tokens", "lm_head",
        "draft_layers", "notes",
    }
    assert set(result["norms"]) == {"norm_before_residual", "norm_before_fc", "norm_output", "fc_norm"}


def test_engine_python_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EAGLE3_SGLANG_PYTHON", str(tmp_path / "missing" / "python"))
    if find_engine_python("sglang") is not None:  # sglang importable here: the lookup falls back to it
        pytest.skip("sglang is importable in this interpreter")
    assert find_engine_python("sglang") is None
    monkeypatch.setenv("EAGLE3_SGLANG_PYTHON", sys.executable)
    assert find_engine_python("sglang") == sys.executable
    assert find_engine_python("sglang", version="0.0.1") is None
    with pytest.raises(ValueError, match="unknown engine"):
        find_engine_python("tgi")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_probe_without_the_engine_is_a_probe_error(engine: str, make_checkpoint: object, synth_target: Path,
                                                    tmp_path: Path) -> None:
    """This interpreter has no engine: the probe's own failure comes back as probe-error, with stderr."""
    if find_engine_python(engine) == sys.executable:
        pytest.skip(f"{engine} is importable in this interpreter")
    draft = make_checkpoint()  # type: ignore[operator]
    result = run_probe(engine, sys.executable, draft, synth_target, timeout=120)
    assert result["outcome"] == "probe-error" and result["engine"] == engine
    assert "ModuleNotFoundError" in result["error"] or "ModuleNotFoundError" in result.get("stderr_tail", "")


def test_probe_that_cannot_start(tmp_path: Path) -> None:
    results = run_probes("vllm", str(tmp_path / "no-python"), [(tmp_path, tmp_path), (tmp_path, tmp_path)])
    assert [r["outcome"] for r in results] == ["probe-error", "probe-error"]
    assert "could not start" in results[0]["error"]
