"""The command line's settings from the option table: each judging setting as an argument of every command that
judges (``--target`` for ``--eagle3-target``, same help and default), read option -> env -> the ini file pytest
would read, and built into the same :class:`~pytest_eagle3.verdict.settings.RunSettings` pytest builds."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_eagle3.option_table import BY_DEST, OPTIONS, IniError, OptionSpec, Resolved, find_ini, resolve

if TYPE_CHECKING:
    from pytest_eagle3.verdict.settings import RunSettings

#: The judging settings a command leaves out (``--eagle3-engine`` is each command's own ``--engine``/``--to``).
OWN_ENGINE = ("eagle3_engines",)


def add_settings(command: argparse.ArgumentParser, *, without: Iterable[str] = (), interpreters: bool = False) -> None:
    """Every setting that changes a verdict, under its command-line name, with the option table's help; with
    ``interpreters`` each engine's interpreter too (``--vllm-python``: ``check``, whose pytest run probes and serves
    the engines)."""
    left_out = set(without)
    group = command.add_argument_group("settings (each also read from its EAGLE3_* env variable and the ini file's "
                                       "eagle3_* key, as under pytest)")
    for spec in OPTIONS:
        if not (spec.judges or (interpreters and spec.interpreter)) or spec.dest in left_out:
            continue
        flags = [spec.cli_flag, spec.flag]
        if spec.switch:
            group.add_argument(*flags, dest=spec.dest, action="store_const", const="1", default=None, help=spec.help)
        else:
            group.add_argument(*flags, dest=spec.dest, default=None, metavar=spec.metavar or None, help=spec.help)


def settings_of(parser: argparse.ArgumentParser, args: argparse.Namespace, *, engines: str | None = None,
                engines_flag: str = "--engine") -> RunSettings:
    """The run's settings: each argument given, else its env variable, else the ini key (pytest's ini file, found
    from the current folder up); a bad value is an argparse error naming it as it was given."""
    from pytest_eagle3.verdict.setting_values import SettingError
    from pytest_eagle3.verdict.settings import build

    try:
        ini_path, ini = find_ini(Path.cwd())
    except IniError as exc:
        parser.error(str(exc))
    base = ini_path.parent if ini_path is not None else None
    sources: dict[str, Resolved] = {}
    names: dict[str, str] = {}
    for spec in OPTIONS:
        if not spec.judges:  # the checkpoints, reports and live settings are pytest's (``check``)
            continue
        given = engines if spec.dest == "eagle3_engines" else getattr(args, spec.dest, None)
        resolved = resolve(spec, given, os.environ, ini.get(spec.ini), base)
        sources[spec.dest] = resolved
        names[spec.dest] = _named(spec, resolved, engines_flag)
    try:
        settings = build(sources, names)
    except SettingError as exc:
        parser.error(str(exc))
    for engine in settings.engines:
        if engine.unread:
            print(f"{parser.prog}: WARNING {engine.unread}", file=sys.stderr)
    return settings


def _named(spec: OptionSpec, resolved: Resolved, engines_flag: str) -> str:
    if resolved.source.startswith("env "):
        return spec.env
    if resolved.source.startswith("ini "):
        return f"{spec.ini} (ini)"
    return engines_flag if spec.dest == "eagle3_engines" else spec.cli_flag


def flag(dest: str) -> str:
    """A setting's command-line name (for usage errors the command raises itself)."""
    return BY_DEST[dest].cli_flag
