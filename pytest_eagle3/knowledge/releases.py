"""Engine names, the one release list (:data:`RELEASES`), the ranges it spans, and one engine at one version."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

SGLANG = "sglang"
VLLM = "vllm"
TOKENSPEED = "tokenspeed"
MLX_VLM = "mlx-vlm"
TRTLLM = "trtllm"
LMDEPLOY = "lmdeploy"
LLAMACPP = "llamacpp"

#: The one release list: every final release per engine the knowledge was read over, oldest first (patch
#: releases too). Every table, scanner and test reads it. Source: reference/sglang.md (v0.4.4.post2 first with
#: EAGLE-3, wheels read to 0.5.23), reference/vllm.md (0.8.5 to 0.33.0); the releases scripts/scan_fields.py read.
RELEASES: dict[str, tuple[str, ...]] = {
    VLLM: ("0.8.5", "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2",
           "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0",
           "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0",
           "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0",
           "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
    SGLANG: ("0.4.4.post2", "0.4.4.post3", "0.4.4.post4", "0.4.5", "0.4.5.post1", "0.4.5.post2", "0.4.5.post3",
             "0.4.6", "0.4.6.post1", "0.4.6.post2", "0.4.6.post3", "0.4.6.post4", "0.4.6.post5", "0.4.7",
             "0.4.7.post1", "0.4.8", "0.4.8.post1", "0.4.9", "0.4.9.post1", "0.4.9.post2", "0.4.9.post3",
             "0.4.9.post4", "0.4.9.post5", "0.4.9.post6", "0.4.10", "0.4.10.post1", "0.4.10.post2", "0.5.1",
             "0.5.1.post1", "0.5.1.post2", "0.5.1.post3", "0.5.2", "0.5.3", "0.5.3.post1", "0.5.3.post2",
             "0.5.3.post3", "0.5.4", "0.5.4.post1", "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.5.5.post1",
             "0.5.5.post2", "0.5.5.post3", "0.5.6", "0.5.6.post1", "0.5.6.post2", "0.5.7", "0.5.8", "0.5.8.post1",
             "0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1",
             "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21",
             "0.5.22", "0.5.23"),
    # tokenspeed: every release on the index (0.1.0 first, with runtime/models/llama_eagle3.py), both wheels read
    TOKENSPEED: ("0.1.0", "0.1.1"),
    # mlx-vlm: 0.6.0 is the first with speculative/drafters/eagle3 (0.5.0 has none); wheels read 0.6.0, 0.6.5,
    # 0.6.10, 0.6.12, 0.6.13, 0.6.14, 0.6.17, 0.7.0-0.7.10 (0.7.7 is not on the index)
    MLX_VLM: ("0.6.0", "0.6.1", "0.6.2", "0.6.3", "0.6.4", "0.6.5", "0.6.6", "0.6.7", "0.6.8", "0.6.9", "0.6.10",
              "0.6.12", "0.6.13", "0.6.14", "0.6.15", "0.6.16", "0.6.17", "0.7.0", "0.7.1", "0.7.2", "0.7.3", "0.7.4",
              "0.7.5", "0.7.6", "0.7.8", "0.7.9", "0.7.10"),
    # trtllm (PyTorch backend): 0.19.0 first with Eagle3ForCausalLM; tags pinned by tensorrtllm_backend's submodule:
    # 0.19.0 c6f7d42, 0.20.0 7965842, 0.21.0 b4b1185, 1.0.0 ae8270b, 1.1.0 48b7b5d; 1.2.0 / 1.2.1 from release/1.2
    # (36e34ee). Source read: main-branch versions of the files (behaviours/trtllm.py says which, per row)
    TRTLLM: ("0.19.0", "0.20.0", "0.21.0", "1.0.0", "1.1.0", "1.2.0", "1.2.1"),
    # lmdeploy: 0.11.0 is the first with pytorch/models/llama_eagle3.py and spec_decode/proposers/eagle3.py (0.10.2
    # has neither); every final release from there read in its manylinux wheel (0.11.0-0.18.0)
    LMDEPLOY: ("0.11.0", "0.11.1", "0.12.0", "0.12.1", "0.12.2", "0.12.3", "0.13.0", "0.14.0", "0.15.0", "0.16.0",
               "0.17.0", "0.18.0"),
    # llama.cpp: build numbers (tag bNNNN, kept without the b; shown with it: release_text), the builds the
    # llama-cpp-python sdists read vendor (knowledge/llamacpp_builds.py): b9625 the first with src/models/eagle3.cpp
    # (#18039; b9553 has none), b9976 the last with hard-coded aux ids, b10454 the first reading the config's (#25794),
    # b11312 the newest vendored (llama-cpp-python 0.3.36)
    LLAMACPP: ("9625", "9837", "9976", "10454", "11312"),
}

#: Every engine, in the order the selection ``all``, the tables and the reports list them.
ENGINES = (SGLANG, VLLM, TOKENSPEED, MLX_VLM, TRTLLM, LMDEPLOY, LLAMACPP)
#: The releases the profiles cover, first and last, per engine (from :data:`RELEASES`).
KNOWN_RANGES: dict[str, tuple[str, str]] = {engine: (RELEASES[engine][0], RELEASES[engine][-1]) for engine in ENGINES}
DISPLAY = {SGLANG: "SGLang", VLLM: "vLLM", TOKENSPEED: "TokenSpeed", MLX_VLM: "mlx-vlm", TRTLLM: "TensorRT-LLM",
           LMDEPLOY: "LMDeploy", LLAMACPP: "llama.cpp"}
#: How an engine writes its release numbers, when not as its version: llama.cpp's builds are tags ``bNNNN``.
RELEASE_PREFIX = {LLAMACPP: "b"}
#: The engines a run judges by default (``--eagle3-engine`` unset): the two most used; ``all`` adds the others.
DEFAULT_ENGINES = (SGLANG, VLLM)
#: Whose loader code an engine's own descends from (TokenSpeed is derived from SGLang): the engine-specific
#: code paths in ``engines/`` that are not behaviours yet follow it.
LINEAGE = {SGLANG: SGLANG, VLLM: VLLM, TOKENSPEED: SGLANG, MLX_VLM: MLX_VLM, TRTLLM: TRTLLM, LMDEPLOY: LMDEPLOY,
           LLAMACPP: LLAMACPP}


@dataclass(frozen=True, order=True)
class EngineVersion:
    """One engine at one version, e.g. ``sglang==0.5.23``."""

    engine: str
    version: Version
    #: Launch settings that change the plan, as (setting, value) (knowledge.launch_settings): e.g. TensorRT-LLM's
    #: ``speculative_config.eagle3_layers_to_capture``; empty: the engine's defaults.
    launch: tuple[tuple[str, str], ...] = ()

    @property
    def spec(self) -> str:
        return f"{self.engine}=={release_text(self.engine, self.version)}"

    @property
    def label(self) -> str:
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
        return f"{self.engine}-{release_text(self.engine, self.version)}"

    def __str__(self) -> str:
        return self.spec


def release_text(engine: str, version: Version | str) -> str:
    """A release as its engine writes it: ``0.5.23``, or llama.cpp's ``b11312``."""
    return f"{RELEASE_PREFIX.get(engine, '')}{version}"


def newest(engine: str) -> EngineVersion:
    return EngineVersion(engine, Version(KNOWN_RANGES[engine][1]))


def in_known_range(engine: str, version: Version) -> bool:
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
    if engine in RELEASE_PREFIX:  # every build is a release: one between two read takes the earlier's rows
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
