"""Run the plugin's ``check`` command on every incident and score it against ``incidents.json``.

``python -m tests.incidents.measure`` prints the right verdicts per engine. A verdict is right when the engine
row FAILs or not as expected and, for a FAIL, the expected contract fails with the expected finding code; the
``any`` row's failures count against every engine (README "What the verdicts mean").
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.incidents.build import INCIDENTS, write_draft, write_target

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Row:
    """One engine row of the plugin's JSON report: its verdict and the failing contracts' finding codes."""

    verdict: str
    failing: dict[str, tuple[str, ...]]
    #: The plan's root-cause area and its consequences, where the report carries them (else empty).
    root_cause: str = ""


@dataclass(frozen=True)
class Run:
    """The plugin's verdict rows for one incident, and whether the command itself crashed."""

    rows: dict[str, Row]
    crashed: str = ""


def _failing(entry: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    return {c["id"]: tuple(f["code"] for f in c.get("findings") or ()) for c in entry["contracts"]
            if c["outcome"] == "failed"}


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
            rows[f"{entry['engine']}=={version}"] = Row("fail" if failing else "pass", failing, cause)
    return Run(rows)


def right(expected: dict[str, Any], row: Row | None) -> bool:
    """Whether the plugin's row is the expected verdict (and, for a FAIL, the expected contract and code)."""
    if row is None or row.verdict != expected["verdict"]:
        return False
    return expected["verdict"] == "pass" or expected["code"] in row.failing.get(expected["contract"], ())


def measure() -> dict[str, tuple[int, int]]:
    """Right verdicts and verdicts per engine over the corpus; prints each miss."""
    figures: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="eagle3-incidents-") as tmp:
        for incident in INCIDENTS:
            run = run_incident(incident, Path(tmp) / incident["id"])
            if run.crashed:
                print(f"{incident['id']}: the command crashed:\n{run.crashed}")
            for spec, expected in incident["expect"].items():
                row = run.rows.get(spec)
                ok = right(expected, row)
                tally = figures.setdefault(spec.split("==")[0], [0, 0])
                tally[0] += ok
                tally[1] += 1
                if not ok:
                    got = "no row" if row is None else f"{row.verdict} {row.failing}"
                    print(f"miss {incident['id']} {spec}: expected {expected['verdict']} "
                          f"{expected.get('contract', '')} {expected.get('code', '')}; got {got}")
    return {engine: (a, b) for engine, (a, b) in figures.items()}


if __name__ == "__main__":
    results = measure()
    for engine, (ok, total) in results.items():
        print(f"{engine}: {ok} right of {total}")
    print(f"all: {sum(a for a, _ in results.values())} right of {sum(b for _, b in results.values())}")
