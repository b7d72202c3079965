"""What the contract modules share: their tests, built from the contract table; the result they hand the report;
skips for unusable inputs, and engine-plan verdicts.

The plugin imports this module in every pytest run (for the marker name): the domain modules are
imported inside the functions the contracts call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.findings import Finding
    from pytest_eagle3.verdict.contract_table import ContractDefinition, Scope
    from pytest_eagle3.verdict.judgement import ContractOutcome, Judgement, Measured
    from pytest_eagle3.verdict.report import ContractRecord

CONTRACT_MARKER = "eagle3_contract"
#: The row a test of the user's own belongs to, by the first of these fixtures it takes (a contract's is declared in
#: the contract table): the installed engine's (probe.load's), the serving engine's, an engine version's.
OWN_TEST_SCOPES: tuple[tuple[str, Scope], ...] = (
    ("eagle3_installed_engine", "probe"), ("eagle3_live_engine", "live"), ("eagle3_engine", "engine"))


def contracts_dir() -> str:
    """Where the installed contract modules are."""
    import importlib.util

    spec = importlib.util.find_spec("pytest_eagle3.contracts")
    assert spec is not None and spec.submodule_search_locations
    return str(next(iter(spec.submodule_search_locations)))


def contract_id(node: pytest.Item) -> str:
    """The contract id, stated once: the first argument of the test's ``eagle3_contract`` marker."""
    marker = node.get_closest_marker(CONTRACT_MARKER)
    if marker is None or not marker.args:
        raise pytest.UsageError(f"{node.nodeid} has no @pytest.mark.{CONTRACT_MARKER}(id) marker")
    return str(marker.args[0])


def _declared(node: pytest.Item | pytest.Function) -> ContractDefinition | None:
    """The contract table's row for the test's ``eagle3_contract`` marker; None for a test of the user's own."""
    marker = node.get_closest_marker(CONTRACT_MARKER)
    if marker is None or not marker.args:
        return None
    from pytest_eagle3.verdict.contract_table import BY_ID

    return BY_ID.get(str(marker.args[0]))


def contract_scope(node: pytest.Item | pytest.Function, fixturenames: Sequence[str]) -> Scope | None:
    """The row a test is parametrised for and judged in: a contract's scope, as the contract table declares it; for a
    test of the user's own, the row its fixtures ask for (``checkpoint`` for the checkpoint alone); None for a test
    that takes neither a checkpoint nor an engine version."""
    if "eagle3_checkpoint" not in fixturenames and "eagle3_engine" not in fixturenames:
        return None
    declared = _declared(node)
    if declared is not None:
        return declared.scope
    return next((scope for fixture, scope in OWN_TEST_SCOPES if fixture in fixturenames), "checkpoint")


def contract_class(name: str, doc: str) -> type:
    """The test class ``name`` of a contract module: one test per contract the table gives it, each asserting the
    judgement (:func:`assert_outcome`), marked with its id, documented with its description, and taking the engine
    version where its scope is an engine's row."""
    from pytest_eagle3.verdict.contract_table import ENGINE, TABLE

    def test_of(contract: ContractDefinition) -> Callable[..., None]:
        def test(self: object, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                 request: pytest.FixtureRequest) -> None:
            assert_outcome(request, eagle3_result, eagle3_judgement)

        test.__name__, test.__qualname__, test.__doc__ = contract.test_name, contract.test, contract.description
        marked = pytest.mark.eagle3_contract(contract.id)(test)
        return pytest.mark.usefixtures("eagle3_engine")(marked) if contract.scope == ENGINE else marked

    tests = {c.test_name: test_of(c) for c in TABLE if c.test_class == name and c.area is not None}
    if not tests:
        raise LookupError(f"the contract table gives {name} no contract")
    return type(name, (), {"__doc__": doc, **tests})


def built_location(item: pytest.Item) -> tuple[str, int] | None:
    """Where a test :func:`contract_class` built points a skip: its contract's row in the contract table (the file
    and the line, so that ``-rs`` names each contract's own place); None for any other test."""
    contract = _declared(item)
    if contract is None or contract.area is None:
        return None
    from pytest_eagle3.verdict import contract_table

    return str(contract_table.__file__), contract_table.defined_at(contract.id)


def contract_test(test: Callable[..., None]) -> Callable[..., None]:
    """A contract whose test judges it itself (live, probe): marked with the id and documented with the description
    the contract table gives its ``Class.method``."""
    from pytest_eagle3.verdict.contract_table import TABLE

    contract = next((c for c in TABLE if c.test == test.__qualname__), None)
    if contract is None:
        raise LookupError(f"the contract table has no contract for {test.__qualname__}")
    test.__doc__ = contract.description
    marked: Callable[..., None] = pytest.mark.eagle3_contract(contract.id)(test)
    return marked


#: Each running test's record, by node id, until the plugin takes it for the test's report.
RECORDS_KEY = pytest.StashKey[dict[str, "ContractRecord"]]()


class ToJson(Protocol):
    """A domain result the report shows as JSON (a reference, a prediction, a probe verdict)."""

    def to_json(self) -> dict[str, Any]:
        """The object as the JSON report writes it."""


class Eagle3Result:
    """What a contract hands the report, written into its :class:`ContractRecord` (the ``eagle3_result`` fixture)."""

    def __init__(self, config: pytest.Config, nodeid: str) -> None:
        self._records = config.stash.setdefault(RECORDS_KEY, {})
        self._nodeid = nodeid

    @property
    def record(self) -> ContractRecord:
        """What was handed over so far."""
        from pytest_eagle3.verdict.report import ContractRecord

        return self._records.get(self._nodeid, ContractRecord())

    def _update(self, **fields: Any) -> None:
        self._records[self._nodeid] = dataclasses.replace(self.record, **fields)

    def passed(self, message: str) -> None:
        """The one-line message the report shows for the passing contract."""
        self._update(message=message)

    def failed_by(self, option: str) -> None:
        """The option that makes this contract fail where it would skip (``--eagle3-unknown=fail``)."""
        self._update(failed_by=option)

    def measured(self, name: str, value: Measured) -> None:
        """A measured value: in the report's ``properties`` and in JUnit XML under ``name`` (a sequence as a list)."""
        if isinstance(value, Sequence) and not isinstance(value, str):
            value = list(value)
        self._update(measured=(*self.record.measured, (name, value)))

    def basis(self, basis: str) -> None:
        """Whether the training reading the verdict rests on was ``measured`` or ``assumed``."""
        from pytest_eagle3.verdict.judgement import basis_of

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

    def hand_over(self, outcome: ContractOutcome) -> None:
        """Everything a judged contract measured, its basis, reference, prediction and the plan's outcome."""
        self._update(measured=(*self.record.measured, *outcome.measured), basis=outcome.basis,
                     reference=outcome.reference, prediction=outcome.prediction, load_outcome=outcome.load_outcome,
                     consequence_of=outcome.consequence_of, root_cause=outcome.root_cause, status=outcome.status,
                     failed_by=outcome.failed_by,
                     findings=tuple(f.to_json() for f in outcome.findings) if outcome.status != "fail" else ())


@pytest.fixture
def eagle3_result(request: pytest.FixtureRequest) -> Eagle3Result:
    """Where the running contract writes what it hands the report."""
    return Eagle3Result(request.config, request.node.nodeid)


def take_record(item: pytest.Item) -> ContractRecord:
    """The record the test wrote (empty when none), removed from the run's store."""
    from pytest_eagle3.verdict.report import ContractRecord

    return item.config.stash.get(RECORDS_KEY, {}).pop(item.nodeid, ContractRecord())


def assert_outcome(request: pytest.FixtureRequest, result: Eagle3Result, judgement: Judgement) -> None:
    """The running contract's outcome, as pytest reports it: what it measured handed to the report, then a pass
    with its message, a failure with its findings, or a skip with its reason (not run, not modelled)."""
    from pytest_eagle3.findings import ContractViolation
    from pytest_eagle3.verdict.judgement import FAIL, PASS

    __tracebackhide__ = True
    outcome = judgement[contract_id(request.node)]
    result.hand_over(outcome)
    if outcome.status == FAIL:
        raise ContractViolation(outcome.findings)
    if outcome.status != PASS:
        pytest.skip(outcome.message)
    result.passed(outcome.message)


def _skip_unless(ready: Callable[[Checkpoint], None], ckpt: Checkpoint) -> None:
    from pytest_eagle3.verdict.assess import NotRun

    __tracebackhide__ = True
    try:
        ready(ckpt)
    except NotRun as exc:
        pytest.skip(str(exc))


def require_tensors(ckpt: Checkpoint) -> None:
    """Skip a contract that needs tensors when the files are damaged (``verdict.assess.require_tensors``)."""
    from pytest_eagle3.verdict.assess import require_tensors as ready

    _skip_unless(ready, ckpt)


def require_config(ckpt: Checkpoint) -> None:
    """Skip a contract that needs the config when config.json is unusable."""
    from pytest_eagle3.verdict.assess import require_config as ready

    _skip_unless(ready, ckpt)


def require_draft(ckpt: Checkpoint) -> None:
    """Skip a contract that judges a draft when the checkpoint is another kind of model."""
    from pytest_eagle3.verdict.assess import require_draft as ready

    _skip_unless(ready, ckpt)


def unknown(finding: Finding, fail: bool, result: Eagle3Result | None = None) -> None:
    """A case the profiles do not know: fail with the reason when ``fail`` (``--eagle3-unknown=fail``, said to
    ``result``'s record), else skip."""
    from pytest_eagle3.findings import ContractViolation
    from pytest_eagle3.verdict.assess import UNKNOWN_FAIL_OPTION, UNKNOWN_HINT

    __tracebackhide__ = True
    if fail:
        if result is not None:
            result.failed_by(UNKNOWN_FAIL_OPTION)
        raise ContractViolation([finding])
    pytest.skip(f"{finding.summary} {UNKNOWN_HINT}")
