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
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.knowledge.capture import CAPTURES, REFUSED, capture_support
from pytest_eagle3.knowledge.generated import capture_table
from pytest_eagle3.testing.synth import SynthSpec


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_scan_table_is_consistent(engine: str) -> None:
    prefix = engine.upper()
    releases = [Version(r) for r in getattr(capture_table, f"{prefix}_RELEASES")]
    since: dict[str, str] = getattr(capture_table, f"{prefix}_SINCE")
    last: dict[str, str] = getattr(capture_table, f"{prefix}_LAST")
    never: frozenset[str] = getattr(capture_table, f"{prefix}_NEVER")
    assert releases == sorted(releases) and len(releases) >= 20
    assert all(Version(v) in releases for v in since.values())
    assert set(last) <= set(since) and not (never & set(since))
    assert all(Version(since[a]) <= Version(v) < releases[-1] for a, v in last.items())


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


def test_sglang_glm4v_stopped_capturing_after_054() -> None:
    assert capture_support("sglang", Version("0.5.4"), "Glm4vForConditionalGeneration").support == CAPTURES
    assert capture_support("sglang", Version("0.5.5"), "Glm4vForConditionalGeneration").support == REFUSED


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
