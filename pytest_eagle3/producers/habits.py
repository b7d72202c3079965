"""Every producer's own fields and habits, read from its released source: views of the producer
records (:mod:`.records`), and the functions that apply them.

The tables, each row with its source (file, function, release):

* :data:`TRAINED_FIELDS`: config fields a producer's training reads (so the draft was trained with
  their value) that no engine version reads. The engine hard-wires one behaviour instead; when the
  value differs from it, the draft runs unlike it was trained.
* :data:`ROPE_HABITS`: how a producer builds the draft's rotary embedding from the config it writes.
  Both engines apply the config's ``rope_theta`` / ``rope_scaling`` (profile behaviour ``draft_rope``);
  a producer that trained with another rope serves a draft whose attention positions differ.
* :data:`NORM_HABITS`, :data:`EXPORT_BUGS`: norms only a producer's forward applies; tensors an export writes
  wrongly.
* :data:`EXTRA_FILES`: what an export or a trainer leaves beside the weights. Never executed here
  (pickles are not loaded at all); reported so that a user knows what the engine reads.

Where a producer keeps aux ids under its own field name, :mod:`pytest_eagle3.producers.formats` reads
them as the training ids (``PRODUCER_AUX_FIELDS``) and ``engine.aux_layers`` judges them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_eagle3.producers.kinds import (
    ExportBug,
    ExtraFile,
    NormHabit,
    NormOutputReading,
    RopeHabit,
    TrainedField,
)
from pytest_eagle3.producers.names import (
    ANGELSLIM,
    EAGLE,
    MODELOPT,
    SPECFORGE,
    SPECULATORS,
    TORCHSPEC,
    UNKNOWN,
)
from pytest_eagle3.producers.records import RECORDS
from pytest_eagle3.producers.rope import Rope, RopeKey, config_rope, served_rope

TRAINED_FIELDS: tuple[TrainedField, ...] = tuple(row for r in RECORDS.values() for row in r.trained_fields)
ROPE_HABITS: dict[str, RopeHabit] = {r.name: r.rope for r in RECORDS.values() if r.rope is not None}
NORM_HABITS: dict[str, NormHabit] = {r.name: r.norm_habit for r in RECORDS.values() if r.norm_habit is not None}
EXPORT_BUGS: dict[str, ExportBug] = {r.name: r.export_bug for r in RECORDS.values() if r.export_bug is not None}
EXTRA_FILES: tuple[ExtraFile, ...] = tuple(row for r in RECORDS.values() for row in r.extra_files)

#: How ``norm_output`` is read when a producer's record says nothing (speculators' forward).
DEFAULT_NORM_OUTPUT = NormOutputReading(
    (True, False), (True, True),
    "speculators 0.9.0 core.py forward: lm_head(norm(h)); norm_output also feeds norm(h) back")


def norm_output_reading(producer: str) -> NormOutputReading:
    """How ``producer``'s forward reads ``norm_output`` (its record's reading, else speculators')."""
    record = RECORDS.get(producer)
    return record.norm_output if record is not None and record.norm_output is not None else DEFAULT_NORM_OUTPUT


def unread_fields(producer: str, config: Mapping[str, Any]) -> list[tuple[TrainedField, Any]]:
    """The trained fields of ``producer`` whose value differs from what every engine hard-wires."""
    rows = [row for row in TRAINED_FIELDS if row.producer == producer and row.engine_value is not None]
    return [(row, row.value(config)) for row in rows if row.value(config) != row.engine_value]


# ---------------------------------------------------------------- embedding

#: Whether a producer trains the draft's own embed_tokens (True) or keeps a frozen copy of the target's (False).
EMBED_TRAINED: dict[str, tuple[bool, str]] = {
    SPECULATORS: (False, ("speculators 0.4.0-0.9.0 models/eagle3/core.py:68 embed_tokens.weight.requires_grad = "
                          "config.embed_requires_grad (default False, models/eagle3/config.py:84; 0.3.0 has no field)")),
    SPECFORGE: (False, ("specforge 0.2.0 algorithms/model_providers.py:111 draft_model.freeze_embedding() "
                        "(modeling/draft/base.py:128)")),
    EAGLE: (False, "SafeAILab/EAGLE eagle/traineagle3/cnets.py Model.__init__ freezes embed_tokens (reference notes)"),
    MODELOPT: (False, ("nvidia-modelopt 0.47.0 torch/export/plugins/hf_spec_export.py: the export has no embed_tokens "
                       "(the draft embeds with the base model's)")),
    ANGELSLIM: (False, "angelslim 0.5.0 train/trainer/eagle3_trainer.py drops every key containing 'embed' on save"),
}
#: The config field that says a speculators draft trained its own embedding.
EMBED_FIELD = "embed_requires_grad"


def embed_habits(producer: str, config: Mapping[str, Any]) -> list[tuple[bool, str]]:
    """(trains its own embed_tokens?, source) for the producer, or for every producer on record when unknown;
    speculators' ``embed_requires_grad`` written in the config is evidence, not a habit."""
    if producer == SPECULATORS and isinstance(config.get(EMBED_FIELD), bool):
        return [(bool(config[EMBED_FIELD]), f"config.json {EMBED_FIELD} (speculators core.py:68 reads it)")]
    if producer == UNKNOWN:
        return list(EMBED_TRAINED.values())
    return [EMBED_TRAINED[producer]] if producer in EMBED_TRAINED else []


# ---------------------------------------------------------------- rope

def trained_rope(producer: str, config: Mapping[str, Any]) -> tuple[Rope, RopeHabit] | None:
    """The rope ``producer`` trained with when it differs from the config's, with the habit that says so."""
    habit = ROPE_HABITS.get(producer)
    rope = habit.trained(config) if habit is not None else None
    if habit is None or rope is None or rope.same_as(config_rope(config)):
        return None
    return rope, habit


# ---------------------------------------------------------------- files beside the weights

#: Suffixes of files that hold pickles (never loaded by this plugin unless they are the weights).
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle")
#: Files every HF-style draft folder has; not worth naming.
ORDINARY = ("config.json", "generation_config.json", "model.safetensors.index.json", "pytorch_model.bin.index.json",
            "tokenizer", "special_tokens_map.json", "README.md", ".")
#: Files this plugin writes beside the weights, and what they are.
OURS = {"eagle3-fix.json": "the record of python -m pytest_eagle3 fix, which wrote this copy"}


def beside_weights(files: Iterable[Path], weights: tuple[Path, ...], producer: str) -> list[str]:
    """The files next to the weights (``files``: the checkpoint folder's), each with what it is (the producer's
    own rows first). Nothing is opened."""
    rows = sorted(EXTRA_FILES, key=lambda r: r.producer != producer)
    found = []
    for path in sorted(p for p in files if p not in weights):
        if path.name.startswith(ORDINARY):
            continue
        row = next((r for r in rows if path.name.startswith(r.name)), None)
        pickle = row.pickle if row is not None else path.suffix in PICKLE_SUFFIXES
        what = f"{row.what}, {row.producer}" if row is not None else OURS.get(path.name, "unknown to the producer tables")
        found.append(f"{path.name} ({what}{'; a pickle, never loaded here' if pickle else ''})")
    return found

__all__ = [
    "DEFAULT_NORM_OUTPUT",
    "EMBED_TRAINED",
    "EXPORT_BUGS",
    "EXTRA_FILES",
    "NORM_HABITS",
    "PICKLE_SUFFIXES",
    "ROPE_HABITS",
    "TORCHSPEC",
    "TRAINED_FIELDS",
    "ExportBug",
    "ExtraFile",
    "NormHabit",
    "NormOutputReading",
    "Rope",
    "RopeHabit",
    "RopeKey",
    "TrainedField",
    "beside_weights",
    "config_rope",
    "embed_habits",
    "norm_output_reading",
    "served_rope",
    "trained_rope",
    "unread_fields",
]
