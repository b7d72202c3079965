"""Predicted acceptance per engine version (with --eagle3-target holding weights): the draft run the
way each selected engine version's load plan feeds it, against the draft as trained."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.shell.contract import Eagle3Result, unknown
from pytest_eagle3.engines.loadplan import LoadPlan
from pytest_eagle3.findings import check
from pytest_eagle3.shell.options import UNKNOWN_FAIL, settings

if TYPE_CHECKING:
    from pytest_eagle3.reference.predict import Prediction


class TestEagle3EngineAcceptance:
    @pytest.mark.eagle3_contract("engine.acceptance")
    def test_acceptance(self, eagle3_load_plan: LoadPlan, eagle3_checkpoint: Checkpoint,
                        eagle3_target: TargetModel, eagle3_result: Eagle3Result,
                        request: pytest.FixtureRequest) -> None:
        """The engine's predicted mean acceptance length reaches the minimum and loses at most
        --eagle3-max-loss against the draft as trained."""
        from pytest_eagle3.shell.fixtures import draft_predictor
        from pytest_eagle3.reference.prediction_findings import judged_findings, summary

        options = settings(request.config)
        predictor = draft_predictor(request.config, eagle3_checkpoint, eagle3_target)
        if isinstance(predictor, str):
            pytest.skip(f"engine.acceptance {predictor}")
        prediction = predictor.predict(eagle3_load_plan)
        eagle3_result.prediction(prediction)
        eagle3_result.basis(prediction.basis)
        if prediction.acceptance is None:
            pytest.skip(prediction.unavailable)
        predictions = _per_reading(request.config, eagle3_checkpoint, eagle3_target, eagle3_load_plan, prediction)
        findings, undecided = judged_findings(predictions, options.min_acceptance, options.max_loss)
        check(findings)
        if undecided is not None:
            unknown(undecided, options.unknown == UNKNOWN_FAIL)
        eagle3_result.passed(summary(prediction))


def _per_reading(config: pytest.Config, ckpt: Checkpoint, target: TargetModel, plan: LoadPlan,
                 prediction: Prediction) -> dict[str, Prediction]:
    """The prediction under each plausible aux-id convention when neither the option nor the measurement
    decides it (``engines.readings``); else the one prediction."""
    from pytest_eagle3.engines.readings import plausible_readings
    from pytest_eagle3.shell.fixtures import prediction_session

    options = settings(config)
    conventions = [r.convention for r in plausible_readings(ckpt, options.aux_convention) if r.convention]
    conventions = list(dict.fromkeys(conventions))
    if prediction.basis == "measured" or options.aux_convention is not None or len(conventions) < 2 \
            or not ckpt.config.aux.ids:
        return {prediction.training.source.split(":")[0]: prediction}
    from pytest_eagle3.reference.predict import PredictionUnavailable

    session = prediction_session(config)
    where = str(target.weights_dir) if options.hidden_states is None else target.path
    try:
        return {c: session.predictor(ckpt, where, c).predict(plan) for c in conventions}
    except PredictionUnavailable:  # a dump lacking one reading's states: the one prediction, as before
        return {prediction.training.source.split(":")[0]: prediction}
