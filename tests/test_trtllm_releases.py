"""TensorRT-LLM per release: the release pins carry their evidence, and a row the dated 1.2.0rc2 read settled
changes what a user is told on each side of its boundary."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, load_plan
from pytest_eagle3.knowledge.engines import trtllm
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec


def _null_draft_vocab(config: dict[str, Any]) -> None:
    config["draft_vocab_size"] = None


def test_every_release_is_pinned_or_says_why_not() -> None:
    assert set(trtllm.RELEASE_COMMITS) == set(trtllm.RELEASES)
    for release, (commit, evidence) in trtllm.RELEASE_COMMITS.items():
        if commit is None:
            assert evidence.startswith("not pinned"), release
        else:
            assert len(commit) == 40 and int(commit, 16) >= 0, release
            assert "tensorrtllm_backend" in evidence, release
    assert trtllm.RELEASE_COMMITS["1.2.0"][0] is None


def test_draft_vocab_size_null_boundary(make_variant: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    """draft_vocab_size: null (lm_head from the target): refused up to 1.1.0 (main read, unpinned); 1.2.0 on falls
    back to vocab_size and loads."""
    path = make_variant(SynthSpec(producer=SPECFORGE), name="trtllm-null-vocab",
                        config=_null_draft_vocab, drop=("lm_head.weight", "d2t", "t2d"))
    target = TargetModel.open(make_target(8, "LlamaForCausalLM", False))

    def plan(version: str) -> tuple[str, set[str], str]:
        engine = parse_selection(f"trtllm=={version}")[0]
        p = load_plan(Checkpoint.open(path), engine, target, None)
        p = dataclasses.replace(p, issues=tuple(i for i in p.issues if i.area != "producer"))
        return p.outcome, {i.finding.code for i in p.issues}, " ".join(i.finding.summary for i in p.issues)

    before_outcome, before, words = plan("1.1.0")
    after_outcome, after, _ = plan("1.2.0")
    assert before_outcome != LOADS and before == {"draft-vocab-size"}, words
    assert "needs draft_vocab_size in the draft config; it is null: startup fails" in words
    assert (after_outcome, after) == (LOADS, set())
    assert plan("1.2.1")[:2] == (after_outcome, after)
