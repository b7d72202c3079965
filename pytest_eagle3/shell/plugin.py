"""pytest hooks only: options, markers, collection, parametrisation, header, report, summary.

Nothing heavy is imported here: an installed pytest-eagle3 costs an unrelated pytest run
nothing but this module and ``options``/``fixtures``/``report`` (stdlib + pytest).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.shell.contract import CONTRACT_MARKER
from pytest_eagle3.findings import ContractViolation
from pytest_eagle3.shell.fixtures import (
    checkpoint_ids,
    eagle3_checkpoint,
    eagle3_engine,
    eagle3_installed_engine,
    eagle3_load_plan,
    eagle3_target,
    installed_engines,
)
from pytest_eagle3.shell.options import (
    OPTIONS,
    SETTINGS_KEY,
    Settings,
    add_options,
    early_checkpoints,
    parse_settings,
    settings,
)
from pytest_eagle3.shell.report import (
    ANY_ENGINE,
    BASIS_PROPERTY,
    MESSAGE_PROPERTY,
    PREDICTED_PROPERTY,
    PROBE_PROPERTY,
    REFERENCE_PROPERTY,
    Collector,
    one_line,
)

__all__ = ["eagle3_checkpoint", "eagle3_engine", "eagle3_installed_engine", "eagle3_load_plan", "eagle3_target"]
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
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """With a checkpoint and no test paths, collect the installed contracts."""
    namespace = early_config.known_args_namespace
    if not early_checkpoints(early_config, namespace):
        return
    if getattr(namespace, "file_or_dir", None):
        return
    # Collect the contracts instead of ``testpaths``: pytest picks its initial conftests from the namespace,
    # so a project's own test conftest (and what it imports) is not loaded for a contract run.
    namespace.file_or_dir = [contracts_dir()]
    args.append(contracts_dir())
    if not any(arg.startswith("--hypothesis") for arg in args):
        # Only the contracts run and none uses Hypothesis: its pytest plugin would still import
        # hypothesis.internal.observability at the terminal summary (about 1 s).
        early_config.pluginmanager.set_blocked(HYPOTHESIS_PLUGIN)


def contracts_dir() -> str:
    spec = importlib.util.find_spec("pytest_eagle3.contracts")
    assert spec is not None and spec.submodule_search_locations
    return str(next(iter(spec.submodule_search_locations)))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    profile = config.getoption("hypothesis_profile", default=None)
    if isinstance(profile, str) and profile.startswith(HYPOTHESIS_PROFILE_PREFIX):
        from pytest_eagle3.testing.strategies import register_profiles

        register_profiles()
    if not early_checkpoints(config, config.option):
        return
    options = parse_settings(config)
    config.stash[SETTINGS_KEY] = options
    collector = Collector(target=options.target, engines=[e.spec for e in options.engines])
    collector.expect(options.checkpoints)
    config.pluginmanager.register(Eagle3Session(config, options, collector), "eagle3-session")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per checkpoint (id: its folder name) and engine version (``demo-draft@vllm==0.33.0``)."""
    wants_ckpt = "eagle3_checkpoint" in metafunc.fixturenames
    wants_engine = "eagle3_engine" in metafunc.fixturenames
    if not wants_ckpt and not wants_engine:
        return
    options = settings(metafunc.config)
    paths, engines = options.checkpoints, options.engines
    names = checkpoint_ids(paths)
    if "eagle3_installed_engine" in metafunc.fixturenames:  # probe.load: the installed engine's version
        installed = installed_engines(metafunc.config) if paths else ()
        if installed:
            probes = [(path, engine) for path in paths for engine in installed]
            ids = [f"{name}{ENGINE_ID_SEPARATOR}{engine.spec}" for name in names for engine in installed]
            metafunc.parametrize(("eagle3_checkpoint", "eagle3_installed_engine"), probes, ids=ids, indirect=True,
                                 scope="session")
        return
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
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    marker = item.get_closest_marker(CONTRACT_MARKER)
    callspec = getattr(item, "callspec", None)
    if marker is None or callspec is None or "eagle3_checkpoint" not in callspec.params:
        return
    excinfo = call.excinfo
    findings: list[dict[str, object]] = []
    if excinfo is not None and isinstance(excinfo.value, ContractViolation) and report.failed:
        report.longrepr = excinfo.value.render(str(marker.args[0]), _subject(callspec.params))
        findings = [f.to_json() for f in excinfo.value.findings]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        engine_version = _engine_param(callspec.params)
        engine = engine_version.spec if engine_version is not None else ANY_ENGINE
        data = _contract_data(item, report, str(marker.args[0]), str(callspec.params["eagle3_checkpoint"]))
        report.eagle3 = {**data, "engine": engine, "findings": findings}  # type: ignore[attr-defined]


def _engine_param(params: dict[str, Any]) -> Any:
    """The engine version a test is reported under: the selected one, or (probe.load) the installed one."""
    return params.get("eagle3_engine") or params.get("eagle3_installed_engine")


def _subject(params: dict[str, Any]) -> str:
    """The checkpoint (and engine version) a failure is about, for its first line."""
    engine = _engine_param(params)
    where = str(params["eagle3_checkpoint"])
    return f"{where}{ENGINE_ID_SEPARATOR}{engine.spec}" if engine is not None else where


def _contract_data(item: pytest.Item, report: pytest.TestReport, contract: str, path: str) -> dict[str, Any]:
    ckpt = getattr(item, "funcargs", {}).get("eagle3_checkpoint")
    fmt = ckpt.format.label if ckpt is not None and getattr(ckpt, "tensors", None) else ""
    props = dict(report.user_properties)
    if report.failed:
        message = one_line(str(report.longrepr))
    elif report.skipped and isinstance(report.longrepr, tuple):
        message = one_line(str(report.longrepr[2]).removeprefix("Skipped: "))
    else:
        message = str(props.pop(MESSAGE_PROPERTY, "ok"))
    props.pop(MESSAGE_PROPERTY, None)
    reference = props.pop(REFERENCE_PROPERTY, None)
    extra: dict[str, Any] = {"reference": reference} if isinstance(reference, dict) else {}
    predicted = props.pop(PREDICTED_PROPERTY, None)
    if isinstance(predicted, dict):
        extra["predicted_acceptance"] = predicted
    probe = props.pop(PROBE_PROPERTY, None)
    if isinstance(probe, dict):
        extra["probe"] = probe
    basis = props.pop(BASIS_PROPERTY, None)
    plan = getattr(item, "funcargs", {}).get("eagle3_load_plan")
    if basis is None and plan is not None:
        basis = plan.aux.basis
    if basis in ("measured", "assumed"):
        extra["basis"] = basis
    return extra | {
        "checkpoint": path,
        "contract": contract,
        # where the contract is defined: the report lists contracts in this order, not in run order
        "rank": [Path(item.location[0]).name, item.location[1]],
        "outcome": report.outcome,
        "message": message,
        "format": fmt,
        "properties": {k: v for k, v in props.items() if isinstance(v, (int, float, str, bool, list))},
    }


class Eagle3Session:
    """Per-run hooks, registered only when a checkpoint is configured."""

    def __init__(self, config: pytest.Config, options: Settings, collector: Collector) -> None:
        self.config = config
        self.collector = collector
        self.report_path = options.report
        self.options = options

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = []
        for spec in OPTIONS:
            resolved = self.options.sources.get(spec.dest)
            if resolved is not None:
                name = spec.flag.removeprefix("--eagle3-")
                lines.append(f"eagle3: {name}={', '.join(resolved.values)} (from {resolved.source})")
        return lines

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "eagle3", None)
        if isinstance(data, dict):
            self.collector.add(data)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.report_path and not _is_xdist_worker(self.config):
            self.collector.write(Path(self.report_path))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        reported = any(c.contracts or c.engines for c in self.collector.checkpoints.values())
        if _is_xdist_worker(self.config) or not reported:
            return
        terminalreporter.write_sep("=", "EAGLE-3 verdict")
        for line in self.collector.table():
            terminalreporter.write_line(line)
        for line in self.collector.partial_lines():
            terminalreporter.write_line(line)
        for line in self.collector.reference_lines():
            terminalreporter.write_line(line)
        for line in self.collector.probe_lines():
            terminalreporter.write_line(line)
        if self.report_path:
            terminalreporter.write_line(f"JSON report: {self.report_path}")


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
