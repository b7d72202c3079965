"""One verdict pipeline (``pytest_eagle3.verdict``): the contracts, ``plan``, ``fix`` and the live expectation
read the same verdict, so what one command says the others say too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.knowledge.behaviours import segment_starts
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, EngineVersion, release_text
from pytest_eagle3.shell.cli import main
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec, write_checkpoint, write_target
from pytest_eagle3.verdict import RunSettings, TargetSide, pipeline_for

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DRAFTS = sorted(p.name for p in EXAMPLES.iterdir() if (p / "config.json").is_file() and "target" not in p.name)
#: Every engine version the support matrix has a row for (each profile segment's first release).
MATRIX = [EngineVersion(engine, version) for engine in KNOWN_RANGES for version in segment_starts(engine)]


def _kimi_family_pair(root: Path) -> tuple[Path, Path]:
    """A SpecForge draft with ids [2, 4, 6], and the config of a DeepSeek-V3 (Kimi-K2.5-family) target with 8 layers.
    What the ids mean there depends on the SpecForge release (its capture route: SGLang 0.5.14's DeepSeek class reads
    them as-is, SGLang 0.5.5's and the HF backend as outputs), so the tests state the convention: output-of."""
    draft = write_checkpoint(SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 4, 6), target_layers=8), root / "draft")
    target = write_target(SynthSpec(target_layers=8), root / "target", False)
    config = json.loads((target / "config.json").read_text())
    config.update(architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3")
    (target / "config.json").write_text(json.dumps(config))
    return draft, target / "config.json"


def test_fix_writes_the_ids_sglang_reads_as_trained_for_a_kimi_family_target(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Stated as outputs, the contracts say "write [3, 5, 7] into eagle_config...": fix writes exactly that, SGLang
    0.5.23 reads the copy back as the trained layers, and the proof passes. Unstated, the capture routes disagree
    about the outcome: NOT JUDGED, naming a passing and a failing reading."""
    draft, target = _kimi_family_pair(tmp_path)
    engine = EngineVersion("sglang", Version("0.5.23"))
    unstated = pipeline_for(RunSettings()).judge(Checkpoint.open(draft), engine, TargetSide(str(target)))
    assert unstated.unknown["aux_layers"].code == "aux-route-undecided"
    assert {o for _, o in unstated.unknown["aux_layers"].readings} == {"passes", "fails"}
    before = pipeline_for(RunSettings()).judge(Checkpoint.open(draft), engine, TargetSide(str(target)),
                                              convention="output-of")
    assert [i.finding.fix for i in before.issues if i.area == "aux_layers"] == [
        "write [3, 5, 7] into eagle_config.eagle_aux_hidden_state_layer_ids (for SGLang 0.5.23: layer inputs [3, 5, 7])"]

    code = main(["fix", str(draft), str(tmp_path / "fixed"), "--to", "sglang==0.5.23", "--target", str(target),
                 "--aux-convention", "output-of"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "eagle_config.eagle_aux_hidden_state_layer_ids: [2, 4, 6] -> [3, 5, 7]" in out
    assert "the rules pass on" in out and "proof:" not in out  # a config-only target: the acceptance unmeasured
    copy = Checkpoint.open(tmp_path / "fixed")
    # the copy's ids name layer inputs now: the fix record says so, and the copy is read that way unasked
    convention = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())["aux_convention_of_copy"]
    assert convention == "input-of" and copy.config.aux.convention == "input-of"
    assert "--eagle3-aux-convention=output-of" not in out
    after = pipeline_for(RunSettings()).judge(copy, engine, TargetSide(str(target)), convention=convention)
    assert after.aux.captured == after.aux.trained == (3, 5, 7) and not after.issues


def test_plan_and_fix_take_the_target_options_pytest_takes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", str(EXAMPLES / "demo-draft-sglang"), "--engine", "vllm==0.33.0",
                 "--target", str(EXAMPLES / "demo-target" / "config.json"), "--aux-convention", "input-of"])
    out = capsys.readouterr().out
    assert code == 0
    # stated input-of, [2, 4, 5] are the layer inputs trained on: vLLM 0.33.0's defaults feed those
    assert "layer inputs trained: [2, 4, 5]" in out and "outcome:              loads" in out
    with pytest.raises(SystemExit):
        main(["plan", str(EXAMPLES / "demo-draft"), "--engine", "vllm", "--hidden-states", "/nonexistent"])
    assert "--hidden-states: needs --target" in capsys.readouterr().err


def test_plan_json_prints_the_report_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``plan --json`` is the engine row of the JSON report ``pytest --eagle3-report`` writes."""
    draft = str(EXAMPLES / "demo-draft")
    assert main(["plan", draft, "--engine", "sglang==0.5.23", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["engine"] == "sglang" and row["version"] == "0.5.23"
    assert row["verdict"] == "fail" and row["failing"] == ["engine.architecture"] and row["outcome"] == "refused"
    assert row["fix"] and "set architectures ['LlamaForCausalLMEagle3']" in row["fix"][0]
    assert main(["check", draft, "--engine", "sglang==0.5.23", "--report", str(tmp_path / "r.json")]) == 1
    capsys.readouterr()
    report = json.loads((tmp_path / "r.json").read_text())
    (reported,) = [e for e in report["checkpoints"][0]["engines"] if e["engine"] == "sglang"]
    assert row == reported


@pytest.mark.slow
@pytest.mark.parametrize("draft", DRAFTS)
def test_every_example_at_every_matrix_version_the_contracts_say_what_the_pipeline_says(
        draft: str, run_contracts: Callable[..., Any], capsys: pytest.CaptureFixture[str]) -> None:
    """For each bundled draft and each engine version of the support matrix, the engine contracts that fail are
    exactly the areas the pipeline's plan files issues under (engine.acceptance aside: it needs weights), the
    row's outcome is the plan's, and ``plan --json`` prints the rows the report has."""
    path = EXAMPLES / draft
    selection = ",".join(e.spec for e in MATRIX)
    run = run_contracts([path], f"--eagle3-engine={selection}")
    capsys.readouterr()
    assert main(["plan", str(path), "--engine", selection, "--json"]) == 0
    printed = {(r["engine"], r["version"]): r for r in json.loads(capsys.readouterr().out)}
    assert len(printed) == len(MATRIX)
    pipeline = pipeline_for(RunSettings(engines=tuple(MATRIX)))
    ckpt = Checkpoint.open(path)
    independent = set(run.engine_entry(path, "any")["failing"])
    for engine in MATRIX:
        plan = pipeline.forecast(ckpt, engine).plan
        entry = run.engine_entry(path, engine.spec)
        failing = set(entry["failing"]) - independent
        assert failing == {f"engine.{i.area}" for i in plan.issues}, (engine.spec, entry["failing"], plan.issues)
        assert entry["outcome"] == plan.outcome, engine.spec
        assert printed[(engine.engine, release_text(engine.engine, engine.version))] == entry, engine.spec
