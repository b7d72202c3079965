"""Parsing of ``--eagle3-engine``: which engine versions a run judges against.

A selection is a comma list of engine names (each engine's ``NAME`` in the registry, ``knowledge/engines``),
``all`` (every engine's newest release) or ``NAME==VERSION``. A bare name means the newest
known version; ``NAME==*`` means one version per distinct profile segment. llama.cpp's versions are builds
(``llamacpp==b11312``) or the llama-cpp-python release that vendors one (``llamacpp==0.3.36``). Unset, a run judges
:data:`DEFAULT_SELECTION`. A version newer than every release read is one the package index lists, where it can be
asked (:mod:`~pytest_eagle3.knowledge.package_index`): a typo is an error, not a release nobody has read yet.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.behaviours import segment_starts
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.llamacpp_builds import PYTHON_PACKAGE, VENDORED, vendored_build
from pytest_eagle3.knowledge.package_index import missing_release
from pytest_eagle3.knowledge.releases import (
    DEFAULT_ENGINES,
    DISPLAY,
    KNOWN_RANGES,
    EngineVersion,
    newest,
    not_a_release,
)

ALL = "all"
#: What an unset ``--eagle3-engine`` means: the two most used engines (``all`` adds the others).
DEFAULT_SELECTION = ",".join(DEFAULT_ENGINES)
#: What a version range is written with (PEP 440): not accepted, one version per entry is.
RANGE_OPERATORS = (">", "<", "~=", "!=")
EVERY_SEGMENT = "*"


def every_segment(engine: str) -> tuple[EngineVersion, ...]:
    """The first version of every profile segment, and the newest known version (the last segment's end)."""
    starts = [EngineVersion(engine, v) for v in segment_starts(engine)]
    return tuple(dict.fromkeys([*starts, newest(engine)]))


class EngineSelectionError(ValueError):
    """A ``--eagle3-engine`` value that names no known engine version."""


def parse_selection(text: str) -> tuple[EngineVersion, ...]:
    """Parse a comma list into engine versions, in the order given, without duplicates."""
    chosen: list[EngineVersion] = []
    for raw in text.split(","):
        item = raw.strip().lower()
        if not item:  # ``vllm,``: an entry lost (an unset variable), never passed over in silence
            raise EngineSelectionError(
                f"--eagle3-engine: {text.strip()!r} has an empty entry (a comma with no engine beside it); name an "
                f"engine in every entry: sglang,vllm")
        if item == ALL:
            chosen.extend(newest(e) for e in KNOWN_RANGES)
            continue
        name, _, version = item.partition("==")
        name = name.strip()
        if name not in KNOWN_RANGES and any(op in item for op in RANGE_OPERATORS):
            raise EngineSelectionError(
                f"--eagle3-engine: {raw.strip()!r} is a range, and a range is not accepted: give one version "
                f"per entry, comma-separated (vllm==0.30.0,vllm==0.33.0), or NAME==* for one per profile segment"
            )
        if name not in KNOWN_RANGES:
            raise EngineSelectionError(
                f"--eagle3-engine: unknown engine {name!r} in {raw.strip()!r}; "
                f"known: {', '.join(KNOWN_RANGES)} or {ALL}, optionally NAME==VERSION"
            )
        version = version.strip()
        if not version and "==" in item:  # ``vllm==``: a version lost, never the newest by default
            raise EngineSelectionError(
                f"--eagle3-engine: {raw.strip()!r} gives no version after ==; give one ({newest(name).spec}), "
                f"{name}=={EVERY_SEGMENT} for one per profile segment, or {name} alone for the newest read")
        if not version:
            chosen.append(newest(name))
        elif version == EVERY_SEGMENT:
            chosen.extend(every_segment(name))
        else:
            chosen.append(EngineVersion(name, _known_version(name, version, raw.strip())))
    unique: list[EngineVersion] = []
    for item_version in chosen:
        if item_version not in unique:
            unique.append(item_version)
    return tuple(unique)


def _known_version(engine: str, text: str, raw: str) -> Version:
    if engine_named(engine).release_prefix:
        text = _build_number(engine, text, raw)
    try:
        version = Version(text)
    except InvalidVersion:
        raise EngineSelectionError(f"--eagle3-engine: {raw!r} is not a version number") from None
    problem = not_a_release(engine, text, version)
    if problem is None and EngineVersion(engine, version).unread is not None:  # newer than every release read
        problem = missing_release(engine, version, text)
    if problem is not None:
        raise EngineSelectionError(f"--eagle3-engine: {problem}")
    return version


def _build_number(engine: str, text: str, raw: str) -> str:
    """llama.cpp's ``b11312`` (or ``11312``) as its number; a llama-cpp-python version (``0.3.36``) as the build
    its sdist vendors."""
    prefix = engine_named(engine).release_prefix
    if text.startswith(prefix) and text[len(prefix):].isdigit():
        return text[len(prefix):]
    if text.isdigit():
        return text
    build = vendored_build(text)
    if build is None:
        raise EngineSelectionError(
            f"--eagle3-engine: {raw!r}: {DISPLAY[engine]} versions are builds ({engine}=={prefix}11312), or a "
            f"{PYTHON_PACKAGE} release whose vendored build is known ({', '.join(VENDORED)})")
    return build
