"""Options, each with an ini key and an env variable, resolved option -> env -> ini.

Values stay plain strings (pytest-xdist serialises options); objects are built later.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class OptionSpec:
    """One user setting and the three places it can come from."""

    dest: str
    flag: str
    env: str
    ini: str
    help: str
    repeatable: bool = False
    metavar: str = "PATH"
    is_path: bool = True


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("eagle3_ckpt", "--eagle3-ckpt", "EAGLE3_CKPT", "eagle3_ckpt",
               "EAGLE-3 draft checkpoint directory to check; repeat for several "
               f"(env: {os.pathsep}-separated list)", repeatable=True),
    OptionSpec("eagle3_target", "--eagle3-target", "EAGLE3_TARGET", "eagle3_target",
               "target model directory or its config.json: unlocks target-consistency checks"),
    OptionSpec("eagle3_report", "--eagle3-report", "EAGLE3_REPORT", "eagle3_report",
               "write the verdict per checkpoint and contract as JSON to this path"),
    OptionSpec("eagle3_engines", "--eagle3-engine", "EAGLE3_ENGINES", "eagle3_engines",
               "engine versions to judge against: comma list of sglang, vllm, all, NAME==VERSION or NAME==* "
               "(every profile segment); a bare name is the newest known version (default: all)",
               metavar="LIST", is_path=False),
    OptionSpec("eagle3_aux_convention", "--eagle3-aux-convention", "EAGLE3_AUX_CONVENTION", "eagle3_aux_convention",
               "how the draft's aux ids were meant in training: input-of (id k = input of layer k) or output-of "
               "(id k = output of layer k); default: the detected producer's convention",
               metavar="input-of|output-of", is_path=False),
    OptionSpec("eagle3_min_acceptance", "--eagle3-min-acceptance", "EAGLE3_MIN_ACCEPTANCE", "eagle3_min_acceptance",
               "reference.acceptance fails below this mean acceptance length (default 1.3)",
               metavar="X", is_path=False),
    OptionSpec("eagle3_device", "--eagle3-device", "EAGLE3_DEVICE", "eagle3_device",
               "device for the reference acceptance run: cpu (default) or cuda", metavar="DEVICE", is_path=False),
    OptionSpec("eagle3_prompts", "--eagle3-prompts", "EAGLE3_PROMPTS", "eagle3_prompts",
               "prompts for reference acceptance, one per line: a JSON list of token ids, or text "
               "(needs the target's tokenizer); default: a built-in set", metavar="FILE"),
)
BY_DEST = {spec.dest: spec for spec in OPTIONS}


@dataclass(frozen=True)
class Resolved:
    """A setting's value and where it came from, for the report header."""

    values: tuple[str, ...]
    source: str

    @property
    def value(self) -> str | None:
        return self.values[0] if self.values else None


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("eagle3", "EAGLE-3 draft checkpoint contracts")
    for spec in OPTIONS:
        if spec.repeatable:
            group.addoption(spec.flag, dest=spec.dest, action="append", default=None, metavar=spec.metavar,
                            help=spec.help)
        else:
            group.addoption(spec.flag, dest=spec.dest, default=None, metavar=spec.metavar, help=spec.help)
        ini_help = f"{spec.help} (ini; {spec.flag} and ${spec.env} take precedence)"
        if spec.repeatable:
            parser.addini(spec.ini, ini_help, type="linelist", default=[])
        else:
            parser.addini(spec.ini, ini_help, type="string", default="")


def resolve(config: pytest.Config, dest: str) -> Resolved:
    """Option first, then the environment, then the ini file."""
    spec = BY_DEST[dest]
    given = config.getoption(dest, default=None)
    if given:
        return Resolved(tuple(given) if isinstance(given, list) else (str(given),), "option")
    env = os.environ.get(spec.env, "").strip()
    if env:
        parts = env.split(os.pathsep) if spec.repeatable else [env]
        return Resolved(tuple(p for p in parts if p), f"env {spec.env}")
    ini = config.getini(spec.ini)
    values = [str(v) for v in ini] if isinstance(ini, list) else ([str(ini)] if ini else [])
    if values:
        base = config.inipath.parent if config.inipath else Path.cwd()
        return Resolved(tuple(_from_ini(v, base) if spec.is_path else v for v in values), f"ini {spec.ini}")
    return Resolved((), "unset")


def _from_ini(value: str, base: Path) -> str:
    path = Path(value)
    return value if path.is_absolute() else str(base / path)


def early_checkpoints(config: pytest.Config, namespace: object) -> bool:
    """Whether any checkpoint is configured, before pytest has fully parsed its args."""
    if getattr(namespace, "eagle3_ckpt", None) or os.environ.get("EAGLE3_CKPT", "").strip():
        return True
    try:
        return bool(config.getini("eagle3_ckpt"))
    except ValueError:
        return False


def engine_selection(config: pytest.Config) -> str:
    """The ``--eagle3-engine`` text, ``all`` when unset."""
    return resolve(config, "eagle3_engines").value or "all"


def aux_convention(config: pytest.Config) -> str | None:
    """``--eagle3-aux-convention``, validated; None when unset."""
    value = resolve(config, "eagle3_aux_convention").value
    if value is None:
        return None
    value = value.strip().lower()
    if value not in ("input-of", "output-of"):
        raise pytest.UsageError(f"--eagle3-aux-convention: {value!r} is not input-of or output-of")
    return value
