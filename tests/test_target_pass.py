"""One target pass per run: the main job runs the target no more often than ``capture`` on the same target
and prompts, with several drafts; the reference cut from the longer pass measures what a pass of its own
length measures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun, counted_forwards

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TARGET = EXAMPLES / "demo-target"
DRAFTS = (EXAMPLES / "demo-draft", EXAMPLES / "demo-draft-sglang")


def test_the_main_job_runs_the_target_no_more_than_capture(run_contracts: Callable[..., ContractRun],
                                                             capture_forwards: int) -> None:
    with counted_forwards() as calls:
        run = run_contracts(DRAFTS, target=TARGET)
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED  # demo-draft-sglang loses with vLLM, as documented
    assert 0 < len(calls) <= capture_forwards, (len(calls), capture_forwards)
    # both drafts were measured and predicted from that one pass
    for ckpt in run.report["checkpoints"]:
        assert ckpt["reference"]["mean_acceptance_length"] > 3.5
        predicted = [e["predicted_acceptance"]["mean_acceptance_length"] for e in ckpt["engines"]
                     if e["predicted_acceptance"]]
        assert any(p is not None and p > 3.5 for p in predicted), predicted


def test_the_reference_cut_from_the_pipelines_pass_is_the_one_of_its_own_length() -> None:
    """The pipeline's pass (continuation + k tokens) serves the reference, which walks the draft as the
    predictions do: the figures of a pass of its own, no second pass, and the reference is the predictions'
    "as trained" figure (one figure per quantity per run)."""
    pytest.importorskip("transformers", reason="the target runs with transformers (pip install -e '.[target]')")
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS
    from pytest_eagle3.reference.readings import measure_reference
    from pytest_eagle3.verdict import RunSettings, TargetSide, pipeline_for

    ckpt = Checkpoint.open(DRAFTS[1])
    with counted_forwards() as alone:
        own = measure_reference(ckpt, str(TARGET)).to_json()
    pipeline = pipeline_for(RunSettings())
    with counted_forwards() as shared:
        simulation = pipeline.simulation(ckpt, TargetSide(str(TARGET)))
        cut = measure_reference(ckpt, str(TARGET), passes=pipeline.passes).to_json()
    predictor = simulation.predictor
    assert predictor is not None, simulation.unavailable
    assert cut == own
    assert pipeline.passes.computed == 1
    # one prompt-length group: the continuation token by token, then one capturing forward
    assert len(alone) == DEFAULT_NEW_TOKENS + DEFAULT_STEPS + 1
    assert len(shared) == DEFAULT_NEW_TOKENS + DEFAULT_STEPS + 1  # not the two passes' sum
    assert cut["mean_acceptance_length"] == round(predictor.training.acceptance.mean_acceptance_length, 4)
