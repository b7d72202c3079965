"""The kinds of producer knowledge, each a frozen row with its source; :mod:`.records` fills them in,
one :class:`Producer` record per producer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_eagle3.producers.names import Config, lookup
from pytest_eagle3.producers.rope import Rope

#: A detection test: (config.json, tensor names, weight files) -> does the signal fire?
Signal = Callable[[Config, set[str], tuple[Path, ...]], bool]
#: A norm flag's default when the config omits it: (value, source).
FlagDefault = tuple[bool, str]


@dataclass(frozen=True)
class FormatSignal:
    """One observation that points at a producer, with its weight and where the rule comes from."""

    producer: str
    weight: int
    evidence: str
    test: Signal
    source: str
    #: Producers whose checkpoints show this signal too (a layout they share; ``unknown``: trainers not
    #: named); empty when the signal is unique to ``producer``. Only a unique signal identifies a producer
    #: well enough for its habits to apply alone; a shared one is judged under each producer it names.
    shared_with: tuple[str, ...] = ()
    shared_source: str = ""
    #: The config.json keys whose presence fires the signal: each must be one no other producer's export writes
    #: (``SHARED_CONFIG_KEYS``; tests/test_producer_keys.py reads every producer's released code for them).
    keys: tuple[str, ...] = ()

    @property
    def unique(self) -> bool:
        """No other producer's checkpoints show this signal."""
        return not self.shared_with


@dataclass(frozen=True)
class Mark:
    """Something every checkpoint of ``producer`` shows, in every release on record: a checkpoint without it
    was not written by that producer, so none of that producer's habits is a plausible reading of it."""

    producer: str
    evidence: str
    test: Signal
    source: str
    #: The config.json keys whose presence the mark tests (as ``FormatSignal.keys``).
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layout:
    """How a producer lays out the tensors it saves."""

    #: Key prefix of the first decoder layer (``midlayer.`` or ``layers.0.``).
    first_layer: str
    #: Saves t2d beside d2t.
    saves_t2d: bool
    #: Order of the draft ids in d2t: ``by id`` (sorted target ids) or ``by frequency`` (rank).
    d2t_order: str
    #: Saves the maps even when the draft keeps the whole vocab (zeros / all True).
    maps_at_full_vocab: bool
    #: Saves embed_tokens (a copy of the target's); None: depends on the export.
    saves_embed: bool | None
    #: Tensors it leaves out, with why.
    omits: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class TrainedField:
    """A config field ``producer`` trains with that no engine version reads.

    ``engine_value`` is the behaviour every engine hard-wires, written as the field's value; a draft
    whose value (or ``default`` when absent) differs runs in the engine unlike it was trained.
    """

    producer: str
    field: str
    default: Any
    engine_value: Any
    trained: str
    engine: str
    source: str

    def value(self, config: Mapping[str, Any]) -> Any:
        """The value the producer trained with: the config's, else the producer's default."""
        found = lookup(config, self.field)
        return self.default if found is None else found


@dataclass(frozen=True)
class RopeHabit:
    """How ``producer`` built the draft's rope in training, given the config it wrote."""

    producer: str
    trained: Callable[[Mapping[str, Any]], Rope | None]
    why: str
    certain: bool
    source: str


@dataclass(frozen=True)
class NormHabit:
    """A norm ``producer``'s forward applies that no engine applies: ``tensor`` (under the first layer's
    prefix) scales the fc output before ``hidden_norm`` in training. Harmless when its weight is uniform
    (an RMSNorm of a uniformly scaled normalised vector is the vector)."""

    producer: str
    tensor: str
    trained: str
    source: str


@dataclass(frozen=True)
class NormOutputReading:
    """How a producer's forward reads ``norm_output``: (logits through the final norm?, normed state fed
    back to the next step?) for the flag False and True."""

    off: tuple[bool, bool]
    on: tuple[bool, bool]
    source: str


@dataclass(frozen=True)
class ExportBug:
    """A producer's export writes a tensor wrongly whenever ``when`` (read from its code) holds."""

    producer: str
    code: str
    when: str
    wrong: str
    fix: str
    source: str


@dataclass(frozen=True)
class ExtraFile:
    """A file a producer leaves beside the draft's weights (``name`` is a prefix or an exact name)."""

    producer: str
    name: str
    what: str
    pickle: bool
    source: str


@dataclass(frozen=True)
class Provenance:
    """How releases ``since`` (inclusive) to ``until`` (exclusive) of ``producer`` come to write a draft: its own
    trainer (``trains``), its converter from the checkpoints of ``converts_from`` (their trainers' conventions ride
    along: a converted head was trained on its original trainer's layers), or both. None: no bound on record."""

    producer: str
    since: str | None
    until: str | None
    trains: bool
    converts_from: tuple[str, ...]
    #: What the converter writes of the original's aux layers, in words.
    writes: str
    source: str
    #: What only the trainer writes: a checkpoint that shows one of these was trained, not converted.
    trained_signs: tuple[Mark, ...] = ()

    def converted(self, config: Config, keys: set[str], files: tuple[Path, ...] = ()) -> bool:
        """The converter may have written this checkpoint (no sign that only the trainer leaves shows)."""
        return bool(self.converts_from) and not any(sign.test(config, keys, files) for sign in self.trained_signs)

    @property
    def label(self) -> str:
        """``speculators convert (before 0.3.0, no trainer in the release)``."""
        span = (f"{self.since} up to {self.until}" if self.since and self.until else f"before {self.until}"
                if self.until else f">= {self.since}" if self.since else "every release on record")
        return f"{self.producer} convert ({span}{'' if self.trains else ', no trainer in the release'})"


@dataclass(frozen=True)
class Producer:
    """Everything known about one producer: how to recognise its checkpoints, what it writes and how,
    and the habits in which its training differs from what the engines serve."""

    name: str
    #: Detection signals (format detection sums their weights per producer).
    signals: tuple[FormatSignal, ...]
    #: Aux-layer id convention (INPUT_OF / OUTPUT_OF) and its source; None when unknown.
    aux_convention: tuple[str, str] | None = None
    #: A config field of its own holding the aux ids (name, source).
    aux_field: tuple[str, str] | None = None
    #: Norm flags' defaults when the config omits them (what its own forward does); None: the generic ones.
    norm_defaults: Mapping[str, FlagDefault] | None = None
    #: Top-level config fields it never writes (name, source): finding one contradicts the detection.
    never_writes: tuple[tuple[str, str], ...] = ()
    #: What every checkpoint it writes shows: a checkpoint without one is not its (rules it out as a reading).
    marks: tuple[Mark, ...] = ()
    #: The variant label of a detected checkpoint, from its tensor names ("" for none).
    variant: Callable[[set[str]], str] | None = None
    layout: Layout | None = None
    norm_output: NormOutputReading | None = None
    trained_fields: tuple[TrainedField, ...] = ()
    rope: RopeHabit | None = None
    norm_habit: NormHabit | None = None
    export_bug: ExportBug | None = None
    extra_files: tuple[ExtraFile, ...] = field(default_factory=tuple)
    #: Per release range: does it train, convert, or both (a converted head keeps its original trainer's habits).
    provenance: tuple[Provenance, ...] = ()
