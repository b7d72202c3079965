"""One upgrade advice: a "serve with RELEASE" is computed from the tables, every finding of one engine version
names the same release, and where no release of this engine works the fix names the other engine's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing import SynthSpec, write_checkpoint, write_target
from pytest_eagle3.verdict.judge import judged_plan

SERVE = re.compile(r"serve (?:this target )?with vLLM >= ([0-9.]+)")


def _target(tmp_path: Path, architecture: str, model_type: str) -> TargetModel:
    out = write_target(SynthSpec(producer="specforge"), tmp_path / "target", with_weights=False)
    config = json.loads((out / "config.json").read_text())
    config.update(architectures=[architecture], model_type=model_type)
    (out / "config.json").write_text(json.dumps(config))
    return TargetModel.open(out)


def test_a_gpt_oss_draft_gets_one_release_from_every_finding(tmp_path: Path) -> None:
    """A gpt-oss Eagle3-v2 style draft (no fc, no aux) for a GptOss target on vLLM 0.10.2: the flag is ignored
    (honoured from 0.12.0), the target class captures from 0.11.0 and its allowlist admits gpt_oss from 0.11.0;
    every finding names 0.12.0, the release from which all of them pass."""
    ckpt = Checkpoint.open(write_checkpoint(SynthSpec(producer="specforge", aux_hidden_state=False), tmp_path / "d"))
    target = _target(tmp_path, "GptOssForCausalLM", "gpt_oss")
    old, new = parse_selection("vllm==0.10.2,vllm==0.12.0")
    issues = judged_plan(ckpt, old, target).issues
    named = {m for i in issues for m in SERVE.findall(i.finding.fix)}
    assert {"target-no-capture", "target-not-allowed", "aux-flag-ignored"} <= {i.finding.code for i in issues}
    assert named == {"0.12.0"}, [i.finding.fix for i in issues]
    assert judged_plan(ckpt, new, target).issues == ()


def test_no_release_of_this_engine_names_the_other_engines(tmp_path: Path) -> None:
    """Glm4MoeForCausalLM never captures in any vLLM release read (registered without the interface); SGLang's
    glm4_moe.py has set_eagle3_layers_to_capture from 0.5.5."""
    ckpt = Checkpoint.open(write_checkpoint(SynthSpec(producer="specforge"), tmp_path / "d"))
    target = _target(tmp_path, "Glm4MoeForCausalLM", "glm4_moe")
    (engine,) = parse_selection("vllm==0.33.0")
    (issue,) = [i for i in judged_plan(ckpt, engine, target).issues if i.finding.code == "target-no-capture"]
    assert issue.finding.fix == ("serve this target with SGLang >= 0.5.5 (no vLLM release read does), whose "
                                 "Glm4MoeForCausalLM captures aux states")
