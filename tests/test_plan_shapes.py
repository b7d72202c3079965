"""The draft classes' parameter names and shapes in the load plan, and their comparison with a probe.

The MLA classes (vLLM >= 0.18 ``Eagle3DeepseekV2ForCausalLM``, SGLang >= 0.5.12 the same name in
``kimi_k25_eagle3.py``) fuse ``q_a_proj`` and ``kv_a_proj_with_mqa`` into one parameter; a plan that
read them with the Llama key map refused a draft both engines load (probed: vLLM 0.32.0, SGLang 0.5.23).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, REFUSED, load_plan
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.probes.compare import differences
from tests.conftest import config_variant


def _plan(probe_cases: tuple[Path, dict[str, Path]], case: str, engine: str, version: str) -> Any:
    target, drafts = probe_cases
    return load_plan(Checkpoint.open(drafts[case]), EngineVersion(engine, Version(version)), TargetModel.open(target))


@pytest.mark.parametrize(("engine", "version", "fused", "layer"), [
    ("vllm", "0.28.0", "fused_qkv_a_proj", "layers.0"),
    ("vllm", "0.32.0", "fused_qkv_a_proj", "layers.0"),
    ("sglang", "0.5.12", "fused_qkv_a_proj_with_mqa", "midlayer"),
    ("sglang", "0.5.23", "fused_qkv_a_proj_with_mqa", "midlayer"),
])
def test_mla_draft_loads_into_the_fused_projection(probe_cases: tuple[Path, dict[str, Path]], engine: str,
                                                   version: str, fused: str, layer: str) -> None:
    plan = _plan(probe_cases, "specforge-mla", engine, version)
    assert plan.outcome == LOADS, plan.describe()
    assert plan.draft_class == "Eagle3DeepseekV2ForCausalLM"
    name = f"model.{layer}.self_attn.{fused}.weight"
    assert set(plan.parameters[name]) == {"midlayer.self_attn.q_a_proj.weight", "midlayer.self_attn.kv_a_proj_with_mqa.weight"}
    # q_lora 32 + kv_lora 32 + rope 16 rows; layer 0 reads the embedding and the hidden state (2 x 64)
    assert plan.shapes[name] == (80, 128)
    assert plan.shapes[f"model.{layer}.self_attn.kv_b_proj.weight"] == (2 * (16 + 16), 32)
    assert not plan.uninitialised and set(plan.dropped) == set()


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.17.0"), ("sglang", "0.5.11")])
def test_mla_draft_before_the_class_is_refused(probe_cases: tuple[Path, dict[str, Path]], engine: str,
                                               version: str) -> None:
    plan = _plan(probe_cases, "specforge-mla", engine, version)
    assert plan.outcome == REFUSED
    assert [i.finding.code for i in plan.issues] == ["architecture"]


def test_sglang_mla_class_builds_one_layer(tmp_path: Path, probe_cases: tuple[Path, dict[str, Path]]) -> None:
    target, drafts = probe_cases
    folder = config_variant(drafts["specforge-mla"], tmp_path / "two", lambda c: c.update(num_hidden_layers=2))
    ckpt, target_model = Checkpoint.open(folder), TargetModel.open(target)
    sglang = load_plan(ckpt, EngineVersion("sglang", Version("0.5.23")), target_model)
    assert [i.finding.code for i in sglang.issues if i.kind == REFUSED] == ["multi-layer"]
    assert "kimi_k25_eagle3.py" in sglang.issues[0].finding.details[0]
    vllm = load_plan(ckpt, EngineVersion("vllm", Version("0.32.0")), target_model)
    assert vllm.draft_layers == 2 and "model.layers.1.self_attn.fused_qkv_a_proj.weight" in vllm.built


def _probe_of(plan: Any) -> dict[str, Any]:
    probe: dict[str, Any] = plan.as_probe_dict()
    probe["shapes"] = {name: list(shape) for name, shape in plan.shapes.items()}
    return probe


def test_compare_names_a_shape_the_engine_built_otherwise(probe_cases: tuple[Path, dict[str, Path]]) -> None:
    plan = _plan(probe_cases, "specforge", "sglang", "0.5.23")
    probe = _probe_of(plan)
    assert differences(plan, probe) == []
    probe["shapes"]["model.fc.weight"] = [64, 256]
    probe["shapes"]["model.layers.0.self_attn.q_norm.weight"] = [32]
    del probe["shapes"]["model.layers.0.hidden_norm.weight"]
    lines = differences(plan, probe)
    assert "SGLang 0.5.23: shape of model.fc.weight: plan [64, 192], engine [64, 256]" in lines
    assert any("parameters built" in line and "model.layers.0.hidden_norm.weight" in line
               and "model.layers.0.self_attn.q_norm.weight" in line for line in lines), lines


def test_probe_recorded_without_shapes_is_compared_on_the_rest(probe_cases: tuple[Path, dict[str, Path]]) -> None:
    plan = _plan(probe_cases, "specforge", "sglang", "0.5.23")
    probe = plan.as_probe_dict()
    assert "shapes" not in probe and differences(plan, probe) == []


def test_vocab_rows_are_padded_to_64(tmp_path: Path, probe_cases: tuple[Path, dict[str, Path]]) -> None:
    target, drafts = probe_cases
    folder = config_variant(drafts["specforge"], tmp_path / "odd", lambda c: c.update(vocab_size=1000))
    plan = load_plan(Checkpoint.open(folder), EngineVersion("vllm", Version("0.32.0")), TargetModel.open(target))
    assert plan.shapes["model.embed_tokens.weight"] == (1024, 64)
    assert plan.shapes["draft_id_to_target_id"] == (256,)


def test_vllm_mla_class_forces_deepseek_yarn_rope_until_0_28(tmp_path: Path,
                                                              probe_cases: tuple[Path, dict[str, Path]]) -> None:
    """0.18-0.27 build DeepSeek YaRN whenever rope_scaling is set: a draft without a YaRN factor is refused."""
    refused = _plan(probe_cases, "specforge-mla", "vllm", "0.27.0")
    assert [i.finding.code for i in refused.issues] == ["mla-rope"]
    assert "KeyError" in refused.issues[0].finding.summary
    assert "deepseek_eagle3.py" in refused.issues[0].finding.details[0]
    target, drafts = probe_cases
    yarn = {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}
    folder = config_variant(drafts["specforge-mla"], tmp_path / "yarn", lambda c: c.update(rope_scaling=yarn))
    plan = load_plan(Checkpoint.open(folder), EngineVersion("vllm", Version("0.27.0")), TargetModel.open(target))
    assert plan.outcome == LOADS, plan.describe()


@pytest.mark.parametrize(("engine", "refused"), [("vllm", True), ("sglang", False)])
def test_deepseek_v3_model_type_is_rewritten_to_mtp_by_vllm(tmp_path: Path, probe_cases: tuple[Path, dict[str, Path]],
                                                           engine: str, refused: bool) -> None:
    target, drafts = probe_cases
    folder = config_variant(drafts["specforge-mla"], tmp_path / "v3", lambda c: c.update(model_type="deepseek_v3"))
    version = "0.32.0" if engine == "vllm" else "0.5.23"
    plan = load_plan(Checkpoint.open(folder), EngineVersion(engine, Version(version)), TargetModel.open(target))
    assert ([i.finding.code for i in plan.issues] == ["mtp-model-type"]) is refused
    assert (plan.outcome == REFUSED) is refused
