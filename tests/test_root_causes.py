"""The reason is part of the verdict (engines/plan_types.py root_causes): where several areas fail, the plan names the root cause
first and the others as its consequences, on real cases (tests/incidents) and on the rules' own edges."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.engines.issue import LOSS, REFUSED, Issue
from pytest_eagle3.engines.plan_types import LoadPlan, root_causes
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SynthSpec
from pytest_eagle3.verdict.judge import judged_plan
from tests.conftest import ContractRun
from tests.incidents.build import INCIDENTS, write_draft, write_target


def _issue(area: str, code: str, kind: str = LOSS, summary: str = "", evidence: tuple[Evidence, ...] = ()) -> Issue:
    return Issue(area, kind, Finding(code, summary or f"{area} {code}", evidence))


def test_a_target_that_captures_nothing_explains_fc() -> None:
    (cause,) = root_causes([_issue("fc", "fc-bypassed"), _issue("aux_layers", "target-silent-no-capture")])
    assert (cause.area, cause.code, cause.consequences) == ("aux_layers", "target-silent-no-capture",
                                                            (("fc", "fc-bypassed"),))
    assert "captures no aux states" in cause.why


def test_a_refusal_that_follows_from_a_loss_is_its_consequence() -> None:
    """vLLM 0.17.0 on Qwen3.5: the target silently captures nothing, so fc crashes on one state; the crash is the
    refusal, yet the root is the capture (without it there is no crash to fix)."""
    (cause,) = root_causes([_issue("fc", "fc-width", REFUSED), _issue("aux_layers", "target-silent-no-capture")])
    assert (cause.area, cause.code, cause.refused, cause.consequences) == (
        "aux_layers", "target-silent-no-capture", False, (("fc", "fc-width"),))


def test_independent_failures_are_each_a_root_refusals_first() -> None:
    causes = root_causes([_issue("norms", "norm-flag"), _issue("keys", "key-refused", REFUSED)])
    assert [(c.area, c.refused) for c in causes] == [("keys", True), ("norms", False)]


def test_one_finding_per_tensor_is_one_cause() -> None:
    (cause,) = root_causes([_issue("keys", "dropped", summary=f"drops fc_norm.{i}.weight") for i in range(3)])
    assert cause.count == 3 and cause.consequences == ()


def test_the_subject_must_match() -> None:
    """A dropped fc_norm explains the fc_norm flag the class does not read, not an unrelated norm flag."""
    dropped = _issue("keys", "dropped", summary="drops fc_norm.0.weight")
    causes = root_causes([dropped, _issue("norms", "norm-flag", summary="applies fc_norm=False"),
                          _issue("norms", "norm-flag", summary="applies norm_before_residual=True")])
    assert [(c.area, c.consequences) for c in causes] == [("keys", (("norms", "norm-flag"),)), ("norms", ())]


def _plan(incident_id: str, spec: str, folder: Path) -> LoadPlan:
    incident = next(i for i in INCIDENTS if i["id"] == incident_id)
    draft = write_draft(incident["draft"], folder / "draft")
    target = write_target(incident["draft"], incident["target"], folder / "target")
    (engine,) = parse_selection(spec.replace("llamacpp==", "llamacpp==b"))
    return judged_plan(Checkpoint.open(draft), engine, TargetModel.open(target))


#: Real cases whose failures span several areas: (incident, engine version, root area and code, a consequence).
SEVERAL = [
    ("sglang-qwen35-eagle3", "sglang==0.5.12", ("aux_layers", "target-silent-no-capture"), ("fc", "fc-bypassed")),
    ("vllm-gemma3-allowlist", "vllm==0.13.0", ("aux_layers", "target-not-allowed"), ("aux_layers", "target-no-capture")),
    ("vllm-two-layer-draft", "vllm==0.11.0", ("layers", "multi-layer"), ("keys", "key-refused")),
    ("vllm-eagle31-speculators-llama", "vllm==0.19.0", ("keys", "key-refused"), ("norms", "norm-flag")),
    ("sglang-eagle31-specforge", "sglang==0.5.9", ("keys", "dropped"), ("norms", "norm-flag")),
]


@pytest.mark.parametrize(("incident_id", "spec", "root", "consequence"), SEVERAL, ids=[f"{i}@{s}" for i, s, *_ in SEVERAL])
def test_real_cases_name_the_root_cause_first(incident_id: str, spec: str, root: tuple[str, str],
                                              consequence: tuple[str, str], tmp_path: Path) -> None:
    plan = _plan(incident_id, spec, tmp_path)
    cause = plan.root_cause
    assert cause is not None and (cause.area, cause.code) == root, plan.causes
    assert consequence in cause.consequences, cause
    explained = {c for other in plan.causes for c in other.consequences}
    assert all((c.area, c.code) not in explained for c in plan.causes), "a consequence is also listed as a cause"


def test_the_allowlist_is_met_before_a_missing_draft_class(tmp_path: Path) -> None:
    """vLLM 0.10.0 validates the speculative config (its allowlist) before it builds the draft: a draft class it lacks
    still reports the allowlist refusal, first, with the release that admits the target."""
    plan = _plan("qwen3-8b-tengyunw", "vllm==0.10.0", tmp_path)
    assert plan.draft_class is None
    assert [(c.area, c.code) for c in plan.causes] == [("aux_layers", "target-not-allowed"),
                                                       ("architecture", "architecture")]
    (allowlist,) = plan.issues_for("aux_layers")
    assert "vLLM >= 0.10.1" in allowlist.fix and "'qwen3'" in allowlist.summary


def test_a_registered_class_is_not_blamed_on_the_architecture(tmp_path: Path) -> None:
    """A class the release registers builds: an EAGLE-3.1 draft refused for its fc_norm tensors fails under keys,
    never under engine.architecture."""
    plan = _plan("vllm-eagle31-speculators-llama", "vllm==0.22.0", tmp_path)
    assert plan.draft_class is not None and plan.issues_for("architecture") == []
    assert plan.root_cause is not None and plan.root_cause.area == "keys"


def test_a_wrong_target_gives_no_draft_side_fix(make_checkpoint: Callable[..., Path], make_target: Callable[..., Path],
                                               run_contracts: Callable[..., ContractRun], tmp_path: Path) -> None:
    """A target that is not the draft's (another width): target.consistent fails, and the engine contracts it would
    change do not run, so no draft-side fix (an aux-id edit) is printed for a mismatch the target caused."""
    draft = make_checkpoint(SynthSpec(producer="specforge", aux_layer_ids=(2, 4, 5)))
    target = make_target(8)
    config = json.loads((target / "config.json").read_text())
    config["hidden_size"] = 96
    (tmp_path / "config.json").write_text(json.dumps(config))
    run = run_contracts([draft], "--eagle3-engine=vllm==0.33.0", target=tmp_path / "config.json")
    outcomes = run.engine_outcomes(draft, "vllm==0.33.0")
    assert outcomes["engine.aux_layers"][0] == "skipped" and "not run" in outcomes["engine.aux_layers"][1]
    assert "fix: write [3, 5, 6] into eagle_aux_hidden_state_layer_ids" not in run.output
    matching = run_contracts([draft], "--eagle3-engine=vllm==0.33.0", target=target / "config.json")
    assert matching.engine_outcomes(draft, "vllm==0.33.0")["engine.aux_layers"][0] == "failed"
    assert "fix: write [3, 5, 6] into eagle_aux_hidden_state_layer_ids" in matching.output
