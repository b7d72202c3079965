"""The load plan is assembled from pure areas and cannot be edited by whoever holds it.

On the bundled demo pair (real safetensors files): the fact sheet is read once and frozen, an area
computed twice from it gives the same result, the fc area judges what the aux area says it captures
(passed in, not read from a shared plan), and the plan refuses every edit: a changed plan is a new one.
The sheet holds plain values, never the checkpoint or the target: tensor values come through typed readers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.engines.aux_layers import plan_aux
from pytest_eagle3.engines.facts import FactSheet, fact_sheet
from pytest_eagle3.engines.fc import plan_fc, plan_fc_shape
from pytest_eagle3.engines.plan import load_plan
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.knowledge.snapshot import snapshot_of

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
VLLM = parse_selection("vllm==0.33.0")[0]


@pytest.fixture(scope="module")
def demo() -> tuple[Checkpoint, TargetModel]:
    return Checkpoint.open(EXAMPLES / "demo-draft-sglang"), TargetModel.open(EXAMPLES / "demo-target")


def test_the_plan_refuses_every_edit(demo: tuple[Checkpoint, TargetModel]) -> None:
    ckpt, target = demo
    plan = load_plan(ckpt, VLLM, target)
    assert [i.finding.code for i in plan.issues] == ["aux-layers"]  # vLLM feeds the SpecForge draft other layers
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.issues = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.aux.captured = plan.aux.trained  # type: ignore[misc]
    with pytest.raises(TypeError, match="frozen mapping"):
        plan.dropped["fc.weight"] = "edited"  # type: ignore[index]
    with pytest.raises(AttributeError):
        plan.issues.append(plan.issues[0])  # type: ignore[attr-defined]
    # a proven fix is a new plan; the one every contract shares is unchanged
    fixed = dataclasses.replace(plan, issues=(), proven=plan.proven | {"aux"})
    assert fixed.outcome == "loads" and plan.outcome == "loads with loss" and plan.proven == frozenset()


def test_an_area_is_a_function_of_the_fact_sheet(demo: tuple[Checkpoint, TargetModel]) -> None:
    ckpt, target = demo
    prof = snapshot_of(VLLM)
    sheet = fact_sheet(ckpt, prof, target)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sheet.hidden_size = 1  # type: ignore[misc]
    first, again = plan_aux(sheet, prof, None), plan_aux(sheet, prof, None)
    assert first == again
    assert first.aux.captured == (2, 4, 5) and first.aux.trained == (3, 5, 6)
    assert first.aux.fix_edit == ("eagle_aux_hidden_state_layer_ids", (3, 5, 6))
    plan = load_plan(ckpt, VLLM, target)
    assert plan.aux == first.aux and plan.issues_for("aux_layers") == [first.filed.issues[0].finding]


def test_fc_judges_the_states_the_aux_area_passes_in(demo: tuple[Checkpoint, TargetModel]) -> None:
    ckpt, target = demo
    prof = snapshot_of(VLLM)
    sheet = fact_sheet(ckpt, prof, target)
    built = plan_fc_shape(sheet, prof, 3, {"model.fc.weight": ("fc.weight",)}).fc
    aux = plan_aux(sheet, prof, None).aux
    assert plan_fc(sheet, prof, built, aux).fc.action == "fc"
    one_state = plan_fc(sheet, prof, built, dataclasses.replace(aux, captured=(4,)))
    assert one_state.fc.states_sent == 1 and one_state.fc.action == "crash"
    assert [i.finding.code for i in one_state.filed.issues] == ["fc-width"]


def test_the_fact_sheet_holds_plain_values_only(demo: tuple[Checkpoint, TargetModel]) -> None:
    ckpt, target = demo
    for field in dataclasses.fields(FactSheet):
        assert not {"Any", "Checkpoint", "TargetModel"} & set(str(field.type).replace("[", " ").replace("]", " ")
                                                           .replace(",", " ").replace("|", " ").split()), field
    sheet = fact_sheet(ckpt, snapshot_of(VLLM), target)
    assert not [f.name for f in dataclasses.fields(sheet)
                if isinstance(getattr(sheet, f.name), Checkpoint | TargetModel)]
    ids = sheet.config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]  # type: ignore[index,call-overload]
    assert ids == [2, 4, 5] and repr(ids) == "[2, 4, 5]"
    with pytest.raises(TypeError, match="frozen list"):
        ids.append(6)
    # a tensor's values: read on the first question, then kept
    d2t = sheet.contents.d2t("d2t")
    assert d2t is not None and len(d2t) == ckpt.shape("d2t")[0] and sheet.contents.d2t("d2t") is d2t  # type: ignore[index]
    assert sheet.contents.same_as_target("lm_head.weight", ("lm_head.weight",)) is not None


def test_another_reading_neither_copies_nor_changes_the_checkpoint(demo: tuple[Checkpoint, TargetModel]) -> None:
    ckpt, target = demo
    detected = ckpt.format
    read = ckpt.as_read_by("eagle")
    assert read.format.producer == "eagle" and ckpt.format is detected
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.format = detected  # type: ignore[misc]
    sheet = fact_sheet(ckpt, snapshot_of(VLLM), target, "eagle")
    assert sheet.producer == "eagle" and fact_sheet(ckpt, snapshot_of(VLLM), target).producer == detected.producer
