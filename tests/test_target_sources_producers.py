"""Producer dumps (speculators, vLLM extract_hidden_states, SpecForge) read by ``--eagle3-hidden-states``:
each, written the way the producer's own code writes it, gives the same prediction as our own dump on the
demo pair; a dump that does not say enough gets a usage error naming what is missing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ContractRun
from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="the capture of the demo target needs transformers")

TARGET = EXAMPLES / "demo-target"
DRAFT = EXAMPLES / "demo-draft-sglang"
ENGINE = "vllm==0.32.0"
Run = Callable[..., ContractRun]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_eagle3.shell.cli import main

    out = tmp_path_factory.mktemp("dumps") / "ours"
    assert main(["capture", str(TARGET), str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def expected(ours: Path) -> dict[str, Any]:
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    session = PredictionSession(hidden_states=str(ours))
    return predict_acceptance(DRAFT, TARGET / "config.json", ENGINE, session=session).to_json()


def _prompts(ours: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from safetensors.torch import load_file

    manifest = json.loads((ours / "manifest.json").read_text())
    prompts = [load_file(str(ours / p["file"])) | {"prompt_length": p["prompt_length"]} for p in manifest["prompts"]]
    return manifest, prompts


def _stack(prompt: dict[str, Any], layers: list[int]) -> Any:
    import torch

    return torch.stack([prompt[f"layer.{k}"] for k in layers], dim=1)  # [T, n, H]


def write_vllm_style(ours: Path, out: Path, layers: list[int], name: Callable[[int], str]) -> list[str]:
    """vllm 0.32.0 ExampleHiddenStatesConnector.request_finished: ``safetensors.torch.save_file`` of
    ``{"hidden_states": [T, len(eagle_aux_hidden_state_layer_ids), H], "token_ids": [T]}`` per request;
    speculators 0.9.0 moves the same file to ``hidden_states/hs_{i}.safetensors``."""
    from safetensors.torch import save_file

    _, prompts = _prompts(ours)
    out.mkdir(parents=True)
    names = []
    for i, prompt in enumerate(prompts):
        save_file({"hidden_states": _stack(prompt, layers).contiguous(), "token_ids": prompt["token_ids"]},
                  str(out / name(i)))
        names.append(name(i))
    return names


def write_specforge(ours: Path, out: Path, layers: list[int]) -> None:
    """SpecForge scripts/prepare_hidden_states.py ``_save_tensor``: ``torch.save`` of ``{"input_ids",
    "loss_mask", "hidden_state": [1, T, H] (after the final norm), "aux_hidden_state": [1, T, n*H]}`` to
    ``rows_{a}-{b}/data_{idx}.ckpt``; the loss mask marks the answer (here: the greedy continuation)."""
    import torch
    from safetensors.torch import load_file

    manifest, prompts = _prompts(ours)
    head = load_file(str(ours / "head.safetensors"))
    last = manifest["target"]["num_hidden_layers"]
    (out / "rows_0-5000").mkdir(parents=True)
    for i, prompt in enumerate(prompts):
        ids = prompt["token_ids"]
        mask = torch.zeros_like(ids)
        mask[prompt["prompt_length"]:] = 1
        final = prompt[f"layer.{last}"]
        normed = final * torch.rsqrt(final.pow(2).mean(-1, keepdim=True) + 1e-6) * head["norm"].float()
        aux = torch.cat([prompt[f"layer.{k}"] for k in layers], dim=-1)
        torch.save({"input_ids": ids, "loss_mask": mask, "hidden_state": normed.unsqueeze(0),
                    "aux_hidden_state": aux.unsqueeze(0)}, out / "rows_0-5000" / f"data_{i}.ckpt")


def _predict(dump: Path) -> dict[str, Any]:
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    session = PredictionSession(hidden_states=str(dump))
    return predict_acceptance(DRAFT, TARGET / "config.json", ENGINE, session=session).to_json()


ALL = [1, 2, 3, 4, 5, 6, 7, 8]
#: What the engine serves (input-of the declared ids): the figures engine.acceptance reports.
SERVED = ("mean_acceptance_length", "per_position")


def _sidecar(folder: Path, **fields: Any) -> None:
    (folder / "pytest-eagle3.json").write_text(json.dumps(fields))


def test_speculators_dump_with_default_layers(ours: Path, tmp_path: Path) -> None:
    """hs_{i}.safetensors with speculators' default layers [2, L//2, L-3] + L, no sidecar: the draft declares
    output-of [2, 4, 5] (states 3, 5, 6) and the readings around it need states the dump lacks: no prediction rests on a reading never tried."""
    from pytest_eagle3.reference.predict import PredictionUnavailable
    from pytest_eagle3.reference.targets.producer_dumps import detect_layout

    write_vllm_style(ours, tmp_path / "spec" / "hidden_states", [2, 4, 5, 8], lambda i: f"hs_{i}.safetensors")
    assert detect_layout(tmp_path / "spec") == "speculators"
    with pytest.raises(PredictionUnavailable, match=r"lack \[1, 3, 6, 7\].*--layers 1,3,6,7"):
        _predict(tmp_path / "spec")


def test_speculators_dump_with_every_layer(ours: Path, expected: dict[str, Any], tmp_path: Path) -> None:
    """--target-layer-ids 1..8 (the sidecar says so): the whole prediction equals our own dump's."""
    write_vllm_style(ours, tmp_path / "spec" / "hidden_states", ALL, lambda i: f"hs_{i}.safetensors")
    _sidecar(tmp_path / "spec", layers=ALL)
    assert _predict(tmp_path / "spec") == expected


def test_vllm_extraction_dump_with_sidecar(ours: Path, expected: dict[str, Any], tmp_path: Path) -> None:
    """{request_id}.safetensors holding every state; the layer ids and prompt lengths from the sidecar."""
    from pytest_eagle3.reference.targets.producer_dumps import detect_layout

    manifest, _ = _prompts(ours)
    names = write_vllm_style(ours, tmp_path / "vllm", ALL, lambda i: f"cmpl-{i:08x}-0.safetensors")
    _sidecar(tmp_path / "vllm", layers=ALL,
             prompt_lengths={n: p["prompt_length"] for n, p in zip(names, manifest["prompts"])})
    assert detect_layout(tmp_path / "vllm") == "vllm"
    assert _predict(tmp_path / "vllm") == expected


def test_specforge_dump_with_default_layers(run_contracts: Run, ours: Path, tmp_path: Path) -> None:
    """data_{idx}.ckpt with SpecForge's default aux layers (states 2, 4, 5): the readings that need states 3 and 6
    (and the readings around them) were never tried, so neither the reference nor the prediction is given as measured: both skip, naming the
    states to capture (a pass here would rest on the input-of reading alone)."""
    from pytest_eagle3.reference.targets.producer_dumps import detect_layout

    write_specforge(ours, tmp_path / "sf", [2, 4, 5])
    assert detect_layout(tmp_path / "sf") == "specforge"
    run = run_contracts([DRAFT], f"--eagle3-hidden-states={tmp_path / 'sf'}", f"--eagle3-engine={ENGINE}",
                        target=TARGET / "config.json")
    outcome, message = run.engine_outcomes(DRAFT, ENGINE)["engine.acceptance"]
    assert outcome == "skipped" and "lack [1, 3, 6, 7]" in message and "--layers 1,3,6,7" in message
    outcome, message = run.outcomes(DRAFT)["reference.acceptance"]
    assert outcome == "skipped" and "lack [1, 3, 6, 7]" in message


def test_specforge_dump_with_every_layer(ours: Path, expected: dict[str, Any], tmp_path: Path) -> None:
    """--aux-hidden-states-layers 0..7 (SGLang adds 1: states 1..8): the whole prediction equals ours."""
    write_specforge(ours, tmp_path / "sf", ALL)
    _sidecar(tmp_path / "sf", layers=ALL)
    assert _predict(tmp_path / "sf") == expected


def test_plugin_reads_a_producer_dump(run_contracts: Run, ours: Path, expected: dict[str, Any],
                                      tmp_path: Path) -> None:
    """The verdict through pytest: the prediction from a SpecForge dump with a config-only target."""
    write_specforge(ours, tmp_path / "sf", ALL)
    _sidecar(tmp_path / "sf", layers=ALL)
    run = run_contracts([DRAFT], f"--eagle3-hidden-states={tmp_path / 'sf'}", f"--eagle3-engine={ENGINE}",
                        target=TARGET / "config.json")
    outcome = run.engine_outcomes(DRAFT, ENGINE)["engine.acceptance"]
    assert outcome[0] == "failed"  # as from our own dump (test_target_sources.py): 2.68 predicted
    assert f"{expected['mean_acceptance_length']:.2f}" in outcome[1]
    assert run.outcomes(DRAFT)["reference.acceptance"][0] == "passed"


def test_unknown_layer_count_is_a_usage_error(pytester: pytest.Pytester, ours: Path, tmp_path: Path) -> None:
    """Five states per token and no sidecar: the usage error asks for the layer ids."""
    write_vllm_style(ours, tmp_path / "v", [1, 2, 3, 4, 5], lambda i: f"req-{i}.safetensors")
    result = pytester.runpytest(f"--eagle3-ckpt={DRAFT}", f"--eagle3-target={TARGET / 'config.json'}",
                                f"--eagle3-hidden-states={tmp_path / 'v'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*hold 5 states per token; say which in*pytest-eagle3.json*"])
    assert "Traceback" not in result.stderr.str()


def test_a_pickle_that_is_not_plain_tensors_is_refused(ours: Path, tmp_path: Path) -> None:
    """A .ckpt holding an arbitrary object is never executed: weights_only refuses it, with the file named."""
    import pickle

    from pytest_eagle3.checkpoint import TargetModel
    from pytest_eagle3.reference.targets.producer_dumps import check_hidden_states
    from pytest_eagle3.reference.targets.source import TargetSourceError

    (tmp_path / "sf" / "rows_0-5000").mkdir(parents=True)
    (tmp_path / "sf" / "rows_0-5000" / "data_0.ckpt").write_bytes(pickle.dumps(Path("x")))
    with pytest.raises(TargetSourceError, match="data_0.ckpt: cannot be read as a SpecForge feature file"):
        check_hidden_states(tmp_path / "sf", TargetModel.open(TARGET), 67)


def test_producer_dump_needs_the_target_head(pytester: pytest.Pytester, ours: Path, tmp_path: Path) -> None:
    """A producer dump has no head: a bare config.json target is a usage error naming what to give."""
    import shutil

    write_specforge(ours, tmp_path / "sf", [2, 4, 5])
    (tmp_path / "bare").mkdir()
    shutil.copy(TARGET / "config.json", tmp_path / "bare" / "config.json")
    result = pytester.runpytest(f"--eagle3-ckpt={DRAFT}", f"--eagle3-target={tmp_path / 'bare' / 'config.json'}",
                                f"--eagle3-hidden-states={tmp_path / 'sf'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a producer dump holds no target head*has no embedding*"])
    assert "Traceback" not in result.stderr.str()
