"""Parsing of ``--eagle3-engine``: which engine versions a run judges against.

A selection is a comma list of ``sglang``, ``vllm``, ``all`` or ``NAME==VERSION``. A bare name
means the newest known version; ``NAME==*`` means one version per distinct profile segment.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.behaviours import segment_starts
from pytest_eagle3.knowledge.releases import (
    DISPLAY,
    KNOWN_RANGES,
    EngineVersion,
    in_known_range,
    newest,
)

ALL = "all"
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
        if not item:
            continue
        if item == ALL:
            chosen.extend(newest(e) for e in KNOWN_RANGES)
            continue
        name, _, version = item.partition("==")
        name = name.strip()
        if name not in KNOWN_RANGES:
            raise EngineSelectionError(
                f"--eagle3-engine: unknown engine {name!r} in {raw.strip()!r}; "
                f"known: {', '.join(KNOWN_RANGES)} or {ALL}, optionally NAME==VERSION"
            )
        version = version.strip()
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
    first, last = KNOWN_RANGES[engine]
    try:
        version = Version(text)
    except InvalidVersion:
        raise EngineSelectionError(f"--eagle3-engine: {raw!r} is not a version number") from None
    if not in_known_range(engine, version):
        raise EngineSelectionError(
            f"--eagle3-engine: {DISPLAY[engine]} {version} is outside the known range "
            f"{first} to {last}; pick a version in it"
        )
    return version
