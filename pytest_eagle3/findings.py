"""Findings and contract violations: what goes wrong, the evidence, and the fix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

#: What a verdict rests on: the reference measurement settled it, or a convention, default or habit was assumed.
Basis: TypeAlias = Literal["measured", "assumed"]
MEASURED: Basis = "measured"
ASSUMED: Basis = "assumed"
#: What a verdict is under one reading of the checkpoint (``Finding.readings``).
PASSES, FAILS, UNJUDGED = "passes", "fails", "cannot be judged"
OUTCOMES = (PASSES, FAILS, UNJUDGED)


@dataclass(frozen=True)
class Evidence:
    """One observed value next to the value a working draft needs."""

    key: str
    obtained: str
    expected: str


@dataclass(frozen=True)
class Finding:
    """A named diagnosis: ``code`` is stable and machine-readable, ``summary`` is one line."""

    code: str
    summary: str
    evidence: tuple[Evidence, ...] = ()
    fix: str = ""
    details: tuple[str, ...] = field(default=())
    #: An undecided verdict's plausible readings: (label, outcome word: :data:`OUTCOMES`); ``fix`` says what decides.
    readings: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        """Everything the rendered text shows, as data: code, summary, evidence, details (rules, plan), fix, and the
        readings of an undecided verdict (only when there are some)."""
        data: dict[str, object] = {
            "code": self.code,
            "summary": self.summary,
            "evidence": [{"key": e.key, "obtained": e.obtained, "expected": e.expected} for e in self.evidence],
            "details": list(self.details),
            "fix": self.fix,
        }
        if self.readings:
            data["readings"] = [{"reading": label, "outcome": outcome} for label, outcome in self.readings]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """The finding :meth:`to_json` wrote (a pytest-xdist worker's, on the controller)."""
        return cls(str(data["code"]), str(data["summary"]),
                   tuple(Evidence(str(e["key"]), str(e["obtained"]), str(e["expected"])) for e in data["evidence"]),
                   str(data["fix"]), tuple(str(d) for d in data["details"]),
                   tuple((str(r["reading"]), str(r["outcome"])) for r in data.get("readings", ())))

    def render(self, headline: str | None = None) -> str:
        """The finding as text: the headline, then each evidence item's obtained and expected values."""
        lines = [headline or f"[{self.code}] {self.summary}"]
        for item in self.evidence:
            lines.append(f"  {item.key}")
            lines.append(f"    Obtained: {item.obtained}")
            lines.append(f"    Expected: {item.expected}")
        lines.extend(f"  {detail}" for detail in self.details)
        lines.extend(f"  reading {label}: {outcome}" for label, outcome in self.readings)
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)


class ContractViolation(AssertionError):
    """Raised by a contract; the plugin renders it under the contract id of the test's marker."""

    def __init__(self, findings: list[Finding] | tuple[Finding, ...]) -> None:
        self.findings = tuple(findings)
        super().__init__(self.render())

    def render(self, contract_id: str | None = None, subject: str | None = None) -> str:
        """First line: contract, diagnosis, what goes wrong and for which checkpoint; then evidence and fix.

        Findings of one diagnosis beyond the first :data:`SHOWN_PER_CODE` are grouped into one line, and the
        text stops at :data:`MAX_LINES` lines (the JSON report keeps every finding).
        """
        name = contract_id or "contract"
        where = f" [{subject}]" if subject else ""
        if not self.findings:
            return f"{name}: contract failed{where}"
        first = self.findings[0]
        more = f" (+{len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        lines = first.render(f"{name} [{first.code}]: {first.summary}{more}{where}").splitlines()
        for code, group in _by_code(self.findings).items():
            shown, hidden = group[:SHOWN_PER_CODE], group[SHOWN_PER_CODE:]
            for finding in shown:
                if finding is not first:
                    lines.extend(finding.render().splitlines())
            if hidden:
                lines.append(f"[{code}] {len(hidden)} more like these, e.g. {_clip(hidden[0].summary)}")
        if len(lines) > MAX_LINES:
            cut = f"... {len(lines) - MAX_LINES} more lines (every finding is in the JSON report: --eagle3-report=PATH)"
            lines = [*lines[:MAX_LINES], cut]
        return "\n".join(lines)


#: A failure shows this many findings of one diagnosis in full, then one line for the rest.
SHOWN_PER_CODE = 3
#: A failure's text is cut after this many lines.
MAX_LINES = 80


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _by_code(findings: tuple[Finding, ...]) -> dict[str, list[Finding]]:
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.code, []).append(finding)
    return groups


def check(findings: list[Finding] | tuple[Finding, ...]) -> None:
    """Fail the running contract with every finding, or return when there is none."""
    __tracebackhide__ = True
    if findings:
        raise ContractViolation(findings)


def short(values: Iterable[object], limit: int = 8) -> str:
    """A bounded rendering of a sequence for evidence lines."""
    items = list(values)
    if len(items) <= limit:
        return "[" + ", ".join(str(v) for v in items) + "]"
    head = ", ".join(str(v) for v in items[:limit])
    return f"[{head}, ...] ({len(items)} in all)"
