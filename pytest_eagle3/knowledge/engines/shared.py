"""What the engines' modules share: the names their rows repeat, and the fc-width value several write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
@dataclass(frozen=True)
class AuxField:
    """An aux-id field an engine reads: the config ``path`` and what the engine adds to each id read there
    (DFlash / DSpark ids name the layer whose *output* is captured: ``shift=1``); ``exclusive``: where the object
    holding the field exists (``eagle_config``), the engine reads no later field, even when this one holds no ids."""

    path: str
    shift: int = 0
    exclusive: bool = False

    @property
    def parent(self) -> str:
        """The dotted path of the object holding the field (empty at the top level)."""
        return self.path.rpartition(".")[0]

    def __str__(self) -> str:
        """The field as the rows' prose writes it: ``dflash_config.target_layer_ids+1``."""
        return f"{self.path}+{self.shift}" if self.shift else self.path

    def text(self) -> str:
        """The field as a message names it: ``dflash_config.target_layer_ids (+1)``."""
        return f"{self.path} (+{self.shift})" if self.shift else self.path


class Transform(StrEnum):
    """How a target turns the aux ids it reads into the layer inputs it captures (index j: the residual stream
    entering decoder layer j)."""

    PLUS_1 = "+1"
    PLUS_1_IF_FIRST_IS_1 = "+1-if-first-is-1"
    PLUS_1_UNLESS_MAX_IS_L = "+1-unless-max-is-L"
    AS_IS = "as-is"
    AS_IS_AT_LEAST_1 = "as-is-at-least-1"  # mlx-vlm: the output of layer max(id - 1, 0)

    @property
    def may_add_one(self) -> bool:
        """Whether the rule adds 1 to some ids (the ``+1`` rules)."""
        return self in (Transform.PLUS_1, Transform.PLUS_1_IF_FIRST_IS_1, Transform.PLUS_1_UNLESS_MAX_IS_L)

    def apply(self, ids: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
        """Requested layer-input indices for configured ``ids`` (``layers``: the target's layer count; None
        when the rule needs it and it is unknown)."""
        if self is Transform.PLUS_1:
            return tuple(i + 1 for i in ids)
        if self is Transform.AS_IS:
            return tuple(ids)
        if self is Transform.AS_IS_AT_LEAST_1:
            return tuple(max(i, 1) for i in ids)
        if self is Transform.PLUS_1_IF_FIRST_IS_1:
            return tuple(i + 1 for i in ids) if ids and ids[0] == 1 else tuple(ids)
        if layers is None:  # PLUS_1_UNLESS_MAX_IS_L
            return None
        return tuple(ids) if ids and max(ids) == layers else tuple(i + 1 for i in ids)


#: Aux-id fields an engine reads, in its order.
TOP_FIELD = AuxField("eagle_aux_hidden_state_layer_ids")
EAGLE_CONFIG_FIELD = AuxField("eagle_config.eagle_aux_hidden_state_layer_ids")
#: The same, read as the only field whenever ``eagle_config`` exists (TokenSpeed).
EAGLE_CONFIG_ONLY = AuxField(EAGLE_CONFIG_FIELD.path, exclusive=True)
DFLASH_PLUS_1 = AuxField("dflash_config.target_layer_ids", 1)
ALL_FIELDS = (TOP_FIELD, EAGLE_CONFIG_FIELD, DFLASH_PLUS_1)
V2_FIELDS_0_24 = (TOP_FIELD, DFLASH_PLUS_1)
V2_FIELDS_0_25 = (*V2_FIELDS_0_24, AuxField("dspark_target_layer_ids", 1), AuxField("target_layer_ids", 1))
V2_FIELDS = (*V2_FIELDS_0_25, AuxField("dflash_config.layer_ids"), AuxField("eagle_config.layer_ids"))


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
