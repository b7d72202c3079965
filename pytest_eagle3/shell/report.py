"""Verdicts per (checkpoint, engine, contract): collected from test reports, written as JSON and a table.

A contract hands its results over in a typed :class:`ContractRecord` (written through
``shell.contract``'s ``eagle3_result``); the plugin joins it with the test's outcome in a
:class:`ContractReport`. Works under pytest-xdist: workers attach ``report.eagle3``
(``ContractReport.to_json``, serialised with the report) and the controller rebuilds the
record (``ContractReport.from_json``) and aggregates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

SCHEMA = "pytest-eagle3/report/3"
#: The JSON Schema every written report follows (shipped in the package).
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")
ANY_ENGINE = "any"
#: When one contract has several test items for a checkpoint, the worst outcome wins.
SEVERITY = {"skipped": 0, "passed": 1, "failed": 2}
PARTIAL = "pass (partial)"
#: A row where no contract ran (all skipped, or none selected by ``-m``): never a pass.
NOT_RUN = "not run"
#: The reason a row gives when ``-m`` (or ``-k``) selected none of its contracts.
NONE_SELECTED = "no contract selected (-m, -k or the test ids given left none for this row)"


Basis: TypeAlias = Literal["measured", "assumed"]
Outcome: TypeAlias = Literal["passed", "failed", "skipped"]
#: A value a contract measured: in the report's ``properties`` and in JUnit XML under its name.
Measured: TypeAlias = int | float | str | bool | Sequence[int | float | str]
JsonObject: TypeAlias = Mapping[str, Any]
#: The JUnit XML property names of the record's typed fields, in the order they are written.
JUNIT_NAMES = (("reference", "eagle3.reference"), ("prediction", "eagle3.predicted"), ("probe", "eagle3.probe"),
               ("basis", "eagle3.basis"), ("message", "eagle3.message"))


@dataclass(frozen=True)
class ContractRecord:
    """What one contract test hands the report while it runs; every field is optional."""

    #: The one-line message of a passing contract (a failure or skip says its own).
    message: str | None = None
    #: Set by the contracts that settle or read the training reading; else the load plan's.
    basis: Basis | None = None
    #: reference.acceptance's figures (``ReferenceResult.to_json``).
    reference: JsonObject | None = None
    #: engine.acceptance's prediction (``Prediction.to_json``).
    prediction: JsonObject | None = None
    #: probe.load's verdict (``ProbeVerdict.to_json``).
    probe: JsonObject | None = None
    #: (name, value) in the order measured; a name measured twice keeps its last value in the report.
    measured: tuple[tuple[str, Measured], ...] = ()

    def properties(self) -> dict[str, Measured]:
        """The measured values the JSON report keeps (JSON scalars and lists)."""
        return {k: v for k, v in dict(self.measured).items() if isinstance(v, (int, float, str, bool, list))}

    def junit_properties(self) -> list[tuple[str, object]]:
        """Everything recorded, as JUnit XML ``<property>`` pairs: the measured values, then the typed fields."""
        typed = [(name, getattr(self, attr)) for attr, name in JUNIT_NAMES if getattr(self, attr) is not None]
        return [*self.measured, *typed]


@dataclass(frozen=True)
class ContractReport:
    """One test report's contribution: which contract, checkpoint and engine, its outcome, and its record."""

    checkpoint: str
    contract: str
    engine: str
    #: Where the contract is defined (module file, line): the report lists contracts in this order.
    rank: tuple[str, int]
    outcome: Outcome
    #: The failure's or skip's first line, else the record's message (``ok`` when none).
    message: str
    #: The checkpoint's producer format ("" when no readable checkpoint was opened).
    format: str
    findings: tuple[JsonObject, ...]
    #: The record's basis, else the load plan's (none for engine-independent contracts).
    basis: Basis | None
    record: ContractRecord
    #: The load plan's outcome (loads / loads with loss / refused) when the contract read the engine's plan.
    load_outcome: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A plain dict that travels with the TestReport (pytest-xdist serialises it)."""
        record = self.record
        return {"checkpoint": self.checkpoint, "contract": self.contract, "engine": self.engine,
                "rank": list(self.rank), "outcome": self.outcome, "message": self.message, "format": self.format,
                "findings": [dict(f) for f in self.findings], "basis": self.basis, "load_outcome": self.load_outcome,
                "record": {"message": record.message, "basis": record.basis, "reference": record.reference,
                           "prediction": record.prediction, "probe": record.probe,
                           "measured": [[k, v] for k, v in record.measured]}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContractReport:
        """The report :meth:`to_json` wrote (on the controller, from a worker's TestReport)."""
        raw = data["record"]
        record = ContractRecord(message=raw["message"], basis=basis_of(raw["basis"]), reference=raw["reference"],
                                prediction=raw["prediction"], probe=raw["probe"],
                                measured=tuple((str(k), v) for k, v in raw["measured"]))
        rank = data["rank"]
        return cls(checkpoint=str(data["checkpoint"]), contract=str(data["contract"]), engine=str(data["engine"]),
                   rank=(str(rank[0]), int(rank[1])), outcome=_outcome(data["outcome"]),
                   message=str(data["message"]), format=str(data["format"]),
                   findings=tuple(data["findings"]), basis=basis_of(data["basis"]), record=record,
                   load_outcome=data.get("load_outcome"))


def basis_of(value: object) -> Basis | None:
    """``measured`` or ``assumed``; anything else is no basis."""
    return value if value in ("measured", "assumed") else None


def _outcome(value: object) -> Outcome:
    if value not in SEVERITY:
        raise ValueError(f"not a test outcome: {value!r}")
    return cast(Outcome, value)


@dataclass
class ContractResult:
    """The aggregated outcome of one contract on one checkpoint, with its findings and measured values."""

    id: str
    outcome: str
    message: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    #: "measured" when the reference measurement settled the training reading judged against, else "assumed".
    basis: str = "assumed"

    def merge(self, other: ContractResult) -> None:
        self.properties.update(other.properties)
        if other.basis == "measured":
            self.basis = other.basis
        if SEVERITY[other.outcome] > SEVERITY[self.outcome]:
            self.outcome, self.message, self.findings = other.outcome, other.message, other.findings

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "outcome": self.outcome, "message": self.message, "findings": self.findings,
                "properties": self.properties, "basis": self.basis}


@dataclass
class CheckpointResult:
    """Everything reported about one checkpoint: contracts per engine (``any`` = engine-independent)."""

    path: str
    #: The producer format, read from the checkpoint whether or not a contract ran ("" until read).
    format: str = ""
    contracts: dict[str, ContractResult] = field(default_factory=dict)
    engines: dict[str, dict[str, ContractResult]] = field(default_factory=dict)
    properties: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] | None = None
    #: engine.acceptance's prediction per engine spec.
    predicted: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: probe.load's result per engine spec (the installed version).
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The load plan's outcome per engine spec (the plan the engine contracts judged).
    outcomes: dict[str, str] = field(default_factory=dict)
    #: Each contract's place in the selection (its module and line): the report's order, whatever the run order.
    ranks: dict[str, tuple[str, int]] = field(default_factory=dict)

    def ordered(self, table: dict[str, ContractResult]) -> list[ContractResult]:
        """A table's results in selection order (contract module, then line), not in execution order."""
        return sorted(table.values(), key=lambda c: (self.ranks.get(c.id, ("~", 0)), c.id))

    def engine_specs(self, selected: list[str]) -> list[str]:
        """The engines reported on, in selection order (then the others, e.g. an installed version, by name)."""
        return [e for e in selected if e in self.engines] + sorted(e for e in self.engines if e not in selected)

    def _table(self, engine: str) -> list[ContractResult]:
        own = self.ordered(self.engines.get(engine, {})) if engine != ANY_ENGINE else []
        return [*self.ordered(self.contracts), *own]

    @property
    def failing(self) -> list[str]:
        return self.engine_failing(ANY_ENGINE)

    def engine_failing(self, engine: str) -> list[str]:
        """Engine-independent failures count against every engine, then the engine's own."""
        return [c.id for c in self._table(engine) if c.outcome == "failed"]

    def not_run(self, engine: str) -> list[ContractResult]:
        """Contracts that skipped for this engine (and engine-independent ones): what the verdict rests without."""
        return [c for c in self._table(engine) if c.outcome == "skipped"]

    def ran_nothing(self, engine: str) -> bool:
        """No contract of this row ran: every one skipped, or ``-m`` selected none."""
        return all(c.outcome == "skipped" for c in self._table(engine))

    def not_run_reasons(self, engine: str) -> list[tuple[str, str]]:
        """(contract, reason) for what did not run in this row; a row with no contract at all says why."""
        if not self._table(engine):
            return [("*", NONE_SELECTED)]
        return [(c.id, c.message) for c in self.not_run(engine)]

    def engine_verdict(self, engine: str) -> str:
        if self.engine_failing(engine):
            return "fail"
        if self.ran_nothing(engine):
            return NOT_RUN
        return PARTIAL if self.not_run(engine) else "pass"

    @property
    def verdict(self) -> str:
        """Overall: fail when any engine (or the checkpoint itself) fails; not run when no row ran a contract;
        partial when anything did not run."""
        verdicts = [self.engine_verdict(e) for e in (ANY_ENGINE, *self.engines)]
        if "fail" in verdicts:
            return "fail"
        if all(v == NOT_RUN for v in verdicts):
            return NOT_RUN
        return PARTIAL if PARTIAL in verdicts or NOT_RUN in verdicts else "pass"

    def complete(self, engine: str) -> bool:
        return not self.ran_nothing(engine) and not self.not_run(engine)

    def entry(self, engine: str) -> dict[str, Any]:
        name, _, version = engine.partition("==")
        table = self.contracts if engine == ANY_ENGINE else self.engines[engine]
        verdict = self.engine_verdict(engine)
        return {
            "engine": name, "version": version or None, "rules_from": rules_from(engine),
            "verdict": _json_verdict(verdict), "complete": self.complete(engine),
            "failing": self.engine_failing(engine),
            "not_run": [{"id": cid, "reason": reason} for cid, reason in self.not_run_reasons(engine)],
            "contracts": [c.to_json() for c in self.ordered(table)],
            "predicted_acceptance": _predicted_json(self.predicted.get(engine)) if engine != ANY_ENGINE else None,
            "probe": self.probes.get(engine),
            "outcome": self.outcomes.get(engine),
            "fix": self.fixes(engine),
        }

    def fixes(self, engine: str) -> list[str]:
        """The fixes the row's failing contracts name, each once, in contract order."""
        found = [str(f["fix"]) for c in self._table(engine) if c.outcome == "failed" for f in c.findings
                 if f.get("fix")]
        return list(dict.fromkeys(found))


def _json_verdict(verdict: str) -> str:
    """The JSON's word: fail, not run, or pass (a partial pass is ``pass`` with ``complete: false``)."""
    return verdict if verdict in ("fail", NOT_RUN) else "pass"


def _merge_into(table: dict[str, ContractResult], result: ContractResult) -> None:
    if result.id in table:
        table[result.id].merge(result)
    else:
        table[result.id] = result


@dataclass
class Collector:
    """Aggregates contract reports, in the order checkpoints were given."""

    target: str | None = None
    engines: list[str] = field(default_factory=list)
    checkpoints: dict[str, CheckpointResult] = field(default_factory=dict)

    def expect(self, paths: tuple[str, ...]) -> None:
        for path in paths:
            self.checkpoints.setdefault(path, CheckpointResult(path))

    def add(self, entry: ContractReport) -> None:
        path = entry.checkpoint
        result = self.checkpoints.setdefault(path, CheckpointResult(path))
        if entry.format:
            result.format = entry.format
        record = entry.record
        properties = record.properties()
        result.properties.update(properties)
        if record.reference is not None:
            result.reference = dict(record.reference)
        result.ranks.setdefault(entry.contract, entry.rank)
        engine = entry.engine or ANY_ENGINE
        table = result.contracts if engine == ANY_ENGINE else result.engines.setdefault(engine, {})
        _merge_into(table, ContractResult(entry.contract, entry.outcome, entry.message,
                                          [dict(f) for f in entry.findings], dict(properties),
                                          entry.basis or "assumed"))
        if record.prediction is not None and engine != ANY_ENGINE:
            result.predicted[engine] = dict(record.prediction)
        if record.probe is not None and engine != ANY_ENGINE:
            result.probes[engine] = dict(record.probe)
        if entry.load_outcome is not None and engine != ANY_ENGINE and entry.contract != "probe.load":
            result.outcomes[engine] = entry.load_outcome

    def to_json(self) -> dict[str, Any]:
        checkpoints = []
        for ckpt in self.checkpoints.values():
            entries = [ckpt.entry(ANY_ENGINE), *(ckpt.entry(spec) for spec in ckpt.engine_specs(self.engines))]
            reference = {"reference": ckpt.reference} if ckpt.reference is not None else {}
            checkpoints.append({"path": ckpt.path, "format": ckpt.format or "unreadable",
                                "verdict": _json_verdict(ckpt.verdict),
                                "complete": all(ckpt.complete(e) for e in (ANY_ENGINE, *ckpt.engines)),
                                "properties": ckpt.properties,
                                **reference, "engines": entries})
        return {"schema": SCHEMA, "target": self.target, "engines": self.engines, "checkpoints": checkpoints}

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")

    def table(self) -> list[str]:
        """The verdict table, whole (``shell.terminal.fit_table`` fits it to a terminal)."""
        rows = self.table_rows()
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        return ["  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]

    def table_rows(self) -> list[tuple[str, str, str, str, str, str]]:
        """The table's heading and rows: checkpoint, format, engine, verdict, predicted, failing contracts."""
        rows = [("checkpoint", "format", "engine", "verdict", "predicted", "failing contracts")]
        for ckpt in self.checkpoints.values():
            for index, spec in enumerate((ANY_ENGINE, *ckpt.engine_specs(self.engines))):
                first = (ckpt.path, ckpt.format or "unreadable") if index == 0 else ("", "")
                failing = ", ".join(ckpt.engine_failing(spec)) or "-"
                newest_rules = rules_from(spec)
                shown = f"{spec} ({newest_rules} rules)" if newest_rules else spec
                rows.append((*first, shown, ckpt.engine_verdict(spec).upper().replace("(PARTIAL)", "(partial)"),
                             _predicted_cell(ckpt.predicted.get(spec)), failing))
        return rows

    def partial_lines(self) -> list[str]:
        """What did not run, per checkpoint, and why: a PASS (partial) is not a pass, NOT RUN is no verdict."""
        lines = []
        for ckpt in self.checkpoints.values():
            for verdict in (NOT_RUN, PARTIAL):
                skipped: dict[str, str] = {}
                specs = [s for s in (ANY_ENGINE, *ckpt.engine_specs(self.engines)) if ckpt.engine_verdict(s) == verdict]
                for spec in specs:
                    skipped.update(dict(ckpt.not_run_reasons(spec)))
                if not skipped:
                    continue
                if verdict == NOT_RUN:
                    lines.append(f"not run for {ckpt.path} ({', '.join(specs)}): no contract ran:")
                else:
                    lines.append(f"partial verdict for {ckpt.path}: {len(skipped)} contracts did not run:")
                lines.extend(f"  {cid}: {reason}" for cid, reason in skipped.items())
        return lines

    def fill_formats(self, read: Any) -> None:
        """The format of every checkpoint no contract read (``read(path)`` gives the label)."""
        for ckpt in self.checkpoints.values():
            if not ckpt.format:
                ckpt.format = read(ckpt.path)

    def reference_lines(self) -> list[str]:
        """One line per checkpoint with a measured reference acceptance."""
        lines = []
        for ckpt in self.checkpoints.values():
            ref = ckpt.reference
            if ref is None:
                continue
            inferred = ref["inferred"]
            lines.append(
                f"reference acceptance {ckpt.path}: {ref['mean_acceptance_length']:.2f} at k={ref['draft_steps']} "
                f"(per position {ref['per_position']}) with aux ids read as {ref['convention']}; inferred "
                f"convention {inferred['convention']}, d2t as {inferred['d2t']} "
                f"({inferred['mean_acceptance_length']:.2f}, leads by {inferred['margin']:.2f})")
        return lines

    def probe_lines(self) -> list[str]:
        """One line per probe.load run: what the installed engine's loader did, and the static plan beside it."""
        lines = []
        for ckpt in self.checkpoints.values():
            for spec, probe in ckpt.probes.items():
                lines.append(f"real loader {ckpt.path}@{spec} ({probe['python']}): {_probe_summary(probe)}")
        return lines


def _probe_summary(probe: dict[str, Any]) -> str:
    """The engine's outcome, then how the static plan compares."""
    status, differences = probe["status"], probe["differences"]
    if status == "probe-error":
        return f"no answer: {probe.get('error')}"
    done = ("refused: " + one_line(str(probe.get("error")), None).rstrip(".") if probe["outcome"] == "refused"
            else "loaded with loss" if status == "loss" else "loaded")
    if status == "unplanned":
        return f"{done}; no static plan (version outside the profiles' range)"
    if differences:
        return f"{done}; the static plan differs on " + ", ".join(dict.fromkeys(d["fact"] for d in differences))
    return f"{done}; the static plan agrees"


def rules_from(spec: str) -> str | None:
    """The newest known release whose rules judged ``spec`` (``vllm==0.34.0``: newer than every release read), else None."""
    name, _, version = spec.partition("==")
    if not version:
        return None
    from packaging.version import InvalidVersion, Version

    from pytest_eagle3.knowledge.releases import KNOWN_RANGES
    from pytest_eagle3.knowledge.releases import rules_from as newest_rules

    try:
        found = newest_rules(name, Version(version)) if name in KNOWN_RANGES else None
    except InvalidVersion:
        return None
    return str(found) if found is not None else None


def _predicted_cell(predicted: dict[str, Any] | None) -> str:
    """The terminal table's predicted mean acceptance length and its basis."""
    if not predicted:
        return "-"
    value = predicted.get("mean_acceptance_length")
    return "refused" if value is None else f"{value:.2f} ({predicted.get('basis', 'assumed')})"


def _predicted_json(predicted: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{mean_acceptance_length, per_position, basis}`` plus the as-trained figure and each deviation's cost."""
    if predicted is None:
        return None
    keys = ("mean_acceptance_length", "per_position", "basis", "as_trained", "deviations", "other_mode", "unavailable")
    return {k: predicted.get(k) for k in keys}


def one_line(text: str, limit: int | None = 300) -> str:
    """The first line of a message, bounded (``limit``; None: whole), for the JSON report."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if limit is None or len(first) <= limit else first[: limit - 3] + "..."
