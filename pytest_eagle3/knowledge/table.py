"""One versioned-table type for every piece of engine knowledge.

A :class:`Row` says what one engine does from release ``since`` on, with a source line. Its range,
defined once for every table:

* ``since`` is inclusive: the first release with this value;
* ``until`` is exclusive: the first release without it. Absent (``None``), the row holds until the
  next row of the same engine starts, or with no end when it is the engine's last row;
* a release between two read ones (a patch release nobody read) resolves to the earlier row;
* ``read_to`` is documentation only: the newest release whose source was read with this value
  (shown in the source label, never used by the lookup).

A :class:`Table` holds the rows of one fact for any number of engines, checks them when built (no two
rows cover one release; with ``full``, no gap from the engine's first known release on) and answers
one lookup, :meth:`Table.at`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Generic, TypeVar

from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import DISPLAY, KNOWN_RANGES, EngineVersion, release_text

T = TypeVar("T")
U = TypeVar("U")


class TableError(ValueError):
    """A table whose rows overlap, leave a gap it claims to cover, or lack a source."""


def _version(text: str, what: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion as exc:
        raise TableError(f"{what}: {text!r} is not a version") from exc


@dataclass(frozen=True)
class Row(Generic[T]):
    """``engine`` does ``value`` from ``since`` (inclusive) until ``until`` (exclusive) or the next row."""

    engine: str
    since: str
    value: T
    source: str
    until: str | None = None
    read_to: str | None = None
    #: The source places the row rests on, machine-readable (the prose in ``source`` says what they do).
    cites: tuple[Cite, ...] = ()
    #: Why the knowledge cannot express what the source does here (a rule that lives only in prose); None: modelled.
    unmodelled: str | None = None
    #: The engine whose released source the rule was read in, where it is not ``engine`` (a rule borrowed from a
    #: fork's parent); None: read in ``engine``'s own source. A borrowed row is a reading for ``engine``, never
    #: evidence: a finding that rests on it is not judged (``engines.plan``), never a failure.
    origin: str | None = None
    #: The release of ``origin`` whose code ``engine`` runs for this rule: a platform plugin that calls its host's
    #: code at the release it pins, the call cited in its own source (``cites``). The rule is then carried over, not
    #: borrowed: evidence for ``engine``, as the host's row at that release is for the host. None: read by analogy.
    pinned: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in KNOWN_RANGES:
            raise TableError(f"row {self.since} {self.value!r}: unknown engine {self.engine!r}")
        if self.origin is not None and (self.origin == self.engine or self.origin not in KNOWN_RANGES):
            raise TableError(f"{self.engine} {self.since} {self.value!r}: origin {self.origin!r} is not another "
                             "known engine")
        if self.pinned is not None and (self.origin is None or not self.cites):
            raise TableError(f"{self.engine} {self.since} {self.value!r}: a row carried over from a pinned release "
                             "names its origin and cites the place in its own source that calls the origin's code")
        if len(self.source.strip()) < 10:
            raise TableError(f"{self.engine} {self.since} {self.value!r}: a row needs a source line")
        start = self.start
        if self.read_to is not None:
            _version(self.read_to, f"{self.engine} {self.since} read_to")
        if self.until is not None and _version(self.until, "until") <= start:
            raise TableError(f"{self.engine} {self.since}: until {self.until} is not after since")

    @property
    def read_in(self) -> str:
        """The engine whose released source this rule was read in: its own, or the one it was borrowed from."""
        return self.origin or self.engine

    @property
    def borrowed(self) -> bool:
        """The rule was read in another engine's source by analogy (not carried over from a release this engine
        runs): a reading for this engine, not evidence."""
        return self.origin is not None and self.pinned is None

    @cached_property
    def start(self) -> Version:
        """``since`` as a version."""
        return _version(self.since, f"{self.engine} row since")

    @cached_property
    def end(self) -> Version | None:
        """``until`` as a version, or None when the row runs on."""
        return None if self.until is None else Version(self.until)

    def holds_at(self, version: Version, next_start: Version | None) -> bool:
        """Whether ``version`` is in this row's range (``next_start``: where the engine's next row starts)."""
        end = self.end if self.end is not None else next_start
        return self.start <= version and (end is None or version < end)


@dataclass(frozen=True)
class Table(Generic[T]):
    """The rows of one fact; ``full``: every release of each engine's known range has exactly one row."""

    name: str
    rows: tuple[Row[T], ...]
    full: bool = True
    description: str = ""
    _by_engine: dict[str, tuple[Row[T], ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_engine: dict[str, list[Row[T]]] = {}
        for row in self.rows:
            by_engine.setdefault(row.engine, []).append(row)
        ordered = {engine: tuple(sorted(rows, key=lambda r: r.start)) for engine, rows in by_engine.items()}
        object.__setattr__(self, "_by_engine", ordered)
        problems = self.problems()
        if problems:
            raise TableError(f"table {self.name}: " + "; ".join(problems))

    # ---------------------------------------------------------------- checks
    def problems(self) -> list[str]:
        """Overlaps, gaps (when ``full``) and rows outside the known range; empty when the table is sound."""
        found: list[str] = []
        for engine, rows in self._by_engine.items():
            first, last = (Version(v) for v in KNOWN_RANGES[engine])
            if self.full and rows[0].start != first:
                found.append(f"{engine} starts at {rows[0].since}, not at the first known release {first}")
            for row, after in zip(rows, rows[1:]):
                if row.start == after.start:
                    found.append(f"{engine}: two rows start at {row.since}")
                elif row.end is not None and row.end > after.start:
                    found.append(f"{engine}: the row {row.since}..{row.until} overlaps the row from {after.since}")
                elif self.full and row.end is not None and row.end < after.start:
                    found.append(f"{engine}: no row covers {row.until} up to {after.since}")
            for i, row in enumerate(rows):
                limit = row.end or (rows[i + 1].start if i + 1 < len(rows) else None)
                read = None if row.read_to is None else Version(row.read_to)
                if read is not None and (read < row.start or (limit is not None and read >= limit)):
                    found.append(f"{engine}: row {row.since} says it was read to {row.read_to}, outside its range")
            for row in rows:
                if not first <= row.start <= last:
                    found.append(f"{engine}: row {row.since} is outside the known range {first} to {last}")
            if self.full and rows[-1].end is not None and rows[-1].end <= last:
                found.append(f"{engine}: no row covers {rows[-1].until} up to the newest known release {last}")
        return found

    # ---------------------------------------------------------------- lookup
    @property
    def engines(self) -> tuple[str, ...]:
        """The engines with rows, in table order."""
        return tuple(self._by_engine)

    def rows_of(self, engine: str) -> tuple[Row[T], ...]:
        """The engine's rows, oldest first."""
        return self._by_engine.get(engine, ())

    def find(self, engine: str, version: Version) -> Row[T] | None:
        """The row in force for ``engine`` at ``version``, or None where no row covers it."""
        rows = self.rows_of(engine)
        for i, row in enumerate(rows):
            following = rows[i + 1].start if i + 1 < len(rows) else None
            if row.holds_at(version, following):
                return row
        return None

    def at(self, target: EngineVersion) -> Row[T]:
        """The row in force at one engine version; LookupError where no row covers it."""
        row = self.find(target.engine, target.version)
        if row is None:
            raise LookupError(f"no {target.engine} row of table {self.name} at {target.version}")
        return row

    def value(self, target: EngineVersion) -> T:
        """The value of the row covering ``target``."""
        return self.at(target).value

    def label(self, row: Row[T]) -> str:
        """``source [Engine since-last]``: the row's source and the releases it was read over."""
        return f"{row.source} [{DISPLAY[row.engine]} {self.range_text(row)}]"

    def range_text(self, row: Row[T]) -> str:
        """The releases a row covers, in words: ``vLLM 0.8.5-0.9.2``."""
        rows = self.rows_of(row.engine)
        index = rows.index(row)
        is_last = index + 1 == len(rows) and row.until is None
        last = row.read_to or (KNOWN_RANGES[row.engine][1] if is_last else None)
        def text(release: str) -> str:
            return release_text(row.engine, release)
        if last is None:
            end = row.until or rows[index + 1].since
            return f"{text(row.since)} up to {text(end)}"
        return text(row.since) if last == row.since else f"{text(row.since)}-{text(last)}"

    def starts(self, engine: str) -> tuple[Version, ...]:
        """Every release at which the engine's value may change."""
        rows = self.rows_of(engine)
        return tuple(sorted({r.start for r in rows} | {r.end for r in rows if r.end is not None}))

    # ---------------------------------------------------------------- building
    def without(self, row: Row[T]) -> Table[T]:
        """The same table less one row (for mutation checks: it no longer claims full coverage)."""
        return replace(self, rows=tuple(r for r in self.rows if r is not row), full=False)

    def __repr__(self) -> str:
        lines = [f"Table {self.name!r} ({'full' if self.full else 'partial'} coverage, {len(self.rows)} rows)"]
        for engine, rows in self._by_engine.items():
            for row in rows:
                lines.append(f"  {DISPLAY[engine]} {self.range_text(row)}: {row.value!r}  <- {row.source}")
        return "\n".join(lines)


def table(name: str, rows: Iterable[Row[T]], *, full: bool = True, description: str = "") -> Table[T]:
    """A checked table."""
    return Table(name, tuple(rows), full=full, description=description)


def rows(engine: str, *spans: tuple[str, str | None, U, str]) -> list[Row[U]]:
    """Rows from ``(since, read_to, value, source)`` spans: each holds until the next span starts."""
    return [Row(engine, since, value, source, read_to=read_to) for since, read_to, value, source in spans]
