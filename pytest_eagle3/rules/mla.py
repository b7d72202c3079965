"""The draft's attention family from its tensors, and the shapes of an MLA (DeepSeek-V2 multi-latent attention)
draft layer from its config.

An MLA layer has no q/k/v projections: ``q_a_proj`` -> ``q_a_layernorm`` -> ``q_b_proj`` (or ``q_proj`` alone when
``q_lora_rank`` is null), ``kv_a_proj_with_mqa`` -> ``kv_a_layernorm`` -> ``kv_b_proj``, then ``o_proj``; the first
EAGLE-3 layer's down projections take 2 x hidden (the embedding and the hidden state concatenated).
Source: sglang 0.5.12 / 0.5.23 models/kimi_k25_eagle3.py Eagle3MLADecoderLayer.__init__ (fused_qkv_a_proj_with_mqa =
ReplicatedLinear(2 * hidden, q_lora_rank + kv_lora_rank + qk_rope_head_dim); ValueError without q_lora_rank) over
models/deepseek_v2.py DeepseekV2AttentionMLA; vllm 0.33.0 model_executor/models/deepseek_eagle3.py
DeepseekV2Eagle3DecoderLayer (DeepseekV2MLAAttention, input_size 2 x hidden on layer 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The attention families a draft's tensors can show (the draft class registry uses the same names).
FAMILY_LLAMA = "llama"
FAMILY_MLA = "mla"
#: A layer holding any of these is an MLA layer.
MLA_MARKERS = ("self_attn.kv_a_proj_with_mqa.weight", "self_attn.q_a_proj.weight", "self_attn.kv_b_proj.weight")
#: What an MLA layer needs whatever q_lora_rank says (the q path is added by :func:`mla_required`).
MLA_LAYER = ("self_attn.kv_a_proj_with_mqa.weight", "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight",
             "self_attn.o_proj.weight")
MLA_FIELDS = ("num_attention_heads", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def attention_family(names: Iterable[str]) -> str:
    """``mla`` when any layer holds MLA projections, else ``llama`` (q/k/v/o)."""
    return FAMILY_MLA if any(n.endswith(MLA_MARKERS) for n in names) else FAMILY_LLAMA


def mla_required(prefix: str, names: set[str]) -> list[str]:
    """The MLA attention tensors of the layer at ``prefix``: the low-rank q path unless the draft has ``q_proj``."""
    q_path = (("self_attn.q_proj.weight",) if prefix + "self_attn.q_proj.weight" in names
              else ("self_attn.q_a_proj.weight", "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight"))
    return [prefix + t for t in (*q_path, *MLA_LAYER)]


@dataclass(frozen=True)
class MlaShapes:
    """The expected shapes (tensor, shape, why) and the fields the rule needed but the config omits."""

    rules: tuple[tuple[str, tuple[int, ...], str], ...]
    missing_fields: tuple[str, ...]


def _int(config: Mapping[str, Any], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def mla_shapes(config: Mapping[str, Any], prefix: str, names: set[str]) -> MlaShapes:
    """The first MLA layer's shapes as the config gives them; a shape whose field is absent is left out (the
    engine's config class default would apply: not modelled)."""
    h = _int(config, "hidden_size")
    f = {name: _int(config, name) for name in (*MLA_FIELDS, "q_lora_rank")}
    missing = tuple(name for name in MLA_FIELDS if f[name] is None)
    heads, kv, nope, rope, v = (f[n] for n in MLA_FIELDS)
    q_lora = f["q_lora_rank"]
    rules: list[tuple[str, tuple[int, ...], str]] = []
    a = f"{prefix}self_attn."
    if h and kv and rope:
        rules.append((a + "kv_a_proj_with_mqa.weight", (kv + rope, 2 * h), "kv_lora_rank + qk_rope_head_dim rows, "
                      "2 x hidden columns (embedding and hidden state)"))
    if kv:
        rules.append((a + "kv_a_layernorm.weight", (kv,), "kv_lora_rank"))
    if heads and nope and v and kv:
        rules.append((a + "kv_b_proj.weight", (heads * (nope + v), kv),
                      "num_attention_heads x (qk_nope_head_dim + v_head_dim) rows, kv_lora_rank columns"))
    if h and heads and v:
        rules.append((a + "o_proj.weight", (h, heads * v), "hidden rows, num_attention_heads x v_head_dim columns"))
    if a + "q_proj.weight" in names:
        if h and heads and nope and rope:
            rules.append((a + "q_proj.weight", (heads * (nope + rope), 2 * h),
                          "num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim) rows, 2 x hidden columns"))
    elif q_lora is None:
        missing += ("q_lora_rank",)
    else:
        if h:
            rules.append((a + "q_a_proj.weight", (q_lora, 2 * h), "q_lora_rank rows, 2 x hidden columns"))
        rules.append((a + "q_a_layernorm.weight", (q_lora,), "q_lora_rank"))
        if heads and nope and rope:
            rules.append((a + "q_b_proj.weight", (heads * (nope + rope), q_lora),
                          "num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim) rows, q_lora_rank columns"))
    return MlaShapes(tuple(rules), missing)
