"""Area ``layers``: the engine's draft class as it builds itself for this config.

A pure function of the fact sheet, the profile and the draft class. Read top-down:

1. :func:`plan_layers`, the area: the layer count the class builds (a multi-layer draft refused, or cut to one
   layer), and the :class:`DraftShape` area ``keys`` resolves the checkpoint against: fc (the aux-state count it is
   built for, its bias), lm_head, embed_tokens, d2t, the class's attention layout and loader rules.
2. The norm flags as the class builds and applies them (:func:`class_flags`, from the class rows of
   ``knowledge.draft_class_rows``): which norm modules the shape has; area ``norms`` judges what they do, and
   area ``keys`` the modules a class loads and never reaches.
3. Per-layer bias (behaviour ``layer_bias``): the bias parameters the decoder layers build from config fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.engines.facts import FactSheet, lookup
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import (
    FLAG_FIELDS,
    LLAMA,
    LLAMA_ATTENTION,
    LLAMA_COUNT,
    QWEN3,
    READ,
    SGLANG,
    UNUSED,
    DraftClass,
    Row,
    Snapshot,
)


# ---------------------------------------------------------------- the area
@dataclass(frozen=True)
class DraftShape:
    """What the engine builds, from the config as the engine reads it."""

    layers: int
    norm_before_fc: bool
    fc_norm_count: int
    fc_bias: bool
    has_fc: bool
    has_lm_head: bool
    has_embed: bool
    has_d2t: bool
    #: Per-layer parameters the engine's draft class adds to the Llama layer (draft_classes.py).
    extra_layer_params: tuple[str, ...] = ()
    #: The class's attention parameters, fused tensors, renames and first-layer module (draft_classes.py).
    attention: tuple[str, ...] = LLAMA_ATTENTION
    stacked: tuple[tuple[str, str, str], ...] = ()
    renames: tuple[tuple[str, str], ...] | None = None
    first_layer: str | None = None
    #: Per-layer bias parameters the config asks for, with the field that does (behaviour layer_bias, below).
    layer_bias: tuple[tuple[str, str], ...] = ()
    #: The source line where the class builds fc as a plain torch Linear, never quantized (draft_classes.py).
    plain_fc: str | None = None
    #: Whether the class's loader skips input_norm.* when it builds no input_norm (its class row,
    #: knowledge.draft_class_rows); None: the profile's norm_before_fc row says.
    input_norm_skipped: bool | None = None
    #: The class's own loader rule for a tensor no parameter has, and its source (its class row,
    #: knowledge.draft_class_rows ``unknown_key``); None: the profile's ``unknown_key`` row says.
    unknown_key: tuple[str, str] | None = None


@dataclass(frozen=True)
class Layers:
    """What the draft class builds: its shape, its layer count, and the aux-state count fc is built for."""

    shape: DraftShape
    draft_layers: int
    fc_states: int
    filed: Filed = field(default_factory=Filed)


#: A scanned class's layer count (knowledge.draft_class_rows ``layer_count``) as the profile's multi_layer value.
_CLASS_LAYERS = {"one": "one-layer", "config": "supported", "one-or-raise": "refused"}
#: A scanned class's loader rule for a tensor no parameter has (``unknown_key``) as the profile's value; an
#: ``engine-loader`` class defers to the engine's generic loader, which the profile's row describes.
_CLASS_UNKNOWN_KEY = {"skipped": "drop", "raises": "raise"}


def plan_layers(sheet: FactSheet, snapshot: Snapshot, draft_class: str | None) -> Layers:
    """What ``draft_class`` builds in ``snapshot``'s engine for this config (area ``layers``)."""
    out = Filing()
    config = sheet.config
    layers = sheet.num_hidden_layers or 1
    klass = snapshot.any_draft_class(draft_class)
    scanned = snapshot.class_row(draft_class, "layer_count")
    by_class = bool(klass and klass.max_layers == 1)
    rule = "refused" if by_class else _CLASS_LAYERS.get(scanned.value, snapshot.behaviours.multi_layer) \
        if scanned is not None else snapshot.behaviours.multi_layer
    layer_rule = f"rule: {scanned.source}" if scanned is not None else \
        f"rule: {klass.source}" if by_class and klass else f"rule: {snapshot.source('multi_layer')}"
    if layers != 1 and rule == "refused":
        out.refuse("layers", Finding(
            "multi-layer",
            f"{snapshot.label} builds one-layer EAGLE-3 drafts only: num_hidden_layers={layers} raises "
            + snapshot.kind.loading.one_layer_error,
            (Evidence("config.json num_hidden_layers", str(layers), "1"),),
            "train a one-layer draft" if by_class
            else f"serve with {snapshot.serve_with('multi_layer', lambda v: v == 'supported', engine=SGLANG)}, or train a one-layer draft",
            (layer_rule,),
        ))
    in_checkpoint = sheet.layer_count
    if rule == "one-layer" and in_checkpoint > 1:
        out.refuse("layers", Finding(
            "multi-layer",
            f"{snapshot.label} builds one draft layer whatever num_hidden_layers says; the checkpoint has "
            f"{in_checkpoint}: loading layers.1.* raises KeyError",
            (Evidence("draft layers", str(in_checkpoint), "1"),),
            f"serve with {snapshot.serve_with('multi_layer', lambda v: v == 'supported')}, or train a one-layer draft",
            (layer_rule,),
        ))
    built = 1 if rule in ("refused", "one-layer") else layers
    use_aux = sheet.use_aux_hidden_state
    has_fc = not (use_aux is False and snapshot.behaviours.use_aux_hidden_state == "honoured"
                  and snapshot.kind.loading.fc_without_aux == "disabled")
    count = _fc_state_count(snapshot, config, klass)
    fc_bias_rule = snapshot.behaviours.fc_bias
    has_lm_head = not (snapshot.kind.loading.ties_lm_head_to_embed and sheet.tie_word_embeddings) and not (
        snapshot.behaviours.lm_head_source == "draft-else-embed" and not any("lm_head" in t for t in sheet.tensors))
    has_embed = snapshot.behaviours.embed_source != "target-always-key-raises"  # vLLM 0.8.5's rows: no module
    has_d2t = not (snapshot.behaviours.d2t_full_vocab in ("refused", "ignored") and sheet.full_vocab)
    flags = class_flags(sheet, snapshot, draft_class)
    input_norm = flags.rows.get("norm_before_fc")
    loader = snapshot.class_row(draft_class, "unknown_key")
    own_loader = (_CLASS_UNKNOWN_KEY[loader.value], loader.source) \
        if loader is not None and loader.value in _CLASS_UNKNOWN_KEY else None
    shape = DraftShape(
        layers=built,
        norm_before_fc=flags.built["norm_before_fc"],
        fc_norm_count=count if flags.built["fc_norm"] else 0,
        input_norm_skipped=None if input_norm is None else input_norm.value != "not-read",
        unknown_key=own_loader,
        fc_bias=fc_bias_rule == "always" or (fc_bias_rule == "config.bias" and sheet.bias),
        has_fc=has_fc,
        has_lm_head=has_lm_head,
        has_embed=has_embed,
        has_d2t=has_d2t,
        extra_layer_params=klass.extra_layer_params if klass else (),
        layer_bias=tuple(_layer_bias(snapshot.behaviours.layer_bias, klass.family if klass else LLAMA,
                                    config).items()),
        **_class_layout(klass),
    )
    return Layers(shape, built, count, out.filed())


def _class_layout(klass: DraftClass | None) -> dict[str, Any]:
    if klass is None:
        return {}
    return {"attention": klass.attention, "stacked": klass.stacked, "renames": klass.renames,
            "first_layer": klass.first_layer, "plain_fc": klass.plain_fc}


def _fc_state_count(snapshot: Snapshot, config: Any, klass: DraftClass | None) -> int:
    """The aux-state count fc is built for: the fields the draft class reads, in its order."""
    if snapshot.behaviours.fc_aux_count == "3":
        return 3
    for name in klass.fc_count_fields if klass else LLAMA_COUNT:
        value = lookup(config, name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if isinstance(value, list) and value:
            return len(value)
    return 3


# ---------------------------------------------------------------- the norm flags the class builds and applies
# As one draft class of one release builds and applies them (knowledge.draft_class_rows). Where the source scan read
# the class, its rows decide: a flag the class does not read is off whatever the config says; a module the class
# builds and loads but never uses on its forward path ("loaded, not applied") is built (its tensors load) and not
# applied; a flag the class reads is applied as its fields say in the config the class sees (the fact sheet's, already
# turned from a speculators config the way the engine does, so what the engine drops there the class never sees).
# Where no scan covers the class (TensorRT-LLM, llama.cpp, a release newer than every one read without a row) the
# engine-level rows decide, as the fact sheet resolved them.

@dataclass(frozen=True)
class ClassFlags:
    """Per norm flag: applied on the forward path, built (its tensors load), how the class reads it, its row."""

    applied: Mapping[str, bool]
    built: Mapping[str, bool]
    notes: Mapping[str, str]
    #: The class's row per flag, where the scan read the class.
    rows: Mapping[str, Row[str]]

    def unused(self, name: str) -> bool:
        """The class builds and loads the flag's module (or reads the flag) and never applies it."""
        row = self.rows.get(name)
        return row is not None and row.value == UNUSED


def class_flags(sheet: FactSheet, snapshot: Snapshot, draft_class: str | None) -> ClassFlags:
    """The norm flags of ``draft_class`` at ``snapshot``'s release (the engine-level ones where no scan covers it)."""
    applied: dict[str, bool] = {}
    built: dict[str, bool] = {}
    notes: dict[str, str] = {}
    rows: dict[str, Row[str]] = {}
    klass = snapshot.draft_class(draft_class)
    own = klass.reads if klass is not None else ()
    for name, engine_applied in sheet.flags.items():
        row = snapshot.class_row(draft_class, name)
        if row is None:
            value = _configured(sheet.config, _names(name)) if name in own else engine_applied
            applied[name], built[name], notes[name] = value, value, sheet.flag_notes[name]
            continue
        rows[name] = row
        fields = _fields(snapshot, draft_class, name)
        configured = _configured(sheet.config, fields)
        if row.value == READ:
            applied[name], built[name] = configured, configured
            notes[name] = f"{draft_class} reads {' / '.join(fields)} ({row.source})"
        elif row.value == UNUSED:
            applied[name], built[name] = False, configured and name in FLAG_FIELDS
            notes[name] = f"{draft_class} builds and loads it, never applies it: loaded, not applied ({row.source})"
        else:
            applied[name], built[name] = False, False
            notes[name] = f"not read by {draft_class} ({row.source})"
    return ClassFlags(applied, built, notes, rows)


def _names(name: str) -> tuple[str, ...]:
    return (name, "use_aux_norm") if name == "fc_norm" else (name,)


def _fields(snapshot: Snapshot, draft_class: str | None, name: str) -> tuple[str, ...]:
    """The config fields that gate the flag's module in this class (eagle_config's first: it wins where both are
    written); the flag's own name where the class reads it into an attribute."""
    behaviour = FLAG_FIELDS.get(name)
    row = snapshot.class_row(draft_class, behaviour) if behaviour else None
    fields = tuple(row.value) if row is not None and row.value else (name,)
    return tuple(sorted(fields, key=lambda f: (not f.startswith("eagle_config."), f)))


def _configured(config: Mapping[str, object], fields: tuple[str, ...]) -> bool:
    """The first field written decides (eagle_config over the top level); fc_norm and use_aux_norm are or-ed."""
    alternatives = [f for f in fields if f in ("fc_norm", "use_aux_norm")]
    if len(alternatives) > 1:
        return any(bool(lookup(config, f)) for f in alternatives)
    for name in fields:
        value = lookup(config, name)
        if value is not None:
            return bool(value)
    return False


# ---------------------------------------------------------------- per-layer bias (behaviour layer_bias)
# The bias parameters the decoder layers build from the config. Sources: the profile rows of ``layer_bias``,
# ``unset_bias`` and ``unloaded_parameter`` (vllm / sglang ``models/llama.py`` LlamaDecoderLayer, ``llama_eagle3.py``
# LlamaDecoderLayer's qkv_proj override, ``layers/linear.py`` bias creation). The MLA classes build their own
# attention (no bias read); the vLLM Qwen3 class (``qwen3_eagle3.py``) gives only qkv_proj a bias, from
# ``attention_bias``.

_QKV, _O_PROJ = "self_attn.qkv_proj.bias", "self_attn.o_proj.bias"
_GATE_UP, _DOWN = "mlp.gate_up_proj.bias", "mlp.down_proj.bias"


def _true(config: Mapping[str, Any], name: str) -> bool:
    return config.get(name) is True


def _layer_bias(rule: str, family: str, config: Mapping[str, Any]) -> dict[str, str]:
    """Each per-layer bias parameter (sub-name under ``layers.N.``) the class builds, with the config field that
    asks for it."""
    out: dict[str, str] = {}
    if rule == "none":
        return out
    if family == QWEN3:
        return {_QKV: "attention_bias"} if "qkv" in rule and _true(config, "attention_bias") else {}
    if family != LLAMA:
        return {}
    if "qkv" in rule and _true(config, "attention_bias"):
        out[_QKV] = "attention_bias"
    attention = next((f for f in ("attention_bias", "bias") if _true(config, f)), None)
    if attention:
        out[_O_PROJ] = attention
    if "mlp" in rule and _true(config, "mlp_bias"):
        out[_GATE_UP] = out[_DOWN] = "mlp_bias"
    return out


def is_layer_bias(param: str) -> bool:
    """Whether an engine parameter name is one of the layers' bias parameters."""
    return param.endswith((_QKV, _O_PROJ, _GATE_UP, _DOWN))


def field_of(param: str, fields: Mapping[str, str]) -> str:
    """The config field that made the class build ``param`` (a full parameter name)."""
    return next((f for sub, f in fields.items() if param.endswith(sub)), "attention_bias")
