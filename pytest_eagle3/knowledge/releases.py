"""Engine names, the version ranges the profiles cover, and one engine at one version."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

SGLANG = "sglang"
VLLM = "vllm"

#: The releases the profiles cover, first and last, per engine. Source: reference/sglang.md
#: (v0.4.4.post2 first with EAGLE-3, wheels read to 0.5.23), reference/vllm.md (0.8.5 to 0.33.0).
KNOWN_RANGES: dict[str, tuple[str, str]] = {
    SGLANG: ("0.4.4.post2", "0.5.23"),
    VLLM: ("0.8.5", "0.33.0"),
}
DISPLAY = {SGLANG: "SGLang", VLLM: "vLLM"}
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


def in_known_range(engine: str, version: Version) -> bool:
    first, last = (Version(v) for v in KNOWN_RANGES[engine])
    return first <= version <= last
