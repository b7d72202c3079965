"""Config edits: the format an engine reads (speculators -> flat SGLang/EAGLE style), dotted fields.

The flat form is what SGLang's ``LlamaForCausalLMEagle3`` reads and vLLM reads too
(reference/engines.md; sglang llama_eagle3.py, vllm config/speculative.py): the speculators
``transformer_layer_config`` lifted to the top level, ``architectures ['LlamaForCausalLMEagle3']``,
aux ids under ``eagle_config.eagle_aux_hidden_state_layer_ids``.
"""

from __future__ import annotations

import copy
from typing import Any

FLAT_ARCHITECTURE = "LlamaForCausalLMEagle3"
#: speculators-only fields that a flat config does not carry.
SPECULATORS_ONLY = ("speculators_model_type", "speculators_version", "speculators_config",
                    "transformer_layer_config", "eagle_aux_hidden_state_layer_ids")
#: Top-level speculators fields kept as they are in the flat form.
KEPT = ("draft_vocab_size", "norm_before_residual", "norm_before_fc", "fc_norm", "norm_output",
        "tie_word_embeddings", "target_hidden_size", "torch_dtype", "dtype")


def is_speculators(config: dict[str, Any]) -> bool:
    """Whether the config is in the speculators format."""
    return "speculators_model_type" in config or isinstance(config.get("transformer_layer_config"), dict)


def flatten_speculators(config: dict[str, Any]) -> dict[str, Any]:
    """The flat SGLang/EAGLE-style config of a speculators config (aux ids still in the speculators field
    are moved by the aux edit, which knows the convention)."""
    layer = dict(config.get("transformer_layer_config") or {})
    flat: dict[str, Any] = {**layer}
    for name in KEPT:
        if config.get(name) is not None:
            flat[name] = copy.deepcopy(config[name])
    flat["architectures"] = [FLAT_ARCHITECTURE]
    eagle = dict(config.get("eagle_config") or {})
    eagle.setdefault("use_aux_hidden_state", True)
    flat["eagle_config"] = eagle
    return flat


def get(config: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted path (``eagle_config.eagle_aux_hidden_state_layer_ids``), or None."""
    scope: Any = config
    for part in dotted.split("."):
        if not isinstance(scope, dict) or part not in scope:
            return None
        scope = scope[part]
    return scope


def put(config: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a dotted field in place (tuples written as lists)."""
    scope = config
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not isinstance(scope.get(part), dict):
            scope[part] = {}
        scope = scope[part]
    scope[parts[-1]] = list(value) if isinstance(value, tuple) else value


def layer_scope(config: dict[str, Any]) -> str:
    """Where layer fields (rope, num_hidden_layers) live: ``transformer_layer_config.`` or the top level."""
    return "transformer_layer_config." if isinstance(config.get("transformer_layer_config"), dict) else ""


#: Top-level fields a speculators config carries beside transformer_layer_config (mlx_vlm Eagle3Config's).
SPECULATORS_TOP = ("draft_vocab_size", "target_hidden_size", "tie_word_embeddings", "norm_before_residual",
                   "norm_before_fc", "torch_dtype", "dtype")


def to_speculators(config: dict[str, Any], aux_inputs: tuple[int, ...] | None) -> dict[str, Any]:
    """The speculators-format config of a flat one: its layer fields under ``transformer_layer_config``,
    ``speculators_model_type: eagle3``, and the training layer inputs as top-level ids (speculators' input-of
    convention; mlx-vlm captures the output of layer id - 1, the same layer input)."""
    layer = {k: copy.deepcopy(v) for k, v in config.items()
             if k not in (*SPECULATORS_TOP, "architectures", "eagle_config", "eagle_aux_hidden_state_layer_ids")}
    out: dict[str, Any] = {"architectures": ["Eagle3DraftModel"], "speculators_model_type": "eagle3",
                           "transformer_layer_config": layer}
    for name in SPECULATORS_TOP:
        if name in config:
            out[name] = copy.deepcopy(config[name])
    if aux_inputs is not None:
        out["eagle_aux_hidden_state_layer_ids"] = list(aux_inputs)
    return out
