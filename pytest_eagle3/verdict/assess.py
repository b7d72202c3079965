"""How each contract is judged: the logic the contract tests once held, as functions of the pipeline's data.

A contract function takes an :class:`Assessment` (where it hands over measured values, its basis, the reference
or the prediction), and returns its pass message; it ends early by raising :class:`NotRun` (cannot run here:
why, and what would run it), :class:`NotModelled` (outside what the rules model) or a
:class:`~pytest_eagle3.findings.ContractViolation` (``findings.check``). ``verdict.rows`` runs every contract of a row into a
:class:`~pytest_eagle3.verdict.judgement.Judgement`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pytest_eagle3.findings import Basis, ContractViolation, Evidence, Finding
from pytest_eagle3.verdict.judgement import (
    FAIL,
    MEASURE_WITH,
    NOT_MODELLED,
    NOT_RUN,
    PASS,
    UNMEASURED,
    ContractOutcome,
    Measured,
    basis_of,
)
from pytest_eagle3.words import plural

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.engines.plan_types import LoadPlan

#: Between checkpoint and engine in a failure's subject (and a test id): ``demo-draft@vllm==0.33.0``.
SUBJECT_SEPARATOR = "@"
#: What a not-modelled skip says about the option that turns it into a failure.
UNKNOWN_HINT = "(--eagle3-unknown=fail makes this a failure)"
#: The options that turn a contract that would skip into a failure (a failure's ``failed_by``).
UNKNOWN_FAIL_OPTION = "--eagle3-unknown=fail"
REQUIRE_MEASURED_OPTION = "--eagle3-require=measured"
NEEDS_TARGET = "needs the target model: pass --eagle3-target=DIR (or its config.json)"
#: An unreadable checkpoint's problems shown as evidence; the others are counted ("+3 more") and listed once.
SHOWN_PROBLEMS = 8


class NotRun(Exception):
    """The contract cannot run here: ``str()`` says why and what would run it."""


class WeightsMissing(str):
    """Why a measurement did not run, when only weights are missing (the target given by its config, or a Hub id
    read by headers): every rule ran, so the row is ``PASS (static)`` rather than NOT JUDGED."""


class Unmeasured(NotRun):
    """Every rule ran; only the measurement that needs weights did not: ``str()`` says what would measure it."""


class NotModelled(Exception):
    """The case is outside what the rules model: the finding says what would decide it."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.summary)
        self.finding = finding


@dataclasses.dataclass
class Assessment:
    """What a running contract hands over besides its outcome."""

    #: The contract's id, as its messages name it.
    contract: str
    measured: list[tuple[str, Measured]] = dataclasses.field(default_factory=list)
    basis: Basis | None = None
    reference: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None

    def measure(self, name: str, value: Measured) -> None:
        """Record a measured value of the contract (shown in the report's properties)."""
        if isinstance(value, Sequence) and not isinstance(value, str):
            value = list(value)
        self.measured.append((name, value))


Contract = Callable[[Assessment], str]


def assess(contract: str, subject: str, run: Contract, *, unknown_fails: bool = False,
           measured_required: bool = False, plan: LoadPlan | None = None) -> ContractOutcome:
    """One contract's outcome: ``run``'s message, or how it ended (unmeasured, not run, not modelled, failed).

    ``measured_required`` (``--eagle3-require=measured``, for a contract that measures with the target's weights): an
    unmeasured acceptance fails, naming what to give."""
    hand = Assessment(contract)
    findings: tuple[Finding, ...] = ()
    failed_by = ""
    try:
        message, status = run(hand), PASS
    except Unmeasured as exc:
        if measured_required:
            findings, status, failed_by = (unmeasured_finding(contract, str(exc)),), FAIL, REQUIRE_MEASURED_OPTION
            message = failure_line(contract, subject, findings)
        else:
            message, status = str(exc), UNMEASURED
    except NotRun as exc:
        message, status = str(exc), NOT_RUN
    except NotModelled as exc:
        if unknown_fails:
            findings, status, failed_by = (exc.finding,), FAIL, UNKNOWN_FAIL_OPTION
            message = failure_line(contract, subject, findings)
        else:  # the finding stays: an undecided one names its readings and what decides (the JSON report keeps it)
            findings, message, status = (exc.finding,), f"{exc.finding.summary} {UNKNOWN_HINT}", NOT_MODELLED
    except ContractViolation as exc:
        findings, status = exc.findings, FAIL
        message = failure_line(contract, subject, findings)
    basis = hand.basis or (basis_of(plan.aux.basis) if plan is not None else None)
    return ContractOutcome(contract, status, message, findings, basis, tuple(hand.measured), hand.reference,
                           hand.prediction, plan.outcome if plan is not None else None, failed_by=failed_by)


def unmeasured_finding(contract: str, why: str) -> Finding:
    """The failure of an unmeasured acceptance under ``--eagle3-require=measured``: what to give to measure it."""
    return Finding(
        "unmeasured",
        f"not measured, and --eagle3-require=measured asks for it: {why.removeprefix(contract + ' ')}",
        (Evidence("acceptance", "not measured (every static rule ran)", "measured with the target's weights"),),
        f"give {MEASURE_WITH}",
    )


def failure_line(contract: str, subject: str, findings: Sequence[Finding]) -> str:
    """The first line of the failure as pytest prints it: contract, diagnosis, summary, subject."""
    return ContractViolation(tuple(findings)).render(contract, subject).splitlines()[0]


# -- what a contract needs before it can run ------------------------------------------------------------------
def require_tensors(ckpt: Checkpoint) -> None:
    """Not run when the files are damaged (checkpoint.readable fails): judging what remains would blame the wrong
    thing (a "missing" d2t that is really unreadable)."""
    if ckpt.problems or not ckpt.tensors:
        raise NotRun("the checkpoint's files are damaged: see checkpoint.readable")


def require_weights(ckpt: Checkpoint) -> None:
    """Not run when the weights stayed on the Hub (a ``hf://`` id read by its headers): it says how to run it."""
    if not ckpt.weights_local:
        from pytest_eagle3.checkpoint.hub import NOT_DOWNLOADED

        raise NotRun(NOT_DOWNLOADED)


def require_config(ckpt: Checkpoint) -> None:
    """Raise NotRun when the config is unusable (``config.parseable`` says why)."""
    if ckpt.config_raw is None:
        raise NotRun("config.json is unusable: see config.parseable")


def require_draft(ckpt: Checkpoint) -> None:
    """Not run when the checkpoint is another kind of model (format.detected says which)."""
    from pytest_eagle3.rules.draft_kind import classify_checkpoint

    kind = classify_checkpoint(ckpt)
    if not kind.is_draft:
        raise NotRun(f"this checkpoint is {kind.summary.split(',')[0]}, not an EAGLE-3 draft: see format.detected")


def readability_findings(ckpt: Checkpoint) -> list[Finding]:
    """Every file problem met while indexing the checkpoint."""
    if not ckpt.problems:
        return []
    shown, rest = ckpt.problems[:SHOWN_PROBLEMS], ckpt.problems[SHOWN_PROBLEMS:]
    more = (f"+{len(rest)} more: " + "; ".join(rest),) if rest else ()
    return [Finding(
        "unreadable",
        f"{plural(len(ckpt.problems), 'problem')} reading {ckpt.path}: {ckpt.problems[0]}",
        tuple(Evidence("file", problem, "a readable tensor file") for problem in shown),
        "re-export the checkpoint (files truncated, corrupted, or not what their names claim)",
        (*more, *ckpt.notes),
    )]


def not_modelled(finding: Finding) -> None:
    """Raise NotModelled with ``finding``."""
    raise NotModelled(finding)
