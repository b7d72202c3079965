"""A newcomer's first hour, again (issue "A newcomer's first hour, again"): each case typed the way a user types
it, from a folder outside the clone, asserting what they see."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun
from tests.reference_cases import EXAMPLES

DEMO = EXAMPLES / "demo-draft"
DEMO_SGLANG = EXAMPLES / "demo-draft-sglang"


# 3. A target of another model: target.consistent fails alone; what needs the target is not run, saying why.
@pytest.fixture
def other_target(tmp_path: Path) -> Path:
    config = json.loads((EXAMPLES / "demo-target" / "config.json").read_text())
    config.update(hidden_size=128, vocab_size=2048)
    folder = tmp_path / "other-target"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_target_of_another_model_fails_target_consistent_alone(
        run_contracts: Callable[..., ContractRun], other_target: Path) -> None:
    run = run_contracts([DEMO, DEMO_SGLANG], "-rs", target=other_target / "config.json")
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    failed = {c["id"] for ckpt in run.report["checkpoints"] for e in ckpt["engines"] for c in e["contracts"]
              if c["outcome"] == "failed"}
    assert failed == {"target.consistent", "engine.architecture"}  # SGLang cannot build the speculators config
    assert run.engine_entry(DEMO_SGLANG, "vllm==0.33.0")["failing"] == ["target.consistent"]
    skipped = run.engine_outcomes(DEMO_SGLANG, "vllm==0.33.0")
    for contract in ("engine.aux_layers", "engine.embeddings", "engine.runtime", "engine.acceptance"):
        outcome, message = skipped[contract]
        assert outcome == "skipped" and "not run: the target does not match the draft (vocab_size: 1024 vs 2048; " \
            "target hidden size: 64 vs 128)" in message, (contract, message)
    output = run.output
    assert "fix: write" not in output and "max_position_embeddings" not in output and "Traceback" not in output
