"""One rule for every verdict that rests on a producer habit (engines/habit.py): a habit that agrees with the engine
passes marked assumed, a known one that differs fails naming both sides (a note where its cost is not priced:
``NOTED``), one nothing settles is undecided (plan.unknown: a skip, a failure with --eagle3-unknown=fail). Each area
of HABIT_AREAS, its three outcomes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.engines.habit import AGREES, DIFFERS, HABIT_AREAS, UNDECIDED, judge
from pytest_eagle3.engines.plan_types import LoadPlan
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.producers.names import UNKNOWN
from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint, write_target
from pytest_eagle3.verdict.judge import judged_plan

VLLM = "vllm==0.33.0"
EMBED = torch.randn(1024, 64, generator=torch.Generator().manual_seed(7)).to(torch.bfloat16)
NORM = torch.linspace(0.5, 1.5, 64).to(torch.bfloat16)
YARN = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 2048}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("habits")


@pytest.fixture(scope="module")
def target(folder: Path) -> TargetModel:
    """The default synthetic target, with weights (the embedding is compared with the target's)."""
    return TargetModel.open(write_target(SynthSpec(), folder / "target"))


def _draft(folder: Path, name: str, spec: SynthSpec, config: Callable[[dict[str, Any]], None] | None = None,
           tensors: dict[str, torch.Tensor] | None = None) -> Checkpoint:
    out = folder / name
    shutil.rmtree(out, ignore_errors=True)
    write_checkpoint(spec, out)
    data = json.loads((out / "config.json").read_text())
    if config is not None:
        config(data)
    (out / "config.json").write_text(json.dumps(data))
    if tensors:
        weights = load_file(str(out / "model.safetensors"))
        weights.update(tensors)
        save_file(weights, str(out / "model.safetensors"))
    return Checkpoint.open(out)


def _torchspec(config: dict[str, Any]) -> None:
    """A field only TorchSpec writes: its own producer, of which no habit is on record."""
    config["_torchspec_version"] = "0.1.0"


#: area -> outcome -> (draft spec, config edit, tensors): the checkpoint that meets each outcome.
CASES: dict[tuple[str, str], dict[str, tuple[SynthSpec, Any, Any]]] = {
    ("aux_layers", "aux-ids-missing"): {
        AGREES: (SynthSpec(producer="modelopt", write_aux_ids=False), None, None),
        # trained, not converted (the converter never writes embed_requires_grad: true): 0.4.0's output-of default
        DIFFERS: (SynthSpec(producer="speculators", write_aux_ids=False),
                  lambda c: c.update(speculators_version="0.4.0", embed_requires_grad=True), {"embed_tokens.weight": EMBED}),
        UNDECIDED: (SynthSpec(producer="angelslim", write_aux_ids=False), None, None),
    },
    ("norms", "norm-flag"): {
        AGREES: (SynthSpec(producer="specforge"), None, None),
        DIFFERS: (SynthSpec(producer="speculators"), lambda c: c.pop("norm_before_residual"), None),
        UNDECIDED: (SynthSpec(producer="specforge"), _torchspec, None),
    },
    ("embeddings", "embed-kept"): {
        AGREES: (SynthSpec(producer="speculators"), lambda c: c.update(embed_requires_grad=True),
                 {"embed_tokens.weight": EMBED}),
        DIFFERS: (SynthSpec(producer="speculators"), None, {"embed_tokens.weight": EMBED}),
        UNDECIDED: (SynthSpec(producer="specforge"), _torchspec, {"embed_tokens.weight": EMBED}),
    },
    ("producer", "rope-trained"): {
        AGREES: (SynthSpec(producer="angelslim"), lambda c: c.update(rope_theta=10000.0), None),
        DIFFERS: (SynthSpec(producer="angelslim"), lambda c: c.update(rope_theta=1000000.0), None),
        UNDECIDED: (SynthSpec(producer="modelopt"), lambda c: c.update(rope_scaling=YARN), None),
    },
    ("producer", "norm-not-applied"): {
        AGREES: (SynthSpec(producer="modelopt"), None, None),
        DIFFERS: (SynthSpec(producer="modelopt"), None, {"layers.0.input_layernorm.weight": NORM}),
        # the habit is ModelOpt's alone: a draft no record identifies is never failed on it
        UNDECIDED: (SynthSpec(producer="speculators"), None, {"layers.0.input_layernorm.weight": NORM}),
    },
}


#: Differences whose cost the static plan cannot price (the simulation does, with the target's weights; a recorded
#: experiment does, where one covers the draft): a known one is a note naming it, never a failure (issue 45: these two
#: used to fail unpriced; priced failures are in tests/test_priced_deviations.py and tests/test_producer_habits.py).
NOTED = {("producer", "rope-trained"), ("producer", "norm-not-applied")}


def test_every_habit_area_is_exercised() -> None:
    assert {(a.area, a.fails) for a in HABIT_AREAS} == set(CASES)


def test_the_rule() -> None:
    same: Callable[[int], bool] = (1).__eq__
    assert judge("modelopt", [1, 1], same).outcome == AGREES
    assert judge("modelopt", [2], same).outcome == DIFFERS
    assert judge("modelopt", [1, 2], same).outcome == UNDECIDED
    assert judge("modelopt", [], same).outcome == UNDECIDED
    assert judge(UNKNOWN, [2, 2], same).outcome == UNDECIDED  # an unknown producer is never failed on a habit
    assert judge(UNKNOWN, [1, 1], same).outcome == AGREES


def _plan(folder: Path, target: TargetModel, area: str, code: str, outcome: str) -> LoadPlan:
    spec, config, tensors = CASES[(area, code)][outcome]
    ckpt = _draft(folder, f"{area}-{code}-{outcome}", spec, config, tensors)
    (engine,) = parse_selection(VLLM)
    return judged_plan(ckpt, engine, target)


@pytest.mark.parametrize(("area", "code"), list(CASES), ids=[f"{a}-{c}" for a, c in CASES])
def test_three_outcomes(area: str, code: str, folder: Path, target: TargetModel) -> None:
    agrees = _plan(folder, target, area, code, AGREES)
    assert agrees.issues_for(area) == [] and area not in agrees.unknown, agrees.issues_for(area)
    differs = _plan(folder, target, area, code, DIFFERS)
    if (area, code) in NOTED:
        assert differs.issues_for(area) == [] and area not in differs.unknown, differs.issues_for(area)
        assert [n for n in differs.notes_for(area) if n.startswith(f"note [{code}], not priced")], differs.assumed
    else:
        assert code in [f.code for f in differs.issues_for(area)], (differs.issues_for(area), dict(differs.unknown))
    undecided = _plan(folder, target, area, code, UNDECIDED)
    assert undecided.issues_for(area) == [], undecided.issues_for(area)
    habit = next(a for a in HABIT_AREAS if (a.area, a.fails) == (area, code))
    if code == "norm-not-applied":  # never judged outside a ModelOpt reading
        assert area not in undecided.unknown
    else:
        finding = undecided.unknown[area]
        assert finding.code == habit.undecided, dict(undecided.unknown)
        # what a NOT JUDGED row shows: at least two readings whose outcomes differ, and what decides (the fix)
        assert len({outcome for _, outcome in finding.readings}) >= 2 and finding.fix, finding.readings
        assert finding.to_json()["readings"] == [{"reading": label, "outcome": outcome}
                                                 for label, outcome in finding.readings]


def test_an_agreeing_default_names_itself_and_how_to_pin_it(folder: Path, target: TargetModel) -> None:
    plan = _plan(folder, target, "aux_layers", "aux-ids-missing", AGREES)
    assert plan.aux.basis == "assumed"
    assert plan.assumptions["aux_layers"] == (
        "assumed: no ids in config.json; the default of modelopt (0.29.0 up to 0.35.0); modelopt (>= 0.35.0), "
        "[1, N//2-1, N-4], each the output of layer id, is outputs of layers [1, 3, 4], what vLLM 0.33.0 feeds; "
        "pin them: write [2, 4, 5] into eagle_aux_hidden_state_layer_ids")
    norms = _plan(folder, target, "norms", "norm-flag", AGREES)
    assert "norm_before_residual=false, the default of specforge" in norms.assumptions["norms"]


def test_a_differing_default_names_both_layer_sets(folder: Path, target: TargetModel) -> None:
    (finding,) = _plan(folder, target, "aux_layers", "aux-ids-missing", DIFFERS).issues_for("aux_layers")
    assert "vLLM 0.33.0 feeds its defaults (outputs of layers [1, 3, 4])" in finding.summary
    assert "speculators (0.3.0 up to 0.5.0) trains on outputs of layers [2, 4, 5]" in finding.summary
    assert finding.fix.startswith("write [3, 5, 6] into eagle_aux_hidden_state_layer_ids"), finding.fix


def test_an_undecided_default_says_what_decides_it(folder: Path, target: TargetModel) -> None:
    finding = _plan(folder, target, "aux_layers", "aux-ids-missing", UNDECIDED).unknown["aux_layers"]
    assert "angelslim's releases disagree and the checkpoint names none" in finding.summary
    assert "write the ids the draft was trained on into eagle_aux_hidden_state_layer_ids" in finding.fix
    assert "--eagle3-target=DIR with the target's weights" in finding.fix
    assert any(d.startswith("angelslim (0.2.0 up to 0.3.0): outputs of layers [1, 3, 5] (differs)")
               for d in finding.details), finding.details


def test_a_measurement_overrules_the_default(folder: Path, target: TargetModel) -> None:
    """Measured layers are the training layers, whatever the producer's default says."""
    from pytest_eagle3.engines.plan_types import Measured

    spec, config, tensors = CASES[("aux_layers", "aux-ids-missing")][UNDECIDED]
    ckpt = _draft(folder, "measured", spec, config, tensors)
    (engine,) = parse_selection(VLLM)
    plan = judged_plan(ckpt, engine, target, measured=Measured((2, 4, 5), "measured: inputs [2, 4, 5]"))
    assert plan.aux.basis == "measured" and "aux_layers" not in plan.unknown and plan.issues_for("aux_layers") == []
