"""The shape of every parameter an engine's Llama-family EAGLE-3 draft class builds, from the config it reads.

Sources (read in vllm 0.11.0-0.32.0 ``model_executor/models/llama_eagle3.py`` and sglang 0.5.11, 0.5.23
``models/llama_eagle3.py``):

- the first decoder layer's ``qkv_proj`` takes the embedding and the hidden state concatenated
  (``2 * hidden_size``), later layers ``hidden_size``; q/k/v rows are heads x head_dim as the
  engine derives them (``rules/attention.py``);
- ``fc`` is ``[hidden_size, aux states x target_hidden_size]``, ``input_norm`` that width,
  ``fc_norm.i`` ``target_hidden_size``; q_norm / k_norm (Qwen3 class) ``head_dim``;
- ``embed_tokens`` has ``vocab_size`` rows, ``lm_head`` ``draft_vocab_size`` (else ``vocab_size``),
  both padded to a multiple of 64 (``layers/vocab_parallel_embedding.py`` pad_vocab_size,
  DEFAULT_VOCAB_PADDING_SIZE); vLLM's ``draft_id_to_target_id`` has ``draft_vocab_size`` entries.

- MLA classes (vllm ``deepseek_eagle3.py`` 0.32.0, sglang ``kimi_k25_eagle3.py`` 0.5.23): the fused
  ``q_a_proj`` + ``kv_a_proj_with_mqa`` is ``[q_lora_rank + kv_lora_rank + qk_rope_head_dim, input]``,
  ``q_b_proj`` ``[heads x (qk_nope + qk_rope), q_lora_rank]``, ``kv_b_proj`` ``[heads x (qk_nope +
  v_head_dim), kv_lora_rank]``, ``o_proj`` ``[hidden, heads x v_head_dim]``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pytest_eagle3.engines.draft_geometry import draft_geometry
from pytest_eagle3.knowledge.snapshot import Engine
from pytest_eagle3.rules.attention import Geometry

VOCAB_PADDING = 64
#: vLLM's draft -> target id map, a parameter of the draft class (llama_eagle3.py).
D2T_PARAM = "draft_id_to_target_id"
Shape = tuple[int, ...]


def _int(config: Mapping[str, Any], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def padded(rows: int) -> int:
    """Vocab rows as VocabParallelEmbedding / ParallelLMHead allocate them (one rank)."""
    return -(-rows // VOCAB_PADDING) * VOCAB_PADDING


#: "Derive it from the config" (a derived geometry may itself be None).
DERIVE: Any = object()


#: transformers Llama4TextConfig's intermediate_size_mlp when config.json has none.
LLAMA4_MLP_DEFAULT = 16384


def mlp_width(rule: str, config: Mapping[str, Any]) -> tuple[int | None, str]:
    """The MLP width the engine builds (behaviour ``mlp_width``) and the field it came from."""
    if rule.startswith("intermediate_size_mlp-if-llama4_text") and config.get("model_type") == "llama4_text":
        value = config.get("intermediate_size_mlp", LLAMA4_MLP_DEFAULT)
        return (value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None,
                "intermediate_size_mlp")
    return _int(config, "intermediate_size"), "intermediate_size"


def parameter_shapes(engine: Engine, config: Mapping[str, Any], speculators: bool, params: Collection[str],
                     fc_states: int, derived: Geometry | None = DERIVE,
                     mlp_rule: str = "intermediate_size") -> dict[str, Shape]:
    """Shape of each name in ``params`` the class builds; names whose size the config does not give are left out
    (``derived``: the attention the engine derives from ``config``, when already known; ``mlp_rule``: the profile's
    ``mlp_width``)."""
    hidden = _int(config, "hidden_size")
    if hidden is None:
        return {}
    target_hidden = _int(config, "target_hidden_size") or hidden
    vocab = _int(config, "vocab_size")
    draft_vocab = _int(config, "draft_vocab_size") or vocab
    intermediate, _ = mlp_width(mlp_rule, config)
    geometry = draft_geometry(engine, config, speculators) if derived is DERIVE else derived
    fixed: dict[str, Shape | None] = {
        "model.norm.weight": (hidden,),
        "model.fc.weight": (hidden, fc_states * target_hidden),
        "model.fc.bias": (hidden,),
        "model.input_norm.weight": (fc_states * target_hidden,),
        "model.embed_tokens.weight": (padded(vocab), hidden) if vocab else None,
        "lm_head.weight": (padded(draft_vocab), hidden) if draft_vocab else None,
        D2T_PARAM: (draft_vocab,) if draft_vocab else None,
    }
    out: dict[str, Shape] = {}
    for name in sorted(params):
        shape = fixed[name] if name in fixed else _layer_shape(name, config, target_hidden, intermediate, geometry)
        if shape is not None:
            out[name] = shape
    return out


def _layer_shape(name: str, config: Mapping[str, Any], target_hidden: int, intermediate: int | None,
                 geometry: Any) -> Shape | None:
    if name.startswith("model.fc_norm."):
        return (target_hidden,)
    hidden = int(config["hidden_size"])
    first = name.startswith(("model.midlayer.", "model.layers.0."))
    sub = name.split(".", 3)[-1] if name.startswith("model.layers.") else name.split(".", 2)[-1]
    if sub.startswith("self_attn.") and _int(config, "kv_lora_rank"):
        return _mla_shape(sub, config, 2 * hidden if first else hidden)
    if sub in ("input_layernorm.weight", "post_attention_layernorm.weight", "hidden_norm.weight"):
        return (hidden,)
    if sub in ("self_attn.o_proj.bias", "mlp.down_proj.bias"):
        return (hidden,)
    if sub in ("mlp.gate_up_proj.weight", "mlp.down_proj.weight", "mlp.gate_up_proj.bias"):
        if intermediate is None:
            return None
        if sub == "mlp.gate_up_proj.bias":
            return (2 * intermediate,)
        return (2 * intermediate, hidden) if sub.startswith("mlp.gate_up") else (hidden, intermediate)
    if geometry is None:
        return None
    if sub == "self_attn.qkv_proj.weight":
        return (geometry.q_width + 2 * geometry.kv_width, 2 * hidden if first else hidden)
    if sub == "self_attn.qkv_proj.bias":
        return (geometry.q_width + 2 * geometry.kv_width,)
    if sub == "self_attn.o_proj.weight":
        return (hidden, geometry.q_width)
    if sub in ("self_attn.q_norm.weight", "self_attn.k_norm.weight"):
        return (geometry.head_dim,)
    return None


def _mla_shape(sub: str, config: Mapping[str, Any], width: int) -> Shape | None:
    heads, hidden = _int(config, "num_attention_heads"), int(config["hidden_size"])
    ranks = {k: _int(config, k) for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                          "v_head_dim")}
    if heads is None or any(v is None for v in ranks.values()):
        return None
    q, kv, nope, rope, v = (int(ranks[k] or 0) for k in ranks)
    shapes: dict[str, Shape] = {
        "self_attn.fused_qkv_a_proj.weight": (q + kv + rope, width),
        "self_attn.fused_qkv_a_proj_with_mqa.weight": (q + kv + rope, width),
        "self_attn.q_a_layernorm.weight": (q,),
        "self_attn.q_b_proj.weight": (heads * (nope + rope), q),
        "self_attn.kv_a_layernorm.weight": (kv,),
        "self_attn.kv_b_proj.weight": (heads * (nope + v), kv),
        "self_attn.o_proj.weight": (hidden, heads * v),
    }
    return shapes.get(sub)
