"""The producer records are what detection and the rope reading use: each producer's checkpoint is
recognised by its own record's signals, and the reference forward runs the rope the engines serve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.producers import RECORDS, served_rope
from pytest_eagle3.testing import PRODUCERS, SynthSpec, write_checkpoint
from pytest_eagle3.testing.layouts import record_of


@pytest.mark.parametrize("layout", PRODUCERS)
def test_each_layout_is_detected_by_its_own_records_signals(layout: str, tmp_path: Path) -> None:
    ckpt = Checkpoint.open(write_checkpoint(SynthSpec(producer=layout), tmp_path / layout))
    record = record_of(layout)
    assert ckpt.format.producer == record.name
    assert set(ckpt.format.evidence) <= {s.evidence for s in record.signals}
    assert ckpt.config.aux.convention == (record.aux_convention or ("",))[0]


def test_every_record_row_has_a_source() -> None:
    for record in RECORDS.values():
        rows: list[Any] = [*record.signals, *record.trained_fields, *record.extra_files]
        rows += [row for row in (record.rope, record.norm_habit, record.export_bug, record.layout,
                                 record.norm_output) if row is not None]
        assert all(row.source for row in rows), record.name
        assert record.aux_convention is None or record.aux_convention[1], record.name
        assert all(source for _, source in (record.norm_defaults or {}).values()), record.name


ROPES = [
    {"rope_parameters": {"rope_type": "linear", "factor": 2.0}},  # no rope_theta inside: the config's (500000)
    {"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512,
                         "rope_theta": 20000.0}},
    {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
]


@pytest.mark.parametrize("rope", ROPES, ids=lambda r: next(iter(r.values()))["rope_type"])
def test_the_reference_forward_runs_the_rope_the_engines_serve(rope: dict[str, Any], tmp_path: Path) -> None:
    """One reader: the forward's theta and rope type are the served rope's (a transformers-5
    ``rope_parameters`` without ``rope_theta`` included)."""
    from pytest_eagle3.reference.draft import ReferenceDraft

    draft = write_checkpoint(SynthSpec(producer="specforge"), tmp_path / "draft")
    config = json.loads((draft / "config.json").read_text()) | {"rope_theta": 500000.0} | rope
    (draft / "config.json").write_text(json.dumps(config))
    served = served_rope(config)
    spec = ReferenceDraft.from_checkpoint(Checkpoint.open(draft)).spec
    assert served.kind == rope[next(iter(rope))]["rope_type"]
    assert (spec.rope_theta, dict(spec.rope_scaling).get("rope_type")) == (served.theta, served.kind)
    assert dict(spec.rope_scaling)["max_position_embeddings"] == 2048
