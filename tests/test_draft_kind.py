"""A checkpoint that is not an EAGLE-3 draft is named in one line, from real files on disk."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.rules.draft_kind import (
    ADAPTER,
    CAUSAL_LM,
    EAGLE3,
    EAGLE12,
    MEDUSA,
    MTP,
    classify_checkpoint,
)
from pytest_eagle3.testing.synth import SynthSpec, write_target

H = 64


def _write(tmp_path: Path, tensors: dict[str, tuple[int, ...]], config: dict[str, object]) -> Path:
    save_file({n: torch.zeros(s, dtype=torch.bfloat16) for n, s in tensors.items()}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def _eagle1() -> dict[str, tuple[int, ...]]:
    layer = {f"layers.0.self_attn.{p}.weight": (H, H) for p in ("q_proj", "k_proj", "v_proj", "o_proj")}
    return {"fc.weight": (H, 2 * H), "embed_tokens.weight": (1024, H), **layer}


CASES: dict[str, tuple[Callable[[], dict[str, tuple[int, ...]]], dict[str, object], str, str]] = {
    "eagle1": (_eagle1, {"architectures": ["LlamaForCausalLM"]}, EAGLE12, "EAGLE-1/2"),
    "eagle2-arch": (lambda: {"midlayer.mlp.down_proj.weight": (H, 128)}, {"architectures": ["Qwen2ForCausalLMEagle"]},
                    EAGLE12, "EAGLE-1/2"),
    "deepseek-mtp": (lambda: {"model.layers.61.eh_proj.weight": (H, 2 * H), "model.layers.61.enorm.weight": (H,)},
                     {"architectures": ["DeepseekV3ForCausalLM"]}, MTP, "MTP"),
    "medusa": (lambda: {"blocks.0.layers.0.weight": (H, H)}, {"architectures": ["MedusaModel"]}, MEDUSA, "Medusa"),
    "lora": (lambda: {"base_model.model.layers.0.self_attn.q_proj.lora_A.weight": (8, H)}, {}, ADAPTER, "LoRA"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_not_a_draft_is_named(name: str, tmp_path: Path) -> None:
    tensors, config, kind, words = CASES[name]
    found = classify_checkpoint(Checkpoint.open(_write(tmp_path, tensors(), config)))
    assert found.kind == kind and words in found.summary and not found.is_draft


def test_a_target_passed_as_draft_says_so_in_one_line(tmp_path: Path) -> None:
    found = classify_checkpoint(Checkpoint.open(write_target(SynthSpec(), tmp_path / "target")))
    assert found.kind == CAUSAL_LM and "--eagle3-target" in found.summary and "8 layers" in found.summary


@pytest.mark.parametrize("producer", ["speculators", "specforge", "eagle", "modelopt", "angelslim"])
def test_every_producer_layout_is_an_eagle3_draft(producer: str, make_checkpoint: Callable[..., Path]) -> None:
    found = classify_checkpoint(Checkpoint.open(make_checkpoint(SynthSpec(producer=producer, draft_layers=2))))
    assert found.kind == EAGLE3 and found.is_draft


def test_a_target_passed_as_ckpt_fails_in_one_line_and_engine_contracts_skip(
        run_contracts: Callable[..., Any], synth_target: Path) -> None:
    run = run_contracts([synth_target], "--eagle3-engine=vllm==0.32.0")
    outcome, message = run.outcomes(synth_target)["format.detected"]
    assert outcome == "failed" and "full causal LM" in message and "--eagle3-target" in message
    assert run.outcomes(synth_target)["config.shapes"][0] == "skipped"
    outcomes = run.engine_outcomes(synth_target, "vllm==0.32.0")
    outcome, message = outcomes["engine.architecture"]
    assert outcome == "failed" and "not an EAGLE-3 draft" in message and "refuses" not in message
    assert outcomes["engine.keys"][0] == "skipped"
