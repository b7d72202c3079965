"""vLLM 0.34.0, read from its own wheel: judged by its own rules, P-EAGLE refused, one model runner, lm_head sharing
that declines a packed (quantized) target head. Each case is what a user sees: the CLI's plan, or the load plan's
outcome, issue words and notes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, REFUSED, LoadPlan, load_plan
from pytest_eagle3.knowledge.engines.vllm import RELEASES
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SPECULATORS, SynthSpec, write_checkpoint, write_target

REFUSAL_0340 = "ValueError: P-EAGLE (parallel drafting EAGLE-3) is not supported."
NO_MASK = "mask_hidden not found in weights but model is configured for parallel drafting"


def _peagle(source: Path, out: Path, *, mask: bool = True, mask_token: bool = True) -> Path:
    """A speculators P-EAGLE draft as speculators writes one: speculators_model_type peagle, mask_token_id, and
    the parallel-drafting mask mask_hidden ([fc input width]) beside the EAGLE-3 tensors."""
    out.mkdir()
    config = json.loads((source / "config.json").read_text())
    config.update(speculators_model_type="peagle", architectures=["PEagleDraftModel"])
    config["speculators_config"]["algorithm"] = "peagle"
    if mask_token:
        config["mask_token_id"] = 1000
    (out / "config.json").write_text(json.dumps(config))
    tensors = load_file(str(source / "model.safetensors"))
    if mask:
        tensors["mask_hidden"] = torch.randn(3 * 64, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    save_file(tensors, str(out / "model.safetensors"))
    return out


@pytest.fixture(scope="module")
def drafts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vllm0340")
    eagle3 = write_checkpoint(SynthSpec(producer=SPECULATORS), root / "eagle3")
    full = write_checkpoint(SynthSpec(producer=SPECULATORS, draft_vocab_size=1024), root / "full-vocab")
    return {
        "eagle3": eagle3,
        "full": full,
        "peagle": _peagle(eagle3, root / "peagle"),
        "peagle-no-mask": _peagle(eagle3, root / "peagle-no-mask", mask=False),
        "peagle-no-token": _peagle(eagle3, root / "peagle-no-token", mask_token=False),
        "target": write_target(SynthSpec(), root / "target"),
        "packed-target": _packed_head_target(root / "packed-target"),
    }


def _packed_head_target(out: Path) -> Path:
    """The default target with weights, its lm_head stored as compressed-tensors packs it (weight_packed +
    weight_scale, no lm_head.weight): in vLLM a quantized lm_head with no weight tensor."""
    write_target(SynthSpec(), out, True)
    tensors = load_file(str(out / "model.safetensors"))
    head = tensors.pop("lm_head.weight")
    tensors["lm_head.weight_packed"] = torch.zeros(head.shape[0], head.shape[1] // 8, dtype=torch.int32)
    tensors["lm_head.weight_scale"] = torch.ones(head.shape[0], 1, dtype=torch.bfloat16)
    save_file(tensors, str(out / "model.safetensors"))
    return out


def _plan(draft: Path, version: str, target: Path) -> LoadPlan:
    return load_plan(Checkpoint.open(draft), parse_selection(f"vllm=={version}")[0], TargetModel.open(target))


def _summaries(plan: LoadPlan) -> str:
    return "\n".join(i.finding.summary for i in plan.issues)


def test_vllm_0340_is_the_newest_release_read_and_judged_by_its_own_rules(drafts: dict[str, Path]) -> None:
    assert RELEASES[-1] == "0.34.0"
    run = subprocess.run([sys.executable, "-m", "pytest_eagle3", "plan", str(drafts["eagle3"]),
                          "--engine", "vllm==0.34.0", "--target", str(drafts["target"])],
                         capture_output=True, text=True, timeout=300, check=False)
    out = run.stdout + run.stderr
    assert "load plan, vLLM 0.34.0 (Eagle3LlamaForCausalLM): loads" in out, out
    assert "newer than every" not in out and "judged by" not in out, out


def test_a_speculators_peagle_draft_loads_with_its_mask_on_0330_and_is_refused_on_0340(
        drafts: dict[str, Path]) -> None:
    before = _plan(drafts["peagle"], "0.33.0", drafts["target"])
    assert before.outcome == LOADS, _summaries(before)
    # parallel drafting: mask_hidden goes into its buffer, not dropped
    assert before.parameters["mask_hidden"] == ("mask_hidden",)
    assert "mask_hidden" not in before.dropped
    after = _plan(drafts["peagle"], "0.34.0", drafts["target"])
    assert after.outcome == REFUSED
    (issue,) = [i for i in after.issues if i.finding.code == "peagle"]
    assert REFUSAL_0340 in issue.finding.summary
    assert "speculators_model_type: eagle3" in issue.finding.fix


def test_a_speculators_peagle_draft_before_0220_is_not_a_speculators_type(drafts: dict[str, Path]) -> None:
    plan = _plan(drafts["peagle"], "0.21.0", drafts["target"])
    assert plan.outcome == REFUSED
    assert "Please ensure you're loading a speculators-format model" in _summaries(plan)


@pytest.mark.parametrize(("draft", "words"), [("peagle-no-mask", NO_MASK), ("peagle-no-token", "KeyError: 'mask_token_id'")])
def test_vllm_0330_refuses_a_peagle_draft_without_its_mask(drafts: dict[str, Path], draft: str, words: str) -> None:
    plan = _plan(drafts[draft], "0.33.0", drafts["target"])
    assert plan.outcome == REFUSED
    assert words in _summaries(plan)


def test_a_plain_eagle3_draft_with_a_mask_hidden_drops_it_on_every_release(drafts: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    """Without speculators_model_type peagle vLLM never drafts in parallel: mask_hidden is skipped."""
    draft = _peagle(drafts["eagle3"], tmp_path / "eagle3-with-mask")
    config = json.loads((draft / "config.json").read_text())
    config["speculators_model_type"] = "eagle3"
    (draft / "config.json").write_text(json.dumps(config))
    for version in ("0.33.0", "0.34.0"):
        plan = _plan(draft, version, drafts["target"])
        assert plan.outcome == LOADS, _summaries(plan)
        assert "mask_hidden" in plan.dropped and "mask_hidden" not in plan.parameters


def test_vllm_0340_keeps_the_drafts_lm_head_when_the_target_head_is_packed(drafts: dict[str, Path]) -> None:
    before = _plan(drafts["full"], "0.33.0", drafts["packed-target"])
    after = _plan(drafts["full"], "0.34.0", drafts["packed-target"])
    assert before.lm_head == after.lm_head == "draft"
    notes = "\n".join(after.notes)
    assert "keeps the draft's own lm_head without comparing it" in notes and "packed weights" in notes
    assert "packed weights" not in "\n".join(before.notes)


def test_vllm_0340_shares_a_packed_target_head_with_a_draft_that_has_none(drafts: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    """_should_share returns True before any weight is looked at when the draft has no lm_head."""
    draft = tmp_path / "no-head"
    draft.mkdir()
    (draft / "config.json").write_text((drafts["full"] / "config.json").read_text())
    tensors = {k: v for k, v in load_file(str(drafts["full"] / "model.safetensors")).items() if k != "lm_head.weight"}
    save_file(tensors, str(draft / "model.safetensors"))
    plan = _plan(draft, "0.34.0", drafts["packed-target"])
    assert plan.lm_head == "target"
    assert "packed weights" not in "\n".join(plan.notes)


def test_vllm_0340_has_one_model_runner(drafts: dict[str, Path]) -> None:
    """The V1 runner (and its own aux-id reader) is gone: no 'other runtime mode' in the plan, no V1 words."""
    before = _plan(drafts["eagle3"], "0.33.0", drafts["target"])
    after = _plan(drafts["eagle3"], "0.34.0", drafts["target"])
    assert before.aux.other_mode is not None
    assert after.aux.other_mode is None
    assert "V1" not in "\n".join(after.notes) + _summaries(after)
