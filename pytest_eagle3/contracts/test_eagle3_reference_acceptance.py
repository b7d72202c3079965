"""Reference acceptance (with --eagle3-target): run the real target, feed the draft what its config declares, count
the draft tokens a greedy engine would accept, and try the other readings of the aux ids and of d2t to tell which
one the draft was trained with (``Pipeline.reference``, judged by ``verdict.assess_checkpoint``)."""

from __future__ import annotations

import pytest

from pytest_eagle3.shell.contract import Eagle3Result, assert_outcome
from pytest_eagle3.verdict.judgement import Judgement


class TestEagle3ReferenceAcceptance:
    """``reference.acceptance``: the draft's acceptance on the target, by the reference forward."""
    @pytest.mark.eagle3_contract("reference.acceptance")
    def test_reference_acceptance(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                                  request: pytest.FixtureRequest) -> None:
        """Mean acceptance length (greedy, k draft steps, bonus token counted) reaches the minimum."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("reference.convention")
    def test_reference_convention(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                                  request: pytest.FixtureRequest) -> None:
        """The aux-id convention and d2t reading the config declares are the ones the draft was trained with."""
        assert_outcome(request, eagle3_result, eagle3_judgement)
