"""What the contract modules share: the result they hand the report, skips for unusable inputs, and
engine-plan verdicts.

The plugin imports this module in every pytest run (for the marker name): the domain modules are
imported inside the functions the contracts call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_eagle3.shell.report import ContractRecord, Measured, basis_of

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.findings import Finding
    from pytest_eagle3.engines.plan_types import LoadPlan

CONTRACT_MARKER = "eagle3_contract"
ENGINE_CONTRACT_PREFIX = "engine."


def contract_id(node: pytest.Item) -> str:
    """The contract id, stated once: the first argument of the test's ``eagle3_contract`` marker."""
    marker = node.get_closest_marker(CONTRACT_MARKER)
    if marker is None or not marker.args:
        raise pytest.UsageError(f"{node.nodeid} has no @pytest.mark.{CONTRACT_MARKER}(id) marker")
    return str(marker.args[0])


#: Each running test's record, by node id, until the plugin takes it for the test's report.
RECORDS_KEY = pytest.StashKey[dict[str, ContractRecord]]()


class ToJson(Protocol):
    """A domain result the report shows as JSON (a reference, a prediction, a probe verdict)."""

    def to_json(self) -> dict[str, Any]: ...


class Eagle3Result:
    """What a contract hands the report, written into its :class:`ContractRecord` (the ``eagle3_result`` fixture)."""

    def __init__(self, config: pytest.Config, nodeid: str) -> None:
        self._records = config.stash.setdefault(RECORDS_KEY, {})
        self._nodeid = nodeid

    @property
    def record(self) -> ContractRecord:
        """What was handed over so far."""
        return self._records.get(self._nodeid, ContractRecord())

    def _update(self, **fields: Any) -> None:
        self._records[self._nodeid] = dataclasses.replace(self.record, **fields)

    def passed(self, message: str) -> None:
        """The one-line message the report shows for the passing contract."""
        self._update(message=message)

    def measured(self, name: str, value: Measured) -> None:
        """A measured value: in the report's ``properties`` and in JUnit XML under ``name`` (a sequence as a list)."""
        if isinstance(value, Sequence) and not isinstance(value, str):
            value = list(value)
        self._update(measured=(*self.record.measured, (name, value)))

    def basis(self, basis: str) -> None:
        """Whether the training reading the verdict rests on was ``measured`` or ``assumed``."""
        known = basis_of(basis)
        if known is None:
            raise ValueError(f"a basis is 'measured' or 'assumed', not {basis!r}")
        self._update(basis=known)

    def reference(self, result: ToJson) -> None:
        """reference.acceptance's measurement."""
        self._update(reference=result.to_json())

    def prediction(self, prediction: ToJson) -> None:
        """engine.acceptance's prediction for the engine version."""
        self._update(prediction=prediction.to_json())

    def probe(self, verdict: ToJson) -> None:
        """probe.load's verdict on the installed engine's loader."""
        self._update(probe=verdict.to_json())


@pytest.fixture
def eagle3_result(request: pytest.FixtureRequest) -> Eagle3Result:
    """Where the running contract writes what it hands the report."""
    return Eagle3Result(request.config, request.node.nodeid)


def take_record(item: pytest.Item) -> ContractRecord:
    """The record the test wrote (empty when none), removed from the run's store."""
    return item.config.stash.get(RECORDS_KEY, {}).pop(item.nodeid, ContractRecord())


def require_tensors(ckpt: Checkpoint) -> None:
    """Skip a contract that needs tensors when the files are damaged (checkpoint.readable fails).

    A damaged file hides tensors; judging what remains would blame the wrong thing (a "missing"
    d2t that is really unreadable).
    """
    if ckpt.problems or not ckpt.tensors:
        pytest.skip("the checkpoint's files are damaged: see checkpoint.readable")


def require_weights(ckpt: Checkpoint) -> None:
    """Skip a contract that reads every weight byte when the weights stayed on the Hub (a ``hf://`` id read by
    its headers): it says how to run it."""
    if not ckpt.weights_local:
        from pytest_eagle3.checkpoint.hub import NOT_DOWNLOADED

        pytest.skip(NOT_DOWNLOADED)


def require_config(ckpt: Checkpoint) -> None:
    """Skip a contract that needs the config when config.json is unusable (config.parseable fails)."""
    if ckpt.config_raw is None:
        pytest.skip("config.json is unusable: see config.parseable")


def require_draft(ckpt: Checkpoint) -> None:
    """Skip a contract that judges a draft when the checkpoint is another kind of model (format.detected says which)."""
    from pytest_eagle3.rules.draft_kind import classify_checkpoint

    kind = classify_checkpoint(ckpt)
    if not kind.is_draft:
        pytest.skip(f"this checkpoint is {kind.summary.split(',')[0]}, not an EAGLE-3 draft: see format.detected")


def readability_findings(ckpt: Checkpoint) -> list[Finding]:
    """Every file problem met while indexing the checkpoint."""
    from pytest_eagle3.findings import Evidence, Finding

    if not ckpt.problems:
        return []
    return [Finding(
        "unreadable",
        f"{len(ckpt.problems)} problems reading {ckpt.path}: {ckpt.problems[0]}",
        tuple(Evidence("file", problem, "a readable tensor file") for problem in ckpt.problems[:8]),
        "re-export the checkpoint (files truncated, corrupted, or not what their names claim)",
        tuple(ckpt.notes),
    )]


def check_plan(request: pytest.FixtureRequest, plan: LoadPlan, *, with_plan: bool = True,
               needs_class: bool = False) -> None:
    """Fail the running engine contract with the plan's findings for its area; skip when it cannot be judged.

    The area is the contract id without ``engine.`` (``engine.aux_layers`` judges the plan's ``aux_layers``).
    """
    from pytest_eagle3.findings import check

    __tracebackhide__ = True
    area = contract_id(request.node).removeprefix(ENGINE_CONTRACT_PREFIX)
    if area != "architecture" and plan.draft_class is None:
        pytest.skip(f"{plan.engine.label} does not build a draft from this config: see engine.architecture")
    if needs_class and plan.draft_class and plan.draft_class.startswith("Eagle3Deepseek"):
        pytest.skip(f"the key map of {plan.draft_class} (MLA draft) is not simulated")
    findings = plan.issues_for(area)
    if findings and with_plan:
        first = findings[0]
        findings = [dataclasses.replace(first, details=(*first.details, *plan.describe())), *findings[1:]]
    check(findings)


def unknown(finding: Finding, fail: bool) -> None:
    """A case the profiles do not know: fail with the reason when ``fail`` (``--eagle3-unknown=fail``), else skip."""
    from pytest_eagle3.findings import check

    __tracebackhide__ = True
    if fail:
        check([finding])
    pytest.skip(f"{finding.summary} (--eagle3-unknown=fail makes this a failure)")
