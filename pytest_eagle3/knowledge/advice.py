"""Advice computed from the rows: "serve with RELEASE" names the first release the table says works.

A fix text never writes a release as a literal: :func:`first_release` reads the table's boundaries, so a new
row moves the advice with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pytest_eagle3.knowledge.behaviours import TABLES, BehaviourName
from pytest_eagle3.knowledge.releases import DISPLAY
from pytest_eagle3.knowledge.table import Table

T = TypeVar("T")


def first_release(source: Table[T] | BehaviourName, engine: str, predicate: Callable[[T], bool]) -> str | None:
    """The first release from which every later row of ``engine`` satisfies ``predicate``; None if none does."""
    found: Table[T] = TABLES[source] if isinstance(source, str) else source
    since: str | None = None
    for row in found.rows_of(engine):
        if not predicate(row.value):
            since = None
        elif since is None:
            since = row.since
    return since


def last_release_before(source: Table[T] | BehaviourName, engine: str, predicate: Callable[[T], bool]) -> str | None:
    """The newest release read of the engine's first run of rows satisfying ``predicate`` (``read_to`` of its last
    row), when that run ends; None when the first row fails it or the run never ends."""
    found: Table[T] = TABLES[source] if isinstance(source, str) else source
    last: str | None = None
    for row in found.rows_of(engine):
        if not predicate(row.value):
            return last
        last = row.read_to
    return None


def serve_with(source: Table[T] | BehaviourName, engine: str, predicate: Callable[[T], bool]) -> str:
    """``SGLang >= 0.5.12``: the first release from which the rows satisfy ``predicate`` (``a release the rows do
    not name`` when none does)."""
    since = first_release(source, engine, predicate)
    return f"{DISPLAY[engine]} >= {since}" if since else f"a {DISPLAY[engine]} release the rows do not name yet"
