"""Verdicts per (checkpoint, engine, contract): collected from test reports, written as JSON and a table.

Works under pytest-xdist: workers attach ``report.eagle3`` (a plain dict, serialised with the
report) and the controller aggregates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "pytest-eagle3/report/1"
ANY_ENGINE = "any"
#: user_properties key a passing contract uses for its one-line report message.
MESSAGE_PROPERTY = "eagle3.message"
#: user_properties key the reference-acceptance contract uses for its figures (a dict).
REFERENCE_PROPERTY = "eagle3.reference"
#: When one contract has several test items for a checkpoint, the worst outcome wins.
SEVERITY = {"skipped": 0, "passed": 1, "failed": 2}


@dataclass
class ContractResult:
    """The aggregated outcome of one contract on one checkpoint."""

    id: str
    outcome: str
    message: str

    def merge(self, outcome: str, message: str) -> None:
        if SEVERITY[outcome] > SEVERITY[self.outcome]:
            self.outcome, self.message = outcome, message


@dataclass
class CheckpointResult:
    """Everything reported about one checkpoint: contracts per engine (``any`` = engine-independent)."""

    path: str
    format: str = "unreadable"
    contracts: dict[str, ContractResult] = field(default_factory=dict)
    engines: dict[str, dict[str, ContractResult]] = field(default_factory=dict)
    properties: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] | None = None

    @property
    def verdict(self) -> str:
        return "fail" if self.failing else "pass"

    @property
    def failing(self) -> list[str]:
        return [c.id for c in self.contracts.values() if c.outcome == "failed"]

    def engine_failing(self, engine: str) -> list[str]:
        """Engine-independent failures count against every engine, then the engine's own."""
        own = [c.id for c in self.engines.get(engine, {}).values() if c.outcome == "failed"]
        return self.failing + own

    def engine_verdict(self, engine: str) -> str:
        return "fail" if self.engine_failing(engine) else "pass"


def _merge_into(table: dict[str, ContractResult], contract: str, outcome: str, message: str) -> None:
    if contract in table:
        table[contract].merge(outcome, message)
    else:
        table[contract] = ContractResult(contract, outcome, message)


def _contracts_json(table: dict[str, ContractResult]) -> list[dict[str, str]]:
    return [{"id": c.id, "outcome": c.outcome, "message": c.message} for c in table.values()]


def _split_engine(spec: str) -> tuple[str, str | None]:
    name, _, version = spec.partition("==")
    return name, version or None


@dataclass
class Collector:
    """Aggregates contract reports, in the order checkpoints were given."""

    checkpoints: dict[str, CheckpointResult] = field(default_factory=dict)

    def expect(self, paths: tuple[str, ...]) -> None:
        for path in paths:
            self.checkpoints.setdefault(path, CheckpointResult(path))

    def add(self, data: dict[str, Any]) -> None:
        path = str(data["checkpoint"])
        result = self.checkpoints.setdefault(path, CheckpointResult(path))
        if data.get("format"):
            result.format = str(data["format"])
        result.properties.update(data.get("properties", {}))
        if isinstance(data.get("reference"), dict):
            result.reference = data["reference"]
        outcome, message, contract = str(data["outcome"]), str(data["message"]), str(data["contract"])
        engine = str(data.get("engine") or ANY_ENGINE)
        table = result.contracts if engine == ANY_ENGINE else result.engines.setdefault(engine, {})
        _merge_into(table, contract, outcome, message)

    def to_json(self) -> dict[str, Any]:
        checkpoints = []
        for ckpt in self.checkpoints.values():
            entries: list[dict[str, Any]] = [{
                "engine": ANY_ENGINE, "version": None, "verdict": ckpt.verdict,
                "failing": ckpt.failing, "contracts": _contracts_json(ckpt.contracts),
            }]
            for spec, table in ckpt.engines.items():
                name, version = _split_engine(spec)
                entries.append({
                    "engine": name, "version": version, "verdict": ckpt.engine_verdict(spec),
                    "failing": ckpt.engine_failing(spec), "contracts": _contracts_json(table),
                })
            reference = {"reference": ckpt.reference} if ckpt.reference is not None else {}
            checkpoints.append({"path": ckpt.path, "format": ckpt.format, "properties": ckpt.properties,
                                **reference, "engines": entries})
        return {"schema": SCHEMA, "checkpoints": checkpoints}

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")

    def table(self) -> list[str]:
        rows = [("checkpoint", "format", "engine", "verdict", "failing contracts")]
        for ckpt in self.checkpoints.values():
            rows.append((ckpt.path, ckpt.format, ANY_ENGINE, ckpt.verdict.upper(), ", ".join(ckpt.failing) or "-"))
            for spec in ckpt.engines:
                failing = ", ".join(ckpt.engine_failing(spec)) or "-"
                rows.append(("", "", spec, ckpt.engine_verdict(spec).upper(), failing))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in rows]


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


def one_line(text: str, limit: int = 300) -> str:
    """The first line of a message, bounded, for the JSON report."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."
