"""What the engines' modules share: the names their rows repeat, and the fc-width value several write."""

from __future__ import annotations

from enum import StrEnum


class FcAuxCount(StrEnum):
    """How the draft class sizes ``fc``: 3 aux states always, or the count its config fields give
    (the fields and their order: :attr:`~pytest_eagle3.knowledge.draft_classes.DraftClass.fc_count_fields`)."""

    FIXED_3 = "3"
    FROM_CONFIG = "from-config"


SG_EAGLE3 = "models/llama_eagle3.py"
VL_EAGLE3 = "model_executor/models/llama_eagle3.py"
MIDLAYER_RENAMES = (("midlayer.", "layers.0."),)
SGLANG_LEGACY_RENAMES = (
    ("midlayer", "layers.0"),
    ("aux_norm_low", "fc_norm.0"),
    ("aux_norm_mid", "fc_norm.1"),
    ("aux_norm_high", "fc_norm.2"),
)
#: Aux-id fields an engine reads, in its order; ``FIELD+1``: the engine adds 1 to the ids it reads there
#: (DFlash / DSpark ids name the layer whose *output* is captured).
TOP_FIELD = "eagle_aux_hidden_state_layer_ids"
DFLASH_PLUS_1 = "dflash_config.target_layer_ids+1"
ALL_FIELDS = (TOP_FIELD, "eagle_config.eagle_aux_hidden_state_layer_ids", DFLASH_PLUS_1)
V2_FIELDS_0_24 = (TOP_FIELD, DFLASH_PLUS_1)
V2_FIELDS_0_25 = (*V2_FIELDS_0_24, "dspark_target_layer_ids+1", "target_layer_ids+1")
V2_FIELDS = (*V2_FIELDS_0_25, "dflash_config.layer_ids", "eagle_config.layer_ids")


#: What a hand-read capture row says a target class does (the values of ``knowledge.capture.Support``).
CAPTURES, REFUSED, SILENT = "captures", "refused", "silent-no-capture"
#: The KV-cache grouping of an engine whose draft has its own pool (``knowledge.runtime.KvGrouping``).
SEPARATE_POOL = "separate-pool"
#: A confirmation cell with no evidence of that kind (``knowledge.confirmation.NO``), followed by why not.
NO = "no"
#: The live-GPU cell of an engine whose GPU checks are written but not run (``knowledge.confirmation``).
GPU_READY = f"{NO}: not run yet (tests/test_gpu.py and scripts/gpu-check.sh are ready for one)"
#: The KV-cache groupings the engines' rows name (the values of ``knowledge.runtime.KvGrouping``).
EQUAL_PAGE, UNIFORM_TYPE_ELSE_EQUAL = "equal-page", "uniform-type-else-equal-page"
UNIFORM_TYPE_ELSE_DIVISIBLE, UNIFORM_TYPE_ELSE_PADDED = "uniform-type-else-divisible", "uniform-type-else-padded"
#: The fc-count fields of the Llama draft classes, in their order (``DraftClass.fc_count_fields``).
LLAMA_COUNT = ("num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids")
