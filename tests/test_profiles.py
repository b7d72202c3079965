"""The profile tables themselves, and how ``--eagle3-engine`` selects from them."""

from __future__ import annotations

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.behaviours import (
    BEHAVIOURS,
    RULES,
    TABLES,
    VALUES,
    rule_for,
    segment_starts,
    value_fits,
)
from pytest_eagle3.knowledge.capture import CAPTURE_TABLES, capture_support
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, RELEASES, EngineVersion
from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection
from pytest_eagle3.knowledge.snapshot import snapshot_of

#: The newest vLLM release read (the default a bare "vllm" selects).
NEWEST_VLLM = RELEASES["vllm"][-1]


@pytest.mark.parametrize("engine", sorted(KNOWN_RANGES))
def test_every_behaviour_covers_the_known_range_once(engine: str) -> None:
    for name, table in TABLES.items():
        assert table.full and not table.problems(), name
        assert table.rows_of(engine), f"{engine} has no rule for {name}"
        assert str(table.rows_of(engine)[0].start) == str(Version(KNOWN_RANGES[engine][0]))


def test_rules_are_documented() -> None:
    for behaviour, rule in RULES:
        assert behaviour in BEHAVIOURS and TABLES[behaviour].description == BEHAVIOURS[behaviour]
        assert len(rule.source) > 20, f"{rule} needs a source line"
        if rule.read_to:
            assert Version(rule.since) <= Version(rule.read_to), rule


def test_capture_rules_have_sources() -> None:
    for (engine, arch), table in CAPTURE_TABLES.items():
        assert arch and not table.problems() and table.engines == (engine,)
        for row in table.rows:
            assert row.source and row.value.family


def test_an_unread_patch_release_takes_the_earlier_rule() -> None:
    """vLLM 0.11.0.post2 (a rebuild) was not read: it resolves to the rule of 0.11.0 (aux ids ignored)."""
    assert rule_for("vllm", "aux_id_fields", Version("0.11.0.post2")).since == "0.8.5"
    assert rule_for("vllm", "aux_id_fields", Version("0.11.2")).since == "0.11.1"


def test_selection_bare_names_and_all() -> None:
    everything = [e.spec for e in parse_selection("all")]
    assert everything[:2] == ["sglang==0.5.23", f"vllm=={NEWEST_VLLM}"]
    assert everything.index("tokenspeed==0.1.1") + 1 == everything.index("mlx-vlm==0.7.10")
    assert {"trtllm==1.2.1", "lmdeploy==0.18.0", "tpu-inference==0.32.0", "vllm-ascend==0.23.0.post1"} <= set(everything)
    assert [e.spec for e in parse_selection("sglang==0.5.11,sglang,vllm==0.11.0,vllm")] == [
        "sglang==0.5.11", "sglang==0.5.23", "vllm==0.11.0", f"vllm=={NEWEST_VLLM}"]
    assert [e.spec for e in parse_selection(f" vllm , vllm=={NEWEST_VLLM} ")] == [f"vllm=={NEWEST_VLLM}"]


def test_selection_every_segment() -> None:
    segments = parse_selection("sglang==*")
    assert segments[0].spec == "sglang==0.4.4.post2"
    assert {"sglang==0.5.12", "sglang==0.5.13", "sglang==0.5.17"} <= {e.spec for e in segments}
    assert [e.version for e in segments[:-1]] == list(segment_starts("sglang"))
    assert segments[-1].spec == "sglang==0.5.23", "NAME==* ends at the newest known version, the default"


def test_selection_unknown_version_inside_a_range_resolves_to_its_profile() -> None:
    (engine,) = parse_selection("sglang==0.5.15")
    assert engine.version == Version("0.5.15")
    assert snapshot_of(engine).behaviours.aux_transform_deepseek == "+1-if-first-is-1"
    assert snapshot_of(engine).row("aux_transform_gpt_oss").since == "0.4.4.post2"


@pytest.mark.parametrize(("text", "message"), [
    ("vllm==0.7.0", f"vLLM 0.7.0 is outside the known range 0.8.5 to {NEWEST_VLLM}"),
    ("sglang==0.4.3", "SGLang 0.4.3 is outside the known range 0.4.4.post2 to 0.5.23"),
    ("vllm==0.26.1", "vLLM 0.26.1 is not a release; the releases around it: 0.26.0, 0.27.0"),
    ("vllm==0.10", "vLLM 0.10 is not a release; it could mean 0.10.0, 0.10.1, 0.10.1.1, 0.10.2"),
    ("tensorrt", "unknown engine 'tensorrt'"),
    ("vllm==latest", "'vllm==latest' is not a version number"),
])
def test_selection_errors_name_the_known_range(text: str, message: str) -> None:
    with pytest.raises(EngineSelectionError, match=message.replace(".", r"\.").replace("(", r"\(")):
        parse_selection(text)


def test_profile_source_names_the_range() -> None:
    prof = snapshot_of(EngineVersion("sglang", Version("0.5.11")))
    assert prof.source("first_layer").endswith("[SGLang 0.4.4.post2-0.5.11]")
    assert prof.behaviours.first_layer == "midlayer"


@pytest.mark.parametrize(("engine", "version", "arch", "support", "family"), [
    ("sglang", "0.5.23", "LlamaForCausalLM", "captures", "llama"),
    ("sglang", "0.5.3", "DeepseekV3ForCausalLM", "refused", "deepseek"),
    ("sglang", "0.5.5", "DeepseekV3ForCausalLM", "captures", "deepseek"),
    ("sglang", "0.5.21", "Qwen3_5ForConditionalGeneration", "silent-no-capture", "llama"),
    ("sglang", "0.5.22", "Qwen3_5ForConditionalGeneration", "captures", "llama"),
    ("sglang", "0.5.23", "KimiVLForConditionalGeneration", "refused", "llama"),
    ("vllm", "0.10.0", "Qwen3ForCausalLM", "refused", "llama"),
    ("vllm", "0.10.1", "Qwen3ForCausalLM", "captures", "llama"),
    ("vllm", "0.33.0", "SomeNewForCausalLM", None, "llama"),
])
def test_capture_support(engine: str, version: str, arch: str, support: str | None, family: str) -> None:
    found = capture_support(engine, Version(version), arch)
    assert (found.support, found.family) == (support, family)


def test_every_value_is_one_its_behaviour_declares() -> None:
    """A typo in a row ("midlayers") fails when the tables are built, not when a plan reads it."""
    assert set(VALUES) == set(BEHAVIOURS)
    assert all(value_fits(rule.value, VALUES[behaviour]) for behaviour, rule in RULES)
    assert not value_fits("midlayers", VALUES["first_layer"])
    assert not value_fits(("a", 1), VALUES["aux_id_fields"])
    assert value_fits(None, VALUES["aux_id_fields_other_mode"]) and value_fits("*", VALUES["architectures"])
