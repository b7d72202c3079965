"""The tensors of a synthetic draft, with each producer's key names, dtype and vocab-map habits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_eagle3.producers.names import EAGLE
from pytest_eagle3.rules.vocab_map import build_maps
from pytest_eagle3.testing.layouts import record_of, saves_embed, tensor_layout
from pytest_eagle3.testing.spec import SynthSpec

if TYPE_CHECKING:
    import torch


def generator(seed: int) -> torch.Generator:
    """A seeded CPU generator: every synthetic tensor comes from one, so files are reproducible."""
    import torch

    return torch.Generator().manual_seed(seed)


def dtype_of(spec: SynthSpec) -> torch.dtype:
    """The dtype the producer saves (EAGLE: fp16 whatever the spec says)."""
    import torch

    return torch.float16 if spec.producer == EAGLE else getattr(torch, spec.dtype)


def matrix(gen: torch.Generator, rows: int, cols: int, dtype: torch.dtype) -> torch.Tensor:
    """A small random weight matrix (std 0.02)."""
    import torch

    return (torch.randn(rows, cols, generator=gen) * 0.02).to(dtype)


def norm(gen: torch.Generator, size: int, dtype: torch.dtype) -> torch.Tensor:
    """An RMSNorm weight near 1."""
    import torch

    return (1.0 + 0.01 * torch.randn(size, generator=gen)).to(dtype)


def decoder_layer(spec: SynthSpec, gen: torch.Generator, first: bool) -> dict[str, torch.Tensor]:
    """One Llama decoder layer; the first EAGLE-3 layer takes 2H and has a hidden_norm."""
    h, dt = spec.hidden_size, dtype_of(spec)
    q, kv = spec.num_attention_heads * spec.head_dim, spec.num_key_value_heads * spec.head_dim
    width = 2 * h if first else h
    layer = {
        "self_attn.q_proj.weight": matrix(gen, q, width, dt),
        "self_attn.k_proj.weight": matrix(gen, kv, width, dt),
        "self_attn.v_proj.weight": matrix(gen, kv, width, dt),
        "self_attn.o_proj.weight": matrix(gen, h, q, dt),
        "mlp.gate_proj.weight": matrix(gen, spec.intermediate_size, h, dt),
        "mlp.up_proj.weight": matrix(gen, spec.intermediate_size, h, dt),
        "mlp.down_proj.weight": matrix(gen, h, spec.intermediate_size, dt),
        "input_layernorm.weight": norm(gen, h, dt),
        "post_attention_layernorm.weight": norm(gen, h, dt),
    }
    if first:
        layer["hidden_norm.weight"] = norm(gen, h, dt)
    return layer


def selected_target_ids(spec: SynthSpec) -> torch.Tensor:
    """A deterministic 'most frequent tokens' selection, never simply the first DV ids."""
    import torch

    ids = torch.randperm(spec.vocab_size, generator=generator(spec.seed + 1))[: spec.draft_vocab_size]
    return torch.sort(ids).values


def vocab_maps(spec: SynthSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """The producer's correct (d2t, t2d); a producer that orders draft ids by frequency rank (ModelOpt)
    gets them in a random rank order, not by id."""
    import torch

    d2t, t2d = build_maps(selected_target_ids(spec), spec.vocab_size)
    if tensor_layout(spec.producer).d2t_order == "by frequency":
        targets = torch.arange(spec.draft_vocab_size) + d2t
        ranked = targets[torch.randperm(targets.numel(), generator=generator(spec.seed + 2))]
        d2t = ranked - torch.arange(spec.draft_vocab_size)
    return d2t, t2d


def identity_maps(spec: SynthSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """The maps of a full-vocab draft: zero offsets, every target id kept."""
    import torch

    return torch.zeros(spec.draft_vocab_size, dtype=torch.int64), torch.ones(spec.vocab_size, dtype=torch.bool)


def target_embedding(spec: SynthSpec) -> torch.Tensor:
    """The synthetic target's embed_tokens (fp32): producers copy it into the draft and freeze it."""
    import torch

    return matrix(generator(spec.seed + 100), spec.vocab_size, spec.hidden_size, torch.float32)


def draft_tensors(spec: SynthSpec) -> dict[str, torch.Tensor]:
    """The state dict this producer saves, with the producer's key names."""
    gen = generator(spec.seed)
    dt = dtype_of(spec)
    h, v, dv = spec.hidden_size, spec.vocab_size, spec.draft_vocab_size
    layout = tensor_layout(spec.producer)
    first_prefix = layout.first_layer
    tensors: dict[str, torch.Tensor] = {"fc.weight": matrix(gen, h, len(spec.aux_ids) * h, dt)}
    tensors.update({first_prefix + k: t for k, t in decoder_layer(spec, gen, first=True).items()})
    habit = record_of(spec.producer).norm_habit
    if habit is not None:  # uniform, as ModelOpt initialises it: its forward also applies it to the hidden path
        import torch

        tensors[first_prefix + habit.tensor] = torch.ones(h, dtype=dt)
    for i in range(1, spec.draft_layers):
        tensors.update({f"layers.{i}.{k}": t for k, t in decoder_layer(spec, gen, first=False).items()})
    tensors["norm.weight"] = norm(gen, h, dt)
    tensors["lm_head.weight"] = matrix(gen, dv, h, dt)
    if saves_embed(spec.producer):
        tensors["embed_tokens.weight"] = target_embedding(spec).to(dt)  # copied from the verifier, frozen
    reduced = dv < v
    if reduced or layout.maps_at_full_vocab:
        d2t, t2d = vocab_maps(spec) if reduced else identity_maps(spec)
        tensors["d2t"] = d2t
        if layout.saves_t2d:
            tensors["t2d"] = t2d
    return tensors
