"""For users' own tests: synthetic (and deliberately faulty) checkpoints, and Hypothesis strategies.

::

    from pytest_eagle3.testing import FAULTS, SynthSpec, write_checkpoint, write_target

    spec = SynthSpec(producer="specforge").with_faults("d2t-absolute")
    draft = write_checkpoint(spec, tmp_path / "draft")

Modules: :mod:`.layouts` (producer layouts), :mod:`.spec` (SynthSpec), :mod:`.configs` (config.json), :mod:`.tensors` (weights),
:mod:`.targets` (the tiny target), :mod:`.corruptions` (the one corruption catalogue),
:mod:`.faults` (file faults), :mod:`.writer` (write_checkpoint), :mod:`.strategies` (Hypothesis).
The strategies (which import torch and Hypothesis) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_eagle3.testing.corruptions import CATALOGUE, Corruption
from pytest_eagle3.testing.faults import FAULTS, Fault
from pytest_eagle3.testing.layouts import PRODUCERS, SPECFORGE_HF
from pytest_eagle3.testing.spec import SynthSpec
from pytest_eagle3.testing.targets import write_target
from pytest_eagle3.testing.writer import pickle_marker, write_checkpoint

if TYPE_CHECKING:
    from pytest_eagle3.testing.strategies import (
        CORRUPTIONS,
        CorruptedMap,
        VocabMap,
        corrupted_vocab_maps,
        full_vocab_maps,
        register_profiles,
        vocab_maps,
    )

_STRATEGIES = ("CORRUPTIONS", "CorruptedMap", "VocabMap", "corrupted_vocab_maps", "full_vocab_maps",
               "register_profiles", "vocab_maps")

__all__ = [
    "CATALOGUE", "CORRUPTIONS", "FAULTS", "PRODUCERS", "SPECFORGE_HF", "CorruptedMap", "Corruption", "Fault",
    "SynthSpec", "VocabMap", "corrupted_vocab_maps", "full_vocab_maps", "pickle_marker", "register_profiles",
    "vocab_maps", "write_checkpoint", "write_target",
]
assert set(__all__) >= set(_STRATEGIES)


def __getattr__(name: str) -> Any:
    if name in _STRATEGIES:
        from pytest_eagle3.testing import strategies

        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
