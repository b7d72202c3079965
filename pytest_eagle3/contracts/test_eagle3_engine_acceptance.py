"""Predicted acceptance per engine version (with --eagle3-target holding weights): the draft run the
way each selected engine version's load plan feeds it, against the draft as trained."""

from __future__ import annotations

import pytest

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.shell.contract import Eagle3Result, unknown
from pytest_eagle3.engines.plan_types import LoadPlan
from pytest_eagle3.findings import check
from pytest_eagle3.shell.options import UNKNOWN_FAIL, settings


class TestEagle3EngineAcceptance:
    @pytest.mark.eagle3_contract("engine.acceptance")
    def test_acceptance(self, eagle3_load_plan: LoadPlan, eagle3_checkpoint: Checkpoint,
                        eagle3_target: TargetModel, eagle3_result: Eagle3Result,
                        request: pytest.FixtureRequest) -> None:
        """The engine's predicted mean acceptance length reaches the minimum and loses at most
        --eagle3-max-loss against the draft as trained."""
        from pytest_eagle3.reference.prediction_findings import judged_findings, summary
        from pytest_eagle3.shell.verdicts import verdict_of

        options = settings(request.config)
        verdict = verdict_of(request.config, eagle3_checkpoint, eagle3_load_plan.engine)
        prediction = verdict.prediction
        if prediction is None:
            pytest.skip(f"engine.acceptance {verdict.no_prediction}")
        eagle3_result.prediction(prediction)
        eagle3_result.basis(prediction.basis)
        if prediction.acceptance is None:
            pytest.skip(prediction.unavailable)
        findings, undecided = judged_findings(verdict.predictions, options.min_acceptance, options.max_loss)
        check(findings)
        if undecided is not None:
            unknown(undecided, options.unknown == UNKNOWN_FAIL)
        eagle3_result.passed(summary(prediction))
