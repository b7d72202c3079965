"""What each producer (speculators, SpecForge, EAGLE, ModelOpt, AngelSlim, TorchSpec, DeepSpec) writes.

One :class:`Producer` record per producer (:data:`RECORDS`, in :mod:`.records`): its detection
signals, aux-id convention, key layout, d2t order, the tensors it omits, its norm-flag defaults and
its habits, each with a source. :mod:`.formats` detects and normalises from the records,
:mod:`.habits` applies the habits, :mod:`.rope` is the one reader of a config's rope.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from pytest_eagle3.producers.formats import DetectedFormat, DraftConfig, detect_format, normalise_config
    from pytest_eagle3.producers.habits import EXPORT_BUGS, EXTRA_FILES, NORM_HABITS, ROPE_HABITS, TRAINED_FIELDS
    from pytest_eagle3.producers.kinds import Layout, Producer
    from pytest_eagle3.producers.records import RECORDS
    from pytest_eagle3.producers.rope import Rope, RopeKey, config_rope, forward_rope, served_rope

#: Where each lazily loaded name lives (the idle plugin imports only :mod:`.names`).
_LAZY = {
    **dict.fromkeys(("DetectedFormat", "DraftConfig", "detect_format", "normalise_config"), "formats"),
    **dict.fromkeys(("EXPORT_BUGS", "EXTRA_FILES", "NORM_HABITS", "ROPE_HABITS", "TRAINED_FIELDS"), "habits"),
    **dict.fromkeys(("Layout", "Producer"), "kinds"),
    "RECORDS": "records",
    **dict.fromkeys(("Rope", "RopeKey", "config_rope", "forward_rope", "served_rope"), "rope"),
}

__all__ = [
    "ANGELSLIM", "DEEPSPEC", "EAGLE", "EXPORT_BUGS", "EXTRA_FILES", "INPUT_OF", "MODELOPT", "NORM_HABITS", "OUTPUT_OF",
    "RECORDS", "ROPE_HABITS", "SPECFORGE", "SPECULATORS", "TORCHSPEC", "TRAINED_FIELDS", "UNKNOWN", "DetectedFormat",
    "DraftConfig", "Layout", "Producer", "Rope", "RopeKey", "config_rope", "detect_format", "forward_rope",
    "normalise_config", "served_rope",
]
assert set(__all__) >= set(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
