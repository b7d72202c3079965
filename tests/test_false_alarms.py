"""No false alarm, no false pass: for every probe case, what the real loader did decides what the static plan of that
engine version (the verdict pipeline's judged plan, which every engine contract reads) may say.

- the loader loaded the draft without loss -> the plan does not fail it (outcome ``loads``, no load-time failure);
- the loader refused it -> the plan does not pass it (``refused``);
- the loader dropped tensors or left parameters unset -> the plan does not pass it (not ``loads``).

Recorded: every run of ``probes/results.json`` (no engine needed). Live: in an engine env (``-m engine``) the cases
are probed now and judged the same way. Cases the CPU backend cannot run are not evidence either way, but for one
thing: where the CPU limit struck after ``load_weights`` (a post-load kernel), the tensors that loader dropped were
dropped all the same, and the plan does not pass that loss.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, REFUSED
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.probes.cases import CASES, NEWEST_ONLY
from pytest_eagle3.probes.compare import HARMLESS_DROPS, cpu_backend_limit
from pytest_eagle3.probes.record import outcome_word as probe_verdict_word
from pytest_eagle3.verdict.judge import judged_plan
from tests.test_profiles_vs_engines import RECORDED, RUNS

#: The areas that decide whether the draft loads: the probe's verdict is about loading (what is refused, dropped
#: or left unset), not about what is fed or served later (aux layers, fc, norms, runtime: other contracts).
LOAD_AREAS = ("architecture", "keys", "layers", "geometry")


def _false_alarms(engine: str, version: str, results: dict[str, dict[str, Any]],
                  probe_cases: tuple[Path, dict[str, Path]]) -> list[str]:
    target, drafts = probe_cases
    target_model = TargetModel.open(target)
    problems = []
    for case, probe in results.items():
        if case not in drafts or (cpu_backend_limit(probe) and not _dropped_before_the_limit(probe)):
            continue
        ckpt = Checkpoint.open(drafts[case])
        plan = judged_plan(ckpt, EngineVersion(engine, Version(version)), target_model)
        # a live probe carries no verdict word yet: the recorder's own rule gives it (probes.record.outcome_word)
        reduced = (ckpt.config.draft_vocab_size or 0) < (ckpt.config.vocab_size or 0)
        probe = {**probe, "verdict": probe.get("verdict") or probe_verdict_word(engine, probe, reduced)}
        if cpu_backend_limit(probe):
            probe["verdict"] = "loads with loss"  # what load_weights dropped; the post-load steps are not evidence
        failing = [f"{i.area}/{i.finding.code}" for i in plan.issues if i.area in LOAD_AREAS]
        refused = plan.outcome == REFUSED or any(i.kind == REFUSED for i in plan.issues if i.area in LOAD_AREAS)
        where = f"[{engine} {version} {case}] the loader: {probe['verdict']}; the plan: {', '.join(failing) or 'none'}"
        if probe["verdict"] == "loads" and failing:
            problems.append(f"{where}: a false FAIL")
        elif probe["verdict"] == "refused" and not refused:
            problems.append(f"{where}: a refusal the plan does not foresee")
        elif probe["verdict"] == "loads with loss" and not failing and plan.outcome == LOADS:
            problems.append(f"{where}: a loss the plan passes (dropped {probe['dropped']}, "
                            f"uninitialised {probe['uninitialised']})")
    return problems


def _dropped_before_the_limit(probe: dict[str, Any]) -> list[str]:
    """Checkpoint tensors the loader dropped before a CPU-backend limit struck after load_weights."""
    if probe.get("stage") not in ("load", "share"):
        return []
    return [n for n in probe["dropped"] if n not in HARMLESS_DROPS]


@pytest.mark.engine
@pytest.mark.parametrize("run", RUNS)
def test_recorded_loader_outcomes_bound_the_verdicts(run: str, probe_cases: tuple[Path, dict[str, Path]]) -> None:
    record = RECORDED["runs"][run]
    judged = {p["verdict"] for p in record["results"].values() if not cpu_backend_limit(p)}
    assert judged <= {"loads", "loads with loss", "refused"}, judged  # a new kind of outcome needs a rule here
    problems = _false_alarms(record["engine"], record["version"], record["results"], probe_cases)
    assert not problems, "\n  ".join([f"{run} (probed {record['date']}):", *problems])


def test_the_recorded_runs_hold_every_kind_of_outcome() -> None:
    """The test above can fail both ways: the recordings hold clean loads, losses and refusals."""
    seen = {p["verdict"] for run in RUNS for p in RECORDED["runs"][run]["results"].values()}
    assert {"loads", "loads with loss", "refused"} <= seen
    assert {c.name for c in CASES} - set(NEWEST_ONLY) <= set(RECORDED["runs"][RUNS[0]]["results"])


@pytest.mark.engine
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_live_loader_outcomes_bound_the_verdicts(engine: str, engine_results: Callable[[str], dict[str, dict[str, Any]]],
                                                 probe_cases: tuple[Path, dict[str, Path]]) -> None:
    results = engine_results(engine)
    version = next(iter(results.values()))["version"]
    problems = _false_alarms(engine, version, results, probe_cases)
    assert not problems, "\n  ".join(problems)
