"""A speculators-format head its converter wrote carries its original trainer's aux layers (producers/records.py
``Provenance``): speculators 0.1.x / 0.2.x ship no trainer, so a head they wrote was converted from an EAGLE-3
checkpoint (EAGLE's or SpecForge's ``midlayer.*`` layout), trained on the inputs of layers 2, N//2, N-3, the
engines' shared default. From 0.3.0 the release trains and converts, and both readings stand unless the config shows
what only the trainer writes. Real safetensors drafts, judged as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SynthSpec, target_config, write_checkpoint
from pytest_eagle3.verdict.judge import judged_plan

ROOT = Path(__file__).resolve().parents[1]
VLLM = "vllm==0.33.0"
CONVERTED_02 = "speculators convert (before 0.3.0, no trainer in the release)"


def _converted(out: Path, version: str, **config: Any) -> Path:
    """A head as speculators ``version``'s Eagle3Converter writes it: no aux ids, the converter's proposal and
    verifier entries, the fields of that release's Eagle3SpeculatorConfig."""
    spec = SynthSpec(producer="speculators", write_aux_ids=False)
    draft = write_checkpoint(spec, out)
    path = draft / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(architectures=["Eagle3Speculator"], speculators_version=version, **config)
    if version < "0.3.0":  # 0.1.0 / 0.2.0 Eagle3SpeculatorConfig: no norm_before_fc, fc_norm, norm_output
        for key in ("norm_before_fc", "fc_norm", "norm_output"):
            data.pop(key)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return draft


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic target's config.json (8 layers): the engines' default feeds the inputs of layers 2, 4, 5."""
    folder = tmp_path_factory.mktemp("target")
    (folder / "config.json").write_text(json.dumps(target_config(SynthSpec())), encoding="utf-8")
    return folder


def _plan(draft: Path, target: Path) -> Any:
    (engine,) = parse_selection(VLLM)
    return judged_plan(Checkpoint.open(draft), engine, TargetModel.open(target))


@pytest.mark.parametrize("version", ["0.1.0.dev21", "0.1.0", "0.2.0"])
def test_a_head_an_early_converter_wrote_passes_on_its_original_trainers_layers(
        tmp_path: Path, target: Path, version: str) -> None:
    plan = _plan(_converted(tmp_path / "draft", version), target)
    assert "aux_layers" not in plan.unknown and plan.issues_for("aux_layers") == [], plan.unknown
    words = plan.assumptions["aux_layers"]
    assert words.startswith("assumed: no ids in config.json; the default of ")
    assert f"eagle (every release on record), converted by {CONVERTED_02}" in words, words
    assert "is outputs of layers [1, 3, 4], what vLLM 0.33.0 feeds" in words, words


def test_a_head_of_a_release_that_trains_and_converts_is_undecided_naming_both(tmp_path: Path, target: Path) -> None:
    """speculators 0.4.0 trained on the outputs of 2, N//2, N-3 (inputs [3, 5, 6]) and converted EAGLE heads
    (inputs [2, 4, 5]): the config names neither, so the verdict names both readings."""
    plan = _plan(_converted(tmp_path / "draft", "0.4.0"), target)
    finding = plan.unknown["aux_layers"]
    assert finding.code == "aux-ids-undecided"
    assert "speculators's releases and the heads its converter carries disagree" in finding.summary, finding.summary
    outcomes = {label.split(",")[0]: outcome for label, outcome in finding.readings}
    assert outcomes["speculators (0.3.0 up to 0.5.0)"] == "fails", finding.readings
    assert outcomes["eagle (every release on record)"] == "passes", finding.readings


def test_what_only_the_trainer_writes_rules_the_converter_out(tmp_path: Path, target: Path) -> None:
    plan = _plan(_converted(tmp_path / "draft", "0.4.0", embed_requires_grad=True), target)
    (finding,) = plan.issues_for("aux_layers")
    assert finding.code == "aux-ids-missing" and "converted" not in finding.summary, finding.summary
    assert "speculators (0.3.0 up to 0.5.0) trains on" in finding.summary, finding.summary


@pytest.mark.slow
def test_check_gives_the_converted_head_a_verdict(tmp_path: Path, target: Path) -> None:
    """The verdict a user sees: vLLM's engine.aux_layers passes, no NOT JUDGED row for the aux layers."""
    draft = _converted(tmp_path / "draft", "0.2.0")
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(draft), "--target",
                           str(target / "config.json"), "--engine", VLLM, "--report", str(report)],
                          cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    (checkpoint,) = json.loads(report.read_text(encoding="utf-8"))["checkpoints"]
    engine = next(e for e in checkpoint["engines"] if e["engine"] == "vllm")
    aux = next(c for c in engine["contracts"] if c["id"] == "engine.aux_layers")
    assert aux["outcome"] == "passed", aux
    assert CONVERTED_02 in json.dumps(aux), aux
