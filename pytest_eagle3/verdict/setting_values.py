"""The checks of each setting's value (paths, numbers, the device, the convention): a bad value is a
:class:`SettingError` naming where it was given (pytest shows it as a usage error, the command line as an
argparse error). Imported by ``verdict.settings.build`` only: the idle plugin never loads this module."""

from __future__ import annotations

import errno
import math
import os
from pathlib import Path

EMPTY = "is empty (an unset shell variable?)"


class SettingError(ValueError):
    """A setting's value that cannot be used: ``str()`` names where it was given, then why."""


def usage(flag: str, message: str) -> SettingError:
    """A SettingError naming ``flag``: what the user sees on stderr."""
    return SettingError(f"{flag}: {message}")


def absent(path: str | Path) -> str:
    """Why nothing can be opened at ``path``, after its name: "does not exist", or what the file system says instead
    (a symlink loop, a link to nothing), with the Hub id a mistyped one was meant as."""
    from pytest_eagle3.checkpoint.hub import meant_hub_id

    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop (a link that leads back to itself, directly or through others)"
        if os.path.islink(path):
            return f"is a link to {os.readlink(path)}, which does not exist"
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return f"cannot be opened ({exc.strerror or exc})"
    meant = meant_hub_id(str(path))
    return f"does not exist; a Hub id is written {meant}" if meant else "does not exist"


def checkpoints(flag: str, paths: tuple[str, ...], download: bool = False) -> tuple[str, ...]:
    """Each checkpoint path checked (``checkpoint_dir``), each checkpoint once: ``X``, ``X/`` and a link to ``X`` are
    one folder, two revisions of a Hub id that pin one commit one id (the first spelling given is kept)."""
    once: dict[str, str] = {}
    for path in (checkpoint_dir(flag, p, download) for p in paths):
        once.setdefault(path if path.startswith("hf://") else str(Path(path).resolve()), path)
    return tuple(once.values())


def hub_id(flag: str, spec: str, download: bool) -> str:
    """A Hub id pinned to its commit (``hf://ORG/NAME@SHA``), its JSON files (and with ``download`` its
    weights) in the cache; a usage error naming what to do when the Hub cannot give it."""
    from pytest_eagle3.checkpoint.hub import HubError, pin

    try:
        return pin(spec, download=download)
    except HubError as exc:
        raise usage(flag, str(exc)) from None


def checkpoint_dir(flag: str, path: str, download: bool = False) -> str:
    """A draft's folder or Hub id, checked: it exists and is not empty."""
    if not path.strip():
        raise usage(flag, f"{EMPTY}: give the draft checkpoint's directory")
    if path.startswith("hf://"):
        return hub_id(flag, path, download)
    given = Path(path)
    if not given.exists():
        raise usage(flag, f"{path} {absent(path)} (give the draft checkpoint's directory)")
    if not given.is_dir():
        raise usage(flag, f"{path} is a file; give the draft checkpoint's directory ({given.parent})")
    return path


def target_path(flag: str, path: str | None, download: bool = False) -> str | None:
    """A target's folder, config.json or Hub id, checked; None when not given."""
    if path is None:
        return None
    if not path.strip():
        raise usage(flag, f"{EMPTY}: give the target model's directory or its config.json")
    if path.startswith("hf://"):
        path = hub_id(flag, path, download)
    else:
        given = Path(path)
        if not given.exists():
            raise usage(flag, f"{path} {absent(path)} (give the target model's directory or its config.json)")
        if given.is_file() and given.suffix != ".json":
            raise usage(flag, f"{path} is a file but not a config.json; give the target model's "
                               f"directory ({given.parent}) or its config.json")
    from pytest_eagle3.checkpoint.target import TargetModel

    signs = TargetModel.open(path).draft_signs
    if signs:
        raise usage(flag, f"{path} is an EAGLE-3 draft ({'; '.join(signs)}), not a target model: give the model the "
                          "draft was trained against (its directory or config.json)")
    return path


def report_path(flag: str, path: str | None, example: str = "eagle3-report.json") -> str | None:
    """Where the JSON verdict (or the summary) goes: a file path (its folder is created); never a directory,
    never empty."""
    if path is None:
        return None
    if not path.strip():
        raise usage(flag, f"{EMPTY}: give a file path such as {example}")
    given = Path(path)
    if given.is_dir():
        raise usage(flag, f"{path} is a directory; give a file path such as {given / example}")
    problem = unwritable(given)
    if problem is not None:
        raise usage(flag, f"{path} cannot be written: {problem}")
    return path


def unwritable(path: Path) -> str | None:
    """Why a file cannot be written at ``path`` (its missing folders created), or None; nothing is left behind."""
    import tempfile

    if path.exists():
        if not path.is_file():  # a device or a pipe: opening it could wait for a reader
            return None if os.access(path, os.W_OK) else "not writable"
        try:
            with path.open("a", encoding="utf-8"):  # append mode: nothing is truncated or written
                return None
        except OSError as exc:
            return f"{exc.strerror or exc}"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as exc:
        return f"{folder} takes no new files ({exc.strerror or exc})"


def existing(flag: str, path: str | None, how: str) -> str | None:
    """A path that must exist (a file or a folder); the usage error says ``how`` to make it."""
    if path is not None and not Path(path).exists():
        raise usage(flag, f"{path} {absent(path)} ({how})")
    return path


def existing_file(flag: str, path: str | None) -> str | None:
    """``path`` if it is a file; else a usage error naming ``flag``."""
    if path is not None and not Path(path).is_file():
        raise usage(flag, f"{path} is not a file")
    return path


def hidden_states(flag: str, path: str | None, target: str | None, prompts: str | None,
                  new_tokens: int, target_flag: str = "--eagle3-target", prompts_flag: str = "--eagle3-prompts",
                  ) -> str | None:
    """A dump that fits the target: manifest, target fields and hash, every file's header (no state read)."""
    if path is None:
        return None
    if target is None:
        raise usage(flag, f"needs {target_flag} (the target's directory, config.json or Hub id) to check the dump "
                          "against")
    if prompts is not None:
        raise usage(flag, f"the prompts are the dump's: drop {prompts_flag} (or capture again with --prompts FILE)")
    from pytest_eagle3.checkpoint import TargetModel
    from pytest_eagle3.reference.targets.producer_dumps import check_hidden_states
    from pytest_eagle3.reference.targets.source import TargetSourceError

    try:
        check_hidden_states(path, TargetModel.open(target), new_tokens)
    except TargetSourceError as exc:
        raise usage(flag, str(exc)) from None
    return path


def switch(flag: str, text: str | None) -> bool:
    """A yes/no setting: the flag given, or 1/true/yes/on (0/false/no/off) from the env or the ini."""
    if text is None:
        return False
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise usage(flag, f"{text!r} is not one of 1, true, yes, on, 0, false, no, off")


def convention(flag: str, value: str | None) -> str | None:
    """An aux-id convention, checked against the known ones; None when not given."""
    from pytest_eagle3.producers.names import CONVENTIONS

    if value is None:
        return None
    value = value.strip().lower()
    if value not in CONVENTIONS:
        raise usage(flag, f"{value!r} is not one of {', '.join(CONVENTIONS)}")
    return value


def min_acceptance(flag: str, text: str | None, steps: int, default: float) -> float:
    """The minimum mean acceptance length, checked against ``steps``; ``default`` when not given."""
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= steps + 1:
        raise usage(flag, f"{text!r} is not a mean acceptance length: give a number from "
                           f"0 (no minimum) to {steps + 1} (k + 1 with k = {steps})")
    return value


def number(flag: str, text: str | None, default: float, kind: type, low: float, high: float) -> float:
    """A number in [low, high] (an integer when ``kind`` is int); the usage error names the range."""
    if text is None or not text.strip():
        return default
    try:
        value = kind(text.strip())
    except ValueError:
        raise usage(flag, f"{text!r} is not {'an integer' if kind is int else 'a number'} in [{low:g}, {high:g}]") from None
    if not low <= value <= high:
        raise usage(flag, f"{text!r} is outside [{low:g}, {high:g}]")
    return float(value)


def draft_tokens(flag: str, text: str | None, steps: int, topk: int, steps_flag: str, topk_flag: str) -> int | None:
    """SGLang's --speculative-num-draft-tokens: with topk 1 it is k + 1 (sglang 0.5.23
    srt/arg_groups/speculative_hook.py ``_handle_eagle_family`` resets any other value to
    speculative_num_steps + 1); with a tree, from 2 to the candidates it keeps plus the root
    (``reference.draft_setting.max_draft_tokens``: ``organize_draft_results`` takes num_draft_tokens - 1 of them)."""
    from pytest_eagle3.reference.draft_setting import max_draft_tokens

    if text is None or not text.strip():
        return None
    top = max_draft_tokens(steps, topk) if topk > 1 else steps + 1
    low = 2 if topk > 1 else steps + 1
    value = int(number(flag, text, 0, int, 1, 1 << 20))
    if topk == 1 and value != steps + 1:
        raise usage(flag, f"{text!r} with {topk_flag}=1 (a chain): SGLang verifies k + 1 = {steps + 1} tokens "
                          f"({steps_flag}={steps}; it resets any other value); give {topk_flag} > 1 for a tree")
    if not low <= value <= top:
        raise usage(flag, f"{text!r} is outside [{low}, {top}] for {steps_flag}={steps}, {topk_flag}={topk} "
                          f"(the root plus at most topk + (k - 1) * topk^2 = {top - 1} candidates)")
    return value


def device(flag: str, text: str, gpu_selected: bool) -> str:
    """A torch device (``cpu``, ``cuda:0``), checked."""
    from pytest_eagle3.reference.defaults import DEVICE_TYPES

    device = text.strip().lower()
    kind, _, index = device.partition(":")
    if kind not in DEVICE_TYPES or (index and not index.isdigit()):
        raise usage(flag, f"{text!r} is not a device the reference runs on: "
                           f"{' or '.join(DEVICE_TYPES)} (cuda:N for one GPU)")
    cuda_visible(flag, device, gpu_selected)
    return device


def cuda_visible(flag: str, device: str, gpu_selected: bool) -> None:
    """``--eagle3-device=cuda`` on a machine with no visible CUDA device is a usage error, found without
    initialising CUDA here. Under ``-m gpu`` it is not: there the gpu-marked contracts skip with the reason."""
    from pytest_eagle3.devices import cuda_devices

    if not device.startswith("cuda") or gpu_selected:
        return
    devices = cuda_devices()
    if devices.count == 0:
        raise usage(flag, f"{device} asked for, but {devices.reason}; use cpu, or run on a machine "
                           "with a GPU (under -m gpu the GPU contracts skip instead)")


def choice(flag: str, text: str | None, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first when unset), case-insensitive."""
    value = (text or choices[0]).strip().lower()
    if value not in choices:
        raise usage(flag, f"{value!r} is not one of {', '.join(choices)}")
    return value


def choices(flag: str, text: str | None, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A comma list of ``allowed`` words (empty when unset or given empty), case-insensitive, each once."""
    from pytest_eagle3.option_table import listed_words

    try:
        return listed_words(text, allowed)
    except ValueError as exc:
        raise usage(flag, str(exc)) from None


def interpreter(flag: str, python: str | None) -> str | None:
    """An engine's interpreter: an existing file, or a command on PATH."""
    import shutil

    if python is None:
        return None
    if not python.strip():
        raise usage(flag, f"{EMPTY}: give the python of the venv where the engine is installed")
    if Path(python).is_file() or (os.sep not in python and shutil.which(python)):
        return python
    raise usage(flag, f"{python} does not exist; give the python of the venv where the engine is installed "
                      "(VENV/bin/python)")
