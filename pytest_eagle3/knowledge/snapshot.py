"""One engine version's knowledge, read once: everything a load plan asks of ``knowledge/``.

:func:`snapshot_of` builds a :class:`Snapshot` for an :class:`EngineVersion` before planning: its typed behaviours
and the row behind each, its KV grouping, its P-EAGLE and runner rows, its launch settings, and the lookups that
depend on the checkpoint (draft-class rows, capture support, capture reach, a table's history for the advice a
fix gives). The planners (``engines/``) import nothing else of ``knowledge/`` (an import-linter contract says
so): this module is also where they take the knowledge's vocabulary (types and constants) from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from packaging.version import Version

from pytest_eagle3.findings import Finding
from pytest_eagle3.knowledge import advice, capture, draft_class_rows, draft_classes, forward_runs, reach
from pytest_eagle3.knowledge.behaviours import TABLES, BehaviourName, Behaviours, Rule, behaviours_at, read_behaviour
from pytest_eagle3.knowledge.capture import (
    ALLOWLIST,
    ALLOWLIST_SOURCE,
    CAPTURES,
    SILENT,
    Capture,
    CaptureSupport,
    Support,
)
from pytest_eagle3.knowledge.costs import RecordedCost, recorded_cost, recorded_for
from pytest_eagle3.knowledge.draft_class_rows import FLAG_FIELDS, READ, UNUSED
from pytest_eagle3.knowledge.draft_classes import (
    LLAMA,
    LLAMA_ATTENTION,
    LLAMA_COUNT,
    MLA,
    QWEN3,
    DraftClass,
    speculators_class,
)
from pytest_eagle3.knowledge.engine import Engine, LaunchLayers
from pytest_eagle3.knowledge.engines.shared import AuxField, Transform
from pytest_eagle3.knowledge.forward_runs import RAISED, UNDER_DELIVERED, ForwardRun
from pytest_eagle3.knowledge.launch import VLLM_MODE, OtherMode
from pytest_eagle3.knowledge.launch_settings import LAYERS_PATH, captured_layers, launch_fix
from pytest_eagle3.knowledge.reach import CRASH, EMBEDDINGS, INDEX_ERROR, RANGE_REACH, UNREACHED, Reach
from pytest_eagle3.knowledge.releases import DISPLAY, RELEASES, SGLANG, VLLM, EngineVersion, newest, release_text
from pytest_eagle3.knowledge.runtime import (
    EQUAL_PAGE,
    OK,
    REFUSED,
    SEPARATE_POOL,
    UNIFORM_TYPE_ELSE_EQUAL,
    UNIFORM_TYPE_ELSE_PADDED,
    UNKNOWN,
    KvRule,
    kv_rule,
)
from pytest_eagle3.knowledge.speculators import PEAGLE, PEAGLE_ERRORS, is_peagle, peagle_rule, speculators_copies
from pytest_eagle3.knowledge.table import Row, Table

__all__ = [
    "ALLOWLIST",
    "ALLOWLIST_SOURCE",
    "CAPTURES",
    "CRASH",
    "EMBEDDINGS",
    "EQUAL_PAGE",
    "FLAG_FIELDS",
    "INDEX_ERROR",
    "LAYERS_PATH",
    "LLAMA",
    "LLAMA_ATTENTION",
    "LLAMA_COUNT",
    "MLA",
    "OK",
    "PEAGLE_ERRORS",
    "QWEN3",
    "RAISED",
    "RANGE_REACH",
    "READ",
    "REFUSED",
    "SEPARATE_POOL",
    "SGLANG",
    "SILENT",
    "UNDER_DELIVERED",
    "UNIFORM_TYPE_ELSE_EQUAL",
    "UNIFORM_TYPE_ELSE_PADDED",
    "UNKNOWN",
    "UNREACHED",
    "UNUSED",
    "VLLM",
    "AuxField",
    "BehaviourName",
    "Capture",
    "CaptureSupport",
    "DraftClass",
    "Engine",
    "EngineVersion",
    "ForwardRun",
    "KvRule",
    "OtherMode",
    "Reach",
    "RecordedCost",
    "Row",
    "Snapshot",
    "Support",
    "Transform",
    "is_peagle",
    "launch_fix",
    "newest_snapshot",
    "read_behaviour",
    "snapshot_of",
    "speculators_class",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Snapshot:
    """What a load plan reads about one engine version: its behaviours (each with the row it came from), the rows
    of the other tables in force at it, and the lookups a checkpoint's names select."""

    target: EngineVersion
    behaviours: Behaviours
    rows: Mapping[BehaviourName, Rule]
    #: The registered engine: what holds for every release of it (the rows say what changes).
    kind: Engine
    #: The display label, ``vLLM 0.34.0`` (read, learned or not read; with its launch settings).
    label: str
    #: The version as typed on the command line, ``vllm==0.34.0``.
    spec: str
    #: How the engine groups draft and target layers in its KV cache at this release.
    kv: KvRule
    #: What this release does with a speculators P-EAGLE config (None: the engine reads no speculators config).
    peagle: str | None
    #: This vLLM release's runner beside the default one (None: not vLLM).
    other_runner: Row[OtherMode] | None
    #: The target layers a launch setting captures (TensorRT-LLM's ``eagle3_layers_to_capture``), or None.
    launched_layers: tuple[int, ...] | None
    #: The speculators config fields this release copies into the draft's config.
    speculators_copies: tuple[str, ...]

    @property
    def engine(self) -> str:
        """The engine's name (``vllm``)."""
        return self.target.engine

    @property
    def version(self) -> Version:
        """The engine version this snapshot is of."""
        return self.target.version

    @property
    def display(self) -> str:
        """The engine's display name (``vLLM``)."""
        return DISPLAY[self.engine]

    @property
    def launch_layers(self) -> LaunchLayers:
        """The launch setting an engine whose ``aux_default`` is launch-setting takes its aux layers from (its
        ``Engine.serving.launch_layers``: the setting, its default, the fewest target layers with one)."""
        spec = self.kind.serving.launch_layers
        if spec is None:
            raise LookupError(f"{self.display} takes its aux layers from a launch setting, but its Engine declares no "
                              "serving.launch_layers")
        return spec

    def row(self, behaviour: BehaviourName) -> Rule:
        """The row a behaviour's value came from."""
        return self.rows[behaviour]

    def source(self, behaviour: BehaviourName) -> str:
        """The source label of the row behind ``behaviour`` at this version."""
        return TABLES[behaviour].label(self.rows[behaviour])

    def borrowed_rules(self, finding: Finding) -> tuple[BehaviourName, ...]:
        """The behaviours whose row at this release was read in another engine's source (``Row.origin``) and that
        ``finding`` cites as a rule it rests on (their source label in its summary or details, ``rule: SOURCE``)."""
        cited = "\n".join((finding.summary, *finding.details))
        return tuple(name for name, row in self.rows.items() if row.borrowed and self.source(name) in cited)

    def read_in(self, behaviour: BehaviourName) -> str:
        """The display name of the engine whose source the row behind ``behaviour`` was read in (``SGLang``)."""
        return DISPLAY[self.rows[behaviour].read_in]

    def aux_transform(self, family: str) -> str:
        """How this release turns configured aux ids into captured layers for a target ``family`` (``llama``,
        ``deepseek``, ``gpt_oss``)."""
        return str(self.behaviours.aux_transform(family))

    def flag_read(self, flag: str) -> str:
        """How this release reads the norm flag ``flag`` from the draft config (``read``, ``not-read``, ...)."""
        return str(self.behaviours.read(read_behaviour(flag)))

    def flag_source(self, flag: str) -> str:
        """The source label of the row saying how this release reads the norm flag ``flag``."""
        return self.source(read_behaviour(flag))

    def release(self, version: Version | str) -> str:
        """A release as this engine writes it (``0.5.23``, llama.cpp's ``b11312``)."""
        return release_text(self.engine, version)

    # -- draft classes ------------------------------------------------------------------------------------------
    def draft_class(self, architecture: str | None) -> DraftClass | None:
        """The draft class ``architecture`` builds at this release (None: not registered here)."""
        return draft_classes.draft_class(self.engine, self.version, architecture or "")

    def any_draft_class(self, architecture: str | None) -> DraftClass | None:
        """The class ``architecture`` names at this release, else at any release of the engine."""
        return self.draft_class(architecture) or draft_classes.CLASSES.get((self.engine, architecture or ""))

    def family_architectures(self, family: str) -> tuple[str, ...]:
        """The architectures that build a draft of ``family`` at this release, preferred first."""
        return draft_classes.family_architectures(self.engine, self.version, family)

    def first_family_release(self, family: str) -> tuple[str, str] | None:
        """The first release (and its architecture) with a draft class of ``family``; None if none read has one."""
        return draft_classes.first_family_release(self.engine, family)

    def class_row(self, draft_class: str | None, behaviour: str) -> Row[Any] | None:
        """The scanned row of ``draft_class``'s own source for ``behaviour`` at this release (None: not scanned)."""
        return draft_class_rows.class_row(self.engine, self.version, draft_class, behaviour)

    # -- the target's side ----------------------------------------------------------------------------------------
    def capture(self, architecture: str) -> CaptureSupport:
        """Whether a target of ``architecture`` captures aux hidden states at this release, and the row saying so."""
        return capture.capture_support(self.engine, self.version, architecture)

    def capture_since(self, architecture: str, engine: str | None = None) -> str | None:
        """The first release of this engine (or ``engine``) whose ``architecture`` captures; None when none read does."""
        return capture.capture_since(engine or self.engine, architecture)

    def allowlisted(self, model_type: str) -> tuple[str, ...] | None:
        """The target allowlist in force at this release when ``model_type`` fails it; None when it passes or none
        applies."""
        return capture.allowlisted(self.version, model_type, self.engine)

    def reach(self, architecture: str) -> Row[Reach] | None:
        """Which layer inputs ``architecture``'s capture loop reaches at this release (None: not scanned); where a
        forward probe of this release saw index 0 or L otherwise, what it saw."""
        row = reach.reach_at(self.engine, self.version, architecture)
        run = self.forward_run(architecture)
        if run is None:
            return row
        scanned = row.value if row is not None else RANGE_REACH[str(self.behaviours.capture_range)]
        measured = forward_runs.measured_reach(run, scanned)
        if measured is None:
            return row
        return Row(self.engine, run.release, measured, f"{run.source}: {run.boundary_words}", read_to=run.release)

    def forward_run(self, architecture: str) -> ForwardRun | None:
        """What ``architecture``'s own forward delivered to the draft in a forward probe of exactly this release
        (None: not probed, or not run on CPU)."""
        return forward_runs.forward_run(self.engine, self.version, architecture)

    def reach_label(self, architecture: str, row: Row[Reach]) -> str:
        """A reach row's source with the releases it covers."""
        return reach.label(self.engine, architecture, row)

    def first_reaching(self, architecture: str, index: str, engine: str | None = None,
                       after: Version | None = None) -> str | None:
        """The first release after this one (or ``after``) of this engine (or ``engine``) whose loop reaches
        ``index`` (``last`` / ``zero``), as ``vLLM 0.18.0``; None if none read does."""
        return reach.first_reaching(engine or self.engine, architecture, index,
                                    self.version if after is None else after)

    @property
    def other_engines(self) -> tuple[str, ...]:
        """Every other engine read, in the release list's order (the order a fix looks for another engine's)."""
        return tuple(e for e in RELEASES if e != self.engine)

    # -- advice: releases read from a table's history -------------------------------------------------------------
    def first_release(self, source: Table[T] | BehaviourName, predicate: Callable[[T], bool],
                      engine: str | None = None) -> str | None:
        """The first release of this engine (or ``engine``) from which every later row satisfies ``predicate``."""
        return advice.first_release(source, engine or self.engine, predicate)

    def last_release_before(self, source: Table[T] | BehaviourName, predicate: Callable[[T], bool],
                            engine: str | None = None) -> str | None:
        """The newest release read of this engine's (or ``engine``'s) first run of rows satisfying ``predicate``,
        when that run ends."""
        return advice.last_release_before(source, engine or self.engine, predicate)

    def serve_with(self, source: Table[T] | BehaviourName, predicate: Callable[[T], bool],
                   engine: str | None = None) -> str:
        """``SGLang >= 0.5.12``: the first release of this engine (or ``engine``) whose rows satisfy ``predicate``
        (the other engine's where none does)."""
        return advice.serve_with(source, engine or self.engine, predicate)

    def release_words(self, since: str | None, elsewhere: str | None) -> str:
        """``vLLM >= 0.12.0``; where no release of this engine works, the other engine's (``elsewhere``)."""
        return advice.release_words(self.engine, since, elsewhere)

    @property
    def other_engine(self) -> str:
        """The engine a fix names where no release of this one works."""
        return advice.other_engine(self.engine)

    def one_upgrade(self, findings: Sequence[Finding]) -> list[Finding]:
        """The findings with one upgrade: every "serve with RELEASE" names the newest any of them names."""
        return advice.one_upgrade(findings, self.engine)

    def peagle_served_since(self) -> Row[str] | None:
        """The first P-EAGLE row of this engine that serves it with parallel drafting; None if none does."""
        return next((r for r in PEAGLE.rows_of(self.engine) if r.value == "parallel-drafting"), None)

    def peagle_source(self) -> str:
        """The source of the P-EAGLE row in force at this release."""
        return PEAGLE.at(self.target).source

    # -- producers' recorded costs (experiments, not engine rows) ------------------------------------------------
    @staticmethod
    def recorded_cost(producer: str | None, deviation: str, spread: float) -> RecordedCost | None:
        """The recorded price of a producer's deviation at ``spread``; None where nobody priced it."""
        return recorded_cost(producer or "", deviation, spread)

    @staticmethod
    def recorded_for(producer: str | None, deviation: str) -> RecordedCost | None:
        """The experiment recorded for a producer's deviation, whatever its spread; None without one."""
        return recorded_for(producer or "", deviation)


def newest_snapshot(engine: str) -> Snapshot:
    """The snapshot of the newest release read of ``engine``."""
    return snapshot_of(newest(engine))


def snapshot_at(engine: str, release: str) -> Snapshot:
    """The snapshot of ``engine`` at ``release`` (its default launch): another engine version a plan reads, such as
    the release a producer's capture route was pinned to."""
    return snapshot_of(EngineVersion(engine, Version(release)))


@cache
def snapshot_of(target: EngineVersion) -> Snapshot:
    """The snapshot of one engine version (read once per process)."""
    label = target.label  # read or learned: the learned store as it is now
    behaviours, rows = behaviours_at(target)
    runner = VLLM_MODE.find(target.engine, target.version)
    return Snapshot(
        target=target, behaviours=behaviours, rows=rows, kind=target.kind, label=label, spec=target.spec,
        kv=kv_rule(target),
        peagle=peagle_rule(target.engine, target.version), other_runner=runner,
        launched_layers=captured_layers(target.launch),
        speculators_copies=speculators_copies(target.engine, target.version),
    )
