"""vLLM rewrites a draft of a DeepSeek-kin model_type to its MTP draft: which model types, per release (config
SpeculativeConfig.hf_config_override grew the list at 0.11.0 and 0.16.0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import load_plan
from pytest_eagle3.knowledge.releases import EngineVersion
from tests.conftest import config_variant


@pytest.mark.parametrize(("model_type", "before", "after"), [
    ("deepseek_v32", "0.10.2", "0.11.0"),
    ("glm_moe_dsa", "0.15.1", "0.16.0"),
])
def test_the_mtp_rewrite_names_a_model_type_from_the_release_that_rewrites_it(
        tmp_path: Path, probe_cases: tuple[Path, dict[str, Path]], model_type: str, before: str, after: str) -> None:
    target, drafts = probe_cases
    folder = config_variant(drafts["specforge"], tmp_path / model_type, lambda c: c.update(model_type=model_type))
    found = {}
    for version in (before, after):
        plan = load_plan(Checkpoint.open(folder), EngineVersion("vllm", Version(version)), TargetModel.open(target))
        found[version] = [i.finding for i in plan.issues if i.finding.code == "mtp-model-type"]
    assert found[before] == []
    [finding] = found[after]
    assert f"rewrites a draft of model_type {model_type!r} to its MTP draft" in finding.summary
    assert f"vLLM {after}" in finding.summary
