"""One engine version's profile: its typed behaviours (:class:`~pytest_eagle3.knowledge.behaviours.Behaviours`),
each with the row and source it came from. The rows live in :mod:`pytest_eagle3.knowledge.behaviours`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from packaging.version import Version

from pytest_eagle3.knowledge.behaviours import (
    TABLES,
    BehaviourName,
    Behaviours,
    Rule,
    behaviours_at,
    segment_starts,
)
from pytest_eagle3.knowledge.engine import Engine
from pytest_eagle3.knowledge.releases import EngineVersion

__all__ = ["Profile", "profile", "rule_for", "segment_starts"]


@dataclass(frozen=True)
class Profile:
    """One engine version's behaviours, each with the row (and source) it came from."""

    target: EngineVersion
    behaviours: Behaviours
    rows: Mapping[BehaviourName, Rule]

    @property
    def engine(self) -> str:
        """The engine's name (``vllm``)."""
        return self.target.engine

    @property
    def kind(self) -> Engine:
        """The registered engine: what holds for every release of it (the rows say what changes)."""
        return self.target.kind

    @property
    def version(self) -> Version:
        """The engine version this profile is for."""
        return self.target.version

    @property
    def label(self) -> str:
        """The display label, ``vLLM 0.33.0`` (and the rules it is judged by, if newer than every release read)."""
        return self.target.label

    def row(self, behaviour: BehaviourName) -> Rule:
        """The row a behaviour's value came from."""
        return self.rows[behaviour]

    def source(self, behaviour: BehaviourName) -> str:
        """The source label of the row behind ``behaviour`` at this version."""
        return TABLES[behaviour].label(self.rows[behaviour])


def rule_for(engine: str, behaviour: BehaviourName, version: Version) -> Rule:
    """The row in force at ``version``: the one with the latest ``since`` not after it."""
    return TABLES[behaviour].at(EngineVersion(engine, version))


@cache
def profile(target: EngineVersion) -> Profile:
    """The profile of one engine version."""
    behaviours, rows = behaviours_at(target)
    return Profile(target, behaviours, rows)
