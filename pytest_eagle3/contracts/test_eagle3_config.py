"""Config and format contracts: readable files, a parseable config, a known producer layout, tensor shapes that
agree with the config, and (with --eagle3-target) agreement with the target.

Each contract asserts on the run's judgement (``verdict.assess_checkpoint`` judges it, once, for every command).
"""

from __future__ import annotations

import pytest

from pytest_eagle3.shell.contract import Eagle3Result, assert_outcome
from pytest_eagle3.verdict.judgement import Judgement


class TestEagle3Checkpoint:
    """The checkpoint's own contracts: its files, format, config and aux ids, against no engine."""
    @pytest.mark.eagle3_contract("checkpoint.readable")
    def test_files_readable(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                            request: pytest.FixtureRequest) -> None:
        """Every weight file parses, every tensor's bytes are where its header says."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("config.parseable")
    def test_config_parseable(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                              request: pytest.FixtureRequest) -> None:
        """config.json is a JSON object with the fields every engine needs."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("format.detected")
    def test_format_detected(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                             request: pytest.FixtureRequest) -> None:
        """The producer is recognised, so its aux-layer convention and defaults are known."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("config.shapes")
    def test_tensor_shapes_match_config(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                                        request: pytest.FixtureRequest) -> None:
        """lm_head rows = draft vocab, fc = aux count x target hidden, q/k/v take 2 x hidden, norms present; what the
        rule does not model (packed quantized weights, a family it does not know) is skipped, never failed."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("target.consistent")
    def test_consistent_with_target(self, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                                    request: pytest.FixtureRequest) -> None:
        """Vocab, hidden size and aux ids fit the target model."""
        assert_outcome(request, eagle3_result, eagle3_judgement)
