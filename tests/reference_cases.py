"""Constructed target/draft pairs whose acceptance is known exactly, and demo-draft variants.

A constant target: embeddings ``c + small noise`` and ``lm_head[t] = 5 c/|c|`` make greedy output
always token ``t``. A draft with ``fc = [I, I, I]/3``, no attention or MLP contribution and the
lm_head row of t's draft id set to ``5 c/|c|`` always proposes ``t``: every draft is accepted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from pytest_eagle3.testing.synth import SynthSpec, draft_config

HIDDEN, VOCAB, DRAFT_VOCAB, LAYERS = 32, 64, 16, 4
TOKEN = 27
DRAFT_IDS = torch.arange(20, 20 + DRAFT_VOCAB)  # target ids of the draft vocab; TOKEN is draft id 7
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _direction() -> torch.Tensor:
    gen = torch.Generator().manual_seed(5)
    return torch.where(torch.rand(HIDDEN, generator=gen) < 0.5, -1.0, 1.0)


def write_constant_target(out: Path) -> Path:
    """A real transformers Llama whose greedy output is always ``TOKEN``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=LAYERS,
                         num_attention_heads=1, num_key_value_heads=1, head_dim=HIDDEN, tie_word_embeddings=False,
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(config)
    c = _direction()
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(c + 0.01 * torch.randn(VOCAB, HIDDEN))
        model.lm_head.weight.copy_(0.01 * torch.randn(VOCAB, HIDDEN))
        model.lm_head.weight[TOKEN] = 5 * c / c.norm()
    model.save_pretrained(out)
    return out


def write_constant_draft(out: Path, d2t_reading: str = "offsets") -> Path:
    """A speculators-layout draft that always proposes ``TOKEN`` (through d2t)."""
    spec = SynthSpec(hidden_size=HIDDEN, intermediate_size=64, num_attention_heads=1, num_key_value_heads=1,
                     head_dim=HIDDEN, vocab_size=VOCAB, draft_vocab_size=DRAFT_VOCAB, target_layers=LAYERS,
                     aux_layer_ids=(1, 2, 3), dtype="float32")
    gen = torch.Generator().manual_seed(1)
    h, c = HIDDEN, _direction()
    eye = torch.eye(h)
    tensors = {
        "fc.weight": torch.cat([eye, eye, eye], dim=1) / 3,
        "norm.weight": torch.ones(h),
        "embed_tokens.weight": c + 0.01 * torch.randn(VOCAB, h, generator=gen),
        "lm_head.weight": 0.01 * torch.randn(DRAFT_VOCAB, h, generator=gen),
        "d2t": {"offsets": DRAFT_IDS - torch.arange(DRAFT_VOCAB), "absolute": DRAFT_IDS.clone(),
                # every draft id served as its neighbour's target token
                "shuffled": DRAFT_IDS.roll(1) - torch.arange(DRAFT_VOCAB)}[d2t_reading],
    }
    draft_id = int((DRAFT_IDS == TOKEN).nonzero())
    tensors["lm_head.weight"][draft_id] = 5 * c / c.norm()
    layer = {
        "self_attn.q_proj.weight": 0.02 * torch.randn(h, 2 * h, generator=gen),
        "self_attn.k_proj.weight": 0.02 * torch.randn(h, 2 * h, generator=gen),
        "self_attn.v_proj.weight": 0.02 * torch.randn(h, 2 * h, generator=gen),
        "self_attn.o_proj.weight": torch.zeros(h, h),
        "mlp.gate_proj.weight": 0.02 * torch.randn(64, h, generator=gen),
        "mlp.up_proj.weight": 0.02 * torch.randn(64, h, generator=gen),
        "mlp.down_proj.weight": torch.zeros(h, 64),
        "input_layernorm.weight": torch.ones(h),
        "post_attention_layernorm.weight": torch.ones(h),
        "hidden_norm.weight": torch.ones(h),
    }
    tensors.update({f"layers.0.{k}": v for k, v in layer.items()})
    t2d = torch.zeros(VOCAB, dtype=torch.bool)
    t2d[DRAFT_IDS] = True
    tensors["t2d"] = t2d
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(draft_config(spec), indent=2))
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def demo_variant(name: str, out: Path, *, config: dict[str, object] | None = None, drop_config: tuple[str, ...] = (),
                 d2t: str | None = None) -> Path:
    """A copy of a shipped demo draft with its config or d2t changed (the original is never touched)."""
    shutil.copytree(EXAMPLES / name, out)
    data = json.loads((out / "config.json").read_text())
    for key in drop_config:
        data.pop(key, None)
    data.update(config or {})
    (out / "config.json").write_text(json.dumps(data, indent=2))
    if d2t is not None:
        tensors = load_file(str(out / "model.safetensors"))
        offsets = tensors["d2t"]
        targets = torch.arange(offsets.numel()) + offsets
        if d2t == "absolute":
            tensors["d2t"] = targets
        elif d2t == "shuffled":
            shuffled = targets[torch.randperm(targets.numel(), generator=torch.Generator().manual_seed(3))]
            tensors["d2t"] = shuffled - torch.arange(offsets.numel())
        save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out
