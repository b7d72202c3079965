"""Advice computed from the rows: "serve with RELEASE" names the first release the table says works.

A fix text never writes a release as a literal: :func:`first_release` reads the table's boundaries, so a new
row moves the advice with it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from packaging.version import Version

from pytest_eagle3.findings import Finding
from pytest_eagle3.knowledge.behaviours import TABLES, BehaviourName
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.releases import DISPLAY, release_text
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


def other_engine(engine: str) -> str:
    """The engine a fix names where no release of ``engine`` works (its registered alternative)."""
    return engine_named(engine).serving.alternative


def release_words(engine: str, since: str | None, elsewhere: str | None) -> str:
    """``vLLM >= 0.12.0``; where no release of ``engine`` works, the other engine's (``elsewhere``) release."""
    if since:
        return f"{DISPLAY[engine]} >= {release_text(engine, since)}"
    other = DISPLAY[other_engine(engine)]
    if elsewhere:
        return f"{other} >= {elsewhere} (no {DISPLAY[engine]} release read does)"
    return f"a release the rows do not name yet (none of {DISPLAY[engine]} or {other} read does)"


def serve_with(source: Table[T] | BehaviourName, engine: str, predicate: Callable[[T], bool]) -> str:
    """``SGLang >= 0.5.12``: the first release from which the rows satisfy ``predicate``; where no release of
    ``engine`` does, the other engine's first such release."""
    since = first_release(source, engine, predicate)
    elsewhere = None if since else first_release(source, other_engine(engine), predicate)
    return release_words(engine, since, elsewhere)


_SERVE = re.compile(r"(serve (?:this target )?with (vLLM|SGLang) (?:>= )?)(\d+(?:\.\d+)+(?:\.post\d+)?)")


def one_upgrade(findings: Sequence[Finding], engine: str) -> list[Finding]:
    """The findings of one engine version with one upgrade: every "serve with RELEASE" of ``engine`` names the
    newest release any of them names (each holds from its release on, so the newest satisfies all)."""
    display = DISPLAY[engine]
    named = [Version(m.group(3)) for f in findings for m in _SERVE.finditer(f.fix) if m.group(2) == display]
    if len(set(named)) < 2:
        return list(findings)
    newest = str(max(named))

    def lift(match: re.Match[str]) -> str:
        return match.group(1) + newest if match.group(2) == display else match.group(0)
    return [dataclasses.replace(f, fix=_SERVE.sub(lift, f.fix)) for f in findings]
