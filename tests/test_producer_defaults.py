"""The producers' default training aux layers (producers/aux_defaults.py): what an id means is data, the layers are a
function of the target's layer count, each producer release is covered once, and docs/readings.md shows the table."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pytest_eagle3.producers.aux_defaults import (
    AUX_DEFAULTS,
    AuxDefault,
    candidate_defaults,
    markdown_table,
)
from pytest_eagle3.producers.formats import default_aux_inputs
from pytest_eagle3.producers.names import (
    ANGELSLIM,
    EAGLE,
    INPUT_OF,
    MODELOPT,
    SPECFORGE,
    SPECULATORS,
    UNKNOWN,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "readings.md"


def test_the_doc_shows_the_table() -> None:
    assert markdown_table() in DOC.read_text(encoding="utf-8"), "docs/readings.md is stale: paste markdown_table()"


@pytest.mark.parametrize("layers", [8, 32, 36, 61, 80])
def test_the_same_physical_layers_in_two_conventions(layers: int) -> None:
    """ModelOpt's and SpecForge's [1, N//2-1, N-4] (outputs) are the EAGLE code's and speculators >= 0.5's
    [2, N//2, N-3] (inputs), and the engines' own default: one set of layer inputs."""
    inputs = {row.inputs(layers) for row in AUX_DEFAULTS if row.producer in (MODELOPT, SPECFORGE, EAGLE)
              or (row.producer == SPECULATORS and row.meaning == INPUT_OF)}
    assert inputs == {default_aux_inputs(layers)}


def test_releases_whose_default_differs() -> None:
    """speculators before 0.5 captured after the layer (outputs of 2, N//2, N-3); AngelSlim 0.2.x counted the
    embeddings among the layers: both one layer off the engines' default at the top."""
    old = next(r for r in AUX_DEFAULTS if r.producer == SPECULATORS and r.until == "0.5.0")
    assert old.inputs(32) == (3, 17, 30) != default_aux_inputs(32)
    angel = next(r for r in AUX_DEFAULTS if r.producer == ANGELSLIM and r.until == "0.3.0")
    assert angel.written(32) == (1, 15, 29) and angel.inputs(32) == (2, 16, 30)


def test_modelopt_clamps_tiny_targets() -> None:
    new = next(r for r in AUX_DEFAULTS if r.producer == MODELOPT and r.since == "0.35.0")
    assert new.written(4) == (0, 1) and new.inputs(4) == (1, 2)


def _own(rows: tuple[AuxDefault, ...]) -> list[str | None]:
    return [r.since for r in rows if not r.via]


def test_the_checkpoint_names_the_release_where_the_producer_writes_it() -> None:
    assert _own(candidate_defaults(SPECULATORS, {"speculators_version": "0.4.0"})) == ["0.3.0"]
    assert _own(candidate_defaults(SPECULATORS, {"speculators_version": "0.9.0"})) == ["0.5.0"]
    assert _own(candidate_defaults(SPECULATORS, {"speculators_version": "0.2.0"})) == []  # no trainer before 0.3.0
    assert len(candidate_defaults(ANGELSLIM, {})) == 2  # AngelSlim writes no release: every one is a candidate
    assert candidate_defaults(UNKNOWN, {}) == AUX_DEFAULTS


def test_no_release_covered_twice() -> None:
    for producer in {r.producer for r in AUX_DEFAULTS}:
        rows = [r for r in AUX_DEFAULTS if r.producer == producer]
        for a, b in itertools.pairwise(rows):
            assert a.until is not None and a.until == b.since, (producer, a.releases, b.releases)


def test_a_row_is_checked_when_built() -> None:
    with pytest.raises(ValueError, match="neither"):
        AuxDefault(MODELOPT, None, None, ("1",), "sideways", "nvidia-modelopt somewhere in its source")
    with pytest.raises(ValueError, match="not N"):
        AuxDefault(MODELOPT, None, None, ("N*2",), INPUT_OF, "nvidia-modelopt somewhere in its source")
    with pytest.raises(ValueError, match="source"):
        AuxDefault(MODELOPT, None, None, ("1",), INPUT_OF, "x")


def test_a_speculators_release_without_a_trainer_converted_the_head() -> None:
    """speculators 0.1.x / 0.2.x ship only the converter: the head keeps its original trainer's layers (EAGLE's, or
    SpecForge's, whose outputs [1, N//2-1, N-4] are the same layer inputs), the engines' shared default."""
    rows = candidate_defaults(SPECULATORS, {"speculators_version": "0.2.0"})
    assert {r.producer for r in rows} == {EAGLE, SPECFORGE}
    assert all(r.via == "speculators convert (before 0.3.0, no trainer in the release)" for r in rows)
    assert {r.inputs(32) for r in rows} == {default_aux_inputs(32)}


def test_a_release_that_trains_and_converts_keeps_both_readings_unless_the_config_shows_training() -> None:
    converted = candidate_defaults(SPECULATORS, {"speculators_version": "0.4.0"})
    assert {r.inputs(32) for r in converted} == {(3, 17, 30), default_aux_inputs(32)}
    trained = candidate_defaults(SPECULATORS, {"speculators_version": "0.4.0", "embed_requires_grad": True})
    assert [(r.producer, r.since, r.via) for r in trained] == [(SPECULATORS, "0.3.0", "")]
