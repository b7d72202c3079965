"""Vocab-map contract: ``d2t`` holds offsets (target = i + d2t[i]), in range, unique, int64, one per draft token,
and agrees with ``t2d`` when both are saved (judged by ``verdict.assess_checkpoint.vocab_map``)."""

from __future__ import annotations

import pytest

from pytest_eagle3.shell.contract import Eagle3Result, assert_outcome
from pytest_eagle3.verdict.judgement import Judgement


class TestEagle3VocabMap:
    """``vocab.map``: the draft-to-target token map."""
    @pytest.mark.eagle3_contract("vocab.map")
    def test_vocab_map(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                       request: pytest.FixtureRequest) -> None:
        """The draft->target token map is what engines expect."""
        assert_outcome(request, eagle3_result, eagle3_judgement)
