"""The citation check: every hand row's :class:`~pytest_eagle3.knowledge.evidence.Cite` read in the released
source of every release the row covers.

``python -m pytest_eagle3.scanners.citations ENGINE ROOT... [--record]``: each ROOT is one unpacked release (the
distribution's files, ``ROOT/vllm/...``), named by its version (``src/vllm/0.25.0``) or given as ``VERSION=PATH``.
For every row of ENGINE and every given release the row covers, a cited place must exist (an ``absent`` one must
not); exit 1 lists each row, release and cite that fails. ``--record`` writes the fingerprint of every cited place
in every given release to ``knowledge/generated/fingerprints.json`` (``{engine: {FILE:QUALNAME: {release:
hex16 | null}}}``), which :func:`~pytest_eagle3.knowledge.evidence.recorded_fingerprint` reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge import (
    capture,
    cpu_serving,
    draft_budget,
    draft_classes,
    draft_tree,
    evidence,
    launch,
    runtime,
    speculators,
)
from pytest_eagle3.knowledge.behaviours import TABLES
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import DISPLAY, ENGINES
from pytest_eagle3.knowledge.table import Row, Table
from pytest_eagle3.scanners.fingerprint import fingerprint

#: Engines whose cites this check cannot read, and why: it reads Python wheels' source trees.
UNREACHABLE = {
    "llamacpp": "C++ at git tags (its cites name files of the tree; this check parses Python)",
    "trtllm": "read per commit of its repository, not per wheel (its cites are checked by its own re-reading)",
}


@dataclass(frozen=True)
class CitedRow:
    """One hand row and the table it belongs to (the table decides which releases it covers)."""

    table: Table[Any]
    row: Row[Any]

    @property
    def label(self) -> str:
        """``fc_norm vLLM 0.25.0-0.33.0 'read'``: how a maintainer finds the row."""
        return f"{self.table.name} {DISPLAY[self.row.engine]} {self.table.range_text(self.row)} {self.row.value!r}"

    def covers(self, release: str) -> bool:
        """Whether the row is in force at ``release`` in its table."""
        try:
            version = Version(release)
        except InvalidVersion:
            return False
        return self.table.find(self.row.engine, version) is self.row


def hand_tables() -> tuple[Table[Any], ...]:
    """Every table whose rows are written by hand (scanned tables are checked by their scanners)."""
    behaviour_tables = [t for name, t in TABLES.items() if name != "architectures"]  # derived from the registry
    return (*behaviour_tables, *capture.CAPTURE_TABLES.values(), capture.ALLOWLIST,
            cpu_serving.VLLM_CPU_SPEC_DECODE, draft_budget.DRAFT_BUDGET, *draft_classes.REGISTRY.values(),
            draft_classes.ARCHITECTURE_READ, draft_tree.DRAFT_TREE, *launch.LAUNCH_TABLES.values(), launch.VLLM_MODE,
            runtime.KV_TABLE, speculators.SPECULATORS_COPIES)


def hand_rows(engine: str) -> Iterator[CitedRow]:
    """Every hand row of ``engine``, table by table."""
    for t in hand_tables():
        for row in t.rows_of(engine):
            yield CitedRow(t, row)


@dataclass(frozen=True)
class Problem:
    """A cite that does not hold in one release the row covers."""

    row: CitedRow
    release: str
    cite: Cite

    def __str__(self) -> str:
        what = "exists, but the row says it does not" if self.cite.absent else "not found"
        return f"{self.row.label}: at {self.release}, {self.cite.key} {what}"


def check(engine: str, roots: dict[str, Path]) -> list[Problem]:
    """Every cite of every hand row of ``engine`` that fails in a release of ``roots`` (release -> tree) it covers."""
    found: list[Problem] = []
    for cited in hand_rows(engine):
        for release, root in roots.items():
            if not cited.covers(release):
                continue
            for cite in cited.row.cites:
                if (fingerprint(root, cite) is None) != cite.absent:
                    found.append(Problem(cited, release, cite))
    return found


def record(engine: str, roots: dict[str, Path], out: Path = evidence.FINGERPRINTS) -> int:
    """Write the fingerprint of every cited place of ``engine`` in every release of ``roots`` into ``out`` (other
    engines and releases kept); the number of places."""
    data: evidence.Recorded = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    places = data.setdefault(engine, {})
    keys = {cite.key: Cite(cite.file, cite.qualname) for cited in hand_rows(engine) for cite in cited.row.cites}
    for key, cite in keys.items():
        by_release = places.setdefault(key, {})
        for release, root in roots.items():
            by_release[release] = fingerprint(root, cite)
    ordered = {eng: {key: dict(sorted(rel.items(), key=lambda kv: _order(kv[0]))) for key, rel in sorted(pl.items())}
               for eng, pl in sorted(data.items())}
    out.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
    evidence.recorded_fingerprints.cache_clear()
    return len(keys)


def _order(release: str) -> tuple[int, Version | str]:
    try:
        return 0, Version(release)
    except InvalidVersion:
        return 1, release


def parse_root(text: str) -> tuple[str, Path]:
    """``VERSION=PATH`` or a directory named by its version."""
    version, sep, path = text.partition("=")
    if sep:
        return version, Path(path)
    return Path(text).name, Path(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Check every cite of ENGINE's hand rows in the given release trees and print each failure (exit 1 if any;
    ``--record``: write their fingerprints too)."""
    parser = argparse.ArgumentParser(prog="python -m pytest_eagle3.scanners.citations", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engine", choices=ENGINES)
    parser.add_argument("roots", nargs="+", metavar="ROOT", help="an unpacked release: DIR named by its version, or VERSION=DIR")
    parser.add_argument("--record", action="store_true", help="write knowledge/generated/fingerprints.json")
    args = parser.parse_args(argv)
    if args.engine in UNREACHABLE:
        print(f"{DISPLAY[args.engine]}: not checked here: {UNREACHABLE[args.engine]}")
        return 2
    roots = dict(parse_root(text) for text in args.roots)
    missing = [str(path) for path in roots.values() if not path.is_dir()]
    if missing:
        parser.error("not a directory: " + ", ".join(missing))
    rows = list(hand_rows(args.engine))
    uncited = [r for r in rows if not r.row.cites and r.row.unmodelled is None]
    problems = check(args.engine, roots)
    for problem in problems:
        print(f"FAIL {problem}")
    covered = sum(1 for r in rows for release in roots if r.covers(release))
    print(f"{DISPLAY[args.engine]}: {len(rows)} hand rows ({len(uncited)} without cites), {len(roots)} releases, "
          f"{covered} row-releases checked, {len(problems)} failing")
    if args.record:
        print(f"recorded {record(args.engine, roots)} places in {len(roots)} releases to {evidence.FINGERPRINTS.name}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
