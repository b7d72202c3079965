"""The one corruption catalogue: its file form (a written checkpoint) and its Hypothesis form are the same
damage, diagnosed the same way, and the two public tables (FAULTS, CORRUPTIONS) are views of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_eagle3.rules.vocab_map import diagnose_vocab_map
from pytest_eagle3.testing import CATALOGUE, CORRUPTIONS, FAULTS, Corruption, SynthSpec, write_checkpoint

FILE_FORMS = [c for c in CATALOGUE if c.fault is not None]


def test_the_public_tables_are_views_of_the_catalogue() -> None:
    vocab_faults = {name: f for name, f in FAULTS.items() if f.contract == "vocab.map"}
    assert vocab_faults.keys() == {c.fault for c in FILE_FORMS}
    for c in FILE_FORMS:
        fault = FAULTS[c.fault or ""]
        assert (fault.diagnosis, fault.corruption, fault.tensors) == (c.diagnosis, c.name, c.on_draft)
    assert CORRUPTIONS == {c.name: (c.on_maps, c.diagnosis, c.needs_t2d) for c in CATALOGUE if c.on_maps}


@pytest.mark.parametrize("corruption", FILE_FORMS, ids=lambda c: c.name)
def test_the_written_fault_gets_the_diagnosis_of_its_corruption(corruption: Corruption, tmp_path: Path) -> None:
    """Write the fault into a real safetensors checkpoint, read the maps back, diagnose them."""
    from safetensors.torch import load_file

    spec = SynthSpec(producer=corruption.producers[0])
    draft = write_checkpoint(spec.with_faults(corruption.fault), tmp_path / "draft")
    tensors = load_file(str(draft / "model.safetensors"))
    findings = diagnose_vocab_map(tensors.get("d2t"), tensors.get("t2d"), spec.vocab_size, spec.draft_vocab_size)
    assert [f.code for f in findings][:1] == [corruption.diagnosis]
    good = load_file(str(write_checkpoint(spec, tmp_path / "good") / "model.safetensors"))
    assert diagnose_vocab_map(good.get("d2t"), good.get("t2d"), spec.vocab_size, spec.draft_vocab_size) == []
