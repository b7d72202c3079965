"""The producer layouts the synthetic writer knows; what each saves comes from the producer records."""

from __future__ import annotations

from pytest_eagle3.producers.kinds import Layout, Producer
from pytest_eagle3.producers.names import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS
from pytest_eagle3.producers.records import RECORDS

#: SpecForge's ``export --to hf`` layout (with embed_tokens), written as a producer of its own.
SPECFORGE_HF = "specforge-hf"
#: Every layout the writer knows.
PRODUCERS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, EAGLE, MODELOPT, ANGELSLIM)


def record_of(layout: str) -> Producer:
    """The producer record a layout follows (specforge-hf: SpecForge's)."""
    return RECORDS[SPECFORGE if layout == SPECFORGE_HF else layout]


def tensor_layout(layout: str) -> Layout:
    """How the layout's producer saves its tensors."""
    found = record_of(layout).layout
    assert found is not None, f"the {layout} record has no tensor layout"
    return found


def saves_embed(layout: str) -> bool:
    """The layout saves embed_tokens (SpecForge: only its ``export --to hf``)."""
    return bool(tensor_layout(layout).saves_embed) or layout == SPECFORGE_HF


#: Layouts that save t2d beside d2t (ModelOpt saves d2t only).
WITH_T2D = tuple(p for p in PRODUCERS if tensor_layout(p).saves_t2d)
#: Layouts that save safetensors (EAGLE saves pytorch_model.bin).
SAFETENSORS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, MODELOPT, ANGELSLIM)
