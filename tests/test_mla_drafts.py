"""A FAIL rests on evidence: an MLA draft (q_a / q_b / kv_a_proj_with_mqa / kv_b_proj, no q/k/v) is checked as MLA,
its architecture fix names only a class of its own family (from the draft class registry), and what the shape rule
cannot size is "not modelled"."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.knowledge import draft_classes
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.probes.cases import write_all
from pytest_eagle3.rules.mla import FAMILY_LLAMA, FAMILY_MLA, attention_family
from pytest_eagle3.rules.quantized import NOT_MODELLED
from pytest_eagle3.rules.shapes import shape_findings, shape_unmodelled
from pytest_eagle3.verdict.judge import judged_plan
from tests.conftest import config_variant


@pytest.fixture(scope="module")
def mla(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(target dir, the Kimi-K2.5-style MLA probe draft: Eagle3DeepseekV2ForCausalLM, deepseek_v2 layer)."""
    target, drafts = write_all(tmp_path_factory.mktemp("mla"), ("specforge-mla",))
    return target, drafts["specforge-mla"]


def _rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    (ckpt,) = report["checkpoints"]
    label = lambda e: f"{e['engine']}=={e['version']}" if e["version"] else e["engine"]  # noqa: E731
    return {(label(e), c["id"]): c for e in ckpt["engines"] for c in e["contracts"]}


def test_mla_shapes_are_checked_as_mla(mla: tuple[Path, Path], tmp_path: Path) -> None:
    ckpt = Checkpoint.open(mla[1])
    assert attention_family(ckpt.tensors) == FAMILY_MLA
    assert shape_findings(ckpt) == [] and shape_unmodelled(ckpt) == []
    # the same tensors under a config that sizes kv_b_proj otherwise: the MLA rule fails, naming the MLA fields
    wrong = Checkpoint.open(config_variant(mla[1], tmp_path / "wrong", lambda c: c.update(v_head_dim=8)))
    (finding,) = shape_findings(wrong)
    assert finding.code == "shape-mismatch"
    keys = " ".join(e.key for e in finding.evidence)
    assert "kv_b_proj" in keys and "v_head_dim" in keys and "q_proj" not in keys


def test_mla_field_missing_is_not_modelled(mla: tuple[Path, Path], tmp_path: Path) -> None:
    """Without kv_lora_rank the rule cannot size the kv path: not modelled (the engine's config class default
    decides), never 'missing q/k/v' or a failure."""
    variant = config_variant(mla[1], tmp_path / "no-rank", lambda c: c.pop("kv_lora_rank"))
    ckpt = Checkpoint.open(variant)
    assert shape_findings(ckpt) == []
    (finding,) = shape_unmodelled(ckpt)
    assert finding.code == NOT_MODELLED and "kv_lora_rank" in finding.summary and "probe.load" in finding.summary


@pytest.mark.parametrize(("engine", "before", "after"), [("sglang", "0.5.11", "0.5.12"), ("vllm", "0.17.0", "0.18.0")])
def test_architecture_fix_names_the_draft_family(mla: tuple[Path, Path], engine: str, before: str, after: str) -> None:
    """Before the MLA class the fix is the release that brings it, never 'set architectures to
    LlamaForCausalLMEagle3'; from it the engine builds the draft's class."""
    ckpt = Checkpoint.open(mla[1])
    old, new = parse_selection(f"{engine}=={before},{engine}=={after}")
    (issue,) = [i for i in judged_plan(ckpt, old).issues if i.area == "architecture"]
    assert "LlamaForCausalLMEagle3" not in issue.finding.fix
    display = {"sglang": "SGLang", "vllm": "vLLM"}[engine]
    assert issue.finding.fix.startswith(f"serve with {display} >= {after}")
    assert '"Eagle3DeepseekV2ForCausalLM"' in issue.finding.fix
    plan = judged_plan(ckpt, new)  # (vLLM 0.18-0.27 then forces DeepSeek YaRN on it: mla-rope, its own rule)
    assert plan.draft_class == "Eagle3DeepseekV2ForCausalLM"
    assert [f.code for f in plan.issues_for("architecture") if f.code.startswith("architecture")] == []


def test_mla_tensors_under_a_llama_class(run_contracts: Callable[..., Any], mla: tuple[Path, Path],
                                         tmp_path: Path) -> None:
    """architectures LlamaForCausalLMEagle3 on MLA tensors: engine.architecture fails naming the MLA class."""
    variant = config_variant(mla[1], tmp_path / "llama-arch",
                             lambda c: c.update(architectures=["LlamaForCausalLMEagle3"]))
    run = run_contracts([variant], "--eagle3-engine=sglang==0.5.23,vllm==0.33.0", target=mla[0] / "config.json")
    rows = _rows(run.report)
    assert rows[("any", "config.shapes")]["outcome"] == "passed"
    for engine in ("sglang==0.5.23", "vllm==0.33.0"):
        arch = rows[(engine, "engine.architecture")]
        assert arch["outcome"] == "failed" and "MLA (DeepSeek-V2 attention)" in arch["message"]
        assert arch["findings"][0]["fix"] == 'set architectures to ["Eagle3DeepseekV2ForCausalLM"]'


def test_llama_draft_keeps_its_llama_fix(tmp_path: Path) -> None:
    from pytest_eagle3.testing import SynthSpec, write_checkpoint

    draft = write_checkpoint(SynthSpec(producer="specforge"), tmp_path / "d")
    config = json.loads((draft / "config.json").read_text())
    config["architectures"] = ["MyDraft"]
    (draft / "config.json").write_text(json.dumps(config))
    (sglang,) = parse_selection("sglang==0.5.23")
    (issue,) = [i for i in judged_plan(Checkpoint.open(draft), sglang).issues if i.area == "architecture"]
    assert issue.finding.fix == 'set architectures to ["LlamaForCausalLMEagle3"]'


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_fix_never_offers_another_family(engine: str) -> None:
    """Over every release: the architectures offered for a family all build a class of that family."""
    for release in RELEASES[engine]:
        version = Version(release)
        for family in (FAMILY_MLA, FAMILY_LLAMA):
            for arch in draft_classes.family_architectures(engine, version, family):
                klass = draft_classes.draft_class(engine, version, arch)
                assert klass is not None and klass.family == family, (engine, release, arch)
    first = draft_classes.first_family_release(engine, FAMILY_MLA)
    assert first is not None and first[1] == "Eagle3DeepseekV2ForCausalLM"


@pytest.mark.parametrize(("version", "rope", "codes"), [
    ("0.17.1", None, set()),                                  # no MLA draft class: no rope rewrite
    ("0.18.0", None, {"refused": "mla-rope"}),  # absent: transformers 5 (a fresh install) sets it; 4 would not
    ("0.23.0", None, {"refused": "mla-rope"}),
    ("0.23.0", {"rope_type": "default"}, {"refused": "mla-rope"}),   # set without factor: KeyError whatever
    ("0.24.0", None, {"refused": "mla-rope"}),               # transformers 5 only: rope_scaling always set
    ("0.27.1", None, {"refused": "mla-rope"}),
    ("0.27.1", {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}, set()),
    ("0.28.0", None, set()),                                  # the rewrite is gone
])
def test_vllm_mla_rope_rewrite_per_release(mla: tuple[Path, Path], tmp_path: Path, version: str,
                                           rope: dict[str, Any] | None, codes: Any) -> None:
    """vLLM 0.18-0.27 deepseek_eagle3.py rewrite a set rope_scaling to deepseek_yarn (KeyError 'factor' without
    one); transformers 5 always sets it and is required from 0.24 (vllm#51092); 0.28 dropped the rewrite."""
    target, draft = mla
    folder = config_variant(draft, tmp_path / "d", lambda c: c.update(rope_scaling=rope)) if rope else draft
    plan = judged_plan(Checkpoint.open(folder), parse_selection(f"vllm=={version}")[0], TargetModel.open(target))
    refused = [i.finding.code for i in plan.issues if i.finding.code.startswith("mla-rope")]
    unknown = [f.code for f in plan.unknown.values() if f.code.startswith("mla-rope")]
    found = {**({"refused": refused[-1]} if refused else {}), **({"unknown": unknown[-1]} if unknown else {})}
    assert found == (codes or {}), plan.describe()
    if "refused" in found:
        (issue,) = [i for i in plan.issues if i.finding.code == "mla-rope"]
        assert "KeyError" in issue.finding.summary and "serve with vLLM >= 0.28.0" in issue.finding.fix
        # the transformers-4 way out exists only before 0.24 (0.24.0 refuses transformers 4) and only without one
        assert ("pin transformers < 5" in issue.finding.fix) == (Version(version) < Version("0.24") and not rope)


def test_the_mla_rope_rule_leaves_a_llama_draft_alone(tmp_path: Path) -> None:
    target, drafts = write_all(tmp_path, ("specforge",))
    plan = judged_plan(Checkpoint.open(drafts["specforge"]), parse_selection("vllm==0.27.1")[0],
                       TargetModel.open(target))
    assert not [i for i in plan.issues if i.finding.code.startswith("mla-rope")]
