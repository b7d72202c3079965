"""Every target family: the capture table (hand rows, then the wheel scan), the vLLM allowlist, and an
architecture no row names reported as unknown per --eagle3-unknown, never a silent pass."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.engines.plan import load_plan
from pytest_eagle3.knowledge.capture import CAPTURES, REFUSED, capture_support
from pytest_eagle3.knowledge.generated import capture_table
from pytest_eagle3.knowledge.releases import RELEASES, in_known_range
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint, write_target


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_scan_table_is_consistent(engine: str) -> None:
    prefix = engine.upper()
    releases = [Version(r) for r in getattr(capture_table, f"{prefix}_RELEASES")]
    spans: dict[str, tuple[tuple[str, str], ...]] = getattr(capture_table, f"{prefix}_SPANS")
    never: frozenset[str] = getattr(capture_table, f"{prefix}_NEVER")
    assert releases == sorted(releases) and len(releases) >= 20
    assert all(Version(a) in releases and Version(b) in releases and Version(a) <= Version(b)
               for runs in spans.values() for a, b in runs)
    assert not (never & set(spans))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_scan_read_every_release(engine: str) -> None:
    """Every release in RELEASES (the known ranges, patch and post releases included) was scanned, or is named
    unavailable (no archive on the index) in the generated table."""
    prefix = engine.upper()
    scanned = set(getattr(capture_table, f"{prefix}_RELEASES"))
    unavailable = set(getattr(capture_table, f"{prefix}_UNAVAILABLE"))
    missing = [r for r in RELEASES[engine] if in_known_range(engine, Version(r)) and r not in scanned | unavailable]
    assert not missing, f"{engine} releases not scanned: {missing} (rerun pytest_eagle3/scanners/capture.py)"
    assert not scanned & unavailable and len(unavailable) <= 2


@pytest.mark.parametrize(("engine", "arch", "before", "after"), [
    ("vllm", "DeepseekV3ForCausalLM", "0.17.0", "0.18.0"),   # scan: deepseek_v2.py SupportsEagle3
    ("vllm", "MiniMaxM2ForCausalLM", "0.19.0", "0.20.0"),
    ("vllm", "Qwen3NextForCausalLM", "0.23.0", "0.24.0"),
    ("sglang", "Qwen3NextForCausalLM", "0.5.8", "0.5.9"),
    ("sglang", "Gemma4ForCausalLM", "0.5.11", "0.5.12"),
    # the Qwen2 family before 0.5.3: only Qwen3 / Qwen3-MoE have the method (qwen3.py, qwen3_moe.py from 0.4.9);
    # qwen2.py, qwen2_moe.py, qwen2_5_vl.py gain it in 0.5.2 (0.4.9-0.5.1.post3 read without it)
    ("sglang", "Qwen3ForCausalLM", "0.4.8.post1", "0.4.9"),
    ("sglang", "Qwen3MoeForCausalLM", "0.4.8.post1", "0.4.9"),
    ("sglang", "Qwen2ForCausalLM", "0.5.1.post3", "0.5.2"),
    ("sglang", "Qwen2MoeForCausalLM", "0.5.1.post3", "0.5.2"),
    ("sglang", "Qwen2_5_VLForConditionalGeneration", "0.5.1.post3", "0.5.2"),
    # multimodal wrappers, MoE subclasses and Llama-4, read in the source of every release:
    # vllm 0.11.1 qwen2_5_vl.py / mllama4.py list SupportsEagle3 and forward set_aux_hidden_state_layers to the
    # language model (0.11.0 does not); qwen3_vl.py gains it in 0.12.0; qwen3_vl_moe.py subclasses it, but its
    # Qwen3MoeLLMModel.forward collects no aux states before 0.15.0
    ("vllm", "Qwen2_5_VLForConditionalGeneration", "0.11.0", "0.11.1"),
    ("vllm", "Llama4ForConditionalGeneration", "0.11.0", "0.11.1"),
    ("vllm", "Qwen3VLForConditionalGeneration", "0.11.2", "0.12.0"),
    ("vllm", "Qwen3VLMoeForConditionalGeneration", "0.14.1", "0.15.0"),
    # sglang llama4.py (0.4.5) inherits LlamaForCausalLM's method; mllama4.py delegates from 0.4.9;
    # qwen3_vl_moe.py inherits qwen3_vl.py's method from 0.5.11
    ("sglang", "Llama4ForCausalLM", "0.4.4.post4", "0.4.5"),
    ("sglang", "Llama4ForConditionalGeneration", "0.4.8.post1", "0.4.9"),
    ("sglang", "Qwen3VLMoeForConditionalGeneration", "0.5.10.post1", "0.5.11"),
])
def test_capture_boundaries(engine: str, arch: str, before: str, after: str) -> None:
    assert capture_support(engine, Version(before), arch).support == REFUSED
    assert capture_support(engine, Version(after), arch).support == CAPTURES


def test_registered_without_the_interface_is_refused_and_unregistered_is_unknown() -> None:
    refused = capture_support("vllm", Version("0.32.0"), "Glm4MoeForCausalLM")
    assert refused.support == REFUSED and "registered" in refused.source
    assert capture_support("sglang", Version("0.5.23"), "Glm4MoeForCausalLM").support == CAPTURES
    assert not capture_support("vllm", Version("0.32.0"), "BrandNewForCausalLM").known


def test_sglang_qwen2_vl_never_captures() -> None:
    """Qwen2-VL (qwen2_vl.py) has no set_eagle3_layers_to_capture in any SGLang release read."""
    assert capture_support("sglang", Version("0.5.2"), "Qwen2VLForConditionalGeneration").support == REFUSED
    assert capture_support("sglang", Version("0.5.23"), "Qwen2VLForConditionalGeneration").support == REFUSED


def test_an_inherited_method_whose_inner_model_never_reads_it_does_not_capture() -> None:
    """sglang 0.5.2-0.5.4 glm4v.py inherits Qwen2.5-VL's set_eagle3_layers_to_capture, but its self.model is
    glm4.py Glm4Model, whose forward never reads layers_to_capture."""
    assert capture_support("sglang", Version("0.5.4"), "Glm4vForConditionalGeneration").support == REFUSED
    assert capture_support("sglang", Version("0.5.4"), "Qwen2_5_VLForConditionalGeneration").support == CAPTURES


def _target(make_target: Callable[..., Path], architecture: str, model_type: str) -> Path:
    import json

    path = make_target(8, architecture)
    config = json.loads((path / "config.json").read_text())
    config["model_type"] = model_type
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_vllm_allowlist_before_017(make_checkpoint: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    ckpt = Checkpoint.open(make_checkpoint(SynthSpec(producer="specforge")))
    target = TargetModel.open(_target(make_target, "Glm4MoeForCausalLM", "glm4_moe"))
    before = load_plan(ckpt, parse_selection("vllm==0.16.0")[0], target)
    assert "target-not-allowed" in {i.finding.code for i in before.issues}
    after = load_plan(ckpt, parse_selection("vllm==0.17.0")[0], target)
    codes = {i.finding.code for i in after.issues}
    assert "target-not-allowed" not in codes and "target-no-capture" in codes


@pytest.mark.parametrize(("mode", "outcome"), [("skip", "skipped"), ("fail", "failed")])
def test_unknown_target_is_never_a_silent_pass(mode: str, outcome: str, run_contracts: Callable[..., Any],
                                                make_checkpoint: Callable[..., Path],
                                                make_target: Callable[..., Path]) -> None:
    ckpt = make_checkpoint(SynthSpec(producer="specforge"))
    target = _target(make_target, "BrandNewForCausalLM", "llama")
    run = run_contracts([ckpt], "--eagle3-engine=sglang==0.5.23", f"--eagle3-unknown={mode}", target=target)
    result, message = run.engine_outcomes(ckpt, "sglang==0.5.23")["engine.aux_layers"]
    assert result == outcome and "BrandNewForCausalLM" in message and "unknown" in message


def test_bad_unknown_value_is_a_usage_error(pytester: pytest.Pytester, make_checkpoint: Callable[..., Path]) -> None:
    result = pytester.runpytest(f"--eagle3-ckpt={make_checkpoint(SynthSpec())}", "--eagle3-unknown=maybe")
    assert "--eagle3-unknown: 'maybe' is not one of skip, fail" in result.stderr.str()


def _multimodal_target(tmp_path: Path, architecture: str, model_type: str) -> Path:
    """A target config as a multimodal (or Llama-4) checkpoint writes it: the text model's fields in text_config."""
    import json

    out = write_target(SynthSpec(producer="specforge"), tmp_path / architecture, with_weights=False)
    flat = json.loads((out / "config.json").read_text())
    text = {k: v for k, v in flat.items() if k not in ("architectures", "model_type")}
    config = {"architectures": [architecture], "model_type": model_type,
              "text_config": {**text, "model_type": f"{model_type}_text"}}
    (out / "config.json").write_text(json.dumps(config))
    return out / "config.json"


@pytest.mark.parametrize(("arch", "model_type", "engine", "before", "after"), [
    ("Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl", "vllm", "0.11.0", "0.11.1"),
    ("Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe", "vllm", "0.14.1", "0.15.0"),
    ("Llama4ForConditionalGeneration", "llama4", "vllm", "0.11.0", "0.11.1"),
    ("Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl", "sglang", "0.5.1.post3", "0.5.2"),
    ("Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe", "sglang", "0.5.10.post1", "0.5.11"),
    ("Llama4ForConditionalGeneration", "llama4", "sglang", "0.4.8.post1", "0.4.9"),
])
def test_a_draft_for_a_target_that_captures_is_not_failed(run_contracts: Callable[..., Any], tmp_path: Path,
                                                           arch: str, model_type: str, engine: str, before: str,
                                                           after: str) -> None:
    """What the user sees: no engine.* contract fails on the release whose source captures; the release before
    fails engine.aux_layers, and its fix names that release (never "no release works")."""
    draft = write_checkpoint(SynthSpec(producer="specforge"), tmp_path / "draft")
    target = _multimodal_target(tmp_path, arch, model_type)
    run = run_contracts([draft], f"--eagle3-engine={engine}=={before},{engine}=={after}", target=target)
    good = run.engine_outcomes(draft, f"{engine}=={after}")
    assert not [c for c, (outcome, _) in good.items() if c.startswith("engine.") and outcome == "failed"], good
    (aux,) = [c for c in run.engine_entry(draft, f"{engine}=={before}")["contracts"] if c["id"] == "engine.aux_layers"]
    display = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
    assert aux["outcome"] == "failed" and f"cannot capture aux hidden states from target {arch}" in aux["message"]
    fixes = [f["fix"] for f in aux["findings"] if f["code"] == "target-no-capture"]
    assert fixes == [f"serve this target with {display} >= {after}, whose {arch} captures aux states"]
    assert "do not name" not in run.output and "no release" not in run.output
