"""The producer layouts the synthetic writer knows, and which of them save what."""

from __future__ import annotations

from pytest_eagle3.producers.formats import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS

#: SpecForge's ``export --to hf`` layout (with embed_tokens), written as a producer of its own.
SPECFORGE_HF = "specforge-hf"
#: Every layout the writer knows.
PRODUCERS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, EAGLE, MODELOPT, ANGELSLIM)
#: Layouts that save t2d beside d2t (ModelOpt saves d2t only).
WITH_T2D = (SPECULATORS, SPECFORGE, SPECFORGE_HF, EAGLE, ANGELSLIM)
#: Layouts that save safetensors (EAGLE saves pytorch_model.bin).
SAFETENSORS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, MODELOPT, ANGELSLIM)
