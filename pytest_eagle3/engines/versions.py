"""Engine names, the version ranges we know, and parsing of ``--eagle3-engine``.

A selection is a comma list of ``sglang``, ``vllm``, ``all`` or ``NAME==VERSION``. A bare name
means the newest known version; ``NAME==*`` means one version per distinct profile segment.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

SGLANG = "sglang"
VLLM = "vllm"

#: The releases the profiles cover, first and last, per engine. Source: reference/sglang.md
#: (v0.4.4.post2 first with EAGLE-3, wheels read to 0.5.23), reference/vllm.md (0.8.5 to 0.33.0).
KNOWN_RANGES: dict[str, tuple[str, str]] = {
    SGLANG: ("0.4.4.post2", "0.5.23"),
    VLLM: ("0.8.5", "0.33.0"),
}
DISPLAY = {SGLANG: "SGLang", VLLM: "vLLM"}
ALL = "all"
EVERY_SEGMENT = "*"


class EngineSelectionError(ValueError):
    """A ``--eagle3-engine`` value that names no known engine version."""


@dataclass(frozen=True, order=True)
class EngineVersion:
    """One engine at one version, e.g. ``sglang==0.5.23``."""

    engine: str
    version: Version

    @property
    def spec(self) -> str:
        return f"{self.engine}=={self.version}"

    @property
    def label(self) -> str:
        return f"{DISPLAY[self.engine]} {self.version}"

    @property
    def test_id(self) -> str:
        return f"{self.engine}-{self.version}"

    def __str__(self) -> str:
        return self.spec


def newest(engine: str) -> EngineVersion:
    return EngineVersion(engine, Version(KNOWN_RANGES[engine][1]))


def oldest(engine: str) -> EngineVersion:
    return EngineVersion(engine, Version(KNOWN_RANGES[engine][0]))


def in_known_range(engine: str, version: Version) -> bool:
    first, last = (Version(v) for v in KNOWN_RANGES[engine])
    return first <= version <= last


def parse_selection(text: str) -> tuple[EngineVersion, ...]:
    """Parse a comma list into engine versions, in the order given, without duplicates."""
    from pytest_eagle3.engines.profiles import segment_starts

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
            chosen.extend(EngineVersion(name, v) for v in segment_starts(name))
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
