"""Synthetic EAGLE-3 checkpoints in every producer's layout, with injectable faults: one import for
the writer's parts (:mod:`.spec`, :mod:`.configs`, :mod:`.tensors`, :mod:`.targets`, :mod:`.faults`, :mod:`.damage`,
:mod:`.writer`).

Real safetensors (or ``pytorch_model.bin``) files, laid out as each producer writes them
(reference/producers.md §5.1). Each fault names the contract that must catch it and the
diagnosis code it must report (``FAULTS``), which the test-suite checks one by one.
"""

from __future__ import annotations

from pytest_eagle3.producers.formats import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS
from pytest_eagle3.testing.configs import draft_config, llama_fields, target_config
from pytest_eagle3.testing.corruptions import CATALOGUE, Corruption
from pytest_eagle3.testing.damage import Draft
from pytest_eagle3.testing.faults import FAULTS, Fault
from pytest_eagle3.testing.layouts import PRODUCERS, SAFETENSORS, SPECFORGE_HF, WITH_T2D
from pytest_eagle3.testing.spec import SynthSpec
from pytest_eagle3.testing.targets import write_target
from pytest_eagle3.testing.tensors import (
    decoder_layer,
    draft_tensors,
    selected_target_ids,
    target_embedding,
    vocab_maps,
)
from pytest_eagle3.testing.writer import pickle_marker, write_checkpoint

__all__ = [
    "ANGELSLIM", "CATALOGUE", "EAGLE", "FAULTS", "MODELOPT", "PRODUCERS", "SAFETENSORS", "SPECFORGE",
    "SPECFORGE_HF", "SPECULATORS", "WITH_T2D", "Corruption", "Draft", "Fault", "SynthSpec", "decoder_layer",
    "draft_config", "draft_tensors", "llama_fields", "pickle_marker", "selected_target_ids", "target_config",
    "target_embedding", "vocab_maps", "write_checkpoint", "write_target",
]
