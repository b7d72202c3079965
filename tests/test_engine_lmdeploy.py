"""LMDeploy (PyTorch engine, 0.11.0-0.18.0): the verdicts and fixes a user sees, on both sides of its boundaries.

The engine does not load on a CPU (device types cuda / ascend / maca / camb), so no probe runs here: these
tests hold the rows (knowledge/engines/lmdeploy.py) to what ``plan``, ``fix`` and ``pytest --eagle3-ckpt``
print. Boundaries: 0.11.0 (the first release with an EAGLE-3 path; 0.10.2 has none), 0.14.0 / 0.15.0 (how a
speculators config fails) and 0.16.0 / 0.17.0 (the Kimi MLA draft class and the Kimi-K2.5 target's capture).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, LOADS_WITH_LOSS, REFUSED, load_plan
from pytest_eagle3.knowledge.advice import first_release
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection
from pytest_eagle3.probes.cases import write_all
from pytest_eagle3.shell.cli import main
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEMO_TARGET = EXAMPLES / "demo-target"
FIRST, BEFORE_MLA, MLA = "lmdeploy==0.11.0", "lmdeploy==0.16.0", "lmdeploy==0.17.0"


def _plan_of(path: Path, spec: str, target: Path | None = DEMO_TARGET) -> tuple[str, dict[str, str]]:
    """(outcome, finding code -> fix) of one engine version's plan."""
    plan = load_plan(Checkpoint.open(path), parse_selection(spec)[0], TargetModel.open(target) if target else None)
    return plan.outcome, {i.finding.code: i.finding.fix for i in plan.issues if i.area != "producer"}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _flat_llama(make_variant: Callable[..., Path], **kw: object) -> Path:
    """A SpecForge export renamed to LMDeploy's architecture (midlayer.* names, reduced vocab, d2t)."""
    def llama(config: dict[str, object]) -> None:
        config["architectures"] = ["LlamaForCausalLM"]
    return make_variant(SynthSpec(producer=SPECFORGE), config=llama, name="lmd-llama", **kw)


def test_release_range() -> None:
    assert RELEASES["lmdeploy"][0] == "0.11.0" and "0.17.0" in RELEASES["lmdeploy"]
    with pytest.raises(EngineSelectionError, match="outside the known range 0.11.0"):
        parse_selection("lmdeploy==0.10.2")


@pytest.mark.parametrize("spec", [FIRST, "lmdeploy==0.18.0"])
def test_sglang_export_needs_lmdeploys_architecture(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``plan`` on the SpecForge export: refused, with the name LMDeploy rewrites (LlamaForCausalLM)."""
    code, out = _cli(capsys, "plan", str(EXAMPLES / "demo-draft-sglang"), "--engine", spec)
    assert code == 0
    version = spec.split("==")[1]
    assert (f"[architecture/architecture] LMDeploy {version} does not build an EAGLE-3 draft for architectures "
            "['LlamaForCausalLMEagle3']") in out
    assert 'fix: set architectures to ["LlamaForCausalLM"]' in out


def test_pytest_verdict_row_for_the_sglang_export() -> None:
    """``pytest --eagle3-ckpt=... --eagle3-target=... --eagle3-engine=lmdeploy``: the FAIL row, the architecture
    fix, and under the table the same fix, then why no copy serves it (the aux layers LMDeploy hard-codes, measured)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--eagle3-ckpt={EXAMPLES / 'demo-draft-sglang'}", f"--eagle3-target={DEMO_TARGET}",
                           "--eagle3-engine=lmdeploy"],
                          capture_output=True, text=True, cwd=ROOT, env=env, check=False, timeout=600)
    out = done.stdout
    assert done.returncode == 1, out[-3000:] + done.stderr[-2000:]
    assert re.search(r"lmdeploy==0\.18\.0\s+FAIL\s+refused\s+engine\.architecture", out), out[-3000:]
    assert 'fix: set architectures to ["LlamaForCausalLM"]' in out
    assert re.search(r"repair \S+demo-draft-sglang \(lmdeploy==0\.18\.0\) by hand, python -m pytest_eagle3 fix cannot: "
                     r"set architectures to \[\"LlamaForCausalLM\"\]; then no config edit changes the layers fed: "
                     r"LMDeploy 0\.18\.0 feeds outputs of layers \[1, 3, 4\]", out), out[-3000:]


def test_hard_coded_aux_layers_are_said_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The SpecForge export trained on outputs of layers 2, 4, 5: LMDeploy feeds outputs of 1, 3, 4 whatever the
    config says; ``fix`` refuses and names the engine release that reads the ids."""
    code, out = _cli(capsys, "fix", str(EXAMPLES / "demo-draft-sglang"), str(tmp_path / "out"), "--to", "lmdeploy",
                     "--target", str(DEMO_TARGET))
    assert code != 0 and not (tmp_path / "out").exists()
    assert ("LMDeploy 0.18.0 hard-codes the aux layers (no draft config field is read): inputs of layers 2, L//2, "
            "L-3 = outputs of layers [1, 3, 4]; the draft was trained on outputs of layers [2, 4, 5]") in out
    since = first_release("aux_id_fields", "vllm", bool)
    assert (f"no config edit changes the layers fed: LMDeploy 0.18.0 feeds outputs of layers [1, 3, 4] to every draft of this "
            f"target; serve with vLLM >= {since} with [3, 5, 6] in eagle_aux_hidden_state_layer_ids") in out


def test_hard_coded_aux_layers_without_a_target(make_variant: Callable[..., Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Without the target: training layers that (2, L//2, L-3) never gives are a loss on the config alone, under
    either convention."""
    def late(config: dict[str, object]) -> None:
        config["architectures"] = ["LlamaForCausalLM"]
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [3, 5, 7]}
    path = make_variant(SynthSpec(producer=SPECFORGE), config=late, name="lmd-late")
    code, out = _cli(capsys, "plan", str(path), "--engine", "lmdeploy")
    assert code == 0 and "outcome:              loads with loss" in out
    assert ("[aux_layers/aux-layers] LMDeploy 0.18.0 hard-codes the aux layers (no draft config field is read): "
            "inputs of layers 2, L//2, L-3 for an L-layer target") in out
    assert "which no L gives" in out and "fix: no config edit changes the layers fed: serve with vLLM >= " in out


@pytest.mark.slow
@pytest.mark.parametrize("spec", [FIRST, "lmdeploy==0.18.0"])
def test_fix_writes_a_copy_lmdeploy_loads(spec: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The speculators draft trained on inputs 2, 4, 5 (what LMDeploy feeds an 8-layer target): flat config,
    LlamaForCausalLM, midlayer.* names; the copy loads at the first and the newest release."""
    out_dir = tmp_path / "fixed"
    code, out = _cli(capsys, "fix", str(EXAMPLES / "demo-draft"), str(out_dir), "--to", spec, "--target",
                     str(DEMO_TARGET))
    assert code == 0, out
    assert "architectures: ['LlamaForCausalLMEagle3'] -> ['LlamaForCausalLM']" in out
    assert "to the midlayer.* layout" in out
    assert json.loads((out_dir / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    copy = Checkpoint.open(out_dir)
    assert any(n.startswith("midlayer.") for n in copy.tensors) and not any(n.startswith("layers.") for n in copy.tensors)
    assert _plan_of(out_dir, spec) == (LOADS, {})


def test_speculators_config_refused_with_lmdeploys_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "plan", str(EXAMPLES / "speculators-draft"), "--engine", "lmdeploy")
    assert code == 0 and "outcome:              refused" in out
    assert "LMDeploy 0.18.0 cannot read a speculators-format config" in out
    assert ("fix: convert the config for LMDeploy: flatten transformer_layer_config, set architectures "
            "['LlamaForCausalLM'] (LMDeploy 0.18.0 reads no aux ids from the draft)") in out


def test_layers_names_refused_with_key_error(make_variant: Callable[..., Path]) -> None:
    """LMDeploy prefixes model. and has no layers.0 -> midlayer rename: layers.0.* raises KeyError."""
    path = _flat_llama(make_variant, rename=lambda n: n.replace("midlayer.", "layers.0."))
    plan = load_plan(Checkpoint.open(path), parse_selection("lmdeploy")[0], TargetModel.open(DEMO_TARGET))
    assert plan.outcome == REFUSED
    assert any("KeyError: 'model.layers.0." in i.finding.summary for i in plan.issues)


def test_two_layers_refused(make_variant: Callable[..., Path]) -> None:
    path = make_variant(SynthSpec(producer=SPECFORGE, draft_layers=2),
                        config=lambda c: c.update(architectures=["LlamaForCausalLM"]), name="lmd-two")
    plan = load_plan(Checkpoint.open(path), parse_selection("lmdeploy")[0], TargetModel.open(DEMO_TARGET))
    assert plan.outcome == REFUSED
    assert any("ValueError('eagle3 only supports 1 decode layer')" in i.finding.summary for i in plan.issues)


def test_missing_d2t_keeps_an_all_zero_map(make_variant: Callable[..., Path]) -> None:
    """No d2t: LMDeploy's draft_id_to_target_id stays zeros, every draft token becomes target id 0."""
    path = _flat_llama(make_variant, drop=("d2t", "t2d"))
    outcome, fixes = _plan_of(path, "lmdeploy")
    assert outcome == LOADS_WITH_LOSS and "d2t-missing-zeros" in fixes
    plan = load_plan(Checkpoint.open(path), parse_selection("lmdeploy")[0], TargetModel.open(DEMO_TARGET))
    assert plan.draft_to_target is not None and set(plan.draft_to_target) == {0}


def test_full_vocab_fix_ships_a_zero_d2t(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "fixed"
    code, out = _cli(capsys, "fix", str(EXAMPLES / "trained-full-vocab"), str(out_dir), "--to", "lmdeploy")
    assert code == 0, out
    assert "tensor: d2t: zeros(1024) (full vocab: target = i + 0)" in out
    plan = load_plan(Checkpoint.open(out_dir), parse_selection("lmdeploy")[0], None)
    assert plan.draft_to_target == tuple(range(1024))


@pytest.fixture(scope="module")
def mla_draft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_all(tmp_path_factory.mktemp("lmd-mla"), ("specforge-mla",))[1]["specforge-mla"]


def test_mla_class_boundary(mla_draft: Path) -> None:
    """0.16.0 has no MLA draft class; 0.17.0 builds Eagle3DeepseekV2ForCausalLM only for model_type kimi_k2."""
    before, before_fixes = _plan_of(mla_draft, BEFORE_MLA, target=None)
    assert before == REFUSED and "LMDeploy >= 0.17.0" in before_fixes["architecture"]
    after, after_fixes = _plan_of(mla_draft, MLA, target=None)
    assert after == REFUSED and after_fixes == {"draft-model-type": 'set "model_type": "kimi_k2" in the draft\'s '
                                                                     "config.json"}


def test_mla_fix_sets_kimi_model_type(mla_draft: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "fixed"
    code, out = _cli(capsys, "fix", str(mla_draft), str(out_dir), "--to", MLA)
    assert code == 0, out
    assert "model_type: 'deepseek_v2' -> 'kimi_k2'" in out
    assert _plan_of(out_dir, MLA, target=None)[0] == LOADS


@pytest.mark.parametrize(("spec", "captures"), [(BEFORE_MLA, False), (MLA, True)])
def test_kimi_target_capture_boundary(spec: str, captures: bool, make_variant: Callable[..., Path],
                                      make_target: Callable[..., Path]) -> None:
    """Kimi-K2.5 targets capture aux states from 0.17.0 (configurations/kimi_k2.py); before, no class serves them."""
    target = make_target(8, "KimiK25ForConditionalGeneration")
    outcome, fixes = _plan_of(_flat_llama(make_variant), spec, target)
    assert ("target-no-capture" in fixes) is not captures
    if not captures:
        assert outcome == REFUSED and "LMDeploy >= 0.17.0" in fixes["target-no-capture"]


def test_qwen3_target_never_captures(make_variant: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    """Qwen3 targets capture no EAGLE-3 aux states in any release: one hidden state, fc skipped, silently."""
    for spec in (FIRST, "lmdeploy==0.18.0"):
        outcome, fixes = _plan_of(_flat_llama(make_variant), spec, make_target(8, "Qwen3ForCausalLM"))
        assert outcome == LOADS_WITH_LOSS and "target-silent-no-capture" in fixes


def test_norm_output_read_by_the_mla_class_only(mla_draft: Path, capsys: pytest.CaptureFixture[str],
                                                 make_variant: Callable[..., Path], tmp_path: Path) -> None:
    """The Llama class never reads norm_output (a loss for a draft trained with it); the MLA class does."""
    def with_norm_output(config: dict[str, object]) -> None:
        config["architectures"] = ["LlamaForCausalLM"]
        config["norm_output"] = True
    outcome, fixes = _plan_of(make_variant(SynthSpec(producer=SPECFORGE), config=with_norm_output, name="lmd-no"),
                              "lmdeploy", target=None)
    assert outcome == LOADS_WITH_LOSS and "norm-flag" in fixes
    out_dir = tmp_path / "fixed"
    assert _cli(capsys, "fix", str(mla_draft), str(out_dir), "--to", MLA)[0] == 0
    config = json.loads((out_dir / "config.json").read_text())
    (out_dir / "config.json").write_text(json.dumps({**config, "norm_output": True}))
    plan = load_plan(Checkpoint.open(out_dir), parse_selection(MLA)[0], None)
    assert plan.outcome == LOADS and plan.norms["norm_output"] is True


@pytest.mark.parametrize(("spec", "how"), [("lmdeploy==0.14.0", "ValueError 'Unrecognized model"),
                                           ("lmdeploy==0.15.0", "falls back to a bare PretrainedConfig")])
def test_speculators_failure_changes_at_0_15(spec: str, how: str) -> None:
    """0.15.0's config_from_pretrained falls back to a bare PretrainedConfig: the draft still fails, later."""
    plan = load_plan(Checkpoint.open(EXAMPLES / "speculators-draft"), parse_selection(spec)[0], None)
    (issue,) = [i for i in plan.issues if i.finding.code == "speculators-format"]
    assert plan.outcome == REFUSED and any(how in d for d in issue.finding.details)
