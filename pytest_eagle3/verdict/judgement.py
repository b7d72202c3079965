"""A judgement is data: per checkpoint x engine version, every contract's outcome, computed once.

The contracts and their order are :mod:`pytest_eagle3.verdict.contract_table`'s. The contract test functions assert
on a :class:`Judgement` (``shell.contract.assert_outcome``); the report, the
table, the JSON, the summary and every command (``check``, ``plan``, ``plan --json``, ``fix``'s proof, ``sweep``)
render or compare it, so they cannot disagree. :func:`pytest_eagle3.verdict.rows.judgement` builds one
(:mod:`pytest_eagle3.verdict.assess`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pytest_eagle3.findings import ASSUMED, MEASURED, Basis

if TYPE_CHECKING:
    from pytest_eagle3.findings import Finding
    from pytest_eagle3.knowledge.releases import EngineVersion

Status: TypeAlias = Literal["pass", "fail", "not run", "not modelled", "unmeasured"]
PASS: Status = "pass"
FAIL: Status = "fail"
NOT_RUN: Status = "not run"
#: Outside what the rules model: never a pass, never a failure (``--eagle3-unknown=fail`` makes it one).
NOT_MODELLED: Status = "not modelled"
#: Every rule could run; only the measurement the target's weights give is missing (a row whose other contracts
#: pass reads ``PASS (static)``; ``--eagle3-require=measured`` makes it a failure naming what to give).
UNMEASURED: Status = "unmeasured"

#: A value a contract measured: in the report's ``properties`` and in JUnit XML under its name.
Measured: TypeAlias = int | float | str | bool | Sequence[int | float | str]
#: The test outcome pytest reports for each status (a not-run or not-modelled contract is a skip).
TEST_OUTCOME = {PASS: "passed", FAIL: "failed", NOT_RUN: "skipped", NOT_MODELLED: "skipped", UNMEASURED: "skipped"}

#: What measures acceptance where only the target's config was given (the report's ``measure_with``).
MEASURE_WITH = ("the target's weights (--eagle3-target=DIR, the model directory; hf:// ids with "
                "--eagle3-download-weights), or a dump of its side captured where it is served (python -m "
                "pytest_eagle3 capture TARGET DUMP, then --eagle3-hidden-states=DUMP)")


def basis_of(value: object) -> Basis | None:
    """``measured`` or ``assumed``; anything else is no basis."""
    return MEASURED if value == MEASURED else ASSUMED if value == ASSUMED else None


@dataclass(frozen=True)
class ContractOutcome:
    """One contract's outcome on one checkpoint (and engine version): what the report shows of it."""

    contract: str
    status: Status
    #: The pass message, the reason it did not run (or is not modelled), or the failure's first line.
    message: str
    findings: tuple[Finding, ...] = ()
    basis: Basis | None = None
    #: (name, value) in the order measured.
    measured: tuple[tuple[str, Measured], ...] = ()
    reference: Mapping[str, Any] | None = None
    prediction: Mapping[str, Any] | None = None
    #: The load plan's outcome (loads / loads with loss / refused) for an engine contract.
    load_outcome: str | None = None
    #: A failing engine contract whose every finding another area's explains: that root cause, "contract [code]".
    consequence_of: str = ""
    #: The row's root cause, "contract [code]: summary" (the same on each engine contract of the row; "" for none).
    root_cause: str = ""
    #: The option that made this contract fail where it would have skipped (``--eagle3-unknown=fail``,
    #: ``--eagle3-require=measured``); "" for a failure of the rules themselves.
    failed_by: str = ""
    #: probe.load's result on the installed engine's loader (``ProbeVerdict.to_json``).
    probe: Mapping[str, Any] | None = None

    @property
    def test_outcome(self) -> str:
        """The pytest outcome this contract's status gives: passed, failed or skipped."""
        return TEST_OUTCOME[self.status]

    @property
    def skipped(self) -> bool:
        """It did not run (not run, not modelled, unmeasured): a skip under pytest."""
        return self.status not in (PASS, FAIL)

    def to_json(self) -> dict[str, Any]:
        """The outcome as plain data (a pytest-xdist worker ships it to the controller with its test report)."""
        return {"contract": self.contract, "status": self.status, "message": self.message,
                "findings": [f.to_json() for f in self.findings], "basis": self.basis,
                "measured": [[k, v] for k, v in self.measured], "reference": self.reference,
                "prediction": self.prediction, "load_outcome": self.load_outcome,
                "consequence_of": self.consequence_of, "root_cause": self.root_cause, "failed_by": self.failed_by,
                "probe": self.probe}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContractOutcome:
        """The outcome :meth:`to_json` wrote."""
        from pytest_eagle3.findings import Finding

        status = data["status"]
        if status not in TEST_OUTCOME:
            raise ValueError(f"not a contract's status: {status!r}")
        return cls(str(data["contract"]), status, str(data["message"]),
                   tuple(Finding.from_json(f) for f in data["findings"]), basis_of(data["basis"]),
                   tuple((str(k), v) for k, v in data["measured"]), data["reference"], data["prediction"],
                   data["load_outcome"], str(data["consequence_of"]), str(data["root_cause"]),
                   str(data["failed_by"]), data["probe"])

    @property
    def fixes(self) -> tuple[str, ...]:
        """The fixes of a failed contract, each once."""
        return tuple(dict.fromkeys(f.fix for f in self.findings if f.fix)) if self.status == FAIL else ()


#: A row's word (``verdict.rows.word_of`` makes it from the row's outcomes): ``fail``, ``not run`` (no contract
#: ran), ``not judged`` (an essential contract, ``contract_table.ESSENTIAL``, could not be judged), ``pass (partial)``
#: (something else did not run), ``pass (static)`` (only the measurement needing the target's weights did not run),
#: or ``pass``.
Word: TypeAlias = Literal["pass", "pass (partial)", "pass (static)", "not judged", "not run", "fail"]
PARTIAL: Word = "pass (partial)"
STATIC: Word = "pass (static)"
NOT_JUDGED: Word = "not judged"
#: The reason a row gives when ``-m`` (or ``-k``) selected none of its contracts.
NONE_SELECTED = "no contract selected (-m, -k or the test ids given left none for this row)"


@dataclass(frozen=True)
class RowWord:
    """A row's word and its reasons: what failed, what could not be judged, what did not run and why."""

    word: Word
    #: The failing contracts (the ``any`` row's first: they count against every engine).
    failing: tuple[str, ...] = ()
    #: The essential contracts this engine row ran and could not judge.
    not_judged: tuple[str, ...] = ()
    #: (contract, reason) for each that did not run; a row with no contract at all says why (``*``).
    not_run: tuple[tuple[str, str], ...] = ()
    #: The measuring contracts left unmeasured for want of the target's weights alone.
    unmeasured: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judgement:
    """Every judged contract of one checkpoint for one engine version (``engine`` None: the contracts that do not
    depend on an engine), in the report's order."""

    checkpoint: str
    engine: EngineVersion | None
    #: The producer format's label ("" when the files could not be read).
    format: str
    outcomes: tuple[ContractOutcome, ...] = field(default=())

    def __getitem__(self, contract: str) -> ContractOutcome:
        for outcome in self.outcomes:
            if outcome.contract == contract:
                return outcome
        raise KeyError(contract)

    def __iter__(self) -> Iterator[ContractOutcome]:
        return iter(self.outcomes)

    @property
    def spec(self) -> str:
        """The row: ``vllm==0.33.0``, or ``any``."""
        return self.engine.spec if self.engine is not None else "any"

    @property
    def failing(self) -> list[str]:
        """The contracts that failed."""
        return [o.contract for o in self.outcomes if o.status == FAIL]
