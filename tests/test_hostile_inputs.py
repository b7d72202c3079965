"""Hostile and broken inputs: a clear failed contract, never a crash, never a write.

Each case runs the contract suite on one bad checkpoint and checks that pytest exits 1 (tests
failed; never 2/3/4), prints no traceback, names the problem in the failing contract's message,
and leaves every file byte-for-byte as it was (the file a shard index points *outside* the
directory to included; a pickle that runs code must never run).
"""

from __future__ import annotations

import builtins
import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError
from pytest_eagle3.producers.formats import EAGLE, SPECFORGE, SPECULATORS
from pytest_eagle3.testing.synth import SynthSpec, pickle_marker, write_checkpoint


@dataclass(frozen=True)
class Hostile:
    """A bad checkpoint and what the suite must say about it."""

    contract: str
    diagnosis: str
    says: str  # a substring of the failing contract's message that names the real problem
    build: Callable[[Callable[..., Path], Path], Path]
    api_problem: bool = True  # Checkpoint.open records a problem (or a config_problem)


def _fault(fault: str, producer: str = SPECULATORS) -> Callable[[Callable[..., Path], Path], Path]:
    return lambda make, tmp: make(SynthSpec(producer=producer).with_faults(fault))


def _nan_in_fc(make: Callable[..., Path], tmp: Path) -> Path:
    """A SpecForge draft whose fc.weight holds NaN (not the speculators init pattern)."""
    from safetensors.torch import load_file, save_file

    out = write_checkpoint(SynthSpec(producer=SPECFORGE), tmp / "nan-fc")
    state = load_file(str(out / "model.safetensors"))
    fc = state["fc.weight"].clone()
    fc[3, 5] = float("nan")
    state["fc.weight"] = fc
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    assert bool(torch.isnan(load_file(str(out / "model.safetensors"))["fc.weight"]).any())
    return out


CASES: dict[str, Hostile] = {
    "truncated": Hostile("checkpoint.readable", "unreadable", "truncated file", _fault("truncated")),
    "truncated-bin": Hostile("checkpoint.readable", "unreadable", "could not read it", _fault("truncated", EAGLE)),
    "header-length-lie": Hostile("checkpoint.readable", "unreadable", "header claims", _fault("header-length-lie")),
    "header-offsets-lie": Hostile("checkpoint.readable", "unreadable", "offsets that lie",
                                  _fault("header-offsets-lie")),
    "config-not-json": Hostile("config.parseable", "config-unreadable", "not valid JSON", _fault("config-not-json")),
    "config-not-object": Hostile("config.parseable", "config-unreadable", "JSON list, not an object",
                                 _fault("config-not-object")),
    "empty-dir": Hostile("checkpoint.readable", "unreadable", "no weight files", _fault("empty-dir")),
    "shard-outside": Hostile("checkpoint.readable", "unreadable", "points outside the checkpoint directory",
                             _fault("shard-outside")),
    "pickle-code": Hostile("checkpoint.readable", "unreadable", "refused to unpickle", _fault("pickle-code", EAGLE)),
    "nan-speculators-init": Hostile("weights.finite", "speculators-nan-init", "entirely NaN", _fault("nan-lm-head"),
                                    api_problem=False),
    "nan-weight": Hostile("weights.finite", "non-finite", "NaN", _nan_in_fc, api_problem=False),
}


def outside_file(ckpt: Path) -> Path:
    """Where synth's shard-outside fault puts the shard it points to (next to the checkpoint dir)."""
    return ckpt.parent / f"{ckpt.name}-outside.safetensors"


def snapshot(ckpt: Path) -> dict[str, str]:
    """sha256 of every file in the checkpoint dir, plus the outside shard when there is one."""
    files = sorted(p for p in ckpt.rglob("*") if p.is_file()) if ckpt.is_dir() else []
    if outside_file(ckpt).exists():
        files.append(outside_file(ckpt))
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_checkpoint_fails_cleanly(
    case: str, run_contracts: Callable[..., Any], make_checkpoint: Callable[..., Path], tmp_path: Path
) -> None:
    hostile = CASES[case]
    ckpt = hostile.build(make_checkpoint, tmp_path)
    existed = ckpt.exists()
    before = snapshot(ckpt)
    if case == "shard-outside":
        assert outside_file(ckpt) in map(Path, before), "synth did not write the outside shard"

    run = run_contracts([ckpt])

    assert run.result.ret == pytest.ExitCode.TESTS_FAILED, run.output[-3000:]
    assert "Traceback" not in run.output, run.output[-3000:]
    assert "INTERNALERROR" not in run.output, run.output[-3000:]
    assert run.verdict(ckpt) == "fail"
    outcome, message = run.outcomes(ckpt)[hostile.contract]
    assert outcome == "failed", message
    assert message.startswith(f"{hostile.contract} [{hostile.diagnosis}]"), message
    assert hostile.says in message, message
    assert snapshot(ckpt) == before, "the run changed, added or removed files"
    assert ckpt.exists() == existed
    assert not pickle_marker(ckpt).exists()


@pytest.fixture
def opened_files(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path opened (builtins.open / io.open / Path.open) while the fixture is active."""
    opened: list[Path] = []
    real_open = builtins.open

    def recording_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)):
            opened.append(Path(os.fspath(file)).resolve())
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr(io, "open", recording_open)
    return opened


@pytest.mark.parametrize("case", list(CASES))
def test_open_never_raises(
    case: str, make_checkpoint: Callable[..., Path], tmp_path: Path, opened_files: list[Path]
) -> None:
    """``Checkpoint.open`` records every problem instead of raising; reads stay inside the dir."""
    hostile = CASES[case]
    ckpt_dir = hostile.build(make_checkpoint, tmp_path)
    before = snapshot(ckpt_dir)
    opened_files.clear()

    ckpt = Checkpoint.open(ckpt_dir)
    _ = ckpt.format, ckpt.config  # interpretation must not raise either
    for name in ckpt.tensors:  # neither must reading what was indexed, beyond CheckpointReadError
        try:
            for _chunk in ckpt.chunks(name, 4096):
                pass
        except CheckpointReadError:
            pass

    if hostile.api_problem:
        assert ckpt.problems or ckpt.config_problem, f"{case}: no problem recorded"
        assert not ckpt.readable or ckpt.config_problem
    else:
        assert not ckpt.problems and ckpt.config_problem is None and ckpt.readable
    if hostile.contract == "checkpoint.readable":
        assert any(hostile.says in p for p in ckpt.problems), ckpt.problems
    if case == "shard-outside":
        outside = outside_file(ckpt_dir).resolve()
        assert outside not in opened_files, "the shard outside the checkpoint directory was opened"
    assert snapshot(ckpt_dir) == before
    assert not pickle_marker(ckpt_dir).exists()


# -- odd files and layouts ------------------------------------------------------------------
def test_sharded_hub_cache_snapshot_is_readable(make_checkpoint: Callable[..., Path], tmp_path: Path) -> None:
    """Shards that are symlinks into a sibling blobs/ folder (the HF cache layout) are not 'outside'."""
    source = make_checkpoint(SynthSpec(producer=SPECFORGE, sharded=True))
    snapshot_dir = tmp_path / "hub" / "snapshots" / "rev"
    blobs = tmp_path / "hub" / "blobs"
    snapshot_dir.mkdir(parents=True)
    blobs.mkdir()
    for file in source.iterdir():
        if file.suffix == ".safetensors":
            blob = blobs / hashlib.sha256(file.read_bytes()).hexdigest()
            blob.write_bytes(file.read_bytes())
            (snapshot_dir / file.name).symlink_to(Path("../../blobs") / blob.name)
        else:
            (snapshot_dir / file.name).write_bytes(file.read_bytes())
    ckpt = Checkpoint.open(snapshot_dir)
    assert ckpt.problems == []
    assert set(ckpt.tensors) == set(Checkpoint.open(source).tensors)


def _dir_named_like_weights(make: Callable[..., Path], tmp: Path) -> Path:
    out = write_checkpoint(SynthSpec(), tmp / "dir-weights")
    (out / "model.safetensors").unlink()
    (out / "model.safetensors").mkdir()
    return out


def _dangling_symlink(make: Callable[..., Path], tmp: Path) -> Path:
    out = write_checkpoint(SynthSpec(), tmp / "dangling")
    (out / "model.safetensors").unlink()
    (out / "model.safetensors").symlink_to(tmp / "gone.safetensors")
    return out


def _deeply_nested_config(make: Callable[..., Path], tmp: Path) -> Path:
    out = write_checkpoint(SynthSpec(), tmp / "deep-config")
    (out / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    return out


@pytest.mark.parametrize("build", [
    pytest.param(_dir_named_like_weights, id="directory-named-model.safetensors"),
    pytest.param(_dangling_symlink, id="dangling-symlink"),
    pytest.param(_deeply_nested_config, id="deeply-nested-config"),
])
def test_open_never_raises_on_odd_files(build: Callable[..., Path], make_checkpoint: Callable[..., Path],
                                         tmp_path: Path) -> None:
    ckpt = Checkpoint.open(build(make_checkpoint, tmp_path))
    assert ckpt.problems or ckpt.config_problem


@pytest.mark.parametrize("fault, producer, contract, wrong", [
    pytest.param("header-offsets-lie", SPECULATORS, "vocab.map", "vocab.map [missing-map]", id="offsets-lie-missing-map"),
    pytest.param("truncated", SPECULATORS, "config.shapes", "config.shapes [missing-tensors]",
                 id="truncated-missing-tensors"),
    pytest.param("header-length-lie", SPECFORGE, "format.detected", "format.detected [format-unknown]",
                 id="unreadable-format-unknown"),
])
def test_unreadable_tensors_are_not_reported_as_absent(
    fault: str, producer: str, contract: str, wrong: str,
    run_contracts: Callable[..., Any], make_checkpoint: Callable[..., Path],
) -> None:
    ckpt = make_checkpoint(SynthSpec(producer=producer).with_faults(fault))
    run = run_contracts([ckpt])
    assert run.outcomes(ckpt)["checkpoint.readable"][0] == "failed"
    outcome, message = run.outcomes(ckpt)[contract]
    assert not message.startswith(wrong), message
    assert outcome == "skipped" and "see checkpoint.readable" in message
