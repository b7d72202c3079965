"""The one rule for a verdict that rests on a producer habit (what a producer does when the checkpoint does not say).

A habit is the lowest evidence. Given what the engine does and the habits that may have applied (the producer's
rows for the release the checkpoint names, else for every release of the producer; every producer's, when the
producer is unknown):

* every candidate agrees with the engine: **PASS, marked assumed** (the words name the habit and how to pin it);
* the producer is known and every candidate differs: **FAIL**, naming both sides;
* otherwise (no candidate on record, candidates that disagree, a producer unknown): **undecided**
  (``plan.unknown``: skipped, a failure with ``--eagle3-unknown=fail``), naming what decides it.

Every undecided finding names its readings (``Finding.readings``: each habit that may have applied with the verdict
under it, :func:`readings`), at least two of them with different outcomes, and says in ``fix`` what decides.
With a target with weights the measurement overrules every habit (the areas take it before asking here).
:data:`HABIT_AREAS` lists every area that asks, with its finding codes (tests/test_habit_policy.py exercises each).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pytest_eagle3.findings import FAILS, PASSES, UNJUDGED
from pytest_eagle3.producers.names import UNKNOWN

T = TypeVar("T")

AGREES, DIFFERS, UNDECIDED = "agrees", "differs", "undecided"


@dataclass(frozen=True)
class Call(Generic[T]):
    """The rule's outcome and the candidates it weighed."""

    outcome: str
    candidates: tuple[T, ...]


def judge(producer: str, candidates: Sequence[T], agrees: Callable[[T], bool]) -> Call[T]:
    """The outcome for the habits that may have applied (see the module docstring)."""
    found = tuple(candidates)
    if found and all(agrees(c) for c in found):
        return Call(AGREES, found)
    if found and producer != UNKNOWN and not any(agrees(c) for c in found):
        return Call(DIFFERS, found)
    return Call(UNDECIDED, found)


def readings(found: Sequence[tuple[str, bool]], unrecorded: str, same: str, other: str) -> tuple[tuple[str, str], ...]:
    """The readings of an undecided call (``Finding.readings``): each habit that may have applied (label, agrees)
    with the verdict under it. None on record: ``unrecorded`` trained as the engine serves (``same``, passes) or
    not (``other``, fails); none agreeing: ``unrecorded`` too, which cannot be judged. Two outcomes always differ."""
    out = [(label, PASSES if agrees else FAILS) for label, agrees in found]
    if not out:
        out = [(f"{unrecorded}, {same}", PASSES), (f"{unrecorded}, {other}", FAILS)]
    elif not any(agrees for _, agrees in found):
        out.append((f"{unrecorded}, its habit unknown", UNJUDGED))
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class HabitArea:
    """An area whose verdict can rest on a habit: the habit, and its codes when it differs and when undecided."""

    area: str
    habit: str
    fails: str
    undecided: str


#: Every area that rests on a producer habit.
HABIT_AREAS: tuple[HabitArea, ...] = (
    HabitArea("aux_layers", "the default training aux layers, when config.json names no ids (producers/aux_defaults.py)",
              "aux-ids-missing", "aux-ids-undecided"),
    HabitArea("norms", "norm_before_residual's default, when config.json omits it (each record's norm_defaults)",
              "norm-flag", "norm-default-undecided"),
    HabitArea("embeddings", "the embedding a producer trains with (a frozen copy of the target's, or its own)",
              "embed-kept", "embed-kept-undecided"),
    HabitArea("producer", "the rope a producer builds (records' rope habits; certain or not)",
              "rope-trained", "rope-trained-assumed"),
    HabitArea("producer", "ModelOpt's extra first-layer norm (records' norm_habit; read from its forward, so certain: "
              "undecided only where the readings disagree on the producer, verdict/judge.py)", "norm-not-applied",
              "reading-undecided"),
)
