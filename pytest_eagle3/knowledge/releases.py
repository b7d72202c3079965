"""Engine names, the one release list (:data:`RELEASES`, from the registry), the ranges it spans, and one engine at
one version (:class:`EngineVersion`, whose :attr:`~EngineVersion.kind` is its registered engine)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from pytest_eagle3.knowledge.engine import Engine
from pytest_eagle3.knowledge.engines import BY_NAME, REGISTRY, engine_named

#: The engines' names, for the tables that name one in their rows (each engine's module holds its own name).
SGLANG = "sglang"
VLLM = "vllm"
TOKENSPEED = "tokenspeed"
MLX_VLM = "mlx-vlm"
TRTLLM = "trtllm"
LMDEPLOY = "lmdeploy"
LLAMACPP = "llamacpp"

#: The one release list: every final release per engine the knowledge was read over, oldest first (patch
#: releases too), from each engine's module. Every table, scanner and test reads it. Its order (each engine's
#: ``release_list_rank``: vLLM, SGLang, then the registry's) is the order a fix looks for another engine's release.
RELEASES: dict[str, tuple[str, ...]] = {
    engine.name: engine.releases for engine in sorted(REGISTRY, key=lambda engine: engine.release_list_rank)}
#: Every engine, in the order the selection ``all``, the tables and the reports list them.
ENGINES = tuple(engine.name for engine in REGISTRY)
#: The releases the profiles cover, first and last, per engine (from :data:`RELEASES`).
KNOWN_RANGES: dict[str, tuple[str, str]] = {engine: (RELEASES[engine][0], RELEASES[engine][-1]) for engine in ENGINES}
DISPLAY = {engine.name: engine.display for engine in REGISTRY}
#: The engines a run judges by default (``--eagle3-engine`` unset): the two most used; ``all`` adds the others.
DEFAULT_ENGINES = tuple(engine.name for engine in REGISTRY if engine.default)


@dataclass(frozen=True, order=True)
class EngineVersion:
    """One engine at one version, e.g. ``sglang==0.5.23``."""

    engine: str
    version: Version
    #: Launch settings that change the plan, as (setting, value) (knowledge.launch_settings): e.g. TensorRT-LLM's
    #: ``speculative_config.eagle3_layers_to_capture``; empty: the engine's defaults.
    launch: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> Engine:
        """The registered engine (its name is :attr:`engine`): what the areas and commands ask."""
        return engine_named(self.engine)

    @property
    def spec(self) -> str:
        """The version as typed on the command line, ``vllm==0.33.0``."""
        return f"{self.engine}=={release_text(self.engine, self.version)}"

    @property
    def label(self) -> str:
        """The display label, ``vLLM 0.33.0``, with the rules it is judged by and its launch settings."""
        newest_rules = rules_from(self.engine, self.version)
        rules = f" (judged by {release_text(self.engine, newest_rules)}'s rules)" if newest_rules is not None else ""
        launched = "".join(f" (launched with {name}: {value})" for name, value in self.launch)
        return f"{DISPLAY[self.engine]} {release_text(self.engine, self.version)}{rules}{launched}"

    @property
    def beyond_known(self) -> str | None:
        """The warning a version newer than every release read deserves (None for a known one): its verdict is the
        newest read release's rules, not its own."""
        newest_rules = rules_from(self.engine, self.version)
        if newest_rules is None:
            return None
        newest = release_text(self.engine, newest_rules)
        return (f"{self.spec} is newer than every {DISPLAY[self.engine]} release read (newest {newest}): it is "
                f"judged by {newest}'s rules, not by its own; what it really does may differ")

    @property
    def test_id(self) -> str:
        """The pytest id part, ``vllm-0.33.0``."""
        return f"{self.engine}-{release_text(self.engine, self.version)}"

    def __str__(self) -> str:
        return self.spec


def release_text(engine: str, version: Version | str) -> str:
    """A release as its engine writes it: ``0.5.23``, or llama.cpp's ``b11312``."""
    return BY_NAME[engine].release_text(version) if engine in BY_NAME else str(version)


def newest(engine: str) -> EngineVersion:
    """The newest release read of ``engine``."""
    return EngineVersion(engine, Version(KNOWN_RANGES[engine][1]))


def in_known_range(engine: str, version: Version) -> bool:
    """Whether ``version`` lies between the first and the newest release read of ``engine``."""
    first, last = (Version(v) for v in KNOWN_RANGES[engine])
    return first <= version <= last


def rules_from(engine: str, version: Version) -> Version | None:
    """The newest known release, whose rules judge ``version`` when it is newer than every release read; else None."""
    last = Version(KNOWN_RANGES[engine][1])
    return last if version > last else None


#: How many releases a "could mean" list names before it elides the middle.
_LISTED = 8


def not_a_release(engine: str, typed: str, version: Version) -> str | None:
    """Why ``version`` (typed as ``typed``) names no release the profiles judge, with the releases it could mean;
    None for a known release, or one newer than every release read (judged with the newest rules)."""
    releases = RELEASES[engine]
    first, last = Version(releases[0]), Version(releases[-1])
    if version > last or str(version) in releases:
        return None
    if engine_named(engine).release_prefix:  # every build is a release: one between two read takes the earlier's rows
        return None if version >= first else (
            f"{DISPLAY[engine]} {typed} is outside the known range {release_text(engine, first)} to "
            f"{release_text(engine, last)}; pick a build in it")
    if version < first:
        return f"{DISPLAY[engine]} {typed} is outside the known range {first} to {last}; pick a version in it"
    meant = [r for r in releases if r.startswith(typed + ".")]
    if not meant:
        before = max((r for r in releases if Version(r) < version), key=Version)
        after = min((r for r in releases if Version(r) > version), key=Version)
        return (f"{DISPLAY[engine]} {typed} is not a release; the releases around it: {before}, {after} "
                f"(give one: {engine}=={before})")
    finals = [r for r in meant if not Version(r).is_postrelease] or meant
    listed = finals if len(finals) <= _LISTED else [*finals[:3], "...", *finals[-3:]]
    return (f"{DISPLAY[engine]} {typed} is not a release; it could mean {', '.join(listed)} "
            f"({len(meant)} releases; give one: {engine}=={meant[-1]})")
