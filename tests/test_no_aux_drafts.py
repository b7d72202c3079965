"""Drafts without aux hidden states (``eagle_config.use_aux_hidden_state: false``, no fc, no aux ids; the
gpt-oss Eagle3-v2 style): no fc demanded, no aux-id finding, and per release the engine's own fc rule — a release
that honours the flag passes (SGLang builds fc and bypasses it, vLLM builds none), one that ignores it fails with
the release that honours it as the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.rules.shapes import shape_findings, uses_aux_states
from pytest_eagle3.testing import SynthSpec, write_checkpoint, write_target
from pytest_eagle3.verdict.judge import judged_plan

ENGINES = "--eagle3-engine=sglang==0.5.7,sglang==0.5.8,vllm==0.11.2,vllm==0.12.0"


def _rows(report: dict[str, Any], index: int = 0) -> dict[tuple[str, str], dict[str, Any]]:
    ckpt = report["checkpoints"][index]
    label = lambda e: f"{e['engine']}=={e['version']}" if e["version"] else e["engine"]  # noqa: E731
    return {(label(e), c["id"]): c for e in ckpt["engines"] for c in e["contracts"]}


@pytest.mark.parametrize("producer", ["specforge", "modelopt"])
def test_no_fc_demanded(tmp_path: Path, producer: str) -> None:
    ckpt = Checkpoint.open(write_checkpoint(SynthSpec(producer=producer, aux_hidden_state=False), tmp_path))
    assert "fc.weight" not in ckpt.tensors and not uses_aux_states(ckpt)
    assert shape_findings(ckpt) == []


def test_the_flag_absent_still_demands_fc(tmp_path: Path) -> None:
    """The same draft without the flag: fc.weight is demanded as before (the rule did not just stop looking)."""
    write_checkpoint(SynthSpec(producer="specforge", aux_hidden_state=False), tmp_path / "d")
    config = tmp_path / "d" / "config.json"
    config.write_text(config.read_text().replace('"use_aux_hidden_state": false', '"use_aux_hidden_state": true'))
    ckpt = Checkpoint.open(tmp_path / "d")
    (finding,) = shape_findings(ckpt)
    assert finding.code == "missing-tensors" and "fc.weight" in finding.evidence[0].obtained


@pytest.mark.parametrize("producer", ["specforge", "modelopt"])
def test_verdicts_per_release(run_contracts: Callable[..., Any], tmp_path: Path, producer: str) -> None:
    spec = SynthSpec(producer=producer, aux_hidden_state=False)
    draft = write_checkpoint(spec, tmp_path / producer)
    target = write_target(spec, tmp_path / "target", with_weights=False)
    run = run_contracts([draft], ENGINES, target=target / "config.json")
    rows = _rows(run.report)
    out = run.result.stdout.str()
    assert rows[("any", "config.shapes")]["outcome"] == "passed"
    assert "aux-ids-missing" not in out and "names no aux layer ids" not in out
    for ignored, honoured, fix in (("sglang==0.5.7", "sglang==0.5.8", "SGLang >= 0.5.8"),
                                   ("vllm==0.11.2", "vllm==0.12.0", "vLLM >= 0.12.0")):
        fc = rows[(ignored, "engine.fc")]
        assert fc["outcome"] == "failed", fc
        assert "does not read it: it captures aux states and runs them through fc" in fc["message"]
        # one upgrade per row: ModelOpt's layers.0.* keys need SGLang >= 0.5.12, so the fc fix names it too
        lifted = "SGLang >= 0.5.12" if producer == "modelopt" and ignored.startswith("sglang") else fix
        assert fc["findings"][0]["fix"] == f"serve with {lifted}"
        if producer == "specforge":  # ModelOpt's layers.0.* keys fail SGLang < 0.5.12 on their own
            assert rows[(honoured, "engine.keys")]["outcome"] == "passed"
        assert rows[(honoured, "engine.fc")]["outcome"] == "passed"
        assert rows[(honoured, "engine.aux_layers")]["outcome"] != "failed"


def test_sglang_builds_fc_and_never_runs_it(tmp_path: Path) -> None:
    """SGLang >= 0.5.8 builds fc without a tensor for it: a note (fc bypassed), not a loss; vLLM >= 0.12.0 builds none."""
    ckpt = Checkpoint.open(write_checkpoint(SynthSpec(producer="specforge", aux_hidden_state=False), tmp_path))
    sglang, vllm = parse_selection("sglang==0.5.8,vllm==0.12.0")
    plan = judged_plan(ckpt, sglang)
    assert plan.outcome == "loads" and "model.fc.weight" not in plan.uninitialised
    assert any("fc is never run" in n for n in plan.notes)
    assert judged_plan(ckpt, vllm).outcome == "loads"
