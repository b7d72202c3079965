"""Verdicts per (checkpoint, engine, contract): collected from judgements or test reports, written as JSON and a
table.

Every command adds the pipeline's judgements (:meth:`Collector.add_judgement`); under pytest a contract hands its
outcome over in a typed :class:`ContractRecord` (written through ``shell.contract``'s ``eagle3_result``) and the
plugin joins it with the test's outcome in a :class:`ContractReport`, the same one :meth:`ContractReport.of` makes
from a judgement, so both give the same row. Works under pytest-xdist: workers attach ``report.eagle3``
(``ContractReport.to_json``, serialised with the report) and the controller rebuilds the record
(``ContractReport.from_json``) and aggregates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from pytest_eagle3.findings import MEASURED, Basis
from pytest_eagle3.verdict.contract_table import ESSENTIAL, rank
from pytest_eagle3.verdict.judgement import MEASURE_WITH, UNMEASURED, Measured, basis_of

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint.named_target import NamedTarget
    from pytest_eagle3.verdict.judgement import ContractOutcome, Judgement

SCHEMA = "pytest-eagle3/report/3"
#: The JSON Schema every written report follows (shipped in the package).
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")
ANY_ENGINE = "any"
#: When one contract has several test items for a checkpoint, the worst outcome wins.
SEVERITY = {"skipped": 0, "passed": 1, "failed": 2}
PARTIAL = "pass (partial)"
#: A row where every rule ran and passed and only the measured acceptance is missing (a config-only target): a pass,
#: exit 0; the JSON's ``unmeasured`` names what did not run and ``measure_with`` what would measure it.
STATIC = "pass (static)"
#: A row where no contract ran (all skipped, or none selected by ``-m``): never a pass.
NOT_RUN = "not run"
#: A row where none failed but an essential contract (``contract_table.ESSENTIAL``: the aux layers fed, the acceptance
#: reached) did not run: never a pass (``--eagle3-not-judged=fail`` fails the run).
NOT_JUDGED = "not judged"
#: The reason a row gives when ``-m`` (or ``-k``) selected none of its contracts.
NONE_SELECTED = "no contract selected (-m, -k or the test ids given left none for this row)"


Outcome: TypeAlias = Literal["passed", "failed", "skipped"]
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
    #: The load plan's outcome (loads / loads with loss / refused) when the contract judged an engine's plan.
    load_outcome: str | None = None
    #: The root cause this failing contract follows from ("contract [code]"), and the row's root cause.
    consequence_of: str = ""
    root_cause: str = ""
    #: The judgement's status ("unmeasured", "not modelled", "not run", ...; "" when not judged by the pipeline).
    status: str = ""
    #: The option that made this contract fail where it would have skipped ("" for a failure of the rules).
    failed_by: str = ""
    #: (name, value) in the order measured; a name measured twice keeps its last value in the report.
    measured: tuple[tuple[str, Measured], ...] = ()
    #: The finding of a skipped contract (not modelled, undecided: its readings), in JSON; a failure's come with it.
    findings: tuple[JsonObject, ...] = ()

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
                           "prediction": record.prediction, "probe": record.probe, "load_outcome": record.load_outcome,
                           "consequence_of": record.consequence_of, "root_cause": record.root_cause,
                           "status": record.status, "failed_by": record.failed_by,
                           "measured": [[k, v] for k, v in record.measured]}}

    @classmethod
    def of(cls, outcome: ContractOutcome, judgement: Judgement) -> ContractReport:
        """The report a contract test asserting ``outcome`` gives (shell.contract.assert_outcome), without pytest."""
        record = ContractRecord(message=outcome.message if outcome.status == "pass" else None, basis=outcome.basis,
                                reference=outcome.reference, prediction=outcome.prediction,
                                load_outcome=outcome.load_outcome, measured=outcome.measured,
                                consequence_of=outcome.consequence_of, root_cause=outcome.root_cause,
                                status=outcome.status, failed_by=outcome.failed_by)
        message = (outcome.message if outcome.status == "pass" else
                   one_line(outcome.message) if outcome.status == "fail" else one_line(outcome.message, None))
        return cls(checkpoint=judgement.checkpoint, contract=outcome.contract, engine=judgement.spec,
                   rank=rank(outcome.contract), outcome=_outcome(outcome.test_outcome), message=message,
                   format=judgement.format, findings=tuple(f.to_json() for f in outcome.findings),
                   basis=outcome.basis, record=record, load_outcome=outcome.load_outcome)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContractReport:
        """The report :meth:`to_json` wrote (on the controller, from a worker's TestReport)."""
        raw = data["record"]
        record = ContractRecord(message=raw["message"], basis=basis_of(raw["basis"]), reference=raw["reference"],
                                prediction=raw["prediction"], probe=raw["probe"], load_outcome=raw.get("load_outcome"),
                                consequence_of=raw.get("consequence_of", ""), root_cause=raw.get("root_cause", ""),
                                status=raw.get("status", ""), failed_by=raw.get("failed_by", ""), measured=tuple((str(k), v) for k, v in raw["measured"]))
        rank = data["rank"]
        return cls(checkpoint=str(data["checkpoint"]), contract=str(data["contract"]), engine=str(data["engine"]),
                   rank=(str(rank[0]), int(rank[1])), outcome=_outcome(data["outcome"]),
                   message=str(data["message"]), format=str(data["format"]),
                   findings=tuple(data["findings"]), basis=basis_of(data["basis"]), record=record,
                   load_outcome=data.get("load_outcome"))


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
    #: The root cause this failure follows from ("contract [code]"), "" when it is one itself or passed.
    consequence_of: str = ""
    #: The judgement's status ("unmeasured": skipped for want of weights alone; "" when unknown).
    status: str = ""
    #: The option that made this contract fail where it would have skipped ("" for a failure of the rules).
    failed_by: str = ""

    @property
    def unmeasured(self) -> bool:
        """Skipped only because the measurement needs weights that were not given."""
        return self.outcome == "skipped" and self.status == UNMEASURED

    def merge(self, other: ContractResult) -> None:
        """Merge another result of the same contract and row: the worse outcome wins."""
        self.properties.update(other.properties)
        if other.basis == MEASURED:
            self.basis = other.basis
        if SEVERITY[other.outcome] > SEVERITY[self.outcome] or (
                other.outcome == self.outcome == "skipped" and self.unmeasured and not other.unmeasured):
            self.outcome, self.message, self.findings = other.outcome, other.message, other.findings
            self.consequence_of, self.status, self.failed_by = other.consequence_of, other.status, other.failed_by

    def to_json(self) -> dict[str, Any]:
        """The result as the JSON report writes it."""
        cause = {"consequence_of": self.consequence_of} if self.consequence_of else {}
        status = {"status": self.status} if self.outcome == "skipped" and self.status else {}
        return {"id": self.id, "outcome": self.outcome, "message": self.message, "findings": self.findings,
                "properties": self.properties, "basis": self.basis, **status, **cause}


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
    #: The root cause of each engine row with several failing contracts ("contract [code]: summary").
    root_causes: dict[str, str] = field(default_factory=dict)
    #: The target the draft's config names, when none was given: {"path": what was read (None: not found),
    #: "named": the name as written, "field": where}.
    named_target: dict[str, Any] | None = None

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
        """The ``any`` row's failing contracts."""
        return self.engine_failing(ANY_ENGINE)

    def engine_failing(self, engine: str) -> list[str]:
        """Engine-independent failures count against every engine, then the engine's own."""
        return [c.id for c in self._table(engine) if c.outcome == "failed"]

    def not_run(self, engine: str) -> list[ContractResult]:
        """Contracts that skipped for this engine (and engine-independent ones): what the verdict rests without."""
        return [c for c in self._table(engine) if c.outcome == "skipped"]

    def unmeasured(self, engine: str) -> list[str]:
        """The measuring contracts of this row (and the ``any`` row) left unmeasured for want of weights alone."""
        return [c.id for c in self._table(engine) if c.unmeasured]

    def ran_nothing(self, engine: str) -> bool:
        """No contract of this row ran: every one skipped, or ``-m`` selected none."""
        return all(c.outcome == "skipped" for c in self._table(engine))

    def not_run_reasons(self, engine: str) -> list[tuple[str, str]]:
        """(contract, reason) for what did not run in this row; a row with no contract at all says why."""
        if not self._table(engine):
            return [("*", NONE_SELECTED)]
        return [(c.id, c.message) for c in self.not_run(engine)]

    def not_judged(self, engine: str) -> list[str]:
        """The essential contracts this engine row ran and could not judge (skipped: no target, no weights, not
        modelled); one ``-m`` or ``-k`` left out is the user's choice, not a verdict the run could not give."""
        if engine == ANY_ENGINE:
            return []
        own = self.engines.get(engine, {})
        return [cid for cid in ESSENTIAL if cid in own and own[cid].outcome == "skipped" and not own[cid].unmeasured]

    def unread(self, engine: str) -> bool:
        """Every contract of this row skipped as not modelled (a release nobody read): NOT JUDGED, not NOT RUN."""
        own = list(self.engines.get(engine, {}).values()) if engine != ANY_ENGINE else []
        return bool(own) and all(c.outcome == "skipped" and c.status == "not modelled" for c in own)

    def engine_verdict(self, engine: str) -> str:
        """fail, not run, not judged, pass (partial) (something else did not run), pass (static) (only the
        measurement needing weights did not run), or pass."""
        if self.engine_failing(engine):
            return "fail"
        if self.ran_nothing(engine) and not self.unread(engine):
            return NOT_RUN
        if self.not_judged(engine):
            return NOT_JUDGED
        skipped = self.not_run(engine)
        if any(not c.unmeasured for c in skipped):
            return PARTIAL
        return STATIC if skipped else "pass"

    @property
    def verdict(self) -> str:
        """Overall: fail when any engine (or the checkpoint itself) fails; not run when no row ran a contract;
        partial when anything did not run."""
        verdicts = [self.engine_verdict(e) for e in (ANY_ENGINE, *self.engines)]
        if "fail" in verdicts:
            return "fail"
        if all(v == NOT_RUN for v in verdicts):
            return NOT_RUN
        if NOT_JUDGED in verdicts:
            return NOT_JUDGED
        if PARTIAL in verdicts or NOT_RUN in verdicts:
            return PARTIAL
        return STATIC if STATIC in verdicts else "pass"

    def complete(self, engine: str) -> bool:
        """Whether every contract of the row ran."""
        return not self.ran_nothing(engine) and not self.not_run(engine)

    def entry(self, engine: str) -> dict[str, Any]:
        """One row of the JSON report."""
        name, _, version = engine.partition("==")
        table = self.contracts if engine == ANY_ENGINE else self.engines[engine]
        verdict = self.engine_verdict(engine)
        unmeasured = self.unmeasured(engine)
        static = {"unmeasured": unmeasured, "measure_with": MEASURE_WITH} if unmeasured else {}
        return {
            "engine": name, "version": version or None, "rules_from": rules_from(engine),
            "verdict": _json_verdict(verdict), "complete": self.complete(engine), "basis": self.basis(engine),
            **static,
            "failing": self.engine_failing(engine), "not_judged": self.not_judged(engine),
            "not_run": [{"id": cid, "reason": reason} for cid, reason in self.not_run_reasons(engine)],
            "contracts": [c.to_json() for c in self.ordered(table)],
            "predicted_acceptance": _predicted_json(self.predicted.get(engine)) if engine != ANY_ENGINE else None,
            "probe": self.probes.get(engine),
            "outcome": self.outcomes.get(engine),
            "fix": self.fixes(engine),
            **({"root_cause": self.root_causes[engine]} if engine in self.root_causes else {}),
        }

    def basis(self, engine: str) -> str | None:
        """What the row's verdict rests on: ``measured`` (the reference measurement settled how the draft was
        trained), ``assumed`` (the rules under the readings the checkpoint declares or leaves open), or None
        (nothing ran)."""
        table = self.contracts if engine == ANY_ENGINE else self.engines.get(engine, {})
        ran = [c for c in table.values() if c.outcome != "skipped"]
        if not ran:
            return None
        return MEASURED if any(c.basis == MEASURED for c in ran) else "assumed"

    def fixes(self, engine: str) -> list[str]:
        """The fixes the row's failing contracts name, each once, in contract order."""
        found = [str(f["fix"]) for c in self._table(engine) if c.outcome == "failed" for f in c.findings
                 if f.get("fix")]
        return list(dict.fromkeys(found))


#: The words every screen and summary shows for a row's verdict.
WORDS = {"fail": "FAIL", "pass": "PASS", PARTIAL: "PASS (partial)", STATIC: "PASS (static)", NOT_JUDGED: "NOT JUDGED",
         NOT_RUN: "NOT RUN"}


def row_verdict(entry: Mapping[str, Any]) -> str:
    """A JSON row's verdict in full: ``pass (static)`` (only what needs weights did not run), ``pass (partial)``
    (something else did not run), or the JSON's own word."""
    if entry["verdict"] != "pass" or entry["complete"]:
        return str(entry["verdict"])
    unmeasured = set(entry.get("unmeasured") or ())
    skipped = {n["id"] for n in entry.get("not_run") or ()}
    return STATIC if unmeasured and skipped <= unmeasured else PARTIAL


def shown(verdict: str) -> str:
    """A verdict as the terminal and the summaries show it (``pass (static)`` -> ``PASS (static)``)."""
    return WORDS.get(verdict, verdict.upper())


def edits_first(fixes: list[str]) -> list[str]:
    """The fixes that name an edit first (``engine.acceptance``'s "see the engine contracts ..." points at the
    others), then the rest, in their order."""
    return [f for f in fixes if not f.startswith("see ")] + [f for f in fixes if f.startswith("see ")]


def _json_verdict(verdict: str) -> str:
    """The JSON's word: fail, not run, not judged, or pass (a partial pass is ``pass`` with ``complete: false``; a
    static one ``pass`` with ``unmeasured``)."""
    return verdict if verdict in ("fail", NOT_RUN, NOT_JUDGED) else "pass"


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
        """Add rows for checkpoints given, so one where nothing ran still shows."""
        for path in paths:
            self.checkpoints.setdefault(path, CheckpointResult(path))

    def add_judgement(self, judgement: Judgement) -> None:
        """Every outcome of a judgement, as the contract tests asserting it report it."""
        for outcome in judgement:
            self.add(ContractReport.of(outcome, judgement))

    def name_target(self, path: str, named: NamedTarget | None) -> None:
        """Record the target checkpoint ``path``'s config names (judged with it when no target was given)."""
        if named is not None:
            self.checkpoints.setdefault(path, CheckpointResult(path)).named_target = {
                "path": named.path, "named": named.name, "field": named.field, "problem": named.problem or None}

    def named_lines(self) -> list[str]:
        """One line per checkpoint judged with the target its config names."""
        lines = []
        for ckpt in self.checkpoints.values():
            named = ckpt.named_target
            if named is None:
                continue
            if named["path"] is None:
                lines.append(f"target for {ckpt.path}: its config names {named['named']!r} ({named['field']}), not "
                             f"found: {named['problem']}")
            else:
                lines.append(f"target for {ckpt.path}: {named['path']}, named by its config ({named['field']}; no "
                             "--eagle3-target given)")
        return lines

    def add(self, entry: ContractReport) -> None:
        """Add one contract's result to its checkpoint's row."""
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
                                          entry.basis or "assumed", record.consequence_of, record.status,
                                          record.failed_by))
        if record.root_cause and engine != ANY_ENGINE:
            result.root_causes[engine] = record.root_cause
        if record.prediction is not None and engine != ANY_ENGINE:
            result.predicted[engine] = dict(record.prediction)
        if record.probe is not None and engine != ANY_ENGINE:
            result.probes[engine] = dict(record.probe)
        if entry.load_outcome is not None and engine != ANY_ENGINE and entry.contract != "probe.load":
            result.outcomes[engine] = entry.load_outcome

    def to_json(self) -> dict[str, Any]:
        """The JSON report (``report.schema.json``)."""
        checkpoints = []
        for ckpt in self.checkpoints.values():
            entries = [ckpt.entry(ANY_ENGINE), *(ckpt.entry(spec) for spec in ckpt.engine_specs(self.engines))]
            reference = {"reference": ckpt.reference} if ckpt.reference is not None else {}
            reference.update({"named_target": ckpt.named_target} if ckpt.named_target is not None else {})
            checkpoints.append({"path": ckpt.path, "format": ckpt.format or "unreadable",
                                "verdict": _json_verdict(ckpt.verdict),
                                "complete": all(ckpt.complete(e) for e in (ANY_ENGINE, *ckpt.engines)),
                                "properties": ckpt.properties,
                                **reference, "engines": entries})
        return {"schema": SCHEMA, "target": self.target, "engines": self.engines, "checkpoints": checkpoints}

    def write(self, path: Path) -> None:
        """Write the JSON report to ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")

    def not_judged(self) -> list[tuple[str, str]]:
        """(checkpoint, engine) of every row that reads NOT JUDGED."""
        return [(c.path, spec) for c in self.checkpoints.values() for spec in c.engine_specs(self.engines)
                if c.engine_verdict(spec) == NOT_JUDGED]

    def fill_formats(self, read: Any) -> None:
        """The format of every checkpoint no contract read (``read(path)`` gives the label)."""
        for ckpt in self.checkpoints.values():
            if not ckpt.format:
                ckpt.format = read(ckpt.path)

def rules_from(spec: str) -> str | None:
    """The newest bundled release whose hand rows a learned ``spec`` (``vllm==0.35.0``) carries over, else None."""
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


def _predicted_json(predicted: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{mean_acceptance_length, per_position, basis}`` plus the as-trained figure and each deviation's cost."""
    if predicted is None:
        return None
    keys = ("mean_acceptance_length", "per_position", "basis", "as_trained", "deviations", "other_mode", "unavailable",
            "setting", "error")
    return {k: predicted.get(k) for k in keys}


def one_line(text: str, limit: int | None = 300) -> str:
    """The first line of a message, bounded (``limit``; None: whole), for the JSON report."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if limit is None or len(first) <= limit else first[: limit - 3] + "..."
