"""The unseen-incident corpus (tests/incidents): each real incident's checkpoint judged by ``check`` on every engine
version its thread and the engine's source give a verdict for, scored against the expectation written before the
plugin ran (incidents.json). A known miss is a strict xfail naming why, so a fix shows up as an XPASS: remove it then.
A row is right only when its verdict is the expected one: a NOT JUDGED row where a PASS was expected is a miss
(abstained), and a NOT JUDGED row must say why (a missing target config, or two readings that disagree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.incidents.build import INCIDENTS
from tests.incidents.measure import Row, Run, as_the_source_says, outcome, right, run_incident

#: Why the rows below are NOT JUDGED: the plausible readings of what the checkpoint leaves open disagree about the
#: outcome, and each row's finding names them (``test_not_judged_row_says_why``).
ABSTAINED_REASON = ("NOT JUDGED: the plausible readings disagree about the outcome, and the row names two with their "
                    "outcomes and what decides (the expectation rests on a figure measured on the real engine)")
#: The rows NOT JUDGED on the current plugin: (incident id, engine versions) -> the readings that disagree.
ABSTAINED: dict[tuple[str, str], str] = {
    ("qwen3-8b-angelslim", "vllm==0.33.0"): "no ids: AngelSlim 0.2.x's default counted the embeddings (fails), "
    ">= 0.3.0's is what the engine feeds (passes); the checkpoint names no release",
    ("qwen3-8b-angelslim", "llamacpp==11312"): "as on vLLM 0.33.0",
}
ABSTAINED_ROWS = frozenset(ABSTAINED)

#: Misses of the current plugin against what the released source says, with their cause: (incident id, engine
#: version) -> why. An expectation the source contradicts is scored against its ``source`` entry (incidents.json).
KNOWN_MISSES: dict[tuple[str, str], str] = {row: f"{ABSTAINED_REASON}: {why}" for row, why in ABSTAINED.items()} | {
    ("vllm-modelopt-no-ids", "vllm==0.33.0"): "by policy (engines.habit): ModelOpt's default, the outputs of layers 1, "
    "N//2-1, N-4, is what vLLM feeds, so a head without ids passes marked assumed; this head was trained on other "
    "layers, which only a target with weights (the reference measurement) can show",
}

#: Right verdicts whose root cause is not the area the thread names, with why: (incident id, engine version) -> why.
ROOT_CAUSE_MISSES: dict[tuple[str, str], str] = {
    ("vllm-eagle31-mla", "vllm==0.19.0"): "the dropped fc_norm.* the thread names is found (engine.keys), but the "
    "draft as the corpus writes it has no rope_scaling, and vLLM 0.18-0.27 deepseek_eagle3.py builds DeepSeek YaRN "
    "from the one transformers 5 sets: the mla-rope KeyError at startup comes first, so it is named the root",
    ("vllm-eagle31-mla", "vllm==0.22.0"): "the fc_norm the source shows unapplied is found (engine.norms), but the "
    "mla-rope KeyError at startup (the corpus's draft has no rope_scaling) comes first, as on 0.19.0",
}

CASES = [(incident["id"], spec) for incident in INCIDENTS for spec in incident["expect"]]
_RUNS: dict[str, Run] = {}


def _run(incident_id: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    if incident_id not in _RUNS:
        incident = next(i for i in INCIDENTS if i["id"] == incident_id)
        _RUNS[incident_id] = run_incident(incident, tmp_path_factory.mktemp(incident_id))
    return _RUNS[incident_id]


def test_every_thread_is_cited_and_every_expectation_has_its_source() -> None:
    for incident in INCIDENTS:
        assert incident["threads"] and all("#" in t for t in incident["threads"]), incident["id"]
        for spec, expected in incident["expect"].items():
            assert expected["verdict"] in ("pass", "fail") and len(expected["why"]) > 20, (incident["id"], spec)
            assert expected["verdict"] == "pass" or {"contract", "code"} <= set(expected), (incident["id"], spec)
    engines = {spec.split("==")[0] for _, spec in CASES}
    assert len(engines) >= 4, engines


@pytest.mark.parametrize(("incident_id", "spec"), CASES, ids=[f"{i}@{s}" for i, s in CASES])
def test_incident_verdict(incident_id: str, spec: str, tmp_path_factory: pytest.TempPathFactory,
                          request: pytest.FixtureRequest) -> None:
    run = _run(incident_id, tmp_path_factory)
    assert not run.crashed, f"the plugin crashed on {incident_id}:\n{run.crashed}"
    why = KNOWN_MISSES.get((incident_id, spec))
    if why is not None:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    expected = as_the_source_says(next(i for i in INCIDENTS if i["id"] == incident_id)["expect"][spec])
    row = run.rows.get(spec)
    assert right(expected, row), f"{incident_id} on {spec}: expected {expected}, got {row}"


def _expected(incident_id: str, spec: str) -> dict[str, object]:
    return as_the_source_says(next(x for x in INCIDENTS if x["id"] == incident_id)["expect"][spec])


FAILS = [(i, s) for i, s in CASES if _expected(i, s)["verdict"] == "fail"
         and str(_expected(i, s)["contract"]).startswith("engine.")]


@pytest.mark.parametrize(("incident_id", "spec"), FAILS, ids=[f"{i}@{s}" for i, s in FAILS])
def test_incident_root_cause(incident_id: str, spec: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The failing area the thread names is the plan's root cause (engines/plan_types.py root_causes), the others its consequences."""
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.verdict.judge import judged_plan
    from tests.incidents.build import write_draft, write_target

    why = KNOWN_MISSES.get((incident_id, spec)) or ROOT_CAUSE_MISSES.get((incident_id, spec))
    if why is not None:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    incident = next(i for i in INCIDENTS if i["id"] == incident_id)
    expected = as_the_source_says(incident["expect"][spec])
    draft = write_draft(incident["draft"], tmp_path / "draft")
    target = write_target(incident["draft"], incident["target"], tmp_path / "target")
    (engine,) = parse_selection(spec.replace("llamacpp==", "llamacpp==b"))
    cause = judged_plan(Checkpoint.open(draft), engine, TargetModel.open(target)).root_cause
    assert cause is not None and (f"engine.{cause.area}", cause.code) == (expected["contract"], expected["code"]), cause


def test_the_corpus_is_fresh() -> None:
    """Only threads the plugin's code and tests do not cite, except those marked ``seen``."""
    root = Path(__file__).resolve().parents[1]
    cited = "\n".join(p.read_text(encoding="utf-8") for folder in ("pytest_eagle3", "tests")
                      for p in (root / folder).rglob("*.py") if "incidents" not in p.parts and p.name != "test_incidents.py")
    for incident in INCIDENTS:
        if incident.get("seen"):
            continue
        for thread in incident["threads"]:
            short = thread.split("/")[-1]
            assert short not in cited, f"{incident['id']}: {thread} is already cited by the plugin's code or tests"


def _row(incident_id: str, spec: str, tmp_path_factory: pytest.TempPathFactory) -> Row | None:
    run = _run(incident_id, tmp_path_factory)
    assert not run.crashed, f"the plugin crashed on {incident_id}:\n{run.crashed}"
    return run.rows.get(spec)


def says_why_not_judged(row: Row) -> bool:
    """A NOT JUDGED row lacks the target's config, or a not-judged contract has a finding whose readings disagree."""
    if any("needs the target model" in reason or "target's config" in reason for reason in row.not_run.values()):
        return True
    for contract in row.not_judged:
        for finding in row.findings.get(contract, ()):
            outcomes = {r.get("outcome") for r in finding.get("readings") or () if isinstance(r, dict)}
            if len(outcomes) >= 2:
                return True
    return False


@pytest.mark.parametrize(("incident_id", "spec"), CASES, ids=[f"{i}@{s}" for i, s in CASES])
def test_not_judged_row_says_why(incident_id: str, spec: str, tmp_path_factory: pytest.TempPathFactory,
                                 request: pytest.FixtureRequest) -> None:
    """Every NOT JUDGED row of the corpus lacks the target's config or carries two readings with different outcomes
    (a finding's ``readings``; its ``fix`` says what decides)."""
    row = _row(incident_id, spec, tmp_path_factory)
    if row is None or row.verdict != "not judged":
        return
    assert says_why_not_judged(row), (f"{incident_id} on {spec} is NOT JUDGED without a missing target config or "
                                      f"two readings: not judged {row.not_judged}, not run {sorted(row.not_run)}")


PASSES = [(i, s) for i, s in CASES if _expected(i, s)["verdict"] == "pass"]


@pytest.mark.parametrize(("incident_id", "spec"), PASSES, ids=[f"{i}@{s}" for i, s in PASSES])
def test_no_false_fail(incident_id: str, spec: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No row the engine serves well (as its released source says) FAILs."""
    row = _row(incident_id, spec, tmp_path_factory)
    assert outcome(_expected(incident_id, spec), row) != "false FAIL", f"{incident_id} on {spec}: a false FAIL {row}"


def test_every_source_correction_cites_a_file() -> None:
    """An expectation the source contradicts (its verdict, or the failure it names: contract or code) says which file
    and line, and keeps the words written before."""
    for incident in INCIDENTS:
        for spec, expected in incident["expect"].items():
            source = expected.get("source")
            if source is None:
                continue
            changed = source["verdict"] != expected["verdict"] or any(
                source.get(key) != expected.get(key) for key in ("contract", "code"))
            assert changed and ".py" in source["why"], (incident["id"], spec)
            assert source["verdict"] == "pass" or {"contract", "code"} <= set(source), (incident["id"], spec)


def test_the_corpus_is_balanced() -> None:
    """At least half of the expectations are working pairs, over every engine the plugin knows."""
    verdicts = [next(x for x in INCIDENTS if x["id"] == i)["expect"][s]["verdict"] for i, s in CASES]
    assert 2 * verdicts.count("pass") >= len(verdicts), verdicts.count("pass")
    assert {s.split("==")[0] for _, s in PASSES} >= {"vllm", "sglang", "llamacpp", "trtllm", "lmdeploy", "tokenspeed",
                                                     "mlx-vlm"}
