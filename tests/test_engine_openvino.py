"""OpenVINO GenAI 2026.4.1.0 (optimum-intel 2.2.0 converts): the verdicts and fixes a user sees on the demo pair.

The rows (knowledge/engines/openvino.py) against what ``plan`` says: the draft config's aux ids are never read; the
launch setting ``hidden_layers_list`` (layer outputs) names the layers, else the target's {2, L/2, L-3}, which an
8-layer target does not have. The real exporter and pipeline are run by tests/test_live_openvino.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, LOADS_WITH_LOSS, REFUSED, load_plan
from pytest_eagle3.knowledge.launch_settings import with_launch
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.shell.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TARGET = EXAMPLES / "demo-target"
SPECFORGE = EXAMPLES / "demo-draft-sglang"
SPEC = "openvino==2026.4.1.0"


def _plan(draft: Path, launch: str | None = None) -> tuple[str, dict[str, tuple[str, str | None]]]:
    engine = with_launch(parse_selection(SPEC), launch)[0]
    plan = load_plan(Checkpoint.open(draft), engine, TargetModel.open(TARGET))
    return plan.outcome, {i.finding.code: (i.finding.summary, i.finding.fix) for i in plan.issues
                          if i.area != "producer"}


def test_no_default_layers_for_the_demo_target() -> None:
    """8 target layers, no hidden_layers_list: the pipeline's OPENVINO_ASSERT, and the launch that feeds the layers
    the SpecForge draft was trained on (outputs of [2, 4, 5])."""
    outcome, found = _plan(SPECFORGE)
    summary, fix = found["aux-no-default"]
    assert outcome == REFUSED
    assert "num_decoder_layers must be at least 10" in summary and "target of 8 layers" in summary
    assert fix is not None and fix.startswith("launch with hidden_layers_list: [2, 4, 5]")
    assert "--eagle3-engine-args 'openvino: hidden_layers_list=[2,4,5]'" in fix


def test_the_launch_names_the_layers() -> None:
    """Outputs of [2, 4, 5] load as trained; [1, 3, 4] loads one layer early, with the launch that fixes it."""
    assert _plan(SPECFORGE, "openvino: hidden_layers_list=[2,4,5]") == (LOADS, {})
    outcome, found = _plan(SPECFORGE, "openvino: hidden_layers_list=[1,3,4]")
    summary, fix = found["aux-layers"]
    assert outcome == LOADS_WITH_LOSS
    assert "never reads the draft config's aux ids" in summary and "hidden_layers_list = [1, 3, 4]" in summary
    assert fix is not None and fix.startswith("launch with hidden_layers_list: [2, 4, 5]")


def test_the_speculators_format_is_refused() -> None:
    outcome, found = _plan(EXAMPLES / "demo-draft", "openvino: hidden_layers_list=[2,4,5]")
    summary, fix = found["speculators-format"]
    assert outcome == REFUSED and "Should have a `model_type` key" in summary
    assert fix is not None and "optimum-intel" in fix


def test_trtllms_launch_setting_is_its_own() -> None:
    """The other launch-setting engine keeps its setting, default and threshold."""
    engine = with_launch(parse_selection("trtllm==1.2.1"), "trtllm: eagle3_layers_to_capture=[1,3,4]")[0]
    plan = load_plan(Checkpoint.open(SPECFORGE), engine, TargetModel.open(TARGET))
    assert plan.aux.captured == (2, 4, 5)
    engine = with_launch(parse_selection("trtllm==1.2.1"), "openvino: hidden_layers_list=[2,4,5]")[0]
    assert engine.launch == ()


def test_plan_prints_the_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    main(["plan", str(SPECFORGE), "--engine", SPEC, "--target", str(TARGET / "config.json")])
    out = capsys.readouterr().out
    assert "OpenVINO GenAI 2026.4.1.0 (LlamaForCausalLMEagle3): refused" in out
