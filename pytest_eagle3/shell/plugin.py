"""pytest hooks only: options, markers, collection, parametrisation, header, report, summary.

Nothing heavy is imported here: an installed pytest-eagle3 costs an unrelated pytest run (no checkpoint
given) 11 modules of its own, the package, its option table (with the generated interpreter options) and the
shell's light ones (``pytest_eagle3``, ``pytest_eagle3.option_table``, ``pytest_eagle3.interpreter_options``,
``pytest_eagle3.shell``, and its ``plugin``, ``options``, ``fixtures``,
``live_fixtures``, ``verdicts``, ``contract``, ``require``: the count of GPU / engine tests that could not run),
next to the stdlib and pytest; ``tests/test_own_tests.py`` counts them.

What is collected when a checkpoint is given (``--eagle3-ckpt``, ``EAGLE3_CKPT`` or the ``eagle3_ckpt`` ini key):
the installed contracts, always, plus the paths given on the command line; with no paths, the ini's
``testpaths`` too when the checkpoint comes from the ini or the environment (the project's normal run), or when
the ini sets ``eagle3_with_testpaths = true``. The line after "collected N items" says what was collected and,
when testpaths were left out, how to add them.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_eagle3.shell.contract import (
    CONTRACT_MARKER,
    built_location,
    contract_scope,
    contracts_dir,
    eagle3_result,
    finished,
)
from pytest_eagle3.shell.fixtures import (
    checkpoint_ids,
    eagle3_checkpoint,
    eagle3_engine,
    eagle3_installed_engine,
    eagle3_judgement,
    eagle3_load_plan,
    eagle3_target,
    installed_engines,
)
from pytest_eagle3.shell.options import (
    COLLECTED_KEY,
    SETTINGS_KEY,
    WITH_TESTPATHS_INI,
    add_options,
    check_interpreters,
    early_checkpoints,
    is_xdist_worker,
    marker_selected,
    parse_settings,
    settings,
)

if TYPE_CHECKING:
    from pytest_eagle3.verdict.judgement import ContractOutcome
    from pytest_eagle3.verdict.report import ContractReport

__all__ = ["eagle3_checkpoint", "eagle3_engine", "eagle3_installed_engine", "eagle3_judgement", "eagle3_load_plan",
           "eagle3_result", "eagle3_target"]
#: Live-engine fixtures and the engine/gpu auto-skip live in their own shell module.
pytest_plugins = ("pytest_eagle3.shell.live_fixtures",)

MARKERS = (
    f"{CONTRACT_MARKER}(id): an EAGLE-3 contract; the id names it in the verdict table and JSON report",
    "gpu: needs a CUDA device (select with -m gpu, skipped with a reason when none is visible)",
    "engine(name): runs a real serving engine (sglang or vllm) in its own interpreter",
)
HYPOTHESIS_PROFILE_PREFIX = "eagle3-"
#: The entry-point name of Hypothesis' own pytest plugin.
HYPOTHESIS_PLUGIN = "hypothesispytest"
#: Between checkpoint and engine in a test id: a folder name cannot contain "@" followed by "NAME==".
ENGINE_ID_SEPARATOR = "@"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the option table's options and the ``eagle3_with_testpaths`` ini key."""
    add_options(parser)
    parser.addini(WITH_TESTPATHS_INI, "with a checkpoint and no paths on the command line, also collect the "
                  "ini's testpaths next to the contracts (default: contracts only)", type="bool", default=False)




@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """With a checkpoint, collect the installed contracts next to the paths given; with no paths, next to
    the ini's testpaths when the checkpoint is not from the command line or ``eagle3_with_testpaths`` opts in
    (else their absence is said)."""
    namespace = early_config.known_args_namespace
    if not early_checkpoints(early_config, namespace):
        return
    contracts = contracts_dir()
    given = _contract_node_ids(early_config, args, contracts)
    if given:
        early_config.stash[COLLECTED_KEY] = "paths"
        if not _names_contracts(given, contracts, bool(getattr(namespace, "pyargs", False))):
            namespace.file_or_dir = [*given, contracts]
            args.append(contracts)
        return
    testpaths = _testpaths(early_config)
    # a checkpoint from the ini or the environment is part of that project's normal run: its testpaths stay
    from_settings = getattr(namespace, "eagle3_ckpt", None) is None
    if testpaths and (from_settings or _with_testpaths(early_config)):
        early_config.stash[COLLECTED_KEY] = "testpaths"
        namespace.file_or_dir = [contracts, *testpaths]
        args.extend([contracts, *testpaths])
        return
    early_config.stash[COLLECTED_KEY] = "left out: " + " ".join(early_config.getini("testpaths")) if testpaths \
        else "contracts"
    # Collect the contracts instead of ``testpaths``: pytest picks its initial conftests from the namespace,
    # so a project's own test conftest (and what it imports) is not loaded for a contract run.
    namespace.file_or_dir = [contracts]
    args.append(contracts)
    if not any(arg.startswith("--hypothesis") for arg in args):
        # Only the contracts run and none uses Hypothesis: its pytest plugin would still import
        # hypothesis.internal.observability at the terminal summary (about 1 s).
        early_config.pluginmanager.set_blocked(HYPOTHESIS_PLUGIN)


def _contract_node_ids(early_config: pytest.Config, args: list[str], contracts: str) -> list[str]:
    """The paths given, with a contract's node id as printed (``test_eagle3_engines.py::...`` outside a clone,
    ``pytest_eagle3/contracts/...`` inside one) pointed at the installed contracts, so that it re-runs where it
    was printed."""
    namespace = early_config.known_args_namespace
    given = [str(a) for a in getattr(namespace, "file_or_dir", None) or []]
    found = []
    for arg in given:
        path, sep, rest = arg.partition("::")
        name = os.path.basename(path)
        installed = os.path.join(contracts, name)
        if sep and not os.path.exists(path) and name.startswith("test_eagle3_") and os.path.isfile(installed):
            if arg in args:
                args[args.index(arg)] = installed + sep + rest
            arg = installed + sep + rest
        found.append(arg)
    namespace.file_or_dir = found
    return found


def _names_contracts(given: list[str], contracts: str, pyargs: bool) -> bool:
    """Whether the paths given already collect the contracts (their folder, a module of it, or --pyargs)."""
    root = os.path.realpath(contracts)
    for arg in given:
        path = arg.split("::")[0]
        if pyargs and path.startswith("pytest_eagle3.contracts"):
            return True
        real = os.path.realpath(path)
        if real == root or real.startswith(root + os.sep):
            return True
    return False


def _testpaths(config: pytest.Config) -> list[str]:
    """The ini's testpaths that exist, relative to the ini file (pytest's own reading, globs included)."""
    import glob

    base = str(config.inipath.parent) if config.inipath else os.getcwd()
    found: list[str] = []
    for pattern in config.getini("testpaths"):
        found.extend(sorted(glob.glob(os.path.join(base, str(pattern)), recursive=True)))
    return found


def _with_testpaths(config: pytest.Config) -> bool:
    try:
        return bool(config.getini(WITH_TESTPATHS_INI))
    except ValueError:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and the marked-skip count; with a checkpoint, the run's settings, report and session."""
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    from pytest_eagle3.shell.require import MarkedSkips, required_markers

    config.pluginmanager.register(MarkedSkips(required_markers(config)), "eagle3-marked-skips")
    profile = config.getoption("hypothesis_profile", default=None)
    if isinstance(profile, str) and profile.startswith(HYPOTHESIS_PROFILE_PREFIX):
        from pytest_eagle3.testing.strategies import register_profiles

        register_profiles()
    if not early_checkpoints(config, config.option):
        check_interpreters(config)
        return
    from pytest_eagle3.verdict.report import Collector

    options = parse_settings(config)
    config.stash[SETTINGS_KEY] = options
    workers = _contracts_in_process(config)
    collector = Collector(target=options.target, engines=[e.spec for e in options.engines])
    collector.expect(options.checkpoints)
    from pytest_eagle3.shell.session import Eagle3Session

    session = Eagle3Session(config, options, collector)
    session.workers_unused = workers
    if not is_xdist_worker(config):  # the controller learns an engine interpreter's unread release once
        from pytest_eagle3.shell.learn_command import learn_interpreters

        session.learned = learn_interpreters(options)
    config.pluginmanager.register(session, "eagle3-session")
    from pytest_eagle3.shell.progress import listen_during

    listen_during(config)  # the long steps (reference acceptance, predictions) say how far they are


def _contracts_in_process(config: pytest.Config) -> int:
    """``-n N`` on a run of the contracts alone: they run in this process, and N is returned (0 otherwise).

    Every verdict is computed once whoever asks, and the contracts only assert on it: workers would add their own
    start-up (the interpreter, torch) to the same work and make ``-n 2`` slower than a serial run. A run that also
    collects your tests, or starts live engines (``-m engine``, ``-m gpu``), keeps its workers (each adopts the
    verdicts the controller computed once: ``shell.shared_pass``)."""
    option = config.option
    kept = config.stash.get(COLLECTED_KEY, "contracts")
    if is_xdist_worker(config) or getattr(option, "dist", "no") == "no" or not getattr(option, "tx", None):
        return 0
    if kept not in ("contracts",) and not kept.startswith("left out: "):
        return 0
    if marker_selected(config, "engine") or marker_selected(config, "gpu"):
        return 0
    workers = len(option.tx)
    option.dist, option.tx, option.numprocesses = "no", [], 0
    return workers


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """No checkpoint given and nothing collected at all ("collected 0 items", exit 5): one line says what to give.
    A run that collected tests, even all deselected, is left as it is."""
    session = getattr(terminalreporter, "_session", None)
    collected = getattr(session, "testscollected", 0) + len(terminalreporter.stats.get("deselected", []))
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and SETTINGS_KEY not in config.stash and not collected:
        from pytest_eagle3.shell.terminal import width_of, wrap

        for line in wrap("eagle3: no checkpoint given, so no EAGLE-3 contract was collected: give the draft with "
                         "--eagle3-ckpt=PATH (or eagle3_ckpt = PATH in the ini file, or $EAGLE3_CKPT)", width_of(config)):
            terminalreporter.write_line(line)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per checkpoint (id: its folder name) and, for a test in an engine version's row (its scope: the
    contract table's, or for a test of the user's own the engine fixture it takes), engine version
    (``demo-draft@vllm==0.33.0``)."""
    scope = contract_scope(metafunc.definition, metafunc.fixturenames)
    if scope is None:
        return
    wants_ckpt = "eagle3_checkpoint" in metafunc.fixturenames
    wants_engine = scope != "checkpoint"
    options = settings(metafunc.config)
    paths, engines = options.checkpoints, options.engines
    names = checkpoint_ids(paths)
    if scope == "probe":  # probe.load: the installed engine's version
        installed = installed_engines(metafunc.config) if paths else ()
        if installed:
            probes = [(path, engine) for path in paths for engine in installed]
            ids = [f"{name}{ENGINE_ID_SEPARATOR}{engine.spec}" for name in names for engine in installed]
            metafunc.parametrize(("eagle3_checkpoint", "eagle3_installed_engine"), probes, ids=ids, indirect=True,
                                 scope="session")
        return
    if scope == "live":  # live contracts: the version that will serve
        from pytest_eagle3.shell.live_fixtures import serving_versions

        engines = serving_versions(metafunc.config, engines)
    if wants_ckpt and wants_engine and paths:
        pairs = [(path, engine) for path in paths for engine in engines]
        ids = [f"{name}{ENGINE_ID_SEPARATOR}{engine.spec}" for name in names for engine in engines]
        metafunc.parametrize(("eagle3_checkpoint", "eagle3_engine"), pairs, ids=ids, indirect=True, scope="session")
    elif wants_ckpt and paths:
        metafunc.parametrize("eagle3_checkpoint", paths, ids=names, indirect=True, scope="session")
    elif wants_engine:
        metafunc.parametrize("eagle3_engine", engines, ids=[e.spec for e in engines], indirect=True,
                             scope="session")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """probe.load runs an engine's own loader: with checkpoints but no engine interpreter it is not
    collected, so a run without one is not a partial verdict for a contract the user did not ask for."""
    if SETTINGS_KEY not in config.stash:
        return
    idle = [i for i in items if "eagle3_installed_engine" in getattr(i, "fixturenames", ())
            and "eagle3_installed_engine" not in getattr(getattr(i, "callspec", None), "params", {})]
    if idle:
        config.hook.pytest_deselected(items=idle)
        items[:] = [i for i in items if i not in idle]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Attach a contract test's result to its report, so the verdict table and the JSON can read it."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    marker = item.get_closest_marker(CONTRACT_MARKER)
    callspec = getattr(item, "callspec", None)
    if marker is None or callspec is None or "eagle3_checkpoint" not in callspec.params:
        return
    from pytest_eagle3.findings import ContractViolation, Finding

    excinfo = call.excinfo
    findings: tuple[Finding, ...] = ()
    if excinfo is not None and isinstance(excinfo.value, ContractViolation) and report.failed:
        report.longrepr = excinfo.value.render(str(marker.args[0]), _subject(callspec.params))
        findings = excinfo.value.findings
    where = built_location(item) if report.when == "call" and report.skipped else None
    if where is not None and isinstance(report.longrepr, tuple):  # the skip raised in the built test's body
        report.longrepr = (*where, report.longrepr[2])
    if report.when == "call" or (report.when == "setup" and not report.passed):
        entry = _contract_report(item, finished(item, report, findings), callspec.params)
        # JUnit XML reads the teardown report's properties, copied from the item's
        item.user_properties.extend(junit_properties(entry.outcome))
        if is_xdist_worker(item.config):  # the controller's report: the record as data, with the test report
            report.eagle3 = entry.to_json()  # type: ignore[attr-defined]
        else:
            session = item.config.pluginmanager.get_plugin("eagle3-session")
            if session is not None:
                session.collector.add(entry)
    if findings and isinstance(report.longrepr, str):  # the report took the whole lines; the terminal fits them
        from pytest_eagle3.shell.terminal import width_of, wrap_text

        report.longrepr = wrap_text(report.longrepr, width_of(item.config))


def junit_properties(outcome: ContractOutcome) -> list[tuple[str, object]]:
    """Everything a contract's record holds, as JUnit XML ``<property>`` pairs: the measured values, then the typed
    fields (the message of a pass)."""
    message = outcome.message if outcome.status == "pass" else None
    typed = [("eagle3.reference", outcome.reference), ("eagle3.predicted", outcome.prediction),
             ("eagle3.probe", outcome.probe), ("eagle3.basis", outcome.basis), ("eagle3.message", message)]
    return [*outcome.measured, *((name, value) for name, value in typed if value is not None)]


def _engine_param(params: dict[str, Any]) -> Any:
    """The engine version a test is reported under: the selected one, or (probe.load) the installed one."""
    return params.get("eagle3_engine") or params.get("eagle3_installed_engine")


def _subject(params: dict[str, Any]) -> str:
    """The checkpoint (and engine version) a failure is about, for its first line."""
    engine = _engine_param(params)
    where = str(params["eagle3_checkpoint"])
    return f"{where}{ENGINE_ID_SEPARATOR}{engine.spec}" if engine is not None else where


def _contract_report(item: pytest.Item, outcome: ContractOutcome, params: dict[str, Any]) -> ContractReport:
    """The test's outcome where it belongs: its checkpoint (and format), its engine version, its place."""
    from pytest_eagle3.verdict.contract_table import BY_ID
    from pytest_eagle3.verdict.contract_table import rank as contract_rank
    from pytest_eagle3.verdict.report import ANY_ENGINE, ContractReport

    ckpt = getattr(item, "funcargs", {}).get("eagle3_checkpoint")
    fmt = ckpt.format.label if ckpt is not None and getattr(ckpt, "tensors", None) else ""
    engine_version = _engine_param(params)
    contract = outcome.contract
    # the report lists contracts in this order, not in run order: the judgement's, then a user's own by place
    place = contract_rank(contract) if contract in BY_ID else ("~" + Path(item.location[0]).name, item.location[1] or 0)
    return ContractReport(str(params["eagle3_checkpoint"]), engine_version.spec if engine_version is not None
                          else ANY_ENGINE, place, fmt, outcome)
