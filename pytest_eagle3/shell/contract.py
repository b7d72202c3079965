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
        def test(self: object, eagle3_judgement: Judgement, request: pytest.FixtureRequest) -> None:
            assert_outcome(request, eagle3_judgement)

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


#: What each running test that judges itself (live, probe, a user's own) wrote so far, by node id, until it finishes.
NOTES_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()
#: Each running contract test's outcome as its judgement gave it, by node id, until the plugin reports it.
JUDGED_KEY = pytest.StashKey[dict[str, "ContractOutcome"]]()


class ToJson(Protocol):
    """A domain result the report shows as JSON (a reference, a prediction, a probe verdict)."""

    def to_json(self) -> dict[str, Any]:
        """The object as the JSON report writes it."""


class Eagle3Result:
    """What a test that judges itself hands the report while it runs (the ``eagle3_result`` fixture): the fields of
    the :class:`~pytest_eagle3.verdict.judgement.ContractOutcome` it finishes with (:func:`finished`)."""

    def __init__(self, config: pytest.Config, nodeid: str) -> None:
        self._notes = config.stash.setdefault(NOTES_KEY, {})
        self._nodeid = nodeid

    def _update(self, **fields: Any) -> None:
        self._notes[self._nodeid] = {**self._notes.get(self._nodeid, {}), **fields}

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
        self._update(measured=(*self._notes.get(self._nodeid, {}).get("measured", ()), (name, value)))

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


@pytest.fixture
def eagle3_result(request: pytest.FixtureRequest) -> Eagle3Result:
    """Where the running contract writes what it hands the report."""
    return Eagle3Result(request.config, request.node.nodeid)


def finished(item: pytest.Item, report: pytest.TestReport, findings: tuple[Finding, ...] = ()) -> ContractOutcome:
    """The record of how a contract test finished: a judged contract's call, the judgement's outcome itself (its
    pytest outcome followed from it); any other test (live, probe, a user's own, a setup that did not pass), the
    outcome pytest gives it (a skip is ``not run``) with what it wrote (:class:`Eagle3Result`) and ``findings``, the
    failure's. What it wrote is taken from the run's store."""

    from pytest_eagle3.verdict.judgement import FAIL, NOT_RUN, PASS, ContractOutcome, basis_of
    from pytest_eagle3.verdict.report import one_line

    notes = item.config.stash.get(NOTES_KEY, {}).pop(item.nodeid, {})
    judged = item.config.stash.get(JUDGED_KEY, {}).pop(item.nodeid, None)
    if judged is not None and report.when == "call":
        return judged
    if report.failed:
        status, message = FAIL, one_line(str(report.longrepr))
    elif report.skipped and isinstance(report.longrepr, tuple):
        status, message = NOT_RUN, one_line(str(report.longrepr[2]).removeprefix("Skipped: "), None)
    else:
        status, message = NOT_RUN if report.skipped else PASS, notes.get("message", "ok")
    plan = getattr(item, "funcargs", {}).get("eagle3_load_plan")  # a user's own contract test may judge a plan
    basis = notes.get("basis") or (basis_of(plan.aux.basis) if plan is not None else None)
    fields = {k: v for k, v in notes.items() if k != "message"}
    outcome = ContractOutcome(contract_id(item), status, message, findings if report.failed else (),
                              load_outcome=plan.outcome if plan is not None else None)
    return dataclasses.replace(outcome, **{**fields, "basis": basis})


def assert_outcome(request: pytest.FixtureRequest, judgement: Judgement) -> None:
    """The running contract's outcome, as pytest reports it: its judgement's outcome kept for the report (the record
    the plugin reports, :func:`finished`), then a pass, a failure with its findings, or a skip with its reason (not
    run, not modelled)."""
    from pytest_eagle3.findings import ContractViolation
    from pytest_eagle3.verdict.judgement import FAIL, PASS

    __tracebackhide__ = True
    outcome = judgement[contract_id(request.node)]
    request.config.stash.setdefault(JUDGED_KEY, {})[request.node.nodeid] = outcome
    if outcome.status == FAIL:
        raise ContractViolation(outcome.findings)
    if outcome.status != PASS:
        pytest.skip(outcome.message)


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
