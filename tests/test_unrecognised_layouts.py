"""Layouts no producer's record matches that engines serve (issue 45: they failed ``format.detected``): llama.cpp's
converter takes any architecture on its Llama list with draft_vocab_size, one layer and ``midlayer.*`` / ``layers.0.*``
(llama-cpp-python 0.3.36 vendor/llama.cpp conversion/llama.py LlamaModel); TensorRT-LLM reads no architecture and
renames ``layers.N.*`` to ``midlayer.*`` (_torch/models/modeling_speculative.py Eagle3ForCausalLM.load_weights).
Such a draft passes ``format.detected`` as unrecognised, with a note; a layout with no first layer any engine loads
still fails it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec
from tests.conftest import ContractRun


def _flat(architecture: str) -> Callable[[dict[str, Any]], None]:
    """A flat config: the architecture given, no eagle_config (no producer's own field)."""
    def edit(config: dict[str, Any]) -> None:
        config.pop("eagle_config", None)
        config["architectures"] = [architecture]
    return edit


def _layers0(name: str) -> str:
    return name.replace("midlayer.", "layers.0.")


@pytest.mark.parametrize("architecture", ["LlamaForCausalLM", "Eagle3DraftModel", "Eagle3Speculator"])
def test_a_served_layout_no_producer_writes_passes_format_detected(
        architecture: str, make_variant: Callable[..., Path], run_contracts: Callable[..., ContractRun]) -> None:
    """layers.0.* keys with d2t and t2d under a flat config: llama.cpp's converter and TensorRT-LLM load it."""
    draft = make_variant(SynthSpec(producer=SPECFORGE), name=f"flat-{architecture}", config=_flat(architecture),
                         rename=_layers0)
    run = run_contracts([draft], "--eagle3-engine=vllm==0.33.0", "-k", "format or architecture")
    outcome, message = run.outcomes(draft)["format.detected"]
    assert outcome == "passed", message
    assert message.startswith(f"unrecognised: no producer's layout matches (architectures ['{architecture}'], first "
                              "layer layers.0.*)"), message
    assert "judge it under both readings" in message


def test_a_layout_no_engine_loads_still_fails_format_detected(make_checkpoint: Callable[..., Path],
                                                               run_contracts: Callable[..., ContractRun]) -> None:
    """No first decoder layer any engine names (blocks.0.*): format.detected fails as before."""
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE).with_faults("unknown-format"))
    run = run_contracts([draft], "--eagle3-engine=vllm==0.33.0", "-k", "format")
    outcome, message = run.outcomes(draft)["format.detected"]
    assert outcome == "failed" and "[format-unknown]" in message, message
