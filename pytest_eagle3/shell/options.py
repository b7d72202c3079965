"""The option table (``pytest_eagle3.option_table``) as pytest options and ini keys, resolved option -> env -> ini,
parsed once.

``parse_settings`` validates every value at configure time (a bad one is a ``UsageError`` naming the
option) and returns the run's :class:`~pytest_eagle3.verdict.settings.RunSettings`, kept in ``config.stash``.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.option_table import BY_DEST, OPTIONS, OptionSpec, Resolved
from pytest_eagle3.option_table import resolve as resolve_value

if TYPE_CHECKING:
    from pytest_eagle3.verdict.settings import RunSettings

# The idle plugin (installed, no checkpoint given) imports this module in every pytest run: the option table is
# standard library only, and the settings are built (``verdict.settings.build``) inside ``parse_settings`` only.
#: What the contract run collected besides the contracts, for the line after "collected N items" (the plugin sets it).
COLLECTED_KEY = pytest.StashKey[str]()
#: ini key: with a checkpoint and no paths, collect the ini's testpaths next to the contracts.
WITH_TESTPATHS_INI = "eagle3_with_testpaths"


def python_option(engine: str) -> OptionSpec | None:
    """The option naming ``engine``'s interpreter (its ``python_option``), or None where it has none."""
    return next((spec for spec in OPTIONS if spec.engine == engine), None)


def add_options(parser: pytest.Parser) -> None:
    """Add every option of the option table to pytest's parser, with its ini key."""
    group = parser.getgroup("eagle3", "EAGLE-3 draft checkpoint contracts")
    for spec in OPTIONS:
        if spec.repeatable:
            group.addoption(spec.flag, dest=spec.dest, action="append", default=None, metavar=spec.metavar,
                            help=spec.help)
        elif spec.switch:
            group.addoption(spec.flag, dest=spec.dest, action="store_const", const="1", default=None, help=spec.help)
        else:
            group.addoption(spec.flag, dest=spec.dest, default=None, metavar=spec.metavar, help=spec.help)
        ini_help = f"{spec.help} (ini; {spec.flag} and ${spec.env} take precedence)"
        if spec.repeatable:
            parser.addini(spec.ini, ini_help, type="linelist", default=[])
        else:
            parser.addini(spec.ini, ini_help, type="string", default="")


def resolve(config: pytest.Config, dest: str) -> Resolved:
    """Option first, then the environment, then the ini file (``option_table.resolve``)."""
    spec = BY_DEST[dest]
    given = config.getoption(dest, default=None)
    return resolve_value(spec, given, os.environ, config.getini(spec.ini),
                         config.inipath.parent if config.inipath else None)


def early_checkpoints(config: pytest.Config, namespace: object) -> bool:
    """Whether any checkpoint is configured (an empty ``--eagle3-ckpt=`` too: it is reported as a usage
    error), before pytest has fully parsed its args."""
    if getattr(namespace, "eagle3_ckpt", None) is not None or os.environ.get("EAGLE3_CKPT", "").strip():
        return True
    try:
        return bool(config.getini("eagle3_ckpt"))
    except ValueError:
        return False


SETTINGS_KEY = pytest.StashKey["RunSettings"]()


def settings(config: pytest.Config) -> RunSettings:
    """The run's parsed settings (parsed on first use when the plugin is inactive)."""
    if SETTINGS_KEY not in config.stash:
        config.stash[SETTINGS_KEY] = parse_settings(config)
    return config.stash[SETTINGS_KEY]


def marker_selected(config: pytest.Config, name: str) -> bool:
    """Whether ``-m`` asks for the marker ``name`` (``-m gpu``, ``-m "gpu or engine"``; not ``-m "not gpu"``)."""
    words = re.findall(r"[\w.]+", str(getattr(config.option, "markexpr", "") or ""))
    return any(word == name and (i == 0 or words[i - 1] != "not") for i, word in enumerate(words))


def device_setting(config: pytest.Config) -> str:
    """The reference's device as given, else ``cuda`` under ``-m gpu`` (the GPU tests run there), else ``cpu``.
    Read without validating (the idle plugin's marker handling); ``parse_settings`` validates it."""
    given = resolve(config, "eagle3_device").value
    return (given or ("cuda" if marker_selected(config, "gpu") else "cpu")).strip().lower()


def where(dest: str, resolved: Resolved) -> str:
    """How a usage error names a setting: the flag, the env variable or the ini key it came from."""
    spec = BY_DEST[dest]
    if resolved.source.startswith("env "):
        return spec.env
    if resolved.source.startswith("ini "):
        return f"{spec.ini} (ini)"
    return spec.flag


def parse_settings(config: pytest.Config) -> RunSettings:
    """Resolve and validate every option; raise ``pytest.UsageError`` naming the first bad one where it was
    given (the flag, the env variable or the ini key)."""
    from pytest_eagle3.verdict.setting_values import SettingError
    from pytest_eagle3.verdict.settings import build

    sources = {spec.dest: resolve(config, spec.dest) for spec in OPTIONS}
    names = {dest: where(dest, resolved) for dest, resolved in sources.items()}
    try:
        return build(sources, names, device=device_setting(config), gpu_selected=marker_selected(config, "gpu"))
    except SettingError as exc:
        raise pytest.UsageError(str(exc)) from None


def check_interpreters(config: pytest.Config) -> None:
    """The idle plugin's check: an engine interpreter given without a checkpoint (``pytest -m engine
    --eagle3-vllm-python=...`` on your own tests) must exist too."""
    for dest in (spec.dest for spec in OPTIONS if spec.interpreter):
        resolved = resolve(config, dest)
        if resolved.value is None:
            continue
        from pytest_eagle3.verdict.setting_values import SettingError, interpreter

        try:
            interpreter(where(dest, resolved), resolved.value)
        except SettingError as exc:
            raise pytest.UsageError(str(exc)) from None


def is_xdist_worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (the controller gives each worker its ``workerinput``)."""
    return hasattr(config, "workerinput")
