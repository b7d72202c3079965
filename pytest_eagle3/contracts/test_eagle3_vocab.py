"""Vocab-map contract: ``d2t`` holds offsets (target = i + d2t[i]), in range, unique, int64,
one per draft token, and agrees with ``t2d`` when both are saved."""

from __future__ import annotations

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError
from pytest_eagle3.shell.contract import Eagle3Result, require_config, require_tensors
from pytest_eagle3.findings import Evidence, Finding, check
from pytest_eagle3.rules.exports import export_findings
from pytest_eagle3.rules.vocab_map import diagnose_vocab_map


class TestEagle3VocabMap:
    @pytest.mark.eagle3_contract("vocab.map")
    def test_vocab_map(self, eagle3_checkpoint: Checkpoint, eagle3_result: Eagle3Result) -> None:
        """The draft->target token map is what engines expect."""
        ckpt = eagle3_checkpoint
        require_tensors(ckpt)
        require_config(ckpt)
        cfg = ckpt.config
        lm_head = ckpt.shape("lm_head.weight")
        draft_vocab = cfg.draft_vocab_size or (lm_head[0] if lm_head else None)
        if cfg.vocab_size is None or draft_vocab is None:
            pytest.skip("config.json gives no vocab_size / draft_vocab_size: see config.parseable")
        eagle3_result.measured("vocab_size", cfg.vocab_size)
        eagle3_result.measured("draft_vocab_size", draft_vocab)
        try:
            d2t = ckpt.read("d2t") if "d2t" in ckpt.tensors else None
            t2d = ckpt.read("t2d") if "t2d" in ckpt.tensors else None
        except CheckpointReadError as exc:
            check([Finding("unreadable-map", f"d2t/t2d cannot be read: {exc}",
                                        (Evidence("d2t/t2d", str(exc), "readable tensors"),),
                                        "re-export the checkpoint")])
            return
        check(diagnose_vocab_map(d2t, t2d, cfg.vocab_size, draft_vocab) + export_findings(ckpt, cfg.vocab_size, draft_vocab))
        if d2t is None:
            eagle3_result.passed(f"full vocab ({cfg.vocab_size}), no map needed")
        else:
            eagle3_result.passed(f"d2t: {draft_vocab} offsets into vocab {cfg.vocab_size}, in range and unique"
                                 + (", agrees with t2d" if t2d is not None else ""))
