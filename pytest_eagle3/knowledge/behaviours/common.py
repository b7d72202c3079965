"""What the behaviour data modules share: the span helper and the names their rows repeat."""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.table import Row

#: One behaviour row: ``(behaviour, row)``.
Span = tuple[str, Row[Any]]


def spans(engine: str, behaviour: str, *rows: tuple[str, str | None, Any, str]) -> list[Span]:
    """``(since, read_to, value, source)`` spans of one behaviour: each holds until the next starts."""
    return [(behaviour, Row(engine, since, value, source, read_to=read_to)) for since, read_to, value, source in rows]


SG_EAGLE3 = "models/llama_eagle3.py"
VL_EAGLE3 = "model_executor/models/llama_eagle3.py"
MIDLAYER_RENAMES = (("midlayer.", "layers.0."),)
SGLANG_LEGACY_RENAMES = (
    ("midlayer", "layers.0"),
    ("aux_norm_low", "fc_norm.0"),
    ("aux_norm_mid", "fc_norm.1"),
    ("aux_norm_high", "fc_norm.2"),
)
LLAMA_DRAFTS = ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3")
DEEPSEEK_DRAFTS = ("Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM")
VL_DRAFTS = ("Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM")
PEAGLE_DRAFTS = ("PEagleDraftModel", "PeagleLlamaForCausalLM")
#: Aux-id fields an engine reads, in its order; ``FIELD+1``: the engine adds 1 to the ids it reads there
#: (DFlash / DSpark ids name the layer whose *output* is captured).
TOP_FIELD = "eagle_aux_hidden_state_layer_ids"
DFLASH_PLUS_1 = "dflash_config.target_layer_ids+1"
ALL_FIELDS = (TOP_FIELD, "eagle_config.eagle_aux_hidden_state_layer_ids", DFLASH_PLUS_1)
V2_FIELDS_0_24 = (TOP_FIELD, DFLASH_PLUS_1)
V2_FIELDS_0_25 = (*V2_FIELDS_0_24, "dspark_target_layer_ids+1", "target_layer_ids+1")
V2_FIELDS = (*V2_FIELDS_0_25, "dflash_config.layer_ids", "eagle_config.layer_ids")
