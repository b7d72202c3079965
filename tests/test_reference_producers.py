"""The reference forward against the producers' own draft classes, on the same weights.

Needs speculators 0.9.0 / specforge 0.2.0 (``tox -e producers``); each test skips, naming the
package, where it is not importable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="reference acceptance needs transformers (pip install -e '.[target]')")

STEPS = 3
#: fp32 weights and states: logits of the two forwards agree to float32 rounding.
ATOL = 2e-4


def _inputs(length: int = 40) -> tuple[object, object, object]:
    """The demo target's states for one sequence: (states, sequence, target) ."""
    from pytest_eagle3.reference.acceptance import load_target, run_target

    target = load_target(str(EXAMPLES / "demo-target"))
    (run,) = run_target(target, [[11]], new_tokens=length)
    return run.states, run.sequences, target


def _ours(draft_dir: Path, offset: int) -> tuple[list[object], object, object, int]:
    import torch

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.draft import ReferenceDraft

    ckpt = Checkpoint.open(draft_dir)
    draft = ReferenceDraft.from_checkpoint(ckpt)
    states, sequences, target = _inputs()
    assert ckpt.config.aux.ids is not None
    usable = sequences.shape[1] - 1 - STEPS
    aux = torch.cat([states[i + offset][:, :usable] for i in ckpt.config.aux.ids], dim=-1)
    next_ids = sequences[:, 1: usable + 1]
    teacher = torch.stack([sequences[:, 2 + j: usable + 2 + j] for j in range(STEPS - 1)], dim=-1)
    embed = draft.weights.get("embed_tokens.weight", target.embed)
    _, logits = draft.propose(aux, next_ids, STEPS, embed, teacher=teacher)
    return logits, aux, next_ids, usable


def test_matches_speculators_eagle3_draft_model() -> None:
    pytest.importorskip("speculators", reason="needs speculators==0.9.0 (tox -e producers)")
    import torch
    from safetensors.torch import load_file
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig

    torch._dynamo.config.disable = True
    draft_dir = EXAMPLES / "demo-draft"
    ours, aux, next_ids, usable = _ours(draft_dir, offset=0)
    config = Eagle3SpeculatorConfig.from_pretrained(str(draft_dir))
    config.transformer_layer_config._attn_implementation = "eager"
    model = Eagle3DraftModel(config).eval()
    missing, unexpected = model.load_state_dict(load_file(str(draft_dir / "model.safetensors")), strict=False)
    assert unexpected == [] and set(missing) <= {"verifier_norm.weight", "verifier_lm_head.weight"}
    captured: list[torch.Tensor] = []
    model.lm_head.register_forward_hook(lambda _m, _a, out: captured.append(out))
    with torch.no_grad():
        model(hidden_states=aux, input_ids=next_ids, document_ids=torch.zeros_like(next_ids), ttt_steps=STEPS)
    assert len(captured) == STEPS
    for step, (theirs, mine) in enumerate(zip(captured, ours)):
        valid = usable - step  # speculators pads the shifted teacher tokens at the end
        torch.testing.assert_close(mine[:, :valid], theirs[:, :valid], atol=ATOL, rtol=0, msg=f"step {step + 1}")


def test_matches_specforge_llama_for_causal_lm_eagle3() -> None:
    pytest.importorskip("specforge", reason="needs specforge==0.2.0 (tox -e producers)")
    import torch
    from safetensors.torch import load_file
    from specforge.modeling.draft.llama3_eagle import (
        LlamaForCausalLMEagle3,
        prepare_decoder_attention_mask,
    )
    from transformers import LlamaConfig

    torch._dynamo.config.disable = True
    draft_dir = EXAMPLES / "demo-draft-sglang"
    ours, aux, next_ids, usable = _ours(draft_dir, offset=1)
    _, sequences, target = _inputs()
    model = LlamaForCausalLMEagle3(LlamaConfig.from_pretrained(str(draft_dir)), attention_backend="sdpa").eval()
    state = load_file(str(draft_dir / "model.safetensors"))
    state["embed_tokens.weight"] = target.embed.detach()  # SGLang exports leave it to the target
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert (missing, unexpected) == ([], [])
    length = next_ids.shape[1]
    mask = prepare_decoder_attention_mask(torch.ones(1, length, dtype=torch.bool), (1, length), aux, 0)
    positions = torch.arange(length)[None]
    cache_hidden: list[list[torch.Tensor]] = [[], []]
    tokens = next_ids
    with torch.no_grad():
        hidden = model.project_hidden_states(aux)
        for step in range(STEPS):
            hidden = model.backbone(model.embed_input_ids(tokens), hidden, cache_hidden, mask, positions)
            theirs = model.compute_logits(hidden)
            valid = usable - step
            torch.testing.assert_close(ours[step][:, :valid], theirs[:, :valid], atol=ATOL, rtol=0,
                                       msg=f"step {step + 1}")
            tokens = sequences[:, 2 + step: length + 2 + step]
