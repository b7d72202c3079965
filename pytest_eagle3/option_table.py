"""Every eagle3 setting, once: its option, env variable, ini key, help and how the value is read.

Both entries build from this table: the pytest plugin (``shell.options``: ``--eagle3-target``, ``EAGLE3_TARGET``,
``eagle3_target`` in the ini) and the command line (``shell.cli``: ``plan --target``, the same env variable and
ini key). A value is taken from the first of option, environment, ini file; :func:`resolve` is that rule, and
:class:`Resolved` says where a value came from. Standard library only: the idle plugin imports this module in
every pytest run. The engines' interpreter options (``--eagle3-vllm-python`` ...) are generated from the engine
registry (``interpreter_options.py``); an engine another package registers brings its own (:func:`installed_engine_options`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_eagle3.interpreter_options import INTERPRETERS

#: An unset --eagle3-engine: knowledge.selection.DEFAULT_SELECTION, quoted here (the idle plugin imports no knowledge).
DEFAULT_SELECTION = "sglang,vllm"
UNKNOWN_SKIP = "skip"
UNKNOWN_FAIL = "fail"
#: --eagle3-not-judged: a row whose aux layers or acceptance could not be judged passes the run (exit 0), or fails it.
NOT_JUDGED_PASS = "pass"
NOT_JUDGED_FAIL = "fail"
#: --eagle3-require: what a run must have measured, not only judged statically (empty: nothing beyond the rules).
REQUIRE_MEASURED = "measured"
REQUIRE_CHOICES = (REQUIRE_MEASURED, "gpu", "engine")


def listed_words(text: str | None, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A comma list of ``allowed`` words (empty when unset or given empty), case-insensitive, each once; raises
    ValueError naming the first word outside ``allowed``."""
    words = [w.strip().lower() for w in (text or "").split(",") if w.strip()]
    for word in words:
        if word not in allowed:
            raise ValueError(f"{word!r} is not one of {', '.join(allowed)}")
    return tuple(dict.fromkeys(words))
#: The command-line name of a setting is its option without this prefix (``--eagle3-target`` -> ``--target``).
OPTION_PREFIX = "--eagle3-"


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
    #: Whether the setting changes a verdict: every command that judges (``plan``, ``sweep``, ``fix``, ``capture``)
    #: takes it under :attr:`cli_flag`, with this help, default, env variable and ini key.
    judges: bool = True
    #: The engine whose interpreter it names (the engine's ``python_option``): ``RunSettings.interpreters`` holds
    #: its value under this name.
    engine: str | None = None

    @property
    def interpreter(self) -> bool:
        """It names an engine's interpreter (:attr:`engine`)."""
        return self.engine is not None

    @property
    def cli_flag(self) -> str:
        """The command line's name for it: ``--target`` for ``--eagle3-target``."""
        return "--" + self.flag.removeprefix(OPTION_PREFIX)


#: The entry-point group another package registers an engine in (``knowledge.engines`` reads the same).
ENGINE_ENTRY_POINTS = "pytest_eagle3.engines"

#: The bundled engines' folder (``knowledge/engines``): a module there with ``ENGINE = Engine(`` is an engine.
ENGINES_FOLDER = Path(__file__).with_name("knowledge") / "engines"
_NAME_LINE = re.compile(r'^NAME = "([^"]+)"$', re.M)
_ENGINE_LINE = re.compile(r"^ENGINE = Engine\(", re.M)
_RANK = re.compile(r"\brank=(\d+)")


def engine_names(folder: Path = ENGINES_FOLDER) -> tuple[str, ...]:
    """Every engine's name as the registry orders them (``rank``, then name; an entry point's engine last), read
    from the engine modules' text and the entry points' names: no engine module is imported, so the help texts
    built at every pytest start name each engine the registry finds, a copied module included."""
    from importlib.metadata import entry_points

    found: dict[str, int] = {}
    for module in sorted(folder.glob("*.py")):
        text = module.read_text(encoding="utf-8")
        name, engine = _NAME_LINE.search(text), _ENGINE_LINE.search(text)
        if name and engine:
            rank = _RANK.search(text, engine.end())
            found[name.group(1)] = int(rank.group(1)) if rank else 100
    for point in entry_points(group=ENGINE_ENTRY_POINTS):
        found.setdefault(point.name, 1000)
    return tuple(sorted(found, key=lambda name: (found[name], name)))



def interpreter_option(engine: str, dest: str, help_text: str) -> OptionSpec:
    """The option naming ``engine``'s interpreter from its ``python_option`` ``dest`` (``eagle3_vllm_python``):
    ``--eagle3-vllm-python``, ``EAGLE3_VLLM_PYTHON``, ini ``eagle3_vllm_python``."""
    return OptionSpec(dest, "--" + dest.replace("_", "-"), dest.upper(), dest, help_text, metavar="PYTHON",
                      judges=False, engine=engine)


def interpreter_dest(engine: str) -> str:
    """The interpreter option an engine installed from another package gets: ``eagle3_<name>_python`` (its
    ``python_option``, which the registry holds it to)."""
    return f"eagle3_{engine.replace('-', '_')}_python"


def installed_engine_options(bundled: tuple[OptionSpec, ...]) -> tuple[OptionSpec, ...]:
    """The interpreter options of the engines other packages register (entry points of :data:`ENGINE_ENTRY_POINTS`,
    each named after its engine), read from the entry points' names alone: no engine module is imported (the option
    table stays below the knowledge; the registry holds each such engine's ``python_option`` to
    :func:`interpreter_dest`). An engine whose option is bundled (``bundled``) adds none."""
    from importlib.metadata import entry_points

    taken = {spec.engine for spec in bundled}
    return tuple(interpreter_option(point.name, interpreter_dest(point.name),
                                    f"python interpreter of the venv where the {point.name} engine is installed: its "
                                    "probes and live tests run with it, where it has them (default: this interpreter)")
                 for point in entry_points(group=ENGINE_ENTRY_POINTS) if point.name not in taken)


#: Each engine's interpreter option: the bundled engines' (generated), then those of the engines installed from
#: other packages.
BUNDLED_INTERPRETER_OPTIONS = tuple(interpreter_option(*row) for row in INTERPRETERS)
INTERPRETER_OPTIONS = BUNDLED_INTERPRETER_OPTIONS + installed_engine_options(BUNDLED_INTERPRETER_OPTIONS)

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("eagle3_ckpt", "--eagle3-ckpt", "EAGLE3_CKPT", "eagle3_ckpt",
               "EAGLE-3 draft checkpoint directory, or Hub id hf://ORG/NAME[@REVISION], to check; repeat for several "
               f"(env: {os.pathsep}-separated list)", repeatable=True, judges=False),
    OptionSpec("eagle3_target", "--eagle3-target", "EAGLE3_TARGET", "eagle3_target",
               "target model directory, its config.json, or Hub id hf://ORG/NAME[@REVISION]: unlocks "
               "target-consistency checks"),
    OptionSpec("eagle3_download_weights", "--eagle3-download-weights", "EAGLE3_DOWNLOAD_WEIGHTS",
               "eagle3_download_weights", "download the weights of hf:// drafts and targets into the Hugging Face "
               "cache (default: headers and small tensors read by range; the weight scans and the acceptance "
               "measurements then do not run)", metavar="", is_path=False, switch=True),
    OptionSpec("eagle3_report", "--eagle3-report", "EAGLE3_REPORT", "eagle3_report",
               "write the verdict per checkpoint and contract as JSON to this path", judges=False),
    OptionSpec("eagle3_summary", "--eagle3-summary", "EAGLE3_SUMMARY", "eagle3_summary",
               "write the verdicts as a markdown table to this path (a CI job summary; with $GITHUB_STEP_SUMMARY "
               "set, the table is appended there too)", judges=False),
    OptionSpec("eagle3_engines", "--eagle3-engine", "EAGLE3_ENGINES", "eagle3_engines",
               f"engine versions to judge against: comma list of {', '.join(engine_names())}, all (every engine's "
               "newest), NAME==VERSION or NAME==* (the first version of every profile "
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
               "draft tokens per step for reference and predicted acceptance (default 3); SGLang's "
               "--speculative-num-steps", metavar="K", is_path=False),
    OptionSpec("eagle3_topk", "--eagle3-topk", "EAGLE3_TOPK", "eagle3_topk",
               "SGLang's --speculative-eagle-topk: candidates expanded per node of its EAGLE tree, for the predicted "
               "acceptance of the engines that draft a tree (default 1: a chain)", metavar="N", is_path=False),
    OptionSpec("eagle3_draft_tokens", "--eagle3-draft-tokens", "EAGLE3_DRAFT_TOKENS", "eagle3_draft_tokens",
               "SGLang's --speculative-num-draft-tokens: tokens its tree verifies per step, the root included "
               "(default k + 1, a chain's; with --eagle3-topk > 1 at most 1 + topk + (k - 1) * topk^2)",
               metavar="N", is_path=False),
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
    OptionSpec("eagle3_not_judged", "--eagle3-not-judged", "EAGLE3_NOT_JUDGED", "eagle3_not_judged",
               "what a row whose aux layers or acceptance could not be judged (no target, a target without weights) "
               "does to the run's exit status: pass (default: exit 0, the row reads NOT JUDGED) or fail (exit 1, "
               "for a CI gate)", metavar="pass|fail", is_path=False),
    OptionSpec("eagle3_require", "--eagle3-require", "EAGLE3_REQUIRE", "eagle3_require",
               "what the run needs beyond the static rules, comma list: measured (engine.acceptance and "
               "reference.acceptance fail where only the target's config was given, naming the weights or dump "
               "to give; default: such a row reads PASS (static) and exits 0), gpu / engine (a selected test marked "
               "gpu / engine that could not run, no CUDA device or no engine, fails the run; default: the summary "
               "says so and the run exits 0)",
               metavar="measured,gpu,engine", is_path=False),
    OptionSpec("eagle3_prompts", "--eagle3-prompts", "EAGLE3_PROMPTS", "eagle3_prompts",
               "prompts for reference acceptance, one per line: a JSON list of token ids, or text "
               "(needs the target's tokenizer); default: a built-in set", metavar="FILE"),
    # -- target sources (issue 20): the target's side read from a captured dump ------------------------------
    OptionSpec("eagle3_hidden_states", "--eagle3-hidden-states", "EAGLE3_HIDDEN_STATES", "eagle3_hidden_states",
               "a dump of the target's hidden states (python -m pytest_eagle3 capture TARGET DIR): reference and "
               "predicted acceptance read the target's side from it instead of running the target here; "
               "--eagle3-target may then be just its config.json", metavar="DIR"),
    *INTERPRETER_OPTIONS,
    OptionSpec("eagle3_llamacpp_server", "--eagle3-llamacpp-server", "EAGLE3_LLAMACPP_SERVER",
               "eagle3_llamacpp_server", "llama.cpp's llama-server binary (or the folder it was built in) for the "
               "live llamacpp tests; its tree's convert_hf_to_gguf.py converts target and draft (default: the "
               "cache python .ci/build_llama_server.py builds into)", metavar="PATH", judges=False),
    OptionSpec("eagle3_engine_args", "--eagle3-engine-args", "EAGLE3_ENGINE_ARGS", "eagle3_engine_args",
               "extra arguments for every live server, shell-quoted; or per engine: 'vllm: ARGS; sglang: ARGS'; "
               "the static plan reads 'trtllm: eagle3_layers_to_capture=[A,B,C]' (TensorRT-LLM's "
               "speculative_config.eagle3_layers_to_capture)",
               metavar="ARGS", is_path=False),
    OptionSpec("eagle3_server_timeout", "--eagle3-server-timeout", "EAGLE3_SERVER_TIMEOUT", "eagle3_server_timeout",
               "seconds a live server may take to become healthy (default 600)", metavar="SECONDS", is_path=False, judges=False),
)
BY_DEST = {spec.dest: spec for spec in OPTIONS}


@dataclass(frozen=True)
class Resolved:
    """A setting's value and where it came from, for the report header."""

    values: tuple[str, ...]
    source: str

    @property
    def value(self) -> str | None:
        """The first value given, or None when the setting was not given."""
        return self.values[0] if self.values else None




def resolve(spec: OptionSpec, given: object, environ: Mapping[str, str], ini: object, ini_base: Path | None) -> Resolved:
    """Option first, then the environment, then the ini file (``ini``: the key's value, a list for a repeatable
    one; relative paths are read from ``ini_base``, the ini file's folder). An option given empty
    (``--eagle3-ckpt=$UNSET``) counts as given: it is a usage error, never a silent fallback."""
    if given is not None:
        return Resolved(tuple(str(v) for v in given) if isinstance(given, list) else (str(given),), "option")
    env = environ.get(spec.env, "").strip()
    if env:
        parts = env.split(os.pathsep) if spec.repeatable else [env]
        return Resolved(tuple(p for p in parts if p), f"env {spec.env}")
    values = [str(v) for v in ini] if isinstance(ini, list) else ([str(ini)] if ini else [])
    if values:
        base = ini_base or Path.cwd()
        return Resolved(tuple(_from_ini(v, base) if spec.is_path else v for v in values), f"ini {spec.ini}")
    return Resolved((), "unset")


def as_argv(sources: Mapping[str, Resolved], *, given_only: bool = False) -> list[str]:
    """Resolved settings as pytest options (``--eagle3-target=DIR`` ...), in the table's order; with
    ``given_only`` the ones given as options only (a pytest run reads the env and the ini itself)."""
    argv: list[str] = []
    for spec in OPTIONS:
        resolved = sources.get(spec.dest)
        if resolved is None or not resolved.values or (given_only and resolved.source != "option"):
            continue
        argv.extend([spec.flag] if spec.switch else [f"{spec.flag}={value}" for value in resolved.values])
    return argv


def _from_ini(value: str, base: Path) -> str:
    path = Path(value)
    return value if path.is_absolute() else str(base / path)


class IniError(ValueError):
    """pytest's config file is there but cannot be read: the command line refuses it, as pytest does."""


def find_ini(start: Path) -> tuple[Path | None, dict[str, object]]:
    """The config file pytest itself would read from ``start`` (its own ``locate_config``: pytest.toml,
    .pytest.toml, pytest.ini, .pytest.ini, pyproject.toml, tox.ini, setup.cfg, from ``start`` up, in pytest's
    order) and its eagle3 keys: a repeatable key's value as a list of lines. For the command line, which runs no
    pytest session; raises :class:`IniError` for a file pytest would refuse."""
    from _pytest.config.findpaths import locate_config

    try:
        _, path, values, _ = locate_config(start.resolve(), [])
    except Exception as exc:  # pytest's UsageError, a TOML or ini syntax error
        raise IniError(f"pytest's config file cannot be read: {exc}") from None
    if path is None:
        return None, {}
    return path, {k: _ini_value(k, getattr(v, "value", v), path) for k, v in values.items() if k in BY_INI}


def _ini_value(key: str, value: object, path: Path) -> object:
    if isinstance(value, list) and not BY_INI[key].repeatable:  # a native TOML list: pytest refuses it alike
        raise IniError(f"pytest's config file cannot be read: {path}: config option {key!r} expects a string, "
                       f"got list: {value!r}")
    if BY_INI[key].repeatable:
        lines = value if isinstance(value, list) else str(value).splitlines()
        return [str(line).strip() for line in lines if str(line).strip()]
    return str(value).strip()


BY_INI = {spec.ini: spec for spec in OPTIONS}
