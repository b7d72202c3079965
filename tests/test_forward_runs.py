"""The target's forward, not only its hook: the recorded forward probes replayed against the knowledge.

``knowledge/generated/forward_runs.json`` holds, per (engine, release, architecture), what a tiny target of each class
the capture knowledge calls capturing delivered to an EAGLE-3 draft in the engine's own code (``probes/forward.py``).
Replayed here without the engine: a class that delivered agrees with the capture table and the reach; a class that
raised or under-delivered fails the plan's aux layers with the exception's words. The ``engine`` tests run the probe
again in the engine's env (``tox -e vllm0320``, ``tox -e mlxvlm0710``) for a few classes and find what was recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import REFUSED, load_plan
from pytest_eagle3.knowledge import forward_runs, reach
from pytest_eagle3.knowledge.capture import CAPTURES, capture_support
from pytest_eagle3.knowledge.forward_runs import DELIVERED, NOT_RUN, RAISED, UNDER_DELIVERED, ForwardRun
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.knowledge.snapshot import snapshot_at
from pytest_eagle3.probes import forward
from pytest_eagle3.probes.run import env_variable, find_engine_python
from pytest_eagle3.testing.synth import SPECULATORS, SynthSpec

RUNS = [(engine, release) for engine in sorted(forward_runs.scripts()) for release in forward_runs.recorded_releases(engine)]
RECORDED = {(e, r, arch): run for e, r in RUNS for arch, run in forward_runs.forward_runs(e, r).items()}
#: Classes whose probe saw index 0 or L otherwise than the source scan of the reach (``scanners/reach.py``) reads
#: it, and why: the run is the knowledge of its release (``Snapshot.reach`` takes it).
_DEEPSEEK_ZERO = ("the reach scan has no row for the class, and vLLM's capture_range profile reads 0..L; "
                  "models/deepseek_v2.py DeepseekV2Model.forward (0.32.0) appends hidden_states + residual at layer "
                  "input 0 while residual is None: TypeError, the reach's crash")
MEASURED_OVER_SCAN: dict[tuple[str, str, str], str] = {
    ("vllm", "0.32.0", arch): _DEEPSEEK_ZERO for arch in (
        "DeepseekForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3BidirectionalModel", "DeepseekV3ForCausalLM")}


#: Classes the capture knowledge calls capturing whose recorded forward raised or under-delivered, and why (read in
#: the release's source): the plan refuses them with the run's words (the tests below), the capture row stays as read.
FORWARD_OVER_CAPTURE: dict[tuple[str, str, str], str] = {
    ("mlx-vlm", "0.7.10", "GlmMoeDsaForCausalLM"): (
        "models/glm_moe_dsa/language.py LanguageModel.__call__ hands capture_layer_ids to its speculative verifier "
        "only with speculative_verify=True; generate/ar.py _step's prefill passes them without: hidden_states None"),
    ("mlx-vlm", "0.7.10", "DeepseekV4ForCausalLM"): (
        "speculative/eagle3.py _eagle3_rounds raises RuntimeError for a language model without "
        "rollback_speculative_cache, and models/deepseek_v4 defines none"),
    **{("mlx-vlm", "0.7.10", arch): (
        "models/qwen4_exp's language model verifies through models/qwen3_5/speculative_verifier.py, whose _layer "
        "reads layer.input_layernorm: Qwen4ExpDecoderLayer has none (AttributeError)")
       for arch in ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration")},
}


def test_the_classes_whose_forward_fails_are_the_listed_ones() -> None:
    """Every recorded class that raised or under-delivered is listed with its reason, and every listed one did."""
    assert set(_runs(RAISED, UNDER_DELIVERED)) == set(FORWARD_OVER_CAPTURE)


def _runs(*outcomes: str) -> list[tuple[str, str, str]]:
    return sorted(key for key, run in RECORDED.items() if run.outcome in outcomes)


def test_every_capturing_class_was_probed() -> None:
    """Each release recorded covers every class its capture knowledge calls capturing (a class added to the capture
    table is probed, or this fails); every engine with a forward script has a recorded release."""
    assert {engine for engine, _ in RUNS} == set(forward_runs.scripts()) == set(forward.SCRIPTS)
    for engine, release in RUNS:
        recorded = set(forward_runs.forward_runs(engine, release))
        assert set(forward.capturing_classes(engine, release)) <= recorded, (engine, release)


@pytest.mark.parametrize("key", _runs(DELIVERED), ids="/".join)
def test_a_delivering_class_agrees_with_the_capture_table(key: tuple[str, str, str]) -> None:
    """Recorded as delivering: the capture table says it captures, and every requested state reached the fc."""
    engine, release, arch = key
    run = RECORDED[key]
    assert capture_support(engine, Version(release), arch).support == CAPTURES
    assert run.requested is not None and run.delivered == len(run.requested) == len(run.draft_ids)


def _scan_disagrees(run: ForwardRun) -> bool:
    """Whether the run saw index 0 or L otherwise than the reach scan's row (the profile's ``capture_range`` where
    the scan has none) says."""
    row = reach.reach_at(run.engine, Version(run.release), run.architecture)
    said = row.value if row is not None else reach.RANGE_REACH[
        str(snapshot_at(run.engine, run.release).behaviours.capture_range)]
    return forward_runs.measured_reach(run, said) is not None


def test_the_reach_scan_disagreements_are_the_listed_ones() -> None:
    """Where a run saw index 0 or L otherwise than the reach scan (or the profile), the disagreement is listed with
    its reason; the plan takes the run (the tests above)."""
    found = {key for key, run in RECORDED.items() if run.outcome != NOT_RUN and _scan_disagrees(run)}
    assert found == set(MEASURED_OVER_SCAN), sorted(found ^ set(MEASURED_OVER_SCAN))


@pytest.fixture(scope="module")
def plan_on(make_checkpoint: Callable[..., Path], make_target: Callable[..., Path]) -> Callable[..., object]:
    def run(run: ForwardRun) -> object:
        draft = make_checkpoint(SynthSpec(producer=SPECULATORS, target_layers=run.layers, aux_layer_ids=run.draft_ids))
        target = TargetModel.open(make_target(run.layers, run.architecture))
        return load_plan(Checkpoint.open(draft), parse_selection(f"{run.engine}=={run.release}")[0], target, "input-of")
    return run


@pytest.mark.parametrize("key", _runs(RAISED, UNDER_DELIVERED), ids="/".join)
def test_a_class_that_raises_or_under_delivers_fails_the_aux_layers(plan_on: Callable[..., object],
                                                                     key: tuple[str, str, str]) -> None:
    """The probe's draft on the class's target: the plan is refused, and an aux-layer finding (or the fc's, for the
    states that never reach it) carries what the run saw."""
    run = RECORDED[key]
    plan = plan_on(run)
    assert plan.outcome == REFUSED  # type: ignore[attr-defined]
    texts = [" ".join((i.finding.summary, *i.finding.details, i.finding.fix)) for i in plan.issues  # type: ignore[attr-defined]
             if i.area in ("aux_layers", "fc")]
    assert any(str(run.error)[:80] in text for text in texts), texts


def _boundary_raises() -> list[tuple[tuple[str, str, str], int]]:
    """(run, index) where requesting index 0 or L alone raised in a run that otherwise delivered or under-delivered."""
    return sorted((key, index) for key, run in RECORDED.items() if run.outcome in (DELIVERED, UNDER_DELIVERED)
                  for index in (0, run.layers) if str(run.status(index)).startswith(forward_runs.RAISES))


@pytest.mark.parametrize(("key", "index"), _boundary_raises(), ids=lambda v: "/".join(v) if isinstance(v, tuple) else str(v))
def test_a_draft_that_requests_an_index_that_raised_fails_with_the_words(
        plan_on: Callable[..., object], key: tuple[str, str, str], index: int) -> None:
    """A draft whose ids include the index that raised alone (0 or L, the rest the probe's): refused, and the aux-layer
    finding says what the run raised (a None residual at 0 through the reach's crash, anything else as it is)."""
    run = RECORDED[key]
    ids = tuple(sorted({index, *run.draft_ids[1:]}))
    plan = plan_on(dataclasses.replace(run, draft_ids=ids))
    assert plan.outcome == REFUSED  # type: ignore[attr-defined]
    found = {i.finding.code: " ".join((i.finding.summary, *i.finding.details)) for i in plan.issues  # type: ignore[attr-defined]
             if i.area == "aux_layers"}
    words = str(run.status(index))[len(forward_runs.RAISES):]
    if run.raised_at(index) is None:  # index 0 on a None residual
        assert "aux-index-zero" in found and run.source in found["aux-index-zero"], found
    else:
        assert words in found.get("target-forward-raises", ""), found


def test_a_class_not_run_on_cpu_gives_no_verdict() -> None:
    """A class that failed without capture too (or whose tiny config could not be built) is recorded with its words
    and read as no run."""
    for engine, release, arch in _runs(NOT_RUN):
        run = RECORDED[(engine, release, arch)]
        assert run.error
        assert forward_runs.forward_run(engine, Version(release), arch) is None


@pytest.mark.parametrize("key", _runs(DELIVERED), ids="/".join)
def test_the_plan_feeds_a_delivering_class_what_it_delivered(plan_on: Callable[..., object],
                                                              key: tuple[str, str, str]) -> None:
    """The probe's own draft on a class that delivered: the plan files nothing against its aux layers or fc, and
    feeds the layer inputs the runner requested."""
    run = RECORDED[key]
    plan = plan_on(run)
    against = [(i.area, i.finding.code) for i in plan.issues if i.area in ("aux_layers", "fc")]  # type: ignore[attr-defined]
    assert against == []
    assert plan.aux.captured == run.requested  # type: ignore[attr-defined]


#: Classes the engine test probes again, per engine. vLLM: a dense decoder, the Transformers modeling backend (index 0
#: raises), DeepSeek (index 0 crashes on a None residual), and the first class that raised, if one did. mlx-vlm: the
#: Qwen3.5 text class (hybrid linear attention), a MoE decoder, DeepSeek-V4 (its loop raises: no rollback) and GLM-5
#: (its prefill delivers no state).
AGAIN = {"vllm": ("LlamaForCausalLM", "ArceeForCausalLM", "DeepseekV3ForCausalLM",
                  *[arch for e, _, arch in _runs(RAISED) if e == "vllm"][:1]),
         "mlx-vlm": ("Qwen3_5ForCausalLM", "LagunaForCausalLM", "DeepseekV4ForCausalLM", "GlmMoeDsaForCausalLM")}


@pytest.mark.engine
@pytest.mark.parametrize("engine", sorted(AGAIN))
def test_the_engine_forward_is_as_recorded(engine: str) -> None:
    """In the engine's env (tox -e vllm0320, tox -e mlxvlm0710): the probe runs again on a few classes and sees what
    was recorded."""
    python = find_engine_python(engine)
    if python is None:
        pytest.skip(f"no {engine} interpreter ({env_variable(engine)}, or run in the engine's tox env)")
    from pytest_eagle3.probes.run import engine_version

    release = engine_version(engine, python)
    runs = forward_runs.forward_runs(engine, str(release))
    if not runs:
        pytest.skip(f"{engine} {release} has no recorded forward run (record it with probes/forward.py)")
    again = forward.run_forward(python, [a for a in AGAIN[engine] if a in runs], engine=engine)
    for arch, result in again.items():
        recorded = runs[arch]
        assert (result["outcome"], result["error"], result["delivered"]) == \
            (recorded.outcome, recorded.error, recorded.delivered), arch
        # which layer input a state equals is matched bit for bit, and the warm-up attention writes an uninitialised
        # buffer (v1/attention/backends/cpu_attn.py returns ``output`` without metadata): compare what fired
        again_run = dataclasses.replace(recorded, per_id={int(k): v for k, v in (result["per_id"] or {}).items()})
        assert [again_run.status(i) for i in range(recorded.layers + 1)] == \
            [recorded.status(i) for i in range(recorded.layers + 1)], arch
