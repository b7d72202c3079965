"""Predicted acceptance per engine version (with --eagle3-target holding weights): the draft run the way each
selected engine version's load plan feeds it, against the draft as trained (``verdict.assess_engine.acceptance``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.shell.contract import Eagle3Result, assert_outcome
from pytest_eagle3.verdict.judgement import Judgement

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion


class TestEagle3EngineAcceptance:
    """``engine.acceptance``: the acceptance predicted for one engine version."""
    @pytest.mark.eagle3_contract("engine.acceptance")
    def test_acceptance(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                        request: pytest.FixtureRequest) -> None:
        """The engine's predicted mean acceptance length reaches the minimum and loses at most --eagle3-max-loss
        against the draft as trained."""
        assert_outcome(request, eagle3_result, eagle3_judgement)
