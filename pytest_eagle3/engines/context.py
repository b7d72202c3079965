"""The context length an engine derives from a config, and the rope types it builds: pure helpers.

Both engines size a model's context from its config alone when no flag says otherwise; the draft's
derived length is also the length of its rotary table (its ``cos_sin_cache`` rows), which is why a
draft config with a smaller ``max_position_embeddings`` than its target's context matters
(:mod:`pytest_eagle3.engines.serving`).

* SGLang (``utils/hf_transformers/common.py`` ``get_context_length``, 0.4.4.post2-0.5.23 read): the
  first of ``max_sequence_length``, ``seq_length``, ``max_seq_len``, ``model_max_length``,
  ``max_position_embeddings``, times ``rope_scaling.factor`` unless the rope has
  ``original_max_position_embeddings`` or is ``llama3``.
* vLLM (``config/model.py`` ``_get_and_verify_max_len``, 0.11.0 and 0.27.0 read): the smallest of its
  possible keys, times the rope factor except for ``su`` / ``longrope`` / ``llama3``; ``yarn`` starts
  from ``original_max_position_embeddings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_eagle3.knowledge.snapshot import Engine

SGLANG_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
VLLM_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
             "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
#: Rope types whose rotary table is sized by max_position_embeddings alone (vllm 0.33.0 config/speculative.py
#: _CACHE_ONLY_ROPE_TYPES): raising it changes nothing but the table's length.
CACHE_ONLY_ROPE_TYPES = frozenset({"default", "linear", "llama3", "ntk", "proportional"})


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def rope_parameters(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The rope parameter sets of a config (``rope_scaling`` or ``rope_parameters``, nested per layer type or not)."""
    rope = config.get("rope_scaling") or config.get("rope_parameters")
    if not isinstance(rope, Mapping) or not rope:
        return ()
    if all(isinstance(v, Mapping) for v in rope.values()):
        return tuple(rope.values())
    return (rope,)


def rope_types(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The rope type of each parameter set (``type`` in older configs); ``default`` without one."""
    found = tuple(str(p.get("rope_type") or p.get("type") or "default") for p in rope_parameters(config))
    return found or ("default",)


def _factor(params: Mapping[str, Any]) -> float:
    factor = params.get("factor", 1)
    return float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0 else 1.0


def context_length(config: Mapping[str, Any], engine: Engine) -> int | None:
    """The context ``engine`` derives from ``config``; None when no key is written (the engine then takes a default)."""
    params = rope_parameters(config)
    if engine.context_rule == "first-key-scaled":
        base = next((v for v in (_positive(config.get(k)) for k in SGLANG_KEYS) if v is not None), None)
        if base is None:
            return None
        first = params[0] if params else {}
        scale = 1.0 if (not first or "original_max_position_embeddings" in first
                        or first.get("rope_type") == "llama3") else _factor(first)
        return int(scale * base)
    present = [v for v in (_positive(config.get(k)) for k in VLLM_KEYS) if v is not None]
    if not present:
        return None
    derived: float = min(present)
    for p in params:
        kind = str(p.get("rope_type") or p.get("type") or "default")
        if kind in ("su", "longrope", "llama3"):
            continue
        if kind == "yarn" and _positive(p.get("original_max_position_embeddings")) is not None:
            derived = p["original_max_position_embeddings"]
        derived *= _factor(p)
        break
    return int(derived)
