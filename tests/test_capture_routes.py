"""A producer's aux ids mean what the backend it trained through made of them for the target's class
(``producers/capture_routes.py``, ``engines/aux_layers.py``): SpecForge through SGLang's own target class (as-is for
the DeepSeek-V2 / Kimi class when the first id is not 1, from SGLang 0.5.13; +1 for the Llama / Qwen classes), or its
HF backend (+1, every class transformers ships). Readings that disagree about the outcome are undecided, naming two
and what decides; a no-ids draft of unknown producer is judged over every producer the checkpoint does not rule out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.engines.aux_layers import transform
from pytest_eagle3.findings import FAILS, PASSES, UNJUDGED
from pytest_eagle3.knowledge.capture import CAPTURES, capture_support
from pytest_eagle3.knowledge.generated import capture_table
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.knowledge.snapshot import snapshot_of
from pytest_eagle3.producers.capture_routes import CAPTURE_ROUTES, ENGINE_CLASS, markdown_table
from pytest_eagle3.producers.formats import ruled_out
from pytest_eagle3.producers.names import ANGELSLIM, SPECULATORS, UNKNOWN
from pytest_eagle3.testing.synth import SynthSpec, target_config, write_checkpoint
from pytest_eagle3.verdict.judge import judged_plan
from tests.conftest import ContractRun

VLLM = "vllm==0.33.0"
SGLANG = "sglang==0.5.23"
KIMI_IDS = (2, 30, 58)  # SpecForge configs/kimi-k25-eagle3.json (3f9b5fca): eagle_config ids for Kimi-K2.5's 61 layers


def _target(folder: Path, arch: str, model_type: str, layers: int, text_model_type: str | None = None) -> Path:
    """A target config.json of class ``arch`` (nested in text_config like Kimi-K2.5's where ``text_model_type``)."""
    fields: dict[str, Any] = target_config(SynthSpec(target_layers=layers)) | {
        "num_hidden_layers": layers, "model_type": model_type, "architectures": [arch]}
    if text_model_type is not None:
        text = {k: v for k, v in fields.items() if k != "architectures"} | {"model_type": text_model_type}
        fields = {"architectures": [arch], "model_type": model_type, "text_config": text}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(fields))
    return folder / "config.json"


def _specforge(folder: Path, layers: int, ids: tuple[int, ...]) -> Path:
    return write_checkpoint(SynthSpec(producer="specforge", target_layers=layers, aux_layer_ids=ids), folder)


def test_kimi_head_passes_on_both_engines(tmp_path: Path, run_contracts: Callable[..., ContractRun]) -> None:
    """SpecForge's Kimi-K2.5 head: [2, 30, 58] through SGLang 0.5.14's Kimi class (DeepSeek-V2 rule: as-is, the first
    id is not 1) are the inputs of layers 2, 30, 58, what vLLM 0.33.0 (as-is) and SGLang 0.5.23 feed. SpecForge before
    0.2.0 could not have trained it: its SGLang pins have no Kimi-K2.5 class that captures, and its HF backend loads
    AutoModelForCausalLM classes, which Kimi-K2.5 (remote code) is not."""
    draft = _specforge(tmp_path / "kimi-draft", 61, KIMI_IDS)
    target = _target(tmp_path / "kimi", "KimiK25ForConditionalGeneration", "kimi_k25", 61, "kimi_k2")
    run = run_contracts([draft], f"--eagle3-engine={SGLANG},{VLLM}", target=target)
    for engine in (SGLANG, VLLM):
        outcome, message = run.engine_outcomes(draft, engine)["engine.aux_layers"]
        assert outcome == "passed", (engine, message)
        assert "as every route specforge may have trained through reads them: specforge >= 0.2.0 through SGLang " \
               "0.5.14's KimiK25ForConditionalGeneration (+1-if-first-is-1)" in message, message


def test_qwen3_moe_head_follows_sglangs_plus_one(tmp_path: Path) -> None:
    """Qwen3-MoE: SGLang's class adds +1 in every release SpecForge pinned, and its HF backend reads outputs too, so
    [2, 24, 45] (the ids a Kimi head would mean as-is) are the inputs of layers 3, 25, 46 here. SGLang 0.5.23 (+1)
    feeds them; vLLM 0.33.0 (eagle_config ids not read: its defaults, inputs 2, 24, 45) does not."""
    layers = 48
    draft = Checkpoint.open(_specforge(tmp_path / "moe-draft", layers, (2, 24, 45)))
    target = TargetModel.open(_target(tmp_path / "moe", "Qwen3MoeForCausalLM", "qwen3_moe", layers))
    sglang, vllm = (judged_plan(draft, e, target) for e in parse_selection(f"{SGLANG},{VLLM}"))
    assert sglang.aux.trained == (3, 25, 46) and sglang.issues_for("aux_layers") == []
    assert "SGLang 0.5.14's Qwen3MoeForCausalLM (+1)" in sglang.aux.trained_from
    (finding,) = vllm.issues_for("aux_layers")
    assert finding.code == "aux-layers" and "the draft was trained on outputs of layers [2, 24, 45]" in finding.summary


def test_routes_that_disagree_are_undecided(tmp_path: Path) -> None:
    """DeepSeek-V3 with [2, 30, 58]: SpecForge 0.2.0 (SGLang 0.5.14, as-is) passes on vLLM; before 0.2.0 (SGLang
    0.5.5, +1; the HF backend, +1) it fails. Undecided, naming both readings and the producer release that decides."""
    draft = Checkpoint.open(_specforge(tmp_path / "dsv3-draft", 61, KIMI_IDS))
    target = TargetModel.open(_target(tmp_path / "dsv3", "DeepseekV3ForCausalLM", "deepseek_v3", 61))
    (engine,) = parse_selection(VLLM)
    plan = judged_plan(draft, engine, target)
    finding = plan.unknown["aux_layers"]
    assert finding.code == "aux-route-undecided" and plan.issues_for("aux_layers") == []
    outcomes = dict(finding.readings)
    assert outcomes["specforge >= 0.2.0 through SGLang 0.5.14's DeepseekV3ForCausalLM (+1-if-first-is-1): "
                    "outputs of layers [1, 29, 57]"] == PASSES, outcomes
    assert outcomes["specforge before 0.2.0 through SGLang 0.5.5's DeepseekV3ForCausalLM (+1): "
                    "outputs of layers [2, 30, 58]"] == FAILS, outcomes
    assert outcomes["specforge before 0.2.0 through its hf backend (the output of layer id): "
                    "outputs of layers [2, 30, 58]"] == FAILS, outcomes
    assert finding.fix.startswith("name the producer release or the backend the draft was trained through")
    assert finding.to_json()["readings"][0] == {"reading": finding.readings[0][0], "outcome": finding.readings[0][1]}


def test_every_pinned_class_has_a_capture_rule() -> None:
    """Each engine-class route, at each release it pins, reads ids for every target class that engine's scan says
    captures there: the class's family has a rule the plan applies (a class without one fails here)."""
    for route in (r for r in CAPTURE_ROUTES if r.supports == ENGINE_CLASS and r.rule is None):
        spans = getattr(capture_table, f"{str(route.engine).upper()}_SPANS")
        for release in route.releases:
            prof = snapshot_of(EngineVersion(str(route.engine), Version(release)))
            for arch in spans:
                support = capture_support(str(route.engine), Version(release), arch)
                if support.support != CAPTURES:
                    continue
                rule = str(prof.behaviours.aux_transform(support.family))
                assert transform(rule, (1, 4, 7), 12) is not None, (route.label, release, arch, rule)


def test_docs_show_the_routes() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "readings.md").read_text(encoding="utf-8")
    assert markdown_table() in doc


def _unknown_no_ids(folder: Path) -> Path:
    """midlayer.* keys under a plain LlamaForCausalLM with an eagle_config (which the EAGLE code never writes) and no
    ids: no producer is identified."""
    out = write_checkpoint(SynthSpec(producer="specforge", target_layers=32, write_aux_ids=False), folder)
    config = json.loads((out / "config.json").read_text())
    config.update(architectures=["LlamaForCausalLM"], eagle_config={"use_aux_hidden_state": True})
    (out / "config.json").write_text(json.dumps(config))
    return out


def test_unknown_producer_without_ids_is_judged_over_the_plausible_defaults(tmp_path: Path) -> None:
    """Speculators and AngelSlim are ruled out (each writes a mark this checkpoint lacks); every default left (SpecForge,
    ModelOpt; EAGLE never writes an eagle_config) is the inputs of layers 2, 16, 29, what vLLM feeds: PASS, assumed, naming them."""
    ckpt = Checkpoint.open(_unknown_no_ids(tmp_path / "unknown"))
    assert ckpt.format.producer == UNKNOWN
    config, keys = ckpt.config_raw or {}, set(ckpt.tensors)
    assert ruled_out(SPECULATORS, config, keys) is not None
    assert ruled_out(ANGELSLIM, config, keys) is not None
    target = TargetModel.open(_target(tmp_path / "llama", "LlamaForCausalLM", "llama", 32))
    (engine,) = parse_selection(VLLM)
    plan = judged_plan(ckpt, engine, target)
    assert "aux_layers" not in plan.unknown and plan.issues_for("aux_layers") == [], dict(plan.unknown)
    assert "the default of specforge (before 0.2.0); specforge (>= 0.2.0); " \
           "modelopt (0.29.0 up to 0.35.0); modelopt (>= 0.35.0)" in plan.assumptions["aux_layers"]


def test_an_undecided_no_ids_default_carries_its_readings(tmp_path: Path) -> None:
    """AngelSlim without a release: 0.2.x's default fails, 0.3.0's passes; both readings in the finding's JSON."""
    out = write_checkpoint(SynthSpec(producer="angelslim", target_layers=32, write_aux_ids=False), tmp_path / "as")
    target = TargetModel.open(_target(tmp_path / "llama", "LlamaForCausalLM", "llama", 32))
    (engine,) = parse_selection(VLLM)
    finding = judged_plan(Checkpoint.open(out), engine, target).unknown["aux_layers"]
    assert finding.to_json()["readings"] == [
        {"reading": "angelslim (0.2.0 up to 0.3.0), its default outputs of layers [1, 15, 29]", "outcome": FAILS},
        {"reading": "angelslim (>= 0.3.0), its default outputs of layers [1, 15, 28]", "outcome": PASSES}]
    assert finding.fix.startswith("name the angelslim release the draft was trained with")
    assert {FAILS, PASSES, UNJUDGED} >= {o for _, o in finding.readings}
