"""Draft classes per engine version: the registry rows on both sides of each boundary, and the profiles'
accepted architectures derived from them."""

from __future__ import annotations

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.behaviours import rule_for
from pytest_eagle3.knowledge.draft_classes import QWEN3, REGISTRY, draft_class
from pytest_eagle3.knowledge.releases import KNOWN_RANGES


@pytest.mark.parametrize(("arch", "before", "after", "klass"), [
    ("LlamaForCausalLMEagle3", "0.10.1", "0.10.2", "Eagle3LlamaForCausalLM"),
    ("Eagle3Qwen3vlForCausalLM", "0.11.0", "0.12.0", "Eagle3LlamaForCausalLM"),
    ("Eagle3DeepseekV3ForCausalLM", "0.17.0", "0.18.0", "Eagle3DeepseekV2ForCausalLM"),
    ("Eagle3MiniMaxM2ForCausalLM", "0.19.0", "0.20.0", "Eagle3LlamaForCausalLM"),
    ("PeagleLlamaForCausalLM", "0.21.0", "0.22.0", "Eagle3LlamaForCausalLM"),
    ("Eagle3Qwen3ForCausalLM", "0.23.0", "0.24.0", "Eagle3Qwen3ForCausalLM"),
])
def test_vllm_registry_boundaries(arch: str, before: str, after: str, klass: str) -> None:
    assert draft_class("vllm", Version(before), arch) is None
    found = draft_class("vllm", Version(after), arch)
    assert found is not None and found.name == klass


def test_qwen3_class_has_per_head_norms_and_reads_more_count_fields() -> None:
    qwen3 = draft_class("vllm", Version("0.32.0"), "Eagle3Qwen3ForCausalLM")
    assert qwen3 is not None and qwen3.family == QWEN3
    assert qwen3.extra_layer_params == ("self_attn.q_norm.weight", "self_attn.k_norm.weight")
    assert "eagle_aux_hidden_state_layer_ids" in qwen3.fc_count_fields


@pytest.mark.parametrize(("engine", "arch"), sorted(REGISTRY))
def test_profile_architectures_follow_each_registry_row(engine: str, arch: str) -> None:
    """The profile's accepted architectures gain each registered name exactly at its registry row."""
    since = REGISTRY[(engine, arch)].rows[0].start
    after = rule_for(engine, "architectures", since).value
    assert arch in after or (engine, str(since)) == ("vllm", "0.8.5") and after == "*"
    before = Version(f"{since.major}.{since.minor}.{since.micro}rc0")
    if before >= Version(KNOWN_RANGES[engine][0]):
        value = rule_for(engine, "architectures", before).value
        assert value == "*" or arch not in value, (engine, arch, before)
