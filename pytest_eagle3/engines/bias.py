"""The bias parameters a draft's decoder layers build from its config (behaviour ``layer_bias``).

Sources: the profile rows of ``layer_bias``, ``unset_bias`` and ``unloaded_parameter`` (vllm / sglang
``models/llama.py`` LlamaDecoderLayer, ``llama_eagle3.py`` LlamaDecoderLayer's qkv_proj override,
``layers/linear.py`` bias creation). The MLA classes build their own attention (no bias read); the
vLLM Qwen3 class (``qwen3_eagle3.py``) gives only qkv_proj a bias, from ``attention_bias``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_eagle3.knowledge.snapshot import LLAMA, QWEN3

QKV, O_PROJ = "self_attn.qkv_proj.bias", "self_attn.o_proj.bias"
GATE_UP, DOWN = "mlp.gate_up_proj.bias", "mlp.down_proj.bias"


def _true(config: Mapping[str, Any], name: str) -> bool:
    return config.get(name) is True


def layer_bias(rule: str, family: str, config: Mapping[str, Any]) -> dict[str, str]:
    """Each per-layer bias parameter (sub-name under ``layers.N.``) the class builds, with the config field that
    asks for it."""
    out: dict[str, str] = {}
    if family == QWEN3:
        return {QKV: "attention_bias"} if "qkv" in rule and _true(config, "attention_bias") else {}
    if family != LLAMA:
        return {}
    if "qkv" in rule and _true(config, "attention_bias"):
        out[QKV] = "attention_bias"
    attention = next((f for f in ("attention_bias", "bias") if _true(config, f)), None)
    if attention:
        out[O_PROJ] = attention
    if "mlp" in rule and _true(config, "mlp_bias"):
        out[GATE_UP] = out[DOWN] = "mlp_bias"
    return out


def is_layer_bias(param: str) -> bool:
    """Whether an engine parameter name is one of the layers' bias parameters."""
    return param.endswith((QKV, O_PROJ, GATE_UP, DOWN))


def field_of(param: str, fields: Mapping[str, str]) -> str:
    """The config field that made the class build ``param`` (a full parameter name)."""
    return next((f for sub, f in fields.items() if param.endswith(sub)), "attention_bias")
