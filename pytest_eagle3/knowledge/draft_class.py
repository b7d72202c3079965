"""What an engine's EAGLE-3 draft class holds (:class:`DraftClass`), without the tables: each engine's module
writes its own classes (``Engine.tables.draft_classes``) and :mod:`pytest_eagle3.knowledge.draft_classes` gathers them."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.rules.mla import FAMILY_LLAMA, FAMILY_MLA

LLAMA = FAMILY_LLAMA
QWEN3 = "qwen3"
MLA = FAMILY_MLA
LLAMA_ATTENTION = ("self_attn.qkv_proj.weight", "self_attn.o_proj.weight")
MLA_NORMS_AND_B = ("self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight", "self_attn.kv_a_layernorm.weight",
                   "self_attn.kv_b_proj.weight", "self_attn.o_proj.weight")


@dataclass(frozen=True)
class DraftClass:
    """One engine's EAGLE-3 draft class."""

    engine: str
    name: str
    family: str
    #: Per-layer parameters beyond the Llama decoder layer's (sub-names under ``layers.N.``).
    extra_layer_params: tuple[str, ...]
    #: Draft-config fields read, in order, for the number of aux states fc takes ("3" = fixed).
    fc_count_fields: tuple[str, ...]
    source: str
    #: The attention parameters of each layer (sub-names under ``layers.N.``).
    attention: tuple[str, ...] = LLAMA_ATTENTION
    #: Checkpoint sub-names the class's loader fuses into one parameter: (tensor, parameter, shard).
    stacked: tuple[tuple[str, str, str], ...] = ()
    #: The class's own name rewrites (None: the profile's ``renames``) and first-layer module (None: the profile's).
    renames: tuple[tuple[str, str], ...] | None = None
    first_layer: str | None = None
    #: The most layers the class builds; more raises at construction (None: the profile's ``multi_layer``).
    max_layers: int | None = None
    #: Where fc is a plain torch Linear (no quantization method, whatever the draft's quantization_config): the
    #: source line; None where fc is built as the other layers are.
    plain_fc: str | None = None
    #: The draft config model_type values the engine reaches the class with (empty: any).
    model_types: tuple[str, ...] = ()
    #: Norm flags the class reads from its config whatever the profile's rows (which describe the engine's
    #: Llama class) say.
    reads: tuple[str, ...] = ()
