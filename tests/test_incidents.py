"""The unseen-incident corpus (tests/incidents): each real incident's checkpoint judged by ``check`` on every engine
version its thread and the engine's source give a verdict for, scored against the expectation written before the
plugin ran (incidents.json). A known miss is a strict xfail naming why, so a fix shows up as an XPASS."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.incidents.build import INCIDENTS
from tests.incidents.measure import Run, right, run_incident

#: Misses of the current plugin, with their cause: (incident id, engine version) -> why.
KNOWN_MISSES: dict[tuple[str, str], str] = {
    ("vllm-qwen35-eagle3", "vllm==0.18.0"): "the expectation, not the plugin, is contradicted by the source: vLLM "
    "0.18.0 qwen3_next.py captures, but Qwen3_5ForConditionalGeneration's setter is SupportsEagle3's default "
    "(interfaces.py L1356), which asserts the inner model is an EagleModelMixin, and Qwen3NextModel(nn.Module) "
    "is not: an AssertionError at startup (target-no-capture), kept as written before the plugin ran",
    ("vllm-eagle31-mla", "vllm==0.22.0"): "the expectation read fc_norm in __init__ only: vLLM 0.22.0 "
    "deepseek_eagle3.py builds fc_norm (L225-234) and never applies it (combine_hidden_states returns "
    "self.model.fc(hidden_states), L405-409; only llama_eagle3.py L404 applies it), the plugin's loaded-not-applied; "
    "and 0.22.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config reads eagle_config's ids as layer inputs "
    "(L5252; 0.19.0 read only the top level and fell back to the target's default), where the draft's layout is "
    "SpecForge's, whose ids are layer outputs (aux-layers); its mla-rope follows from the corpus's draft having no "
    "rope_scaling",
    ("vllm-modelopt-no-ids", "vllm==0.33.0"): "by policy (engines.habit): ModelOpt's default, the outputs of layers 1, "
    "N//2-1, N-4, is what vLLM feeds, so a head without ids passes marked assumed; this head was trained on other "
    "layers, which only a target with weights (the reference measurement) can show",
}

#: Right verdicts whose root cause is not the area the thread names, with why: (incident id, engine version) -> why.
ROOT_CAUSE_MISSES: dict[tuple[str, str], str] = {
    ("vllm-eagle31-mla", "vllm==0.19.0"): "the dropped fc_norm.* the thread names is found (engine.keys), but the "
    "draft as the corpus writes it has no rope_scaling, and vLLM 0.18-0.27 deepseek_eagle3.py builds DeepSeek YaRN "
    "from the one transformers 5 sets: the mla-rope KeyError at startup comes first, so it is named the root",
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
    expected = next(i for i in INCIDENTS if i["id"] == incident_id)["expect"][spec]
    row = run.rows.get(spec)
    assert right(expected, row), f"{incident_id} on {spec}: expected {expected}, got {row}"


FAILS = [(i, s) for i, s in CASES if next(x for x in INCIDENTS if x["id"] == i)["expect"][s]["verdict"] == "fail"
         and next(x for x in INCIDENTS if x["id"] == i)["expect"][s]["contract"].startswith("engine.")]


@pytest.mark.parametrize(("incident_id", "spec"), FAILS, ids=[f"{i}@{s}" for i, s in FAILS])
def test_incident_root_cause(incident_id: str, spec: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The failing area the thread names is the plan's root cause (engines/causes.py), the others its consequences."""
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.verdict.judge import judged_plan
    from tests.incidents.build import write_draft, write_target

    why = KNOWN_MISSES.get((incident_id, spec)) or ROOT_CAUSE_MISSES.get((incident_id, spec))
    if why is not None:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    incident = next(i for i in INCIDENTS if i["id"] == incident_id)
    expected = incident["expect"][spec]
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
