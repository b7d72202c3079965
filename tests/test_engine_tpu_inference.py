"""vLLM on TPU (tpu-inference 0.11.1-0.32.0, judged statically: it needs TPUs): the verdicts a user sees on the bundled
drafts, held to the rows of knowledge/engines/tpu_inference.py.

Its JAX draft class maps only the names of its loader's table (midlayer.*, fc, norm, lm_head, d2t; embed_tokens from
0.12.0): a speculators export (layers.0.*) is refused at load. Its Llama target feeds the hard-coded layer inputs
(2, L // 2, L - 3) whatever the draft's config says. SGLang's LlamaForCausalLMEagle3 falls back to vLLM's torch class
(0.22.1 on); before, its registry refuses that name. Rules it leaves to vLLM (the speculators reader, the architecture
rewrite) are vLLM's at the release it pins, carried over: the code that runs there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS_WITH_LOSS, REFUSED, load_plan
from pytest_eagle3.engines.plan_types import LoadPlan
from pytest_eagle3.knowledge.behaviours import TABLES
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.shell.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_TARGET = EXAMPLES / "demo-target"
NEWEST, FIRST = "tpu-inference==0.32.0", "tpu-inference==0.11.1"


def _plan(draft: str, spec: str) -> LoadPlan:
    return load_plan(Checkpoint.open(EXAMPLES / draft), parse_selection(spec)[0], TargetModel.open(DEMO_TARGET))


def test_every_release_on_the_index_is_read() -> None:
    assert RELEASES["tpu-inference"][0] == "0.11.1" and RELEASES["tpu-inference"][-1] == "0.32.0"


def test_a_speculators_export_is_refused_at_load_for_its_layers_0_names() -> None:
    plan = _plan("demo-draft", NEWEST)
    assert plan.outcome == REFUSED
    refused = {i.finding.code for i in plan.issues if i.area == "keys"}
    assert refused == {"key-refused", "not-initialised"}
    summary = next(i.finding.summary for i in plan.issues if i.finding.code == "key-refused")
    assert summary.startswith("tpu-inference 0.32.0 refuses tensor layers.0.")
    # the loader's own words (weight_utils.py get_param_and_sharding), not another engine's KeyError
    assert summary.endswith("is not a valid param path") and "KeyError" not in summary, summary
    fix = next(i.finding.fix for i in plan.issues if i.finding.code == "key-refused")
    assert "rename layers.0.* -> midlayer.*" in fix


def test_0_11_1_maps_no_embed_tokens() -> None:
    codes = {i.finding.code for i in _plan("demo-draft", FIRST).issues}
    assert "embed-key" in codes
    assert "embed-key" not in {i.finding.code for i in _plan("demo-draft", "tpu-inference==0.12.0").issues}


@pytest.mark.parametrize("spec", ["tpu-inference==0.22.1", NEWEST])
def test_an_sglang_export_loads_through_the_fallback_and_is_fed_the_hard_coded_layers(spec: str) -> None:
    plan = _plan("demo-draft-sglang", spec)
    assert plan.outcome == LOADS_WITH_LOSS
    (aux,) = [i.finding for i in plan.issues if i.area == "aux_layers"]
    version = spec.partition("==")[2]
    assert aux.summary.startswith(f"tpu-inference {version} hard-codes the aux layers (no draft config field is read)")
    assert "the draft was trained on outputs of layers [2, 4, 5]" in aux.summary


def test_before_the_fallback_sglangs_architecture_is_refused_by_its_registry_after_vllms_rewrite() -> None:
    """Before 0.22.1 the JAX registry alone builds the draft; vLLM's config rewrite at the release it pins (code that
    runs there, carried over: evidence) keeps SGLang's name, which no class takes: a refusal naming both rules."""
    plan = _plan("demo-draft-sglang", "tpu-inference==0.21.0")
    assert "architecture" not in plan.unknown
    (issue,) = plan.issues_for("architecture")
    assert issue.summary.endswith("tpu-inference 0.21.0 has no draft class named LlamaForCausalLMEagle3: startup fails")
    assert any(d.startswith("rule: vLLM's rule at the release it pins (0.11.1 up to 0.32.0;") for d in issue.details)


def test_the_rules_left_to_vllm_name_the_release_they_run() -> None:
    row = TABLES["speculators_format"].at(parse_selection(NEWEST)[0])
    assert row.read_in == "vllm" and row.pinned == "0.11.1 up to 0.32.0" and not row.borrowed
    assert row.source.startswith("vLLM's rule at the release it pins (0.11.1 up to 0.32.0;")
    own = TABLES["aux_id_fields"].at(parse_selection(NEWEST)[0])
    assert own.origin is None and own.value == ()


@pytest.mark.slow  # a reference measurement on the demo target per draft
@pytest.mark.parametrize(("draft", "verdict"), [("demo-draft", "FAIL: failing engine.keys"),
                                                ("demo-draft-sglang", "FAIL: failing engine.acceptance, engine.aux_layers")])
def test_plan_prints_the_verdict(capsys: pytest.CaptureFixture[str], draft: str, verdict: str) -> None:
    main(["plan", str(EXAMPLES / draft), "--engine", NEWEST, "--target", str(DEMO_TARGET)])
    out = capsys.readouterr().out
    assert f"verdict:              {verdict}" in out
