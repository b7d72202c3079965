"""The one corruption catalogue: its file form (a written checkpoint) and its Hypothesis form are the same
damage, diagnosed the same way, and the two public tables (FAULTS, CORRUPTIONS) are views of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_eagle3.rules.vocab_map import diagnose_vocab_map
from pytest_eagle3.testing import CATALOGUE, CORRUPTIONS, FAULTS, Corruption, SynthSpec, write_checkpoint
from pytest_eagle3.testing.damage import FILE_FORMS, TENSOR_FORMS
from pytest_eagle3.testing.strategies import MAP_FORMS

WRITTEN = [c for c in CATALOGUE if c.fault is not None]


def test_the_public_tables_are_views_of_the_catalogue() -> None:
    vocab_faults = {name: f for name, f in FAULTS.items() if f.contract == "vocab.map"}
    assert vocab_faults.keys() == {c.fault for c in WRITTEN}
    for c in WRITTEN:
        fault = FAULTS[c.fault or ""]
        assert (fault.diagnosis, fault.corruption, fault.needs) == (c.diagnosis, c.name, c.needs)
    assert {name: (diagnosis, t2d) for name, (_, diagnosis, t2d) in CORRUPTIONS.items()} == {
        c.name: (c.diagnosis, c.needs_t2d) for c in CATALOGUE}


def test_every_file_form_does_a_fault_of_the_table_and_every_corruption_has_both_forms() -> None:
    assert set(TENSOR_FORMS).isdisjoint(FILE_FORMS) and set(TENSOR_FORMS) | set(FILE_FORMS) <= set(FAULTS)
    assert {c.fault for c in WRITTEN} <= set(TENSOR_FORMS)
    assert set(MAP_FORMS) == {c.name for c in CATALOGUE}


@pytest.mark.parametrize("corruption", WRITTEN, ids=lambda c: c.name)
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
