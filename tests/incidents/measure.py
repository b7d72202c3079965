"""Run the plugin's ``check`` command on every incident and score it against ``incidents.json``.

``python -m tests.incidents.measure`` prints, over all expectations, three figures and a fourth:

- right: the row's verdict is the expected one ("pass" needs a PASS row; "fail" a FAIL row where the expected
  contract fails with the expected finding code);
- abstained: the row is NOT JUDGED, NOT RUN or absent where a verdict was expected (wrong, but the plugin said
  it could not tell);
- false FAIL: the row FAILs where the engine serves the draft well (expected "pass");
- missed FAIL: the row PASSes where the engine does not serve the draft (expected "fail").

A FAIL row where the expected contract or code does not fail is counted apart ("fail, other cause"). The ``any``
row's failures count against every engine (README "What the verdicts mean"). A PASS row that lists only
measurements it could not make (``unmeasured``) is a PASS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.incidents.build import INCIDENTS, write_draft, write_target

ROOT = Path(__file__).resolve().parents[2]

#: The row verdicts that say the plugin gave no verdict.
ABSTAINING = ("not judged", "not run")
#: How an expectation can come out, in the order they are printed.
OUTCOMES = ("right", "abstained", "false FAIL", "missed FAIL", "fail, other cause")


@dataclass(frozen=True)
class Row:
    """One engine row of the plugin's JSON report: its verdict and the failing contracts' finding codes."""

    #: "pass", "fail", "not judged" or "not run" ("fail" also where only the ``any`` row fails).
    verdict: str
    failing: dict[str, tuple[str, ...]]
    #: The plan's root-cause area and its consequences, where the report carries them (else empty).
    root_cause: str = ""
    #: The contracts the row lists as not judged, and the not-run reasons (contract id -> reason).
    not_judged: tuple[str, ...] = ()
    not_run: dict[str, str] = field(default_factory=dict)
    #: Every contract's findings as the report writes them (contract id -> findings).
    findings: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """The plugin's verdict rows for one incident, and whether the command itself crashed."""

    rows: dict[str, Row]
    crashed: str = ""


def _failing(entry: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    return {c["id"]: tuple(f["code"] for f in c.get("findings") or ()) for c in entry["contracts"]
            if c["outcome"] == "failed"}


def row_verdict(entry: dict[str, Any], failing: bool) -> str:
    """The row's verdict: the report's, FAIL where the ``any`` row fails; a PASS with ``unmeasured`` is a PASS."""
    if failing:
        return "fail"
    verdict = str(entry.get("verdict") or "not run").lower()
    return "pass" if verdict.startswith("pass") else verdict


def run_incident(incident: dict[str, Any], where: Path) -> Run:
    """Write the incident and judge it on every engine version it expects a verdict for."""
    draft = write_draft(incident["draft"], where / "draft")
    target = write_target(incident["draft"], incident["target"], where / "target")
    report = where / "report.json"
    command = [sys.executable, "-m", "pytest_eagle3", "check", str(draft), "--target", str(target),
               "--engine", ",".join(incident["expect"]), "--report", str(report)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    if "Traceback" in done.stdout + done.stderr or not report.is_file():
        return Run({}, (done.stdout + done.stderr)[-3000:])
    (checkpoint,) = json.loads(report.read_text(encoding="utf-8"))["checkpoints"]
    rows = {}
    any_failing: dict[str, tuple[str, ...]] = {}
    for entry in checkpoint["engines"]:
        if not entry["version"]:
            any_failing = _failing(entry)
    for entry in checkpoint["engines"]:
        if entry["version"]:
            failing = {**any_failing, **_failing(entry)}
            cause = (entry.get("root_cause") or {}).get("area", "") if isinstance(entry.get("root_cause"), dict) else ""
            version = str(entry["version"]).removeprefix("b") if entry["engine"] == "llamacpp" else entry["version"]
            not_run = {str(r.get("id", "")): str(r.get("reason", "")) for r in entry.get("not_run") or ()}
            findings = {c["id"]: tuple(c.get("findings") or ()) for c in entry["contracts"]}
            rows[f"{entry['engine']}=={version}"] = Row(row_verdict(entry, bool(failing)), failing, cause,
                                                         tuple(entry.get("not_judged") or ()), not_run, findings)
    return Run(rows)


def outcome(expected: dict[str, Any], row: Row | None) -> str:
    """How one expectation came out (one of ``OUTCOMES``)."""
    if row is None or row.verdict in ABSTAINING:
        return "abstained"
    if expected["verdict"] == "pass":
        return "right" if row.verdict == "pass" else "false FAIL"
    if row.verdict != "fail":
        return "missed FAIL"
    return "right" if expected["code"] in row.failing.get(expected["contract"], ()) else "fail, other cause"


def as_the_source_says(expected: dict[str, Any]) -> dict[str, Any]:
    """The expectation to score against: what the engine's released source says where it contradicts the one
    written before the plugin ran (``source``), else that one."""
    return dict(expected["source"]) if "source" in expected else expected


def right(expected: dict[str, Any], row: Row | None) -> bool:
    """Whether the plugin's row is the expected verdict (and, for a FAIL, the expected contract and code)."""
    return outcome(expected, row) == "right"


def measure(source: bool = True, part: str | None = None) -> dict[str, Counter[str]]:
    """The outcomes per engine over the corpus (``OUTCOMES`` -> count), scored against what the source says
    (``source``) or against the expectations as written; prints each expectation not right. ``part``: only the
    incidents of that part ("" for those in none)."""
    figures: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="eagle3-incidents-") as tmp:
        for incident in INCIDENTS:
            if part is not None and incident.get("part", "") != part:
                continue
            run = run_incident(incident, Path(tmp) / incident["id"])
            if run.crashed:
                print(f"{incident['id']}: the command crashed:\n{run.crashed}")
            for spec, written in incident["expect"].items():
                expected = as_the_source_says(written) if source else written
                row = run.rows.get(spec)
                came = outcome(expected, row)
                figures.setdefault(spec.split("==")[0], Counter())[came] += 1
                if came != "right":
                    got = "no row" if row is None else f"{row.verdict} {row.failing}"
                    print(f"{came}: {incident['id']} {spec}: expected {expected['verdict']} "
                          f"{expected.get('contract', '')} {expected.get('code', '')}; got {got}")
    return figures


def summary(figures: dict[str, Counter[str]]) -> str:
    """The figures as lines: per engine, then over all expectations."""
    total: Counter[str] = Counter()
    lines = []
    for engine, counts in sorted(figures.items()):
        total.update(counts)
        lines.append(f"{engine}: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)
                     + f" of {sum(counts.values())}")
    lines.append(f"all: {total['right']} right, {total['abstained']} abstained, {total['false FAIL']} false FAIL "
                 f"({total['missed FAIL']} missed FAIL, {total['fail, other cause']} fail, other cause) "
                 f"of {sum(total.values())}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """``[--as-written] [--part NAME]``: print the figures over the corpus, or over one part of it."""
    parser = argparse.ArgumentParser(prog="python -m tests.incidents.measure", description=__doc__.split("\n")[0])
    parser.add_argument("--as-written", action="store_true", help="score the expectations as written, not the source's")
    parser.add_argument("--part", default=None, help="only the incidents of this part ('' for those in none)")
    options = parser.parse_args(argv)
    print("scored against the expectations as written" if options.as_written
          else "scored against the released source where it contradicts an expectation ('source' entries)")
    print(summary(measure(source=not options.as_written, part=options.part)))


if __name__ == "__main__":
    main(sys.argv[1:])
