"""Producer formats: which trainer wrote a checkpoint, and its config in one normalised shape.

Detection and normalisation read the producer records (:mod:`.records`, one per producer); the tables
below are views of them, kept for the modules that import them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_eagle3.producers.kinds import FlagDefault, FormatSignal, Signal
from pytest_eagle3.producers.names import (
    ANGELSLIM,
    CONVENTIONS,
    DEEPSPEC,
    EAGLE,
    INPUT_OF,
    MODELOPT,
    OUTPUT_OF,
    SPECFORGE,
    SPECULATORS,
    SPECULATORS_MARKERS,
    TORCHSPEC,
    UNKNOWN,
    Config,
    architectures,
    eagle_config,
    is_speculators,
    layer_config,
    lookup,
)
from pytest_eagle3.producers.records import MODELOPT_EAGLE_CONFIG_KEYS, RECORDS

FIRST_LAYER_PREFIXES = ("midlayer.", "layers.0.", "model.midlayer.", "model.layers.0.")
LAYER_KEY = re.compile(r"^(?:model\.)?layers\.(\d+)\.")
LEFTOVER_PREFIXES = ("draft_model.", "eagle_module.", "module.")

#: The default aux layers when a config names none: inputs of layers 2, L//2 and L-3 (no +1), the same in
#: both engines and in the producers that follow them. Source: sglang models/llama.py
#: set_eagle3_layers_to_capture, vllm model_executor/models/interfaces.py
#: get_eagle3_default_aux_hidden_state_layers, EAGLE traineagle3 modeling_llama_kv.py.
DEFAULT_AUX_RULE = "inputs of layers 2, L//2, L-3"


def default_aux_inputs(layers: int) -> tuple[int, ...]:
    """The default aux layers (see :data:`DEFAULT_AUX_RULE`) as layer-input indices, for ``layers`` layers."""
    return (2, layers // 2, layers - 3)


#: Every detection signal, producer by producer in record (tie-break) order.
FORMAT_SIGNALS: tuple[FormatSignal, ...] = tuple(s for r in RECORDS.values() for s in r.signals)
#: The aux-layer id convention each producer writes. Source: reference/producers.md §5.3.
PRODUCER_AUX_CONVENTION: dict[str, tuple[str, str]] = {
    r.name: r.aux_convention for r in RECORDS.values() if r.aux_convention is not None
}
#: Aux layer ids a producer keeps under its own field name. They are the training ids; ``engine.aux_layers``
#: compares them with what is fed. No engine reads AngelSlim's name; vLLM's model runner V2 reads DeepSpec's
#: ``target_layer_ids`` (adding 1) from 0.25 (knowledge/engines/shared.py V2_FIELDS_0_25); elsewhere the engine uses its defaults.
PRODUCER_AUX_FIELDS: dict[str, tuple[str, str]] = {r.name: r.aux_field for r in RECORDS.values() if r.aux_field}
#: Norm flags and their defaults when a config omits them, per producer (what the producer's
#: own forward does). Source lines name the code that sets each default.
NORM_FLAG_DEFAULTS: dict[str, Mapping[str, FlagDefault]] = {
    r.name: r.norm_defaults for r in RECORDS.values() if r.norm_defaults is not None
}
GENERIC_NORM_DEFAULTS: dict[str, FlagDefault] = {
    "norm_before_residual": (False, "EAGLE-3 reference forward: residual is the raw hidden state"),
    "norm_before_fc": (False, "EAGLE-3 reference forward: fc takes the raw concatenation"),
    "fc_norm": (False, "EAGLE-3 reference forward: no per-chunk norm"),
    "norm_output": (False, "EAGLE-3 reference forward: raw hidden fed back"),
}
#: Config fields a producer never writes: finding one contradicts a detection from a shared layout
#: (then producer and aux-id convention are unknown). Source: reference/producers.md §2.4, §4.1.
NEVER_WRITES: dict[str, tuple[tuple[str, str], ...]] = {r.name: r.never_writes for r in RECORDS.values() if r.never_writes}

__all__ = [
    "ANGELSLIM",
    "CONVENTIONS",
    "DEEPSPEC",
    "DEFAULT_AUX_RULE",
    "EAGLE",
    "FIRST_LAYER_PREFIXES",
    "FORMAT_SIGNALS",
    "GENERIC_NORM_DEFAULTS",
    "INPUT_OF",
    "LAYER_KEY",
    "LEFTOVER_PREFIXES",
    "MODELOPT",
    "MODELOPT_EAGLE_CONFIG_KEYS",
    "NEVER_WRITES",
    "NORM_FLAG_DEFAULTS",
    "OUTPUT_OF",
    "PRODUCER_AUX_CONVENTION",
    "PRODUCER_AUX_FIELDS",
    "SPECFORGE",
    "SPECULATORS",
    "SPECULATORS_MARKERS",
    "TORCHSPEC",
    "UNKNOWN",
    "AuxLayers",
    "Candidates",
    "Config",
    "DetectedFormat",
    "DraftConfig",
    "FormatSignal",
    "Signal",
    "candidate_producers",
    "contradicted",
    "default_aux_inputs",
    "detect_format",
    "eagle_config",
    "first_layer_prefix",
    "is_speculators",
    "layer_count",
    "lookup",
    "normalise_config",
    "ruled_out",
]


@dataclass(frozen=True)
class DetectedFormat:
    """The producer that most likely wrote the checkpoint, with the evidence for it."""

    producer: str
    evidence: tuple[str, ...]
    variant: str = ""
    #: The aux-id convention a record states for these very files (a fixed copy's), and where: over the producer's.
    convention: tuple[str, str] | None = None

    @property
    def label(self) -> str:
        """The format in words: ``specforge (SGLang export, no embed_tokens)``."""
        return f"{self.producer} ({self.variant})" if self.variant else self.producer


def detect_format(config: Config, keys: set[str], files: tuple[Path, ...]) -> DetectedFormat:
    """Score every producer by the signals of its record that fire and keep the strongest (ties: record order)."""
    scores: dict[str, int] = {}
    evidence: dict[str, list[str]] = {}
    for signal in (s for record in RECORDS.values() for s in record.signals):
        if signal.test(config, keys, files):
            scores[signal.producer] = scores.get(signal.producer, 0) + signal.weight
            evidence.setdefault(signal.producer, []).append(signal.evidence)
    if not scores:
        return DetectedFormat(UNKNOWN, ())
    producer = max(scores, key=lambda p: scores[p])
    record = RECORDS[producer]
    contradictions = [f"but config.json has top-level {name}, which {producer} never writes ({source}): "
                      "producer and aux-id convention unknown"
                      for name, source in record.never_writes if config.get(name) is not None]
    if contradictions:
        return DetectedFormat(UNKNOWN, (*evidence[producer], *contradictions))
    variant = record.variant(keys) if record.variant is not None else ""
    return DetectedFormat(producer, tuple(evidence[producer]), variant)


@dataclass(frozen=True)
class Candidates:
    """The producers that may have written a checkpoint, and why: one when evidence unique to it identifies
    it, else the detected one and every producer the fired signals name as sharing that layout."""

    producers: tuple[str, ...]
    identified: bool
    why: str


def contradicted(producer: str, config: Config) -> str | None:
    """The config field ``producer`` never writes that the config has (with the rule), else None."""
    record = RECORDS.get(producer)
    for name, source in record.never_writes if record is not None else ():
        if config.get(name) is not None:
            return f"config.json has {name}, which {producer} never writes ({source})"
    return None


def ruled_out(producer: str, config: Config, keys: set[str], files: tuple[Path, ...] = ()) -> str | None:
    """Why a checkpoint cannot be ``producer``'s (a field it never writes, a mark every one of its checkpoints shows
    missing), else None: the producer stays a plausible reading of a checkpoint whose producer is unknown."""
    against = contradicted(producer, config)
    if against is not None:
        return against
    record = RECORDS.get(producer)
    for mark in record.marks if record is not None else ():
        if not mark.test(config, keys, files):
            return f"no {mark.evidence}, which every {producer} checkpoint has ({mark.source})"
    return None


def candidate_producers(config: Config, keys: set[str], files: tuple[Path, ...],
                        detected: DetectedFormat) -> Candidates:
    """Who may have written the checkpoint (:class:`Candidates`). A producer's habits apply alone only when
    one of its signals that fired is unique to it (``FormatSignal.shared_with`` empty); a shared layout is
    judged under each producer that writes it, less those the config contradicts (``never_writes``)."""
    if detected.producer == UNKNOWN:
        return Candidates((UNKNOWN,), False, "no producer's signals fire" if not detected.evidence
                          else "; ".join(detected.evidence[-1:]))
    fired = [s for s in RECORDS[detected.producer].signals if s.test(config, keys, files)]
    unique = [s for s in fired if s.unique]
    if unique:
        return Candidates((detected.producer,), True, f"{unique[0].evidence} (unique to {detected.producer})")
    producers = [detected.producer]
    notes = []
    for signal in fired:
        for other in signal.shared_with:
            if other in producers:
                continue
            against = contradicted(other, config) if other != UNKNOWN else None
            if against is None:
                producers.append(other)
                notes.append(f"{signal.evidence}: {other} writes it too ({signal.shared_source})")
            else:
                notes.append(f"not {other}: {against}")
    shared = len(producers) > 1
    return Candidates(tuple(producers), not shared,
                      "; ".join(dict.fromkeys(notes)) if notes
                      else f"{detected.producer}: no other producer shares its layout")


@dataclass(frozen=True)
class AuxLayers:
    """Aux hidden-state layer ids, the config field they came from, and what they mean."""

    ids: tuple[int, ...] | None
    field: str | None
    convention: str | None
    convention_source: str
    all_fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The convention is stated for these very files (a fixed copy's record), not the producer's habit.
    stated: bool = False

    def convention_on(self, layers: int | None) -> str | None:
        """The ids' convention on a target of ``layers`` decoder layers: the ids' own where they settle it
        (:meth:`settled_on`), else the stated one or the producer's habit (None: unknown)."""
        return INPUT_OF if self.settled_on(layers) else self.convention

    def convention_source_on(self, layers: int | None) -> str:
        """Where :meth:`convention_on` comes from, in words."""
        return BOUNDARY_SOURCE.format(layers=layers) if self.settled_on(layers) else self.convention_source

    def settled_on(self, layers: int | None) -> bool:
        """An id equal to L settles the reading: "the output of layer L" does not exist (ModelOpt's hook on
        ``layers[L]`` would raise, AngelSlim's ``hidden_states[L + 1]`` too), so every id is a hidden-state boundary,
        id k the state entering layer k and id L the last layer's output (SGLang models/gpt_oss.py
        set_eagle3_layers_to_capture keeps such ids as given, v0.5.17 #32334; nvidia-modelopt 0.47.0's online hook
        loop plugins/hf_eagle.py:404-406 never reaches layers[L], and its vLLM streaming route
        plugins/hf_streaming_dataset.py:590-597 takes a top aux layer equal to the final layer as the base's final
        hidden state, final_aux_is_base_hidden). Decided before any reading is
        enumerated; a stated convention is kept, and an id past L is invalid under every reading (target.consistent).
        """
        return (not self.stated and self.convention != INPUT_OF and bool(self.ids) and layers is not None
                and max(self.ids or ()) == layers)


#: Why ids whose largest is L are read as hidden-state boundaries (:meth:`AuxLayers.settled_on`).
BOUNDARY_SOURCE = ("the largest id is L = {layers}: no layer has output L, so the ids are hidden-state boundaries "
                   "(id k = the input of layer k, id L = the last layer's output; SGLang models/gpt_oss.py "
                   "set_eagle3_layers_to_capture reads them so)")


@dataclass(frozen=True)
class DraftConfig:
    """The config of any producer format, normalised; ``sources`` says where each value came from."""

    architectures: tuple[str, ...]
    model_type: str | None
    hidden_size: int | None
    target_hidden_size: int | None
    vocab_size: int | None
    draft_vocab_size: int | None
    num_hidden_layers: int | None
    num_attention_heads: int | None
    num_key_value_heads: int | None
    head_dim: int | None
    intermediate_size: int | None
    aux: AuxLayers
    norm_flags: dict[str, bool]
    first_layer_prefix: str | None
    layer_count: int
    sources: dict[str, str]
    problems: tuple[str, ...]


def _int_field(
    scopes: Iterable[tuple[Mapping[str, Any], str]], name: str, sources: dict[str, str],
    problems: list[str], alias: str | None = None,
) -> int | None:
    for scope, prefix in scopes:
        for key in (name, alias) if alias else (name,):
            if key is None or key not in scope or scope[key] is None:
                continue
            value = scope[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems.append(f"config.json {prefix}{key} = {value!r} is not a non-negative integer")
                return None
            sources[name] = f"config.json {prefix}{key}"
            return value
    return None


def _aux_layers(config: Config, producer: str, problems: list[str],
                stated: tuple[str, str] | None = None) -> AuxLayers:
    candidates = {
        "eagle_aux_hidden_state_layer_ids": config.get("eagle_aux_hidden_state_layer_ids"),
        "eagle_config.eagle_aux_hidden_state_layer_ids": eagle_config(config).get(
            "eagle_aux_hidden_state_layer_ids"
        ),
    }
    own = RECORDS[producer].aux_field if producer in RECORDS else None
    if own is not None:
        candidates[own[0]] = config.get(own[0])
    present = {k: v for k, v in candidates.items() if v is not None}
    record = RECORDS.get(producer)
    convention, convention_source = stated or (record.aux_convention if record is not None and record.aux_convention
                                               else (None, "producer unknown"))
    for name, value in present.items():
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            problems.append(f"config.json {name} = {value!r} is not a list of integers")
            return AuxLayers(None, name, convention, convention_source, present)
    if not present:
        return AuxLayers(None, None, convention, convention_source, present)
    name, value = next(iter(present.items()))
    return AuxLayers(tuple(value), name, convention, convention_source, present, stated is not None)


def _norm_flags(config: Config, producer: str, sources: dict[str, str]) -> dict[str, bool]:
    record = RECORDS.get(producer)
    defaults = record.norm_defaults if record is not None and record.norm_defaults else GENERIC_NORM_DEFAULTS
    flags = {}
    for name, (default, source) in defaults.items():
        value, field = config.get(name), name
        if not isinstance(value, bool):
            value, field = eagle_config(config).get(name), f"eagle_config.{name}"
        if isinstance(value, bool):
            flags[name] = value
            sources[name] = f"config.json {field}"
        else:
            flags[name] = default
            sources[name] = f"default: {source}"
    return flags


def first_layer_prefix(keys: Iterable[str]) -> str | None:
    """The key prefix of the draft's first decoder layer (``midlayer.`` or ``layers.0.``)."""
    names = set(keys)
    for prefix in FIRST_LAYER_PREFIXES:
        if any(k.startswith(prefix) for k in names):
            return prefix
    return None


def layer_count(keys: Iterable[str]) -> int:
    """How many decoder layers the tensors describe."""
    names = list(keys)
    indices = {int(m.group(1)) for k in names if (m := LAYER_KEY.match(k))}
    has_mid = any(k.startswith(("midlayer.", "model.midlayer.")) for k in names)
    return max(indices, default=-1) + 1 + (1 if has_mid and 0 not in indices else 0)


def normalise_config(config: Config, detected: DetectedFormat, tensor_names: Iterable[str]) -> DraftConfig:
    """Read the fields every contract needs from whichever place this producer puts them."""
    sources: dict[str, str] = {}
    problems: list[str] = []
    layer, prefix = layer_config(config)
    scopes = [(layer, prefix), (config, "")] if prefix else [(config, "")]
    ints = {
        name: _int_field(scopes, name, sources, problems)
        for name in (
            "hidden_size", "vocab_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "intermediate_size",
        )
    }
    draft_vocab = _int_field([(config, "")], "draft_vocab_size", sources, problems, alias="truncated_vocab_size")
    if draft_vocab is None and ints["vocab_size"] is not None:
        draft_vocab = ints["vocab_size"]
        sources["draft_vocab_size"] = (
            "config.json draft_vocab_size is null: engines use the full vocab"
            if "draft_vocab_size" in config
            else "not in config.json: defaults to vocab_size"
        )
    target_hidden = _int_field([(config, "")], "target_hidden_size", sources, problems)
    if target_hidden is None and ints["hidden_size"] is not None:
        target_hidden = ints["hidden_size"]
        sources["target_hidden_size"] = "not in config.json: defaults to hidden_size"
    model_type = layer.get("model_type", config.get("model_type"))
    keys = set(tensor_names)
    return DraftConfig(
        architectures=architectures(config),
        model_type=str(model_type) if model_type is not None else None,
        hidden_size=ints["hidden_size"],
        target_hidden_size=target_hidden,
        vocab_size=ints["vocab_size"],
        draft_vocab_size=draft_vocab,
        num_hidden_layers=ints["num_hidden_layers"],
        num_attention_heads=ints["num_attention_heads"],
        num_key_value_heads=ints["num_key_value_heads"],
        head_dim=ints["head_dim"],
        intermediate_size=ints["intermediate_size"],
        aux=_aux_layers(config, detected.producer, problems, detected.convention),
        norm_flags=_norm_flags(config, detected.producer, sources),
        first_layer_prefix=first_layer_prefix(keys),
        layer_count=layer_count(keys),
        sources=sources,
        problems=tuple(problems),
    )
