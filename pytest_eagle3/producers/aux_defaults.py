"""The aux layers a producer trains on when nobody names them: its default, per producer release.

A draft whose config.json names no aux ids was trained on its producer's default, a function of the
target's layer count N. Each :class:`AuxDefault` row says, for the releases ``since`` (inclusive) to ``until``
(exclusive), which ids the producer picks (``ids``, written over N), what an id means (``meaning``: the input of
decoder layer id, or its output), and the source line it was read from. A checkpoint names its producer's release
only where the producer writes it (:data:`RELEASE_FIELDS`); otherwise every release of the producer is a candidate.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_eagle3.producers.formats import ruled_out
from pytest_eagle3.producers.names import (
    ANGELSLIM,
    EAGLE,
    INPUT_OF,
    MODELOPT,
    OUTPUT_OF,
    SPECFORGE,
    SPECULATORS,
    TORCHSPEC,
    UNKNOWN,
)
from pytest_eagle3.producers.records import RECORDS

#: One id over N: a constant, or N, N//2 or (N+1)//2 plus an offset.
TERM = re.compile(r"^(?:(?P<base>N|N//2|\(N\+1\)//2)(?P<offset>[+-]\d+)?|(?P<const>\d+))$")
#: The config field in which a producer writes its own release (the others write none).
RELEASE_FIELDS: dict[str, str] = {SPECULATORS: "speculators_version", TORCHSPEC: "_torchspec_version"}


def _term(text: str, layers: int) -> int:
    found = TERM.match(text)
    if found is None:
        raise ValueError(f"aux default term {text!r} is not N, N//2 or (N+1)//2 plus an offset, or a constant")
    if found["const"] is not None:
        return int(found["const"])
    base = {"N": layers, "N//2": layers // 2, "(N+1)//2": (layers + 1) // 2}[found["base"]]
    return base + int(found["offset"] or 0)


@dataclass(frozen=True)
class AuxDefault:
    """``producer``'s default training aux layers from release ``since`` until ``until`` (None: every release on
    record, or no end)."""

    producer: str
    since: str | None
    until: str | None
    ids: tuple[str, ...]
    meaning: str
    source: str
    #: The ids are clamped at 0 and deduplicated (ModelOpt >= 0.35: ``sorted({1, max(0, ...), ...})``).
    clamped: bool = False
    #: The converter that carried a head trained with this default into another producer's format
    #: (``Provenance.label``); empty for the producer's own training.
    via: str = ""

    def __post_init__(self) -> None:
        if self.meaning not in (INPUT_OF, OUTPUT_OF):
            raise ValueError(f"{self.producer} {self.since}: meaning {self.meaning!r} is neither {INPUT_OF} nor {OUTPUT_OF}")
        for term in self.ids:
            _term(term, 8)
        if len(self.source.strip()) < 10:
            raise ValueError(f"{self.producer} {self.since}: a row needs a source line")

    def written(self, layers: int) -> tuple[int, ...]:
        """The ids the producer picks for an N-layer target, as it writes them."""
        ids = [_term(t, layers) for t in self.ids]
        return tuple(sorted({max(0, i) for i in ids})) if self.clamped else tuple(ids)

    def inputs(self, layers: int) -> tuple[int, ...]:
        """The layer inputs those ids name (index j: the residual stream entering decoder layer j)."""
        shift = 1 if self.meaning == OUTPUT_OF else 0
        return tuple(sorted({i + shift for i in self.written(layers)}))

    @property
    def rule(self) -> str:
        """``[1, N//2-1, N-4], each the output of layer id``."""
        what = "the output of layer id" if self.meaning == OUTPUT_OF else "the input of layer id"
        return f"[{', '.join(self.ids)}], each {what}"

    @property
    def releases(self) -> str:
        """The releases the row covers, in words."""
        if self.since is None:
            return f"before {self.until}" if self.until else "every release on record"
        return f"{self.since} up to {self.until}" if self.until else f">= {self.since}"

    @property
    def who(self) -> str:
        """``eagle (every release on record), converted by speculators convert (before 0.3.0, ...)``."""
        return f"{self.producer} ({self.releases})" + (f", converted by {self.via}" if self.via else "")

    def covers(self, release: Version) -> bool:
        """Whether the producer's ``release`` falls in this default's range."""
        return (self.since is None or Version(self.since) <= release) and (
            self.until is None or release < Version(self.until))


MODELOPT_HOOK = "register_forward_hook on the base model's layers[id] (the output of layer id)"

#: Every producer's default training aux layers, oldest release first.
AUX_DEFAULTS: tuple[AuxDefault, ...] = (
    AuxDefault(SPECULATORS, "0.3.0", "0.5.0", ("2", "N//2", "N-3"), OUTPUT_OF,
               "speculators 0.3.0-0.4.0 data_generation/vllm_hidden_states_generator.py layer_ids = [2, N//2, N-3, "
               "N-1] (the last is the verifier's own state: train/data.py hidden_states[:-1]); "
               "data_generation/custom_worker.py appends hidden_states + residual after running layer idx"),
    AuxDefault(SPECULATORS, "0.5.0", None, ("2", "N//2", "N-3"), INPUT_OF,
               "speculators 0.5.0-0.9.0 models/utils.py resolve_target_layer_ids [2, N//2, N-3], captured by vLLM's "
               "extract_hidden_states (id k = the input of decoder layer k)"),
    AuxDefault(SPECFORGE, None, "0.2.0", ("1", "N//2-1", "N-4"), OUTPUT_OF,
               "SpecForge legacy trainer (git 20e2e3f0) target_capture_policy.py Eagle3CapturePolicy: "
               "register_forward_hook on layers[id] (reference notes; the 0.1.0 sdist does not build here)"),
    AuxDefault(SPECFORGE, "0.2.0", None, ("1", "N//2-1", "N-4"), OUTPUT_OF,
               "specforge 0.2.0 algorithms/model_providers.py:204 resolve_eagle_capture_layers [1, N//2-1, N-4], "
               "passed to SGLang set_eagle3_layers_to_capture, which adds +1 (offline_capture/sglang_backend/"
               "capture.py:87)"),
    AuxDefault(EAGLE, None, None, ("2", "N//2", "N-3"), INPUT_OF,
               "SafeAILab/EAGLE eagle/traineagle3/modeling_llama_kv.py LlamaModel.forward: hidden_states kept before "
               "layer idx for idx == 2, N//2, N-3 (ids hard-coded, never written)"),
    AuxDefault(MODELOPT, "0.29.0", "0.35.0", ("1", "N//2-1", "N-4"), OUTPUT_OF,
               "nvidia-modelopt 0.29.0-0.33.0 torch/speculative/plugins/megatron.py:742 "
               "_set_default_aux_hidden_state_layers; the hook keeps the layer whose layer_number - 1 is an id "
               "(the HF plugin has no EAGLE-3 aux states before 0.35; no EAGLE-3 before 0.29)"),
    AuxDefault(MODELOPT, "0.35.0", None, ("1", "N//2-1", "N-4"), OUTPUT_OF,
               "nvidia-modelopt 0.35.0-0.47.0 torch/speculative/plugins/transformers.py "
               "_set_default_aux_hidden_state_layers (0.45.0+: plugins/hf_eagle.py:58 default_eagle_aux_layer_ids "
               f"sorted({{1, max(0, N//2-1), max(0, N-4)}})), {MODELOPT_HOOK}", clamped=True),
    AuxDefault(ANGELSLIM, "0.2.0", "0.3.0", ("1", "(N+1)//2-1", "N-3"), OUTPUT_OF,
               "angelslim 0.2.0-0.2.2 compressor/speculative/train/models/target/target_model_wrapper.py:92-98 "
               "out_hidden_nums = len(outputs.hidden_states) (N + 1 with the embeddings): [1, (N+1)//2-1, N+1-4], "
               "read at hidden_states[id + 1]"),
    AuxDefault(ANGELSLIM, "0.3.0", None, ("1", "N//2-1", "N-4"), OUTPUT_OF,
               "angelslim 0.3.0-0.5.0 target_model_wrapper.py _get_default_aux_layer_ids(num_hidden_layers) "
               "[1, N//2-1, N-4], read at hidden_states[id + 1] (0.5.0 vLLM backend: forward hooks on layers[id])"),
)


def release_of(producer: str, config: Mapping[str, Any]) -> Version | None:
    """The producer release the config names (speculators_version, _torchspec_version), else None."""
    field = RELEASE_FIELDS.get(producer)
    value = config.get(field) if field else None
    try:
        return Version(str(value)) if isinstance(value, str) and value else None
    except InvalidVersion:
        return None


def candidate_defaults(producer: str, config: Mapping[str, Any],
                       keys: Collection[str] | None = None) -> tuple[AuxDefault, ...]:
    """The rows that may have applied: those covering the release the config names, else every row of the
    producer, else (producer unknown) every row of every producer the checkpoint does not rule out (given its
    tensor names ``keys``: ``formats.ruled_out``, a field it never writes or a mark all its checkpoints show)."""
    if producer == UNKNOWN:
        if keys is None:
            return AUX_DEFAULTS
        names = set(keys)
        return tuple(r for r in AUX_DEFAULTS if ruled_out(r.producer, config, names) is None)
    rows = tuple(r for r in AUX_DEFAULTS if r.producer == producer)
    release = release_of(producer, config)
    own = tuple(r for r in rows if r.covers(release)) if release is not None else rows
    return own + converted_defaults(producer, release, config, set(keys or ()))


def _in_range(since: str | None, until: str | None, release: Version) -> bool:
    return (since is None or Version(since) <= release) and (until is None or release < Version(until))


def converted_defaults(producer: str, release: Version | None, config: Mapping[str, Any],
                       keys: set[str]) -> tuple[AuxDefault, ...]:
    """The defaults of the trainers whose heads ``producer``'s converter (at ``release``, else at any release) carries
    into its format, each marked with the converter (``AuxDefault.via``): a converted head was trained on them. None
    where the config shows what only the producer's trainer writes (``Provenance.trained_signs``)."""
    record = RECORDS.get(producer)
    found: list[AuxDefault] = []
    for prov in record.provenance if record is not None else ():
        if release is not None and not _in_range(prov.since, prov.until, release):
            continue
        if not prov.converted(config, keys):
            continue
        via = prov.label if release is not None else f"{producer} convert (release not named)"
        found += [dataclasses.replace(r, via=via) for r in AUX_DEFAULTS if r.producer in prov.converts_from]
    return tuple(dict.fromkeys(found))


def markdown_table() -> str:
    """The table as docs/readings.md shows it (tests/test_producer_defaults.py checks the doc against it)."""
    lines = ["| producer | releases | default ids (N: the target's layers) | layer inputs for N = 32 | source |",
             "|---|---|---|---|---|"]
    for row in AUX_DEFAULTS:
        lines.append(f"| {row.producer} | {row.releases} | {row.rule} | {list(row.inputs(32))} | {row.source} |")
    return "\n".join(lines)
