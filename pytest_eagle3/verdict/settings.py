"""One set of run settings for every entry: the pytest plugin and each command build a :class:`RunSettings` from
the option table (``pytest_eagle3.option_table``), validated once by :func:`build`.

The pipeline, the contracts, ``plan``, ``sweep``, ``fix`` and ``capture`` all read the same fields, so a command
honours max loss, device, k, continuation, prompts, the env variables and the ini exactly as pytest does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from pytest_eagle3.option_table import (
    BY_DEST,
    DEFAULT_SELECTION,
    NOT_JUDGED_FAIL,
    NOT_JUDGED_PASS,
    OPTIONS,
    REQUIRE_CHOICES,
    REQUIRE_MEASURED,
    UNKNOWN_FAIL,
    UNKNOWN_SKIP,
    Resolved,
)
from pytest_eagle3.reference.defaults import (
    DEFAULT_MAX_LOSS,
    DEFAULT_MIN_ACCEPTANCE,
    DEFAULT_NEW_TOKENS,
    DEFAULT_STEPS,
    MAX_CONTINUATION,
    MAX_STEPS,
    MIN_CONTINUATION,
)
from pytest_eagle3.reference.draft_setting import MAX_TOPK, DraftSetting

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion

#: A live server's default start timeout (seconds): ``live.process.DEFAULT_START_TIMEOUT``, quoted so that the
#: settings do not import the live layer (tests/test_plugin.py holds the two equal).
DEFAULT_SERVER_TIMEOUT = 600.0
MAX_SERVER_TIMEOUT = 24 * 3600.0


@dataclass(frozen=True)
class RunSettings:
    """Every eagle3 setting of one run, parsed and validated once; ``sources`` says where each came from.

    Built with no argument it is the defaults (no target, the default engines' newest releases are set by
    :func:`build`; a library caller names its engines)."""

    checkpoints: tuple[str, ...] = ()
    target: str | None = None
    download_weights: bool = False
    report: str | None = None
    summary: str | None = None
    #: Every engine version judged in this run: a fix is proven against all of them.
    engines: tuple[EngineVersion, ...] = ()
    aux_convention: str | None = None
    min_acceptance: float = DEFAULT_MIN_ACCEPTANCE
    max_loss: float = DEFAULT_MAX_LOSS
    steps: int = DEFAULT_STEPS
    #: ``--eagle3-topk`` / ``--eagle3-draft-tokens``: SGLang's tree (1 / None: a chain of ``steps``).
    topk: int = 1
    draft_tokens: int | None = None
    continuation: int = DEFAULT_NEW_TOKENS
    device: str = "cpu"
    prompts: str | None = None
    hidden_states: str | None = None
    unknown: str = UNKNOWN_SKIP
    not_judged: str = NOT_JUDGED_PASS
    #: ``--eagle3-require``: what a row needs beyond the static rules (``measured``).
    require: tuple[str, ...] = ()
    #: Each engine's interpreter, by engine name (its ``python_option``: ``--eagle3-vllm-python`` ...).
    interpreters: dict[str, str] = field(default_factory=dict)
    llamacpp_server: str | None = None
    engine_args: str | None = None
    server_timeout: float = DEFAULT_SERVER_TIMEOUT
    sources: dict[str, Resolved] = field(default_factory=dict, compare=False)

    def python_for(self, engine: str) -> str | None:
        """The interpreter given for ``engine`` (option, env or ini), or None."""
        return self.interpreters.get(engine)

    @property
    def draft_setting(self) -> DraftSetting:
        """The drafting the predictions are for: a chain of ``steps``, or SGLang's tree."""
        return DraftSetting(self.steps, self.topk, self.draft_tokens or 0)

    @property
    def unknown_fails(self) -> bool:
        """``--eagle3-unknown=fail``: a case the profiles do not model fails instead of being skipped."""
        return self.unknown == UNKNOWN_FAIL

    @property
    def measured_required(self) -> bool:
        """``--eagle3-require=measured``: an acceptance left unmeasured (a config-only target) fails."""
        return REQUIRE_MEASURED in self.require

    @property
    def not_judged_fails(self) -> bool:
        """``--eagle3-not-judged=fail``: a row that could not judge its aux layers or acceptance fails the run."""
        return self.not_judged == NOT_JUDGED_FAIL

    def to_argv(self) -> list[str]:
        """These settings as pytest options (``--eagle3-target=DIR`` ...): every judging setting that differs from
        its default, and the checkpoints (the command that checks a fixed copy, a run started from a command)."""
        default = RunSettings()
        argv = [f"{BY_DEST['eagle3_ckpt'].flag}={path}" for path in self.checkpoints]
        for spec in OPTIONS:
            if not spec.judges:
                continue
            name = FIELD_OF.get(spec.dest, spec.dest.removeprefix("eagle3_"))
            value = getattr(self, name)
            if value == getattr(default, name) or value is None:
                continue
            if spec.switch:
                argv.append(spec.flag)
            elif name == "engines":
                argv.append(f"{spec.flag}={','.join(e.spec for e in value)}")
            elif name == "require":
                argv.append(f"{spec.flag}={','.join(value)}")
            else:
                argv.append(f"{spec.flag}={value:g}" if isinstance(value, float) else f"{spec.flag}={value}")
        return argv


#: The RunSettings field of each option (``eagle3_k`` -> ``steps``), for the two whose names differ.
FIELD_OF = {"eagle3_k": "steps", "eagle3_engines": "engines", "eagle3_ckpt": "checkpoints"}
assert {FIELD_OF.get(s.dest, s.dest.removeprefix("eagle3_")) for s in OPTIONS if not s.interpreter} <= {
    f.name for f in fields(RunSettings)}


def build(sources: Mapping[str, Resolved], names: Mapping[str, str], *, device: str | None = None,
          gpu_selected: bool = False) -> RunSettings:
    """Validate every resolved setting; raise :class:`~pytest_eagle3.verdict.setting_values.SettingError` naming the
    first bad one as ``names`` spells it (the flag, the env variable or the ini key it came from).

    ``device``: the device as given, else ``cuda`` under ``-m gpu`` (``gpu_selected``), else ``cpu``."""
    import importlib

    # by name from sys.modules (a package attribute can be a stale module after pytester's in-process runs)
    check = importlib.import_module("pytest_eagle3.verdict.setting_values")

    values = {spec.dest: sources[spec.dest].values if spec.dest in sources else () for spec in OPTIONS}
    one = {dest: v[0] if v else None for dest, v in values.items()}
    name = {spec.dest: names.get(spec.dest, spec.flag) for spec in OPTIONS}
    steps = int(check.number(name["eagle3_k"], one["eagle3_k"], DEFAULT_STEPS, int, 1, MAX_STEPS))
    topk = int(check.number(name["eagle3_topk"], one["eagle3_topk"], 1, int, 1, MAX_TOPK))
    draft_tokens = check.draft_tokens(name["eagle3_draft_tokens"], one["eagle3_draft_tokens"], steps, topk,
                                      name["eagle3_k"], name["eagle3_topk"])
    continuation = int(check.number(name["eagle3_continuation"], one["eagle3_continuation"], DEFAULT_NEW_TOKENS, int,
                                    MIN_CONTINUATION, MAX_CONTINUATION))
    download = check.switch(name["eagle3_download_weights"], one["eagle3_download_weights"])
    target = check.target_path(name["eagle3_target"], one["eagle3_target"], download)
    device_text = device or one["eagle3_device"] or ("cuda" if gpu_selected else "cpu")
    return RunSettings(
        checkpoints=check.checkpoints(name["eagle3_ckpt"], values["eagle3_ckpt"], download),
        target=target,
        download_weights=download,
        report=check.report_path(name["eagle3_report"], one["eagle3_report"]),
        summary=check.report_path(name["eagle3_summary"], one["eagle3_summary"], "eagle3-summary.md"),
        engines=engines(name["eagle3_engines"], DEFAULT_SELECTION if one["eagle3_engines"] is None
                        else one["eagle3_engines"], one["eagle3_engine_args"], name["eagle3_engine_args"]),
        aux_convention=check.convention(name["eagle3_aux_convention"], one["eagle3_aux_convention"]),
        min_acceptance=check.min_acceptance(name["eagle3_min_acceptance"], one["eagle3_min_acceptance"], steps,
                                            DEFAULT_MIN_ACCEPTANCE),
        max_loss=check.number(name["eagle3_max_loss"], one["eagle3_max_loss"], DEFAULT_MAX_LOSS, float, 0.0,
                              float(MAX_STEPS)),
        steps=steps,
        topk=topk,
        draft_tokens=draft_tokens,
        continuation=continuation,
        device=check.device(name["eagle3_device"], device_text, gpu_selected),
        prompts=check.existing_file(name["eagle3_prompts"], one["eagle3_prompts"]),
        hidden_states=check.hidden_states(name["eagle3_hidden_states"], one["eagle3_hidden_states"], target,
                                          one["eagle3_prompts"], continuation + steps, name["eagle3_target"],
                                          name["eagle3_prompts"]),
        unknown=check.choice(name["eagle3_unknown"], one["eagle3_unknown"], (UNKNOWN_SKIP, UNKNOWN_FAIL)),
        not_judged=check.choice(name["eagle3_not_judged"], one["eagle3_not_judged"], (NOT_JUDGED_PASS, NOT_JUDGED_FAIL)),
        require=check.choices(name["eagle3_require"], one["eagle3_require"], REQUIRE_CHOICES),
        interpreters=interpreters(check, name, one),
        llamacpp_server=check.existing(name["eagle3_llamacpp_server"], one["eagle3_llamacpp_server"],
                                       "build the server: python .ci/build_llama_server.py"),
        engine_args=one["eagle3_engine_args"],
        server_timeout=check.number(name["eagle3_server_timeout"], one["eagle3_server_timeout"],
                                    DEFAULT_SERVER_TIMEOUT, float, 1.0, MAX_SERVER_TIMEOUT),
        sources={dest: r for dest, r in sources.items() if r.values},
    )


def interpreters(check: Any, name: Mapping[str, str], one: Mapping[str, Any]) -> dict[str, str]:
    """Each engine's interpreter given (its ``python_option``: option, env or ini), checked in the option table's
    order, by engine name (the option's ``engine``)."""
    found = {spec.engine: check.interpreter(name[spec.dest], one[spec.dest]) for spec in OPTIONS if spec.engine}
    return {engine: path for engine, path in found.items() if path is not None}


def engines(flag: str, text: str, engine_args: str | None = None,
            args_flag: str = BY_DEST["eagle3_engine_args"].flag) -> tuple[EngineVersion, ...]:
    """The engine versions a selection names, with their launch settings (``--eagle3-engine-args``)."""
    from pytest_eagle3.knowledge.launch_settings import LaunchSettingError, with_launch
    from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection
    from pytest_eagle3.verdict.setting_values import SettingError

    if not text.strip():  # given empty (``--eagle3-engine=$UNSET``): never a silent fall back to the defaults
        raise SettingError(f"{flag}: empty; name the engines (sglang, vllm, NAME==VERSION, all), or leave the "
                           f"option out for the default ({DEFAULT_SELECTION})")
    try:
        return with_launch(parse_selection(text), engine_args)
    except EngineSelectionError as exc:
        raise SettingError(f"{flag}: {_unnamed(exc)}") from None
    except LaunchSettingError as exc:
        raise SettingError(f"{args_flag}: {_unnamed(exc)}") from None


def _unnamed(exc: Exception) -> str:
    """The knowledge layer's message without the option it names (the caller names it as it was given)."""
    text = str(exc)
    head, sep, rest = text.partition(": ")
    return rest if sep and head.startswith("--eagle3-") else text
