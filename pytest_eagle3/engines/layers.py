"""Area ``layers``: what the engine's draft class builds for this config (its shape, its layer count, the
aux-state count fc is built for). A pure function of the fact sheet and the profile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.engines.bias import layer_bias
from pytest_eagle3.engines.class_flags import class_flags
from pytest_eagle3.engines.facts import FactSheet, lookup
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import LLAMA, LLAMA_ATTENTION, LLAMA_COUNT, SGLANG, DraftClass, Snapshot


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
    #: Per-layer bias parameters the config asks for, with the field that does (behaviour layer_bias, bias.py).
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
CLASS_LAYERS = {"one": "one-layer", "config": "supported", "one-or-raise": "refused"}
#: A scanned class's loader rule for a tensor no parameter has (``unknown_key``) as the profile's value; an
#: ``engine-loader`` class defers to the engine's generic loader, which the profile's row describes.
CLASS_UNKNOWN_KEY = {"skipped": "drop", "raises": "raise"}


def plan_layers(sheet: FactSheet, snapshot: Snapshot, draft_class: str | None) -> Layers:
    """What ``draft_class`` builds in ``snapshot``'s engine for this config (area ``layers``)."""
    out = Filing()
    config = sheet.config
    layers = sheet.num_hidden_layers or 1
    klass = snapshot.any_draft_class(draft_class)
    scanned = snapshot.class_row(draft_class, "layer_count")
    by_class = bool(klass and klass.max_layers == 1)
    rule = "refused" if by_class else CLASS_LAYERS.get(scanned.value, snapshot.behaviours.multi_layer) \
        if scanned is not None else snapshot.behaviours.multi_layer
    layer_rule = f"rule: {scanned.source}" if scanned is not None else \
        f"rule: {klass.source}" if by_class and klass else f"rule: {snapshot.source('multi_layer')}"
    if layers != 1 and rule == "refused":
        out.refuse("layers", Finding(
            "multi-layer",
            f"{snapshot.label} builds one-layer EAGLE-3 drafts only: num_hidden_layers={layers} raises "
            + snapshot.kind.one_layer_error,
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
                  and snapshot.kind.fc_without_aux == "disabled")
    count = fc_state_count(snapshot, config, klass)
    fc_bias_rule = snapshot.behaviours.fc_bias
    has_lm_head = not (snapshot.kind.ties_lm_head_to_embed and sheet.tie_word_embeddings) and not (
        snapshot.behaviours.lm_head_source == "draft-else-embed" and not any("lm_head" in t for t in sheet.tensors))
    has_embed = snapshot.behaviours.embed_source != "target-always-key-raises"  # vLLM 0.8.5's rows: no module
    has_d2t = not (snapshot.behaviours.d2t_full_vocab in ("refused", "ignored") and sheet.full_vocab)
    flags = class_flags(sheet, snapshot, draft_class)
    input_norm = flags.rows.get("norm_before_fc")
    loader = snapshot.class_row(draft_class, "unknown_key")
    own_loader = (CLASS_UNKNOWN_KEY[loader.value], loader.source) \
        if loader is not None and loader.value in CLASS_UNKNOWN_KEY else None
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
        layer_bias=tuple(layer_bias(snapshot.behaviours.layer_bias, klass.family if klass else LLAMA,
                                    config).items()),
        **_class_layout(klass),
    )
    return Layers(shape, built, count, out.filed())


def _class_layout(klass: DraftClass | None) -> dict[str, Any]:
    if klass is None:
        return {}
    return {"attention": klass.attention, "stacked": klass.stacked, "renames": klass.renames,
            "first_layer": klass.first_layer, "plain_fc": klass.plain_fc}


def fc_state_count(snapshot: Snapshot, config: Any, klass: DraftClass | None) -> int:
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
