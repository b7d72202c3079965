"""Engine behaviours as data: one table per behaviour, rows of what each engine does from a release on.

The rows live in each engine's module (``knowledge/engines/<name>.py``, areas as sections), gathered through
the engine registry; the draft architectures come from the registry in :mod:`pytest_eagle3.knowledge.draft_classes`.
Every table covers each engine's whole known range exactly once, and every row's value fits its :class:`~.kinds.Behaviours` field (checked when built).
:func:`behaviours_at` gives one engine version's typed record and the row behind each field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge import draft_classes
from pytest_eagle3.knowledge.behaviours.kinds import (
    BEHAVIOURS,
    NAMES,
    VALUES,
    BehaviourName,
    Behaviours,
    FcAuxCount,
    ReadBehaviour,
    read_behaviour,
    value_fits,
)
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.table import Row, Table, TableError, table

__all__ = ["BEHAVIOURS", "NAMES", "RULES", "TABLES", "VALUES", "BehaviourName", "Behaviours", "FcAuxCount",
           "ReadBehaviour", "Rule", "behaviours_at", "read_behaviour", "rule_for", "segment_starts",
           "value_fits"]

#: One behaviour row: a behaviour's value for one engine from ``since`` on.
Rule = Row[Any]

#: Every engine's behaviour rows, as ``(behaviour, row)``, in the registry's order.
_SPANS: tuple[tuple[str, Rule], ...] = tuple(
    (span.behaviour, Row(engine.name, span.since, span.value, span.source, read_to=span.read_to, cites=span.cites,
                         unmodelled=span.unmodelled, origin=span.origin,
                         pinned=span.pinned))
    for engine in REGISTRY for span in engine.behaviour_rows)


def _tables() -> dict[BehaviourName, Table[Any]]:
    grouped: dict[str, list[Rule]] = {name: [] for name in NAMES}
    for behaviour, row in _SPANS:
        if behaviour not in grouped:
            raise TableError(f"a rule for {behaviour!r}, which BEHAVIOURS does not describe")
        grouped[behaviour].append(row)
    grouped["architectures"] = list(draft_classes.accepted_rows())
    for behaviour, rows in grouped.items():
        for row in rows:
            if not value_fits(row.value, VALUES[behaviour]):
                raise TableError(f"{behaviour} {row.engine} {row.since}: {row.value!r} is not one of {VALUES[behaviour]}")
    return {name: table(name, grouped[name], description=BEHAVIOURS[name]) for name in NAMES}


#: One table per behaviour, every engine's rows in it.
TABLES: dict[BehaviourName, Table[Any]] = _tables()
#: Every row of every behaviour, as ``(behaviour, row)``.
RULES: tuple[tuple[BehaviourName, Rule], ...] = tuple((name, row) for name, t in TABLES.items() for row in t.rows)


def behaviours_at(target: EngineVersion) -> tuple[Behaviours, Mapping[BehaviourName, Rule]]:
    """One engine version's behaviours and the row each came from."""
    found = {name: t.at(target) for name, t in TABLES.items()}
    return Behaviours(**{name: row.value for name, row in found.items()}), found


def segment_starts(engine: str) -> tuple[Version, ...]:
    """The first version of every range over which all of an engine's behaviours stay constant."""
    return tuple(sorted({v for t in TABLES.values() for v in t.starts(engine)}))


def rule_for(engine: str, behaviour: BehaviourName, version: Version) -> Rule:
    """The row of ``behaviour`` in force for ``engine`` at ``version``: the one with the latest ``since`` not after it."""
    return TABLES[behaviour].at(EngineVersion(engine, version))
