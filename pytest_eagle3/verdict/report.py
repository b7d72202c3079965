"""The report of a run: every row's contracts, as the judgement gave their outcomes, written as JSON and a table.

Every command adds the pipeline's judgements (:meth:`Collector.add_judgement`); under pytest each contract test
hands the report its :class:`~pytest_eagle3.verdict.judgement.ContractOutcome` in a :class:`ContractReport` (where it
belongs: checkpoint, engine version, place): a judged contract its judgement's outcome, the one its pytest outcome
follows from; a test that judges itself (live, probe, a user's own) the record of how it finished. The row's word is
``verdict.rows.word_of``'s, from those outcomes. Under pytest-xdist a worker ships the record as data
(:meth:`ContractReport.to_json`) and the controller rebuilds it (:meth:`ContractReport.from_json`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.findings import MEASURED
from pytest_eagle3.verdict.contract_table import BY_ID, PROBE, rank
from pytest_eagle3.verdict.judgement import (
    FAIL,
    MEASURE_WITH,
    NONE_SELECTED,
    NOT_JUDGED,
    NOT_RUN,
    PARTIAL,
    PASS,
    STATIC,
    UNMEASURED,
    ContractOutcome,
    Measured,
    RowWord,
)
from pytest_eagle3.verdict.rows import word_of

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint.named_target import NamedTarget
    from pytest_eagle3.verdict.judgement import Judgement

__all__ = ["NONE_SELECTED", "NOT_JUDGED", "NOT_RUN", "PARTIAL", "STATIC", "Collector", "ContractReport"]

SCHEMA = "pytest-eagle3/report/3"
#: The JSON Schema every written report follows (shipped in the package).
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")
ANY_ENGINE = "any"
#: When one contract has several test items for a checkpoint, the worst status wins (a skip of any kind lowest).
SEVERITY = {PASS: 1, FAIL: 2}


@dataclass(frozen=True)
class ContractReport:
    """One contract's outcome where it belongs: the checkpoint, the row (an engine version, or ``any``), the
    contract's place in the report and the checkpoint's format."""

    checkpoint: str
    engine: str
    #: Where the contract sorts (``contract_table.rank``; a user's own contract: its module file and line).
    rank: tuple[str, int]
    #: The checkpoint's producer format ("" when no readable checkpoint was opened).
    format: str
    outcome: ContractOutcome

    @property
    def contract(self) -> str:
        """The contract's id."""
        return self.outcome.contract

    def to_json(self) -> dict[str, Any]:
        """Plain data that travels with the TestReport (pytest-xdist serialises it)."""
        return {"checkpoint": self.checkpoint, "engine": self.engine, "rank": list(self.rank), "format": self.format,
                "outcome": self.outcome.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContractReport:
        """The report :meth:`to_json` wrote (on the controller, from a worker's TestReport)."""
        place = data["rank"]
        return cls(str(data["checkpoint"]), str(data["engine"]), (str(place[0]), int(place[1])), str(data["format"]),
                   ContractOutcome.from_json(data["outcome"]))

    @classmethod
    def of(cls, outcome: ContractOutcome, judgement: Judgement) -> ContractReport:
        """A judgement's outcome where it belongs."""
        return cls(judgement.checkpoint, judgement.spec, rank(outcome.contract), judgement.format, outcome)


def properties_of(outcome: ContractOutcome) -> dict[str, Measured]:
    """The measured values the JSON report keeps (JSON scalars and lists; a name measured twice keeps its last
    value)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dict(outcome.measured).items()
            if isinstance(v, (int, float, str, bool, list, tuple))}


def reported(outcome: ContractOutcome) -> ContractOutcome:
    """The outcome as the report shows it: a failure's message its first line (bounded), a skip's its first line."""
    message = (outcome.message if outcome.status == PASS else
               one_line(outcome.message) if outcome.status == FAIL else one_line(outcome.message, None))
    return dataclasses.replace(outcome, message=message) if message != outcome.message else outcome


def merged(one: ContractOutcome, other: ContractOutcome) -> ContractOutcome:
    """Two outcomes of one contract on one row (several test items): the worse one, with both's measured values and
    a measured basis if either has one."""
    worse = SEVERITY.get(other.status, 0) > SEVERITY.get(one.status, 0) or (
        other.skipped and one.status == UNMEASURED and other.status != UNMEASURED)
    kept = other if worse else one
    basis = MEASURED if MEASURED in (one.basis, other.basis) else kept.basis
    return dataclasses.replace(kept, measured=(*one.measured, *other.measured), basis=basis)


def contract_json(outcome: ContractOutcome) -> dict[str, Any]:
    """One contract of a row as the JSON report writes it."""
    cause = {"consequence_of": outcome.consequence_of} if outcome.consequence_of else {}
    status = {"status": outcome.status} if outcome.skipped else {}
    return {"id": outcome.contract, "outcome": outcome.test_outcome, "message": outcome.message,
            "findings": [f.to_json() for f in outcome.findings], "properties": properties_of(outcome),
            "basis": outcome.basis or "assumed", **status, **cause}


@dataclass
class CheckpointResult:
    """Everything reported about one checkpoint: contracts per engine (``any`` = engine-independent)."""

    path: str
    #: The producer format, read from the checkpoint whether or not a contract ran ("" until read).
    format: str = ""
    contracts: dict[str, ContractOutcome] = field(default_factory=dict)
    engines: dict[str, dict[str, ContractOutcome]] = field(default_factory=dict)
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
    #: Each row's word, made once from the outcomes held (forgotten when an outcome is added).
    words: dict[str, RowWord] = field(default_factory=dict, repr=False, compare=False)

    def ordered(self, table: dict[str, ContractOutcome]) -> list[ContractOutcome]:
        """A table's outcomes in selection order (contract module, then line), not in execution order."""
        return sorted(table.values(), key=lambda c: (self.ranks.get(c.contract, ("~", 0)), c.contract))

    def engine_specs(self, selected: list[str]) -> list[str]:
        """The engines reported on, in selection order (then the others, e.g. an installed version, by name)."""
        return [e for e in selected if e in self.engines] + sorted(e for e in self.engines if e not in selected)

    def _table(self, engine: str) -> list[ContractOutcome]:
        own = self.ordered(self.engines.get(engine, {})) if engine != ANY_ENGINE else []
        return [*self.ordered(self.contracts), *own]

    def row(self, engine: str) -> RowWord:
        """The row's word and its reasons (``verdict.rows.word_of``, from the outcomes the run reported)."""
        if engine not in self.words:
            own = self.ordered(self.engines.get(engine, {})) if engine != ANY_ENGINE else None
            self.words[engine] = word_of(self.ordered(self.contracts), own)
        return self.words[engine]

    @property
    def failing(self) -> list[str]:
        """The ``any`` row's failing contracts."""
        return self.engine_failing(ANY_ENGINE)

    def engine_failing(self, engine: str) -> list[str]:
        """Engine-independent failures count against every engine, then the engine's own."""
        return list(self.row(engine).failing)

    def not_run(self, engine: str) -> list[ContractOutcome]:
        """Contracts that skipped for this engine (and engine-independent ones): what the verdict rests without."""
        return [c for c in self._table(engine) if c.skipped]

    def unmeasured(self, engine: str) -> list[str]:
        """The measuring contracts of this row (and the ``any`` row) left unmeasured for want of weights alone."""
        return list(self.row(engine).unmeasured)

    def not_run_reasons(self, engine: str) -> list[tuple[str, str]]:
        """(contract, reason) for what did not run in this row; a row with no contract at all says why."""
        return list(self.row(engine).not_run)

    def not_judged(self, engine: str) -> list[str]:
        """The essential contracts this engine row ran and could not judge (skipped: no target, no weights, not
        modelled); one ``-m`` or ``-k`` left out is the user's choice, not a verdict the run could not give."""
        return list(self.row(engine).not_judged)

    def engine_verdict(self, engine: str) -> str:
        """The row's word: fail, not run, not judged, pass (partial), pass (static) or pass."""
        return self.row(engine).word

    @property
    def verdict(self) -> str:
        """Overall: fail when any engine (or the checkpoint itself) fails; not run when no row ran a contract;
        partial when anything did not run."""
        verdicts = [self.engine_verdict(e) for e in (ANY_ENGINE, *self.engines)]
        if FAIL in verdicts:
            return FAIL
        if all(v == NOT_RUN for v in verdicts):
            return NOT_RUN
        if NOT_JUDGED in verdicts:
            return NOT_JUDGED
        if PARTIAL in verdicts or NOT_RUN in verdicts:
            return PARTIAL
        return STATIC if STATIC in verdicts else PASS

    def complete(self, engine: str) -> bool:
        """Whether every contract of the row ran."""
        table = self._table(engine)
        return bool(table) and not any(c.skipped for c in table)

    def entry(self, engine: str) -> dict[str, Any]:
        """One row of the JSON report."""
        name, _, version = engine.partition("==")
        table = self.contracts if engine == ANY_ENGINE else self.engines[engine]
        row = self.row(engine)
        static = {"unmeasured": list(row.unmeasured), "measure_with": MEASURE_WITH} if row.unmeasured else {}
        return {
            "engine": name, "version": version or None, "rules_from": rules_from(engine),
            "verdict": _json_verdict(row.word), "complete": self.complete(engine), "basis": self.basis(engine),
            **static,
            "failing": list(row.failing), "not_judged": list(row.not_judged),
            "not_run": [{"id": cid, "reason": reason} for cid, reason in row.not_run],
            "contracts": [contract_json(c) for c in self.ordered(table)],
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
        ran = [c for c in table.values() if not c.skipped]
        if not ran:
            return None
        return MEASURED if any(c.basis == MEASURED for c in ran) else "assumed"

    def fixes(self, engine: str) -> list[str]:
        """The fixes the row's failing contracts name, each once, in contract order."""
        return list(dict.fromkeys(fix for c in self._table(engine) for fix in c.fixes))


#: The words every screen and summary shows for a row's verdict.
WORDS: dict[str, str] = {FAIL: "FAIL", PASS: "PASS", PARTIAL: "PASS (partial)", STATIC: "PASS (static)", NOT_JUDGED: "NOT JUDGED",
         NOT_RUN: "NOT RUN"}


def shown(verdict: str) -> str:
    """A verdict as the terminal and the summaries show it (``pass (static)`` -> ``PASS (static)``)."""
    return WORDS.get(verdict, verdict.upper())


def edits_first(fixes: list[str]) -> list[str]:
    """The fixes that name an edit first (``engine.acceptance``'s "see the engine contracts ..." points at the
    others), then the rest, in their order."""
    return [f for f in fixes if not f.startswith("see ")] + [f for f in fixes if f.startswith("see ")]


def _probes(contract: str) -> bool:
    """Whether the contract runs the installed engine's loader (its plan's outcome is not the row's)."""
    return contract in BY_ID and BY_ID[contract].scope == PROBE


def _json_verdict(verdict: str) -> str:
    """The JSON's word: fail, not run, not judged, or pass (a partial pass is ``pass`` with ``complete: false``; a
    static one ``pass`` with ``unmeasured``)."""
    return verdict if verdict in (FAIL, NOT_RUN, NOT_JUDGED) else PASS


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
        """Add one contract's outcome to its checkpoint's row."""
        path = entry.checkpoint
        result = self.checkpoints.setdefault(path, CheckpointResult(path))
        if entry.format:
            result.format = entry.format
        outcome = reported(entry.outcome)
        result.properties.update(properties_of(outcome))
        if outcome.reference is not None:
            result.reference = dict(outcome.reference)
        result.ranks.setdefault(outcome.contract, entry.rank)
        engine = entry.engine or ANY_ENGINE
        table = result.contracts if engine == ANY_ENGINE else result.engines.setdefault(engine, {})
        held = table.get(outcome.contract)
        result.words.clear()
        table[outcome.contract] = outcome if held is None else merged(held, outcome)
        if engine == ANY_ENGINE:
            return
        if outcome.root_cause:
            result.root_causes[engine] = outcome.root_cause
        if outcome.prediction is not None:
            result.predicted[engine] = dict(outcome.prediction)
        if outcome.probe is not None:
            result.probes[engine] = dict(outcome.probe)
        if outcome.load_outcome is not None and not _probes(outcome.contract):
            result.outcomes[engine] = outcome.load_outcome

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
