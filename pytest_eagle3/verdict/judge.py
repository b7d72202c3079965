"""Judge under every plausible reading: when the aux-id convention or the producer is not decided by
evidence, the load plan is computed under each candidate reading and the verdicts are joined per area.

A :class:`Reading` is one (aux-id convention, producer) the checkpoint may have been written under;
:func:`plausible_readings` lists them (the convention from ``--eagle3-aux-convention``, the reference
measurement, or each candidate producer's record; the producer from evidence unique to it, else every
producer whose layout the checkpoint shares, ``producers.formats.candidate_producers``). Each plan is
the ordinary frozen :func:`pytest_eagle3.engines.plan.load_plan` under that reading.

:func:`judged_plan` joins them, area by area: when every reading gives the same verdict it stands (a
failure under every reading says "whatever the convention" / "whatever the producer"); when they
disagree, the area's findings are withdrawn and the area is *undecided* (``plan.unknown``, reported
per ``--eagle3-unknown``), saying what decides it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_eagle3.findings import FAILS, PASSES, UNJUDGED, Evidence, Finding
from pytest_eagle3.producers.formats import CONVENTIONS, UNKNOWN
from pytest_eagle3.producers.records import RECORDS

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.issue import Issue
    from pytest_eagle3.engines.plan_types import LoadPlan, Measured
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.knowledge.snapshot import Snapshot

#: The finding code of an area whose verdict depends on the reading.
UNDECIDED = "reading-undecided"
PASS, FAIL = PASSES, FAILS


@dataclass(frozen=True)
class Reading:
    """One way the checkpoint may have been written: the aux-id convention (None: decided elsewhere, by
    the measurement or not needed) and the producer whose habits apply."""

    convention: str | None
    producer: str

    @property
    def label(self) -> str:
        """The reading in words: the convention and the producer."""
        who = "producer unknown" if self.producer == UNKNOWN else self.producer
        return f"{self.convention}, {who}" if self.convention else who


def plausible_readings(ckpt: Checkpoint, convention: str | None = None,
                       measured: Measured | None = None) -> tuple[Reading, ...]:
    """Every reading the evidence leaves open, the detected producer's first.

    ``convention`` (``--eagle3-aux-convention``) or ``measured`` (the reference measurement) decide the
    convention; otherwise each candidate producer brings its own (its record's), and an unknown producer
    both.
    """
    readings: list[Reading] = []
    for producer in ckpt.candidates.producers:
        if convention is not None or measured is not None:
            conventions: tuple[str | None, ...] = (convention,)
        else:
            record = RECORDS.get(producer)
            own = record.aux_convention[0] if record is not None and record.aux_convention else None
            conventions = (own,) if own is not None else CONVENTIONS
        readings += [Reading(c, producer) for c in conventions]
    return tuple(dict.fromkeys(readings))


def plans_per_reading(ckpt: Checkpoint, engine: EngineVersion | Snapshot, target: TargetModel | None,
                      readings: tuple[Reading, ...], measured: Measured | None) -> dict[Reading, LoadPlan]:
    """The load plan under each reading (the checkpoint read as that producer writes it)."""
    return {r: plan_for(ckpt, engine, target, r, _given(r), measured) for r in readings}


def _given(reading: Reading) -> str | None:
    """The convention to pass as stated: None where the producer's own record gives it."""
    record = RECORDS.get(reading.producer)
    own = record.aux_convention[0] if record is not None and record.aux_convention else None
    return None if own is not None and own == reading.convention else reading.convention


def plan_for(ckpt: Checkpoint, engine: EngineVersion | Snapshot, target: TargetModel | None, reading: Reading,
             convention: str | None, measured: Measured | None, stated: bool = False) -> LoadPlan:
    """The load plan of one reading; the aux plan says which reading when the option did not state it."""
    from pytest_eagle3.engines.plan import load_plan

    plan = load_plan(ckpt, engine, target, convention, measured, reading.producer)
    if convention is None or stated or "(--eagle3-aux-convention)" not in plan.aux.trained_from:
        return plan
    words = plan.aux.trained_from.replace("(--eagle3-aux-convention)", f"(one reading: {reading.label})")
    return dataclasses.replace(plan, aux=dataclasses.replace(plan.aux, trained_from=words))


def judged_plan(ckpt: Checkpoint, engine: EngineVersion, target: TargetModel | None = None,
                convention: str | None = None, measured: Measured | None = None) -> LoadPlan:
    """The load plan every engine contract reads: the first reading's plan, with each area's verdict
    joined over every plausible reading (see the module docstring). The engine version's knowledge is read once,
    before planning (its :class:`~pytest_eagle3.knowledge.snapshot.Snapshot`), and every reading's plan reads it."""
    from pytest_eagle3.knowledge.snapshot import snapshot_of

    snapshot = snapshot_of(engine)
    readings = plausible_readings(ckpt, convention, measured)
    if convention is not None:
        plans = {r: plan_for(ckpt, snapshot, target, r, convention, measured, stated=True) for r in readings}
    else:
        plans = plans_per_reading(ckpt, snapshot, target, readings, measured)
    return join(plans, ckpt) if len(plans) > 1 else next(iter(plans.values()))


def area_outcome(plan: LoadPlan, area: str) -> str:
    """What ``plan`` says of ``area``: fails, passes, or cannot be judged (an unknown)."""
    if plan.issues_for(area):
        return FAIL
    return UNJUDGED if area in plan.unknown else PASS


def whatever(readings: tuple[Reading, ...]) -> str:
    """'whatever the convention', 'whatever the producer', or both, by what varies among ``readings``."""
    varies = [name for name, values in (("convention", {r.convention for r in readings}),
                                         ("producer", {r.producer for r in readings})) if len(values) > 1]
    return "whatever the " + " and the ".join(varies) if varies else ""


def join(plans: dict[Reading, LoadPlan], ckpt: Checkpoint) -> LoadPlan:
    """The first reading's plan, each area judged over every reading's plan."""
    readings = tuple(plans)
    first = plans[readings[0]]
    areas = dict.fromkeys([i.area for p in plans.values() for i in p.issues]
                          + [a for p in plans.values() for a in p.unknown])
    issues: list[Issue] = list(first.issues)
    unknown = dict(first.unknown)
    for area in areas:
        verdicts = {r: area_outcome(p, area) for r, p in plans.items()}
        if set(verdicts.values()) == {FAIL}:
            words = whatever(readings)
            issues = [_stated(i, words, readings) if i.area == area else i for i in issues]
        elif len(set(verdicts.values())) > 1:
            issues = [i for i in issues if i.area != area]
            unknown[area] = undecided(first, area, plans, ckpt)
    return dataclasses.replace(first, issues=tuple(issues), unknown=unknown)


def _stated(issue: Issue, words: str, readings: tuple[Reading, ...]) -> Issue:
    finding = issue.finding
    if words in finding.summary:
        return issue
    details = (*finding.details, f"judged under every plausible reading: {', '.join(r.label for r in readings)}")
    return dataclasses.replace(issue, finding=dataclasses.replace(finding, summary=f"{finding.summary} ({words})",
                                                                  details=details))


def undecided(first: LoadPlan, area: str, plans: dict[Reading, LoadPlan], ckpt: Checkpoint) -> Finding:
    """The finding of an area whose verdict depends on the reading: each reading's verdict, and what decides."""
    readings = tuple(plans)
    per_reading = []
    for reading, plan in plans.items():
        found = plan.issues_for(area) or ([plan.unknown[area]] if area in plan.unknown else [])
        said = f": {found[0].summary}" if found else ""
        per_reading.append(f"under {reading.label} {first.label} {area_outcome(plan, area)}{said}")
    return Finding(
        UNDECIDED,
        f"{first.label}: the verdict depends on how the checkpoint is read "
        f"({' / '.join(r.label for r in readings)}), which no evidence here decides",
        (Evidence("readings", ", ".join(f"{r.label}: {area_outcome(p, area)}" for r, p in plans.items()),
                  "the same verdict under every reading"),),
        deciders(readings, ckpt),
        (*per_reading, f"producers: {ckpt.candidates.why}"),
        readings=tuple((r.label, area_outcome(p, area)) for r, p in plans.items()),
    )


def deciders(readings: tuple[Reading, ...], ckpt: Checkpoint) -> str:
    """What would decide between ``readings``: the convention option, a target to measure with, the
    producer's own file."""
    ways = []
    conventions = sorted({r.convention for r in readings if r.convention})
    if len(conventions) > 1:
        ways.append(f"state the convention with --eagle3-aux-convention={'|'.join(conventions)}")
        ways.append("or pass --eagle3-target=DIR with the target's weights (reference.convention measures which "
                    "layers the draft was trained on)")
    producers = [p for p in dict.fromkeys(r.producer for r in readings) if p != UNKNOWN]
    if len(producers) > 1 or UNKNOWN in {r.producer for r in readings}:
        marks = [f"{p}: {_mark(p)}" for p in producers]
        ways.append("identify the producer by a field or file only it writes" + (f" ({'; '.join(marks)})" if marks
                                                                                 else ""))
    return "; ".join(ways) or "pass --eagle3-target=DIR with the target's weights"


def _mark(producer: str) -> str:
    """The evidence unique to ``producer`` (its record's unique signals)."""
    record = RECORDS.get(producer)
    unique = [s.evidence for s in record.signals if s.unique] if record is not None else []
    return " or ".join(unique) if unique else "nothing unique on record"
