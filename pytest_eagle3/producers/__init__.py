"""What each producer (speculators, SpecForge, EAGLE, ModelOpt, AngelSlim, TorchSpec, DeepSpec) writes.

One :class:`Producer` record per producer (:data:`RECORDS`, in :mod:`.records`): its detection
signals, aux-id convention, key layout, d2t order, the tensors it omits, its norm-flag defaults and
its habits, each with a source. :mod:`.formats` detects and normalises from the records,
:mod:`.habits` applies the habits, :mod:`.rope` is the one reader of a config's rope.
"""

from __future__ import annotations

from pytest_eagle3.producers.formats import DetectedFormat, DraftConfig, detect_format, normalise_config
from pytest_eagle3.producers.habits import EXPORT_BUGS, EXTRA_FILES, NORM_HABITS, ROPE_HABITS, TRAINED_FIELDS
from pytest_eagle3.producers.kinds import Layout, Producer
from pytest_eagle3.producers.names import (
    ANGELSLIM,
    DEEPSPEC,
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
from pytest_eagle3.producers.rope import Rope, RopeKey, config_rope, forward_rope, served_rope

__all__ = [
    "EXPORT_BUGS", "EXTRA_FILES", "NORM_HABITS", "ROPE_HABITS", "TRAINED_FIELDS",
    "ANGELSLIM", "DEEPSPEC", "EAGLE", "INPUT_OF", "MODELOPT", "OUTPUT_OF", "RECORDS", "SPECFORGE", "SPECULATORS",
    "TORCHSPEC", "UNKNOWN", "DetectedFormat", "DraftConfig", "Layout", "Producer", "Rope", "RopeKey",
    "config_rope", "detect_format", "forward_rope", "normalise_config", "served_rope",
]
