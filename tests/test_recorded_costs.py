"""Costs measured once and recorded in the knowledge (``pytest_eagle3/knowledge/costs.py``): each row names an
experiment in the repository that reproduces its figure, and the producer's code it measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.costs import COSTS, MODELOPT_EXTRA_NORM, recorded_cost

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("row", COSTS, ids=lambda r: f"{r.producer}-{r.deviation}")
def test_every_row_names_its_experiment_and_source(row: object) -> None:
    from pytest_eagle3.knowledge.costs import RecordedCost

    assert isinstance(row, RecordedCost)
    script = row.experiment.split()[0]
    assert script.startswith(("scripts/", "benchmarks/")) and (ROOT / script).is_file(), row.experiment
    assert "modeling_eagle.py" in row.source and "_eagle3_attention_forward_pre_hook" in row.source
    assert row.figures and row.measured_on


def test_the_precondition_bounds_the_row() -> None:
    """A norm weight spread wider than any the experiment trained is not priced by it."""
    assert recorded_cost("modelopt", "hidden_prenorm", 1.05) is MODELOPT_EXTRA_NORM
    assert recorded_cost("modelopt", "hidden_prenorm", 3.0) is None
    assert recorded_cost("speculators", "hidden_prenorm", 1.05) is None


@pytest.mark.slow
def test_the_experiment_reproduces_its_first_draft(tmp_path: Path) -> None:
    """The script's first seed (deterministic on CPU, one thread) gives the first figure recorded."""
    pytest.importorskip("transformers")
    out = tmp_path / "figures.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "price_modelopt_norm.py"), "--seeds", "1",
                    "--out", str(tmp_path / "drafts"), "--json", str(out)], check=True, cwd=ROOT, timeout=900)
    first = json.loads(out.read_text())["drafts"][0]
    assert abs(first["cost_hidden_prenorm"] - 0.007) < 0.005, first
    assert first["cost_hidden_prenorm"] <= MODELOPT_EXTRA_NORM.cost and first["spread"] <= MODELOPT_EXTRA_NORM.max_spread
