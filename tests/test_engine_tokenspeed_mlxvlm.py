"""TokenSpeed and mlx-vlm: their rows, both sides of each release boundary, and the verdicts a user sees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, REFUSED, load_plan
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, RELEASES
from pytest_eagle3.knowledge.selection import ALL, DEFAULT_SELECTION, EngineSelectionError, parse_selection
from pytest_eagle3.testing.synth import SPECFORGE, SPECULATORS, SynthSpec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_TARGET = TargetModel.open(EXAMPLES / "demo-target")


def _codes(path: Path, spec: str, target: TargetModel = DEMO_TARGET) -> tuple[str, set[str]]:
    plan = load_plan(Checkpoint.open(path), parse_selection(spec)[0], target)
    return plan.outcome, {i.finding.code for i in plan.issues if i.area != "producer"}


def test_selection_names_the_new_engines() -> None:
    assert [e.spec for e in parse_selection("tokenspeed,mlx-vlm==0.6.14")] == ["tokenspeed==0.1.1", "mlx-vlm==0.6.14"]
    assert {e.engine for e in parse_selection(ALL)} == set(KNOWN_RANGES) >= {"sglang", "vllm", "tokenspeed", "mlx-vlm",
                                                                            "trtllm", "lmdeploy", "llamacpp"}
    assert [e.engine for e in parse_selection(DEFAULT_SELECTION)] == ["sglang", "vllm"]
    with pytest.raises(EngineSelectionError, match="outside the known range 0.6.0"):
        parse_selection("mlx-vlm==0.5.0")
    assert RELEASES["mlx-vlm"][0] == "0.6.0" and RELEASES["tokenspeed"][0] == "0.1.0"


def test_demo_sglang_export_per_engine() -> None:
    """The SpecForge export: TokenSpeed loads it as SGLang does; mlx-vlm refuses its flat config."""
    draft = EXAMPLES / "demo-draft-sglang"
    assert _codes(draft, "tokenspeed") == (LOADS, set())
    assert _codes(draft, "mlx-vlm") == (REFUSED, {"speculators-only"})


def test_demo_speculators_draft_per_engine() -> None:
    """The speculators draft: TokenSpeed cannot read the format; mlx-vlm builds it but its Llama target never
    captures aux states."""
    draft = EXAMPLES / "demo-draft"
    assert _codes(draft, "tokenspeed") == (REFUSED, {"speculators-format"})
    assert _codes(draft, "mlx-vlm") == (REFUSED, {"target-no-capture"})


def _qwen35_target(make_target: Callable[..., Path]) -> TargetModel:
    return TargetModel.open(make_target(8, "Qwen3_5ForConditionalGeneration"))


def test_mlx_default_ids_come_from_the_draft(make_variant: Callable[..., Path],
                                             make_target: Callable[..., Path]) -> None:
    """Without ids mlx-vlm captures [2, 0, 0] of a one-layer draft: two states reach a 3-state fc; speculators'
    default (inputs of 2, N//2, N-3 of the target) differs, a failure naming both (engines.habit)."""
    def no_ids(config: dict[str, object]) -> None:
        config.pop("eagle_aux_hidden_state_layer_ids", None)
    path = make_variant(SynthSpec(producer=SPECULATORS), config=no_ids, name="mlx-no-ids")
    outcome, codes = _codes(path, "mlx-vlm", _qwen35_target(make_target))
    assert outcome == REFUSED and {"aux-ids-missing", "fc-width"} <= codes
    plan = load_plan(Checkpoint.open(path), parse_selection("mlx-vlm")[0], _qwen35_target(make_target))
    assert plan.aux.captured == (1, 2)
    assert plan.aux.fix_edit is not None and plan.aux.fix_edit[0] == "capture_layer_ids"


def test_mlx_rejects_midlayer_names(make_variant: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    def speculators_names(name: str) -> str:
        return name.replace("layers.0.", "midlayer.")
    path = make_variant(SynthSpec(producer=SPECULATORS), rename=speculators_names, name="mlx-midlayer")
    outcome, codes = _codes(path, "mlx-vlm", _qwen35_target(make_target))
    assert outcome == REFUSED, codes


@pytest.mark.parametrize(("before", "after"), [("0.6.13", "0.6.14")])
def test_mlx_lm_head_boundary(before: str, after: str, make_variant: Callable[..., Path],
                              make_target: Callable[..., Path]) -> None:
    """0.6.14 drops a weightless lm_head module: a draft without lm_head.weight loads and scores with the embedding."""
    path = make_variant(SynthSpec(producer=SPECULATORS), drop=("lm_head.weight",), name="mlx-no-head")
    target = _qwen35_target(make_target)
    before_outcome, before_codes = _codes(path, f"mlx-vlm=={before}", target)
    after_outcome, after_codes = _codes(path, f"mlx-vlm=={after}", target)
    assert before_outcome == REFUSED and "lm-head-embedding" not in before_codes
    assert "lm-head-embedding" in after_codes and before_codes != after_codes


def test_tokenspeed_missing_draft_vocab_uses_target_head(make_variant: Callable[..., Path]) -> None:
    def no_vocab(config: dict[str, object]) -> None:
        config.pop("draft_vocab_size", None)
    path = make_variant(SynthSpec(producer=SPECFORGE), config=no_vocab, name="ts-no-vocab")
    plan = load_plan(Checkpoint.open(path), parse_selection("tokenspeed")[0], DEMO_TARGET)
    assert plan.lm_head == "target"


def test_tokenspeed_renames_plain_llama_to_nextn(make_variant: Callable[..., Path]) -> None:
    def plain(config: dict[str, object]) -> None:
        config["architectures"] = ["LlamaForCausalLM"]
    path = make_variant(SynthSpec(producer=SPECFORGE), config=plain, name="ts-plain")
    plan = load_plan(Checkpoint.open(path), parse_selection("tokenspeed")[0], DEMO_TARGET)
    assert plan.outcome == REFUSED
    assert any("LlamaForCausalLMNextN" in i.finding.summary for i in plan.issues)


@pytest.mark.parametrize("release", RELEASES["tokenspeed"])
def test_tokenspeed_reads_only_eagle_config_once_it_exists(release: str, make_variant: Callable[..., Path],
                                                          make_target: Callable[..., Path]) -> None:
    """An eagle_config without ids hides the top-level ids beside it (0.1.0 model_executor.py _eagle_aux_layer_ids,
    0.1.1 factory.py): the 32-layer target's defaults are captured; vLLM reads the top-level ids there."""
    def both(config: dict[str, object]) -> None:
        config["eagle_aux_hidden_state_layer_ids"] = [1, 15, 28]
        config["eagle_config"] = {"use_aux_hidden_state": True}
    target = TargetModel.open(make_target(layers=32))
    path = make_variant(SynthSpec(producer=SPECFORGE), config=both, name="ts-eagle-config")
    plan = load_plan(Checkpoint.open(path), parse_selection(f"tokenspeed=={release}")[0], target)
    assert plan.aux.field is None and plan.aux.configured is None
    assert plan.aux.captured == (2, 16, 29)  # [2, L // 2, L - 3] at layer inputs
    vllm = load_plan(Checkpoint.open(path), parse_selection("vllm==0.34.0")[0], target)
    assert vllm.aux.configured == (1, 15, 28)

    def nested(config: dict[str, object]) -> None:
        config["eagle_aux_hidden_state_layer_ids"] = [1, 15, 28]
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [3, 16, 27]}
    path = make_variant(SynthSpec(producer=SPECFORGE), config=nested, name="ts-eagle-config-ids")
    plan = load_plan(Checkpoint.open(path), parse_selection(f"tokenspeed=={release}")[0], target)
    assert plan.aux.configured == (3, 16, 27) and plan.aux.captured == (4, 17, 28)
