"""A wrong target blames no draft: a target of another model fails ``target.consistent`` alone, a draft
given as the target is a usage error, and a same-shape model the draft accepts nothing on gets a target fix, no
draft edit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun
from tests.user_runs import (
    DEMO,
    DEMO_SGLANG,
    EXAMPLES,
    VLLM,
    read_report,
    report_rows,
    run_python,
)


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
    assert run.engine_entry(DEMO_SGLANG, VLLM)["failing"] == ["target.consistent"]
    skipped = run.engine_outcomes(DEMO_SGLANG, VLLM)
    for contract in ("engine.aux_layers", "engine.embeddings", "engine.runtime", "engine.acceptance"):
        outcome, message = skipped[contract]
        assert outcome == "skipped" and "not run: the target does not match the draft (vocab_size: 1024 vs 2048; " \
            "target hidden size: 64 vs 128)" in message, (contract, message)
    output = run.output
    assert "fix: write" not in output and "max_position_embeddings" not in output and "Traceback" not in output


def test_a_draft_given_as_the_target_is_a_usage_error(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-target={DEMO_SGLANG}"],
                tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "is an EAGLE-3 draft" in done.stderr and "not a target model" in done.stderr
    plan = run_python(["-m", "pytest_eagle3", "plan", str(DEMO), "--target", str(DEMO_SGLANG)], tmp_path)
    assert plan.returncode == 2 and "--target:" in plan.stderr and "is an EAGLE-3 draft" in plan.stderr


def test_a_same_shape_wrong_target_blames_no_draft_and_advises_no_draft_edit(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "--eagle3-engine=vllm",
                 f"--eagle3-target={EXAMPLES / 'tiny-target'}", f"--eagle3-report={tmp_path / 'v.json'}"], tmp_path)
    assert done.returncode == 1
    rows = report_rows(read_report(tmp_path / "v.json"))
    failing = rows[("demo-draft", VLLM)]["failing"]
    assert failing[0] == "reference.acceptance" and "engine.embeddings" not in failing, failing  # no measured embed
    assert "drop embed_tokens.weight" not in done.stdout, done.stdout[-3000:]
    # the root cause is computed first: the target, so no draft-side fix line (no positions edit, no see-the-others)
    said = " ".join(done.stdout.split())
    assert f"demo-draft ({VLLM}): reference.acceptance [low-acceptance]: the draft accepts nothing on this " \
           "target under any reading" in said or "root cause" not in said, said[-3000:]
    fixes = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("fix: ")]
    assert fixes and all("--eagle3-target names the model" in line for line in fixes), fixes
    rows_json = read_report(tmp_path / "v.json")["checkpoints"][0]["engines"]  # type: ignore[index]
    assert all(not e["fix"] or all("--eagle3-target" in f for f in e["fix"]) for e in rows_json), rows_json
    repair = [line for line in done.stdout.splitlines() if line.startswith("repair ")]
    assert len(repair) == 1 and "first the target" in repair[0] and "--eagle3-target names the model" in repair[0]
