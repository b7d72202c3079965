"""Field-coverage report: how many config fields each engine's EAGLE-3 paths read, and how each is covered.

Usage::

    python benchmarks/field_coverage.py [--rules]

Reads the committed scan (``pytest_eagle3/knowledge/generated/field_scan.json``, written by ``pytest_eagle3/scanners/fields.py``
over every release of the known ranges) and the classification in ``pytest_eagle3/scanners/field_coverage.py``.
Prints, per engine, the releases scanned and the fields read (one per field and side: draft, target,
either) by status: modelled by a rule, ruled out (read, no effect on EAGLE-3), unclassified (must be 0:
``tests/test_field_coverage.py`` fails otherwise); then a markdown table per release range (consecutive
releases with the same counts merged). ``--rules`` also lists how many fields each rule models.
Exit status 1 when a field is unclassified.
"""

from __future__ import annotations

import argparse
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.releases import DISPLAY, KNOWN_RANGES
from pytest_eagle3.scanners import field_coverage as fc

STATUSES = ("modelled", "ruled-out", "unclassified")


def _in(release: str, ranges: list[list[str]]) -> bool:
    v = Version(release)
    return any(Version(a) <= v <= Version(b) for a, b in ranges)


def per_release(engine: str) -> list[tuple[str, dict[str, int]]]:
    """(release, counts) for every scanned release, in order."""
    rows = []
    classified = [(r, fc.classify(engine, r["field"], r["reads"])) for r in fc.records(engine)]
    for release in fc.scan()["releases"][engine]:
        counts = dict.fromkeys(("fields", *STATUSES), 0)
        for record, found in classified:
            if _in(release, record["releases"]):
                counts["fields"] += 1
                counts[found.status.value if found else "unclassified"] += 1
        rows.append((release, counts))
    return rows


def ranges(engine: str) -> list[tuple[str, str, int, dict[str, int]]]:
    """(first, last, number of releases, counts) for runs of releases with equal counts."""
    merged: list[tuple[str, str, int, dict[str, int]]] = []
    for release, counts in per_release(engine):
        if merged and merged[-1][3] == counts:
            first, _, n, _ = merged[-1]
            merged[-1] = (first, release, n + 1, counts)
        else:
            merged.append((release, release, 1, counts))
    return merged


def _rule_lines(engine: str) -> list[str]:
    counts: dict[str, int] = {}
    for record in fc.records(engine):
        found = fc.classify(engine, record["field"], record["reads"])
        if found is not None and found.status is fc.Status.MODELLED:
            counts[found.rule] = counts.get(found.rule, 0) + 1
    return [f"  {rule}: {n}" for rule, n in sorted(counts.items())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", action="store_true", help="list how many fields each rule models")
    args = parser.parse_args(argv)
    failed = False
    for engine in sorted(e for e in KNOWN_RANGES if e in fc.BOTH):  # the field scan covers SGLang and vLLM
        s: dict[str, Any] = fc.summary(engine)
        first, last = fc.SCANNED_RELEASES[engine][0], fc.SCANNED_RELEASES[engine][-1]
        print(f"{DISPLAY[engine]}: {s['releases']} releases scanned ({first} .. {last}); {s['fields']} fields read "
              f"(field x side): modelled {s['modelled']}, ruled out {s['ruled-out']}, "
              f"unclassified {s['unclassified']}")
        if args.rules:
            print("\n".join(_rule_lines(engine)))
        failed = failed or s["unclassified"] > 0
    print()
    print("| engine | releases | n | fields read | modelled | ruled out | unclassified |")
    print("|---|---|---|---|---|---|---|")
    for engine in sorted(e for e in KNOWN_RANGES if e in fc.BOTH):  # the field scan covers SGLang and vLLM
        for first, last, n, c in ranges(engine):
            span = first if first == last else f"{first} .. {last}"
            print(f"| {DISPLAY[engine]} | {span} | {n} | {c['fields']} | {c['modelled']} | {c['ruled-out']} | "
                  f"{c['unclassified']} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
