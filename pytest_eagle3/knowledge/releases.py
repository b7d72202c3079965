"""Engine names, the one release list (:data:`RELEASES`, from the registry), the ranges it spans, and one engine at
one version (:class:`EngineVersion`, whose :attr:`~EngineVersion.kind` is its registered engine)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from packaging.version import Version

from pytest_eagle3.knowledge.engine import Engine
from pytest_eagle3.knowledge.engines import BY_NAME, REGISTRY, engine_named
from pytest_eagle3.knowledge.learned import learned_release, learned_versions
from pytest_eagle3.knowledge.package_index import unasked

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
    #: The version as typed on the command line, ``vllm==0.33.0`` (launch settings left out).
    spec: str = field(init=False, compare=False, repr=False)
    #: The pytest id part, ``vllm-0.33.0``.
    test_id: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        release = release_text(self.engine, self.version)
        object.__setattr__(self, "spec", f"{self.engine}=={release}")
        object.__setattr__(self, "test_id", f"{self.engine}-{release}")

    @cached_property
    def kind(self) -> Engine:
        """The registered engine (its name is :attr:`engine`): what the areas and commands ask."""
        return engine_named(self.engine)

    @property
    def label(self) -> str:
        """The display label, ``vLLM 0.33.0``, whether it was read or learned, and its launch settings."""
        read = " (learned)" if self.learned else " (not read)" if self.unread else ""
        launched = "".join(f" (launched with {name}: {value})" for name, value in self.launch)
        return f"{DISPLAY[self.engine]} {release_text(self.engine, self.version)}{read}{launched}"

    @property
    def learned(self) -> bool:
        """Whether ``learn`` read this release on this machine (a bundled release is never learned)."""
        return not in_known_range(self.engine, self.version) and learned_release(self.engine, self.version) is not None

    @property
    def unread(self) -> str | None:
        """Why this version is not judged: it is newer than every release read, bundled or learned (None for a read
        one); the message names the command that reads it."""
        newest = newest_read(self.engine)
        if self.version <= newest or self.learned:
            return None
        said = (f"{self.spec} is newer than every {DISPLAY[self.engine]} release read (newest "
                f"{release_text(self.engine, newest)}): not judged; read it first: {learn_command(self.spec)}")
        unknown = unasked(self.engine)
        return said if unknown is None else f"{said}. Whether it is a release at all is unknown: {unknown}"

    def __str__(self) -> str:
        return self.spec


def release_text(engine: str, version: Version | str) -> str:
    """A release as its engine writes it: ``0.5.23``, or llama.cpp's ``b11312``."""
    kind = BY_NAME.get(engine)
    return f"{kind.release_prefix}{version}" if kind is not None else str(version)


def newest(engine: str) -> EngineVersion:
    """The newest release read of ``engine``."""
    return EngineVersion(engine, Version(KNOWN_RANGES[engine][1]))


def in_known_range(engine: str, version: Version) -> bool:
    """Whether ``version`` lies between the first and the newest release read of ``engine``."""
    first, last = (Version(v) for v in KNOWN_RANGES[engine])
    return first <= version <= last


def newest_read(engine: str) -> Version:
    """The newest release read: bundled, or learned on this machine."""
    return max((Version(KNOWN_RANGES[engine][1]), *learned_versions(engine)))


def learn_command(spec: str) -> str:
    """The command that reads a release (``vllm==0.35.0``) into the knowledge."""
    return f"python -m pytest_eagle3 learn {spec}"


def rules_from(engine: str, version: Version) -> Version | None:
    """The newest bundled release, whose hand rows a learned ``version`` newer than it carries over (where their
    cited functions did not change); None for a bundled or an unread release."""
    last = Version(KNOWN_RANGES[engine][1])
    return last if version > last and learned_release(engine, version) is not None else None


#: How many releases a "could mean" list names before it elides the middle.
_LISTED = 8


def not_a_release(engine: str, typed: str, version: Version) -> str | None:
    """Why ``version`` (typed as ``typed``) names no release the profiles judge, with the releases it could mean;
    None for a known release, or one newer than every bundled release (learned, or not judged: ``learn`` reads it)."""
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
