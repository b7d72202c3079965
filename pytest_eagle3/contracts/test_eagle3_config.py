"""Config and format contracts: readable files, a parseable config, a known producer layout,
tensor shapes that agree with the config, and (with --eagle3-target) agreement with the target."""

from __future__ import annotations

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.shell.contract import (
    Eagle3Result,
    readability_findings,
    require_config,
    require_draft,
    require_tensors,
    unknown,
)
from pytest_eagle3.findings import check
from pytest_eagle3.producers.habits import beside_weights
from pytest_eagle3.rules.shapes import (
    config_findings,
    format_findings,
    shape_findings,
    shape_unmodelled,
    target_findings,
)
from pytest_eagle3.shell.options import UNKNOWN_FAIL, settings


class TestEagle3Checkpoint:
    @pytest.mark.eagle3_contract("checkpoint.readable")
    def test_files_readable(self, eagle3_checkpoint: Checkpoint, eagle3_result: Eagle3Result) -> None:
        """Every weight file parses, every tensor's bytes are where its header says."""
        ckpt = eagle3_checkpoint
        eagle3_result.measured("tensor_count", len(ckpt.tensors))
        eagle3_result.measured("weight_bytes", ckpt.nbytes)
        check(readability_findings(ckpt))
        eagle3_result.passed(f"{len(ckpt.tensors)} tensors in {len(ckpt.files)} files, {ckpt.nbytes} bytes")

    @pytest.mark.eagle3_contract("config.parseable")
    def test_config_parseable(self, eagle3_checkpoint: Checkpoint, eagle3_result: Eagle3Result) -> None:
        """config.json is a JSON object with the fields every engine needs."""
        check(config_findings(eagle3_checkpoint))
        cfg = eagle3_checkpoint.config
        eagle3_result.passed(f"hidden {cfg.hidden_size}, vocab {cfg.vocab_size}, draft vocab {cfg.draft_vocab_size}")

    @pytest.mark.eagle3_contract("format.detected")
    def test_format_detected(self, eagle3_checkpoint: Checkpoint, eagle3_result: Eagle3Result) -> None:
        """The producer is recognised, so its aux-layer convention and defaults are known."""
        require_tensors(eagle3_checkpoint)
        require_config(eagle3_checkpoint)
        fmt = eagle3_checkpoint.format
        aux = eagle3_checkpoint.config.aux
        eagle3_result.measured("format", fmt.label)
        eagle3_result.measured("aux_layer_ids", list(aux.ids) if aux.ids else "unset")
        eagle3_result.measured("aux_convention", aux.convention or "unknown")
        if fmt.producer == "unknown" and fmt.evidence:
            pytest.skip("a layout several producers share: " + "; ".join(fmt.evidence) + " (the reference "
                        "measurement with --eagle3-target=DIR decides the convention, or state it with "
                        "--eagle3-aux-convention)")
        check(format_findings(eagle3_checkpoint))
        extra = beside_weights(eagle3_checkpoint.source.listing(eagle3_checkpoint.root), eagle3_checkpoint.files,
                               fmt.producer)
        eagle3_result.measured("files_beside_weights", extra)
        beside = f"; beside the weights: {', '.join(extra)}" if extra else ""
        eagle3_result.passed(f"{fmt.label}: {'; '.join(fmt.evidence)}{beside}")

    @pytest.mark.eagle3_contract("config.shapes")
    def test_tensor_shapes_match_config(self, eagle3_checkpoint: Checkpoint, eagle3_result: Eagle3Result,
                                        request: pytest.FixtureRequest) -> None:
        """lm_head rows = draft vocab, fc = aux count x target hidden, q/k/v take 2 x hidden, norms present; what the
        rule does not model (packed quantized weights, a family it does not know) is skipped, never failed."""
        require_tensors(eagle3_checkpoint)
        require_config(eagle3_checkpoint)
        require_draft(eagle3_checkpoint)
        check(shape_findings(eagle3_checkpoint))
        for finding in shape_unmodelled(eagle3_checkpoint):
            unknown(finding, settings(request.config).unknown == UNKNOWN_FAIL)
        cfg = eagle3_checkpoint.config
        eagle3_result.passed(f"{cfg.layer_count} draft layer(s), first at {cfg.first_layer_prefix}*, shapes agree")

    @pytest.mark.eagle3_contract("target.consistent")
    def test_consistent_with_target(
        self, eagle3_checkpoint: Checkpoint, eagle3_target: TargetModel, eagle3_result: Eagle3Result
    ) -> None:
        """Vocab, hidden size and aux layer ids fit the target model."""
        require_config(eagle3_checkpoint)
        require_draft(eagle3_checkpoint)
        check(target_findings(eagle3_checkpoint, eagle3_target))
        eagle3_result.passed(f"fits target {eagle3_target.path} ({eagle3_target.num_hidden_layers} layers)")
