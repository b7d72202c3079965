"""Launch settings that change a load plan: read from ``--eagle3-engine-args`` into :attr:`EngineVersion.launch`.

``--eagle3-engine-args`` is one string for every engine, or per engine ``vllm: ...; trtllm: ...``
(:func:`sections` splits it, for ``live.launch.parse_engine_args`` too). Most of it is passed to a live server
untouched; the settings named in :data:`SETTINGS` are also what the static plan reads. TensorRT-LLM's ``eagle3_layers_to_capture`` is
the YAML ``speculative_config: {eagle3_layers_to_capture: [...]}`` of ``trtllm-serve --extra_llm_api_options``
(``LLM(speculative_config=EagleDecodingConfig(eagle3_layers_to_capture=...))``); written here
``trtllm: eagle3_layers_to_capture=[1,3,4]`` (or ``speculative_config.eagle3_layers_to_capture=...``).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, EngineVersion

#: The setting's name as TensorRT-LLM spells it (llmapi/llm_args.py EagleDecodingConfig), and the YAML path.
LAYERS_TO_CAPTURE = "eagle3_layers_to_capture"
LAYERS_PATH = f"speculative_config.{LAYERS_TO_CAPTURE}"
#: The settings each engine's static plan reads (the path a fix names).
SETTINGS: dict[str, tuple[str, ...]] = {engine.name: engine.serving.launch_settings for engine in REGISTRY if engine.serving.launch_settings}
#: Each engine's aux-layer setting: the name --eagle3-engine-args takes -> the path it is read at.
LAYER_SETTINGS: dict[str, tuple[str, str]] = {
    engine.name: (engine.serving.launch_layers.setting, engine.serving.launch_layers.path)
    for engine in REGISTRY if engine.serving.launch_layers is not None}
#: How a fix that only a launch can make begins (no fixed copy is offered for it).
LAUNCH_FIX = "launch with "


class LaunchSettingError(ValueError):
    """A plan-changing setting whose value cannot be read."""


_LIST = re.compile(r"[\[{][^\]}]*[\]}]")


def _tight(match: re.Match[str]) -> str:
    """``[5, 1, 3]`` as one word: the spaces a YAML-style list has."""
    return re.sub(r"\s+", "", match.group())


def sections(text: str | None, *, lists_as_words: bool = True) -> dict[str, tuple[str, ...]]:
    """``--eagle3-engine-args`` split per engine (``*``: every engine), shell-quoted words each; with
    ``lists_as_words`` a ``[1, 3, 4]`` list is one word (the settings read here), else the words go to a live
    server as typed (``live.launch.parse_engine_args``)."""
    parsed: dict[str, tuple[str, ...]] = {}
    for section in (s for s in (text or "").split(";") if s.strip()):
        head, sep, rest = section.partition(":")
        name = head.strip().lower()
        key, words = (name, rest) if sep and name in KNOWN_RANGES else ("*", section)
        try:
            typed = _LIST.sub(_tight, words) if lists_as_words else words
            parsed[key] = parsed.get(key, ()) + tuple(shlex.split(typed))
        except ValueError as exc:
            raise LaunchSettingError(f"--eagle3-engine-args: {exc}") from None
    return parsed


def layer_ids(value: str) -> tuple[int, ...]:
    """``[1,3,4]`` / ``1,3,4`` / ``{1, 3, 4}`` as sorted unique ints (TensorRT-LLM sorts the set); -1 allowed."""
    body = value.strip().strip("[]{}() ")
    try:
        ids = sorted({int(part) for part in body.replace(" ", ",").split(",") if part})
    except ValueError:
        raise LaunchSettingError(f"{LAYERS_TO_CAPTURE}={value!r}: expected a list of layer ids, e.g. [1,3,4]") from None
    if not ids:
        raise LaunchSettingError(f"{LAYERS_TO_CAPTURE}={value!r}: name at least one layer id")
    return tuple(ids)


def settings_for(engine: str, text: str | None) -> tuple[tuple[str, str], ...]:
    """The plan-changing settings ``--eagle3-engine-args`` gives ``engine`` in its own section (``trtllm: ...``):
    ``((path, canonical value), ...)``."""
    wanted = SETTINGS.get(engine, ())
    if not wanted:
        return ()
    parsed = sections(text)
    found: dict[str, str] = {}
    for word in parsed.get(engine, ()):  # its own section only: the common words go to every live server
        name, sep, value = word.partition("=")
        name = name.strip().lstrip("-").replace("-", "_")
        setting, layers_path = LAYER_SETTINGS.get(engine, (LAYERS_TO_CAPTURE, LAYERS_PATH))
        path = layers_path if name in (setting, layers_path) else None
        if sep and path in wanted:
            found[path] = str(list(layer_ids(value)))
    return tuple(found.items())


def with_launch(engines: Sequence[EngineVersion], text: str | None) -> tuple[EngineVersion, ...]:
    """``engines``, each carrying the plan-changing settings ``text`` gives its engine."""
    return tuple(dataclasses.replace(e, launch=settings_for(e.engine, text)) if SETTINGS.get(e.engine) else e
                 for e in engines)


def captured_layers(launch: Sequence[tuple[str, str]]) -> tuple[int, ...] | None:
    """The layer ids a launch (an engine version's settings, ``EngineVersion.launch``) tells TensorRT-LLM to capture
    (layer OUTPUTS; -1: the final state), or None."""
    paths = {path for _, path in LAYER_SETTINGS.values()}
    value = next((v for name, v in launch if name in paths), None)
    return layer_ids(value) if value is not None else None


def launch_fix(ids: Sequence[int], engine: str = "trtllm") -> str:
    """The launch a fix names: the setting with ``ids`` and where ``engine`` reads it."""
    spec = next(e.serving.launch_layers for e in REGISTRY if e.name == engine)
    assert spec is not None, engine
    return (f"{LAUNCH_FIX}{spec.path}: {list(ids)} ({spec.how}; here: "
            f"--eagle3-engine-args '{engine}: {spec.setting}=[{','.join(map(str, ids))}]')")


def engine_args(engines: Sequence[EngineVersion]) -> str | None:
    """``--eagle3-engine-args`` that gives ``engines`` their launch settings again (None without any)."""
    parts = [f"{e.engine}: " + " ".join(f"{name.rpartition('.')[2]}={value.replace(' ', '')}" for name, value in e.launch)
             for e in engines if e.launch]
    return "; ".join(dict.fromkeys(parts)) or None
