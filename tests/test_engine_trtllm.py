"""TensorRT-LLM: what a user sees for the bundled examples, with and without the launch setting that names its
aux layers (``--eagle3-engine-args 'trtllm: eagle3_layers_to_capture=[...]'``), on both sides of the 1.2.0
boundary (a missing draft_vocab_size, TensorRT-LLM#10124), through the real entry points."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import pytest_eagle3.repair.solve  # noqa: F401  (imported before any in-process pytester run, which would drop it

# from sys.modules while pytest_eagle3.repair keeps the stale submodule: two RepairRefused classes afterwards)
from pytest_eagle3.knowledge.launch_settings import LaunchSettingError, engine_args, settings_for, with_launch
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.shell.cli import main
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SGLANG_DRAFT = EXAMPLES / "demo-draft-sglang"  # SpecForge export: ids [2, 4, 5], layer outputs
SPECULATORS_DRAFT = EXAMPLES / "demo-draft"  # speculators format: ids [2, 4, 5], layer inputs
TARGET_CONFIG = EXAMPLES / "demo-target" / "config.json"  # 8 layers: the default feeds outputs [1, 3, 4]
AUX_HEADLINE = "TensorRT-LLM 1.2.1 never reads the draft config's aux ids"
LAUNCH_FIX = "launch with speculative_config.eagle3_layers_to_capture: [2, 4, 5]"
TRAINED = "trtllm: eagle3_layers_to_capture=[2,4,5]"


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
    return code, out.getvalue() + err.getvalue()


def _plan(draft: Path, engine: str = "trtllm", target: Path = TARGET_CONFIG, launch: str | None = None) -> str:
    code, text = _cli("plan", draft, "--engine", engine, "--target", target,
                      *(("--engine-args", launch) if launch else ()))
    assert code == 0, text
    return text


def test_the_releases_read() -> None:
    assert RELEASES["trtllm"][0] == "0.19.0" and RELEASES["trtllm"][-1] == "1.2.1"
    assert [e.spec for e in parse_selection("trtllm")] == ["trtllm==1.2.1"]


def test_default_layers_feed_the_wrong_layers_and_the_fix_names_the_launch() -> None:
    text = _plan(SGLANG_DRAFT)
    assert "outcome:              loads with loss" in text
    assert (f"[aux_layers/aux-layers] {AUX_HEADLINE}; it captures no speculative_config.eagle3_layers_to_capture at "
            "launch, so its default {1, L//2 - 1, L - 4} (layer outputs) -> inputs of layers [2, 4, 5]") in text
    assert "the draft was trained on outputs of layers [2, 4, 5]" in text
    assert f"fix: {LAUNCH_FIX} (trtllm-serve --extra_llm_api_options FILE" in text
    assert "a fixed copy for" not in text  # only the launch can fix it


@pytest.mark.parametrize(("launch", "outcome", "fails"), [
    (TRAINED, "loads", False),
    ("trtllm: eagle3_layers_to_capture=[1,3,4]", "loads with loss", True),  # the defaults, named
    ("trtllm: speculative_config.eagle3_layers_to_capture={4,2,5}", "loads", False),  # the YAML path, a set
    ("sglang: --foo; trtllm: eagle3_layers_to_capture=[2,4,5]", "loads", False),
])
def test_the_launch_setting_decides_the_aux_layers(launch: str, outcome: str, fails: bool) -> None:
    text = _plan(SGLANG_DRAFT, launch=launch)
    assert f"outcome:              {outcome}\n" in text
    assert ("[aux_layers/aux-layers]" in text) is fails
    assert "launched with speculative_config.eagle3_layers_to_capture" in text
    assert "layer inputs fed:     [" in text and "(from the launch: speculative_config.eagle3_layers_to_capture: [" in text
    if fails:
        assert "captures speculative_config.eagle3_layers_to_capture = [1, 3, 4] (layer outputs)" in text


def test_the_launch_setting_is_trtllms_alone() -> None:
    """A launch setting for TensorRT-LLM changes no other engine's plan."""
    assert _plan(SGLANG_DRAFT, "sglang", launch=TRAINED) == _plan(SGLANG_DRAFT, "sglang")


def test_a_bad_launch_setting_is_a_usage_error() -> None:
    code, text = _cli("plan", SGLANG_DRAFT, "--engine", "trtllm", "--engine-args", "trtllm: eagle3_layers_to_capture=[a]")
    assert code == 2 and "--engine-args: eagle3_layers_to_capture='[a]': expected a list of layer ids" in text


def test_a_target_of_five_layers_has_no_default(tmp_path: Path) -> None:
    config = json.loads(TARGET_CONFIG.read_text())
    config["num_hidden_layers"] = 5
    (tmp_path / "config.json").write_text(json.dumps(config))
    text = _plan(SGLANG_DRAFT, target=tmp_path / "config.json")
    assert ("[aux_layers/aux-no-default] TensorRT-LLM 1.2.1 has no default aux layers for a target of 5 layers: "
            "ValueError 'Not enough hidden layers for default EAGLE3 capture' at startup") in text
    assert "outcome:              refused" in text and "fc-bypassed" not in text
    launched = _plan(SGLANG_DRAFT, target=tmp_path / "config.json", launch="trtllm: eagle3_layers_to_capture=[1,2,3]")
    assert "aux-no-default" not in launched


def test_the_pytest_row_and_its_fix(run_contracts: Callable[..., object]) -> None:
    run = run_contracts([SGLANG_DRAFT], "--eagle3-engine=trtllm", "-k", "aux_layers", target=TARGET_CONFIG)
    output = run.output  # type: ignore[attr-defined]
    assert f"engine.aux_layers [aux-layers]: {AUX_HEADLINE}" in output
    assert f"fix: {LAUNCH_FIX}" in output
    assert run.engine_outcomes(SGLANG_DRAFT, "trtllm==1.2.1")["engine.aux_layers"][0] == "failed"  # type: ignore[attr-defined]
    launched = run_contracts([SGLANG_DRAFT], "--eagle3-engine=trtllm", f"--eagle3-engine-args={TRAINED}", "-k",
                             "aux_layers", target=TARGET_CONFIG)
    outcome = launched.engine_outcomes(SGLANG_DRAFT, "trtllm==1.2.1")["engine.aux_layers"]  # type: ignore[attr-defined]
    assert outcome[0] == "passed", outcome


def test_fix_writes_no_copy_where_only_the_launch_can(tmp_path: Path) -> None:
    code, text = _cli("fix", SGLANG_DRAFT, tmp_path / "out", "--to", "trtllm", "--target", TARGET_CONFIG)
    assert code != 0 and not (tmp_path / "out").exists()
    assert "fix: refused, nothing written" in text and LAUNCH_FIX in text
    code, text = _cli("fix", SGLANG_DRAFT, tmp_path / "launched", "--to", "trtllm", "--target", TARGET_CONFIG,
                      "--engine-args", TRAINED)
    assert code == 0, text
    assert "the rules pass on" in text and f"'--eagle3-engine-args={TRAINED}'" in text


def test_fix_writes_a_copy_where_a_copy_can(tmp_path: Path) -> None:
    """A speculators config TensorRT-LLM cannot read: the copy's flat config loads, and its default layers are the
    ones this draft was trained on (layer inputs [2, 4, 5])."""
    assert "speculators-format" in _plan(SPECULATORS_DRAFT)
    code, text = _cli("fix", SPECULATORS_DRAFT, tmp_path / "out", "--to", "trtllm", "--target", TARGET_CONFIG)
    assert code == 0, text
    assert "config: speculators config -> flat" in text and "the rules pass on" in text


@pytest.mark.parametrize(("before", "after"), [("1.1.0", "1.2.0")])
def test_missing_draft_vocab_size_boundary(before: str, after: str, make_variant: Callable[..., Path],
                                           synth_target: Path) -> None:
    """TensorRT-LLM#10124: before it a config without draft_vocab_size fails on the attribute; from 1.2.0 it warns
    and builds vocab_size rows, which the draft's reduced lm_head then fails to fill."""
    def no_vocab(config: dict[str, object]) -> None:
        config.pop("draft_vocab_size", None)
    path = make_variant(SynthSpec(producer=SPECFORGE), config=no_vocab, name="trt-no-vocab")
    old = _plan(path, f"trtllm=={before}", synth_target / "config.json")
    new = _plan(path, f"trtllm=={after}", synth_target / "config.json")
    assert f"TensorRT-LLM {before} needs draft_vocab_size in the draft config; it is absent" in old
    assert f"TensorRT-LLM {after} builds lm_head with" in new and "needs draft_vocab_size" not in new


def test_settings_parse_as_trtllm_spells_them() -> None:
    assert settings_for("trtllm", "trtllm: eagle3_layers_to_capture=[5, 1,3]") == (
        ("speculative_config.eagle3_layers_to_capture", "[1, 3, 5]"),)
    assert settings_for("trtllm", "--foo 1") == () and settings_for("vllm", TRAINED) == ()
    assert settings_for("trtllm", "eagle3_layers_to_capture=[2,4,5]") == ()  # common words go to live servers
    engines = with_launch(parse_selection("trtllm,vllm"), TRAINED)
    assert engine_args(engines) == TRAINED and engines[1].launch == ()
    with pytest.raises(LaunchSettingError):
        settings_for("trtllm", "trtllm: eagle3_layers_to_capture=[]")


def test_an_mla_draft_is_not_modelled(tmp_path: Path) -> None:
    """TensorRT-LLM builds MLA attention for a draft with kv_lora_rank, by a key plan not read here: no FAIL."""
    from pytest_eagle3.probes.cases import write_all

    write_all(tmp_path, ("specforge-mla",))
    text = _plan(tmp_path / "specforge-mla", target=TARGET_CONFIG)
    assert "[architecture/undecided] not modelled: TensorRT-LLM 1.2.1 builds MLA attention for this draft" in text
    assert "outcome:              refused" not in text


def test_one_pipeline_judges_each_launch_of_a_release_on_its_own() -> None:
    """A pipeline held across versions (the Python API) caches by the engine version with its launch settings: the
    launched release is not handed the default launch's verdict."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.verdict import TargetSide, pipeline_for
    from pytest_eagle3.verdict.rows import judgement

    default = parse_selection("trtllm")[0]
    (launched,) = with_launch([default], TRAINED)
    pipeline, ckpt, side = pipeline_for(), Checkpoint.open(str(SGLANG_DRAFT)), TargetSide(str(TARGET_CONFIG))
    first = {o.contract: o.status for o in judgement(pipeline, ckpt, default, side).outcomes}
    again = {o.contract: o.status for o in judgement(pipeline, ckpt, launched, side).outcomes}
    assert first["engine.aux_layers"] == "fail" and again["engine.aux_layers"] == "pass", (first, again)
    assert pipeline.forecast(ckpt, launched, side).plan.label.endswith(
        "(launched with speculative_config.eagle3_layers_to_capture: [2, 4, 5])")
