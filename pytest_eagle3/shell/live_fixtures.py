"""Live-engine fixtures and marker handling (shell: the pytest side of ``pytest_eagle3.live``).

- ``eagle3_server``: one real server per engine x target x draft for the whole session, reused by
  every test that asks for it; its log is attached to each report as a section.
- ``eagle3_baseline_server``: the same engine serving the target alone (the greedy baseline).
- ``engine`` marker: skipped, naming the engine, when its interpreter cannot import it.
- ``gpu`` marker: skipped when no CUDA device is visible (found without initialising CUDA here).

With ``--eagle3-device=cuda`` the reference and live contracts also carry ``gpu``, so
``pytest -m gpu`` selects them; every test using a live server carries ``engine``. The installed
live contracts start servers, so they are collected only when ``-m`` names ``engine`` or ``gpu``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_eagle3.shell.contract import CONTRACT_MARKER
from pytest_eagle3.shell.options import (
    SETTINGS_KEY,
    device_setting,
    marker_selected,
    python_option,
    resolve,
    settings,
)

if TYPE_CHECKING:
    from pytest_eagle3.devices import CudaDevices
    from pytest_eagle3.knowledge.engine import Engine
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.live.interpreter import EngineInstall
    from pytest_eagle3.live.server import LiveRun, Served

SERVER_FIXTURES = ("eagle3_server", "eagle3_baseline_server")
#: What the live tests import, from the ``live`` extra (pyproject.toml).
LIVE_MODULES = ("mirakuru", "psutil", "prometheus_client")
LIVE_EXTRA = "pip install 'pytest-eagle3[live]' (from a clone: pip install -e '.[live]')"
#: What llama.cpp's converter needs beside it, from the ``llamacpp`` extra.
LLAMACPP_EXTRA = "pip install 'pytest-eagle3[llamacpp]' (from a clone: pip install -e '.[llamacpp]')"
GPU_WHEN_CUDA = SERVER_FIXTURES
LOG_SECTION_LINES = 120
LIVE_CONTRACTS = "test_eagle3_live.py"


@dataclass
class LiveState:
    """Per-run live state (kept in ``config.stash``): installs read, servers started, runs made."""

    installs: dict[tuple[str, str], EngineInstall] = field(default_factory=dict)
    servers: dict[tuple[str, str, str | None], Served | Exception] = field(default_factory=dict)
    runs: dict[tuple[str, str, str | None], LiveRun] = field(default_factory=dict)
    cuda: CudaDevices | None = None
    #: llama.cpp: the folder this run converts targets and drafts into (one GGUF per model).
    gguf_dir: Path | None = None


STATE = pytest.StashKey[LiveState]()


def live_state(config: pytest.Config) -> LiveState:
    """The run's live state (servers started, their results), one per pytest config."""
    if STATE not in config.stash:
        config.stash[STATE] = LiveState()
    return config.stash[STATE]


def _kind(engine: str | None) -> Engine | None:
    """The registered engine of that name (None for another name); the registry is read only when asked."""
    from pytest_eagle3.knowledge.engines import BY_NAME

    return BY_NAME.get(engine) if engine is not None else None


def serves_live(engine: str | None) -> bool:
    """Whether the live fixtures start servers of ``engine`` (llama.cpp: its llama-server binary,
    --eagle3-llamacpp-server)."""
    kind = _kind(engine)
    return kind is not None and kind.serves_live


def live_engines() -> tuple[str, ...]:
    """The engines the live fixtures start servers of, in the release list's order."""
    from pytest_eagle3.knowledge.releases import RELEASES

    return tuple(name for name in RELEASES if serves_live(name))


def _server_binary(engine: str) -> bool:
    kind = _kind(engine)
    return kind is not None and kind.live.server_binary


def engine_python(config: pytest.Config, engine: str) -> str:
    """The interpreter for ``engine``: its option, else this interpreter."""
    return settings(config).python_for(engine) or sys.executable


def engine_install(config: pytest.Config, engine: str) -> EngineInstall:
    """What ``engine``'s interpreter has installed (asked once per run); llama.cpp: the llama-server binary's build
    (``python`` is the binary)."""
    from pytest_eagle3.live.interpreter import EngineInstall, inspect_engine

    if _server_binary(engine):
        from pytest_eagle3.live.llamacpp import inspect_server, missing_reason, server_binary

        given = settings(config).llamacpp_server
        binary = server_binary(given)
        key = (engine, str(binary) if binary is not None else f"missing:{given}")
        state = live_state(config)
        if key not in state.installs:
            state.installs[key] = (inspect_server(binary) if binary is not None else
                                   EngineInstall(engine, key[1], None, None, missing_reason(given)))
        return state.installs[key]
    python = engine_python(config, engine)
    state = live_state(config)
    if (engine, python) not in state.installs:
        state.installs[(engine, python)] = inspect_engine(engine, python)
    return state.installs[(engine, python)]


def unusable(install: EngineInstall) -> str | None:
    """Why ``install`` cannot serve, with how to give one; None when it can."""
    if _server_binary(install.engine):
        return install.import_error if install.distribution is None else None
    problem = install.why_unusable()
    if problem is None:
        return None
    spec = python_option(install.engine)
    option = spec.flag if spec is not None else "an engine option"
    return f"{problem}: pass {option}=PYTHON of a venv with {install.engine}"


def live_device(config: pytest.Config) -> str:
    """The run's device; for the idle plugin, read without importing the domain packages."""
    return settings(config).device if SETTINGS_KEY in config.stash else device_setting(config)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark live-server tests ``engine`` (and, on CUDA, reference and live tests ``gpu``) before ``-m``."""
    cuda = live_device(config).startswith("cuda")
    if not live_selected(config):
        kept = [i for i in items if not i.nodeid.split("::")[0].endswith(LIVE_CONTRACTS)]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in kept])
            items[:] = kept
    for item in items:
        names = getattr(item, "fixturenames", ())
        if any(n in names for n in SERVER_FIXTURES) and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine)
        contract = _contract(item) if cuda else None
        on_device = any(n in names for n in GPU_WHEN_CUDA) or (contract is not None and _on_device(contract))
        if cuda and on_device and item.get_closest_marker("gpu") is None:
            item.add_marker(pytest.mark.gpu)


def _on_device(contract: str) -> bool:
    """Whether the contract runs the draft (and the target) on the run's device (``contract_table.ON_DEVICE``)."""
    from pytest_eagle3.verdict.contract_table import ON_DEVICE

    return contract in ON_DEVICE


def _contract(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker(CONTRACT_MARKER)
    return str(marker.args[0]) if marker is not None and marker.args else None


def live_selected(config: pytest.Config) -> bool:
    """The installed live contracts start servers: they run only when ``-m`` asks for engine or gpu."""
    return marker_selected(config, "engine") or marker_selected(config, "gpu")


def item_engine(item: pytest.Item) -> str | None:
    """The engine an ``engine``-marked item needs: the marker's argument, else its engine parameter."""
    marker = item.get_closest_marker("engine")
    if marker is not None and marker.args:
        return str(marker.args[0]).lower()
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("eagle3_engine") if callspec is not None else None
    return str(param).partition("==")[0].lower() if param is not None else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``gpu`` items without a visible CUDA device and ``engine`` items whose engine does not import."""
    if item.get_closest_marker("gpu") is not None:
        from pytest_eagle3.devices import cuda_devices

        state = live_state(item.config)
        if state.cuda is None:
            state.cuda = cuda_devices()
        if state.cuda.count == 0:
            pytest.skip(state.cuda.reason)
    if item.get_closest_marker("engine") is not None:
        engine = item_engine(item)
        kind = _kind(engine)
        missing = missing_modules(LIVE_MODULES) if kind is None or not kind.runs_own_loop else []
        if missing:  # an engine's own generate loop (mlx-vlm) starts no server: none of them is needed
            pytest.skip(f"the live tests need {', '.join(missing)}: {LIVE_EXTRA}")
        if engine is not None and serves_live(engine):
            problem = unusable(engine_install(item.config, engine))
            if problem:
                pytest.skip(problem)


def serving_versions(config: pytest.Config, selected: tuple[EngineVersion, ...]) -> tuple[EngineVersion, ...]:
    """The live contracts' engine versions: the one installed in each engine's interpreter (the version that
    serves, named in test ids and report rows), in place of the newest selected one. Asked only when ``-m``
    selects live tests; an engine that cannot serve, or a pinned version that is not the installed one, stays
    as selected (its tests skip with the reason)."""
    from pytest_eagle3.knowledge.releases import EngineVersion

    if not live_selected(config):
        return selected
    pinned = (resolve(config, "eagle3_engines").value or "").replace(" ", "").lower()
    versions: list[EngineVersion] = []
    for engine in selected:
        if not engine.kind.serves_live:
            versions += [engine] if engine not in versions else []
            continue
        install = engine_install(config, engine.engine)
        if unusable(install) is None and install.version is not None and f"{engine.engine}==" not in pinned:
            engine = EngineVersion(engine.engine, install.version)
        if engine not in versions:
            versions.append(engine)
    return tuple(versions)


def missing_modules(names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` this interpreter cannot import (found without importing them)."""
    import importlib.util

    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # ValueError: blocked (sys.modules[name] is None)
            found = False
        if not found:
            missing.append(name)
    return missing


def live_engine(request: pytest.FixtureRequest, selected: EngineVersion) -> EngineVersion:
    """The installed engine version for ``selected``; skips when it cannot serve or another version is pinned."""
    from pytest_eagle3.knowledge.releases import EngineVersion

    if not selected.kind.serves_live:
        pytest.skip(f"no live server for {selected.label}: the live tests serve with {', '.join(live_engines())}")
    install = engine_install(request.config, selected.engine)
    problem = unusable(install)
    if problem or install.version is None:
        pytest.skip(problem or f"{selected.engine}: no version")
    selection = resolve(request.config, "eagle3_engines").value or ""
    pinned = f"{selected.engine}==" in selection.replace(" ", "").lower()
    if pinned and install.version != selected.version:
        pytest.skip(f"--eagle3-engine asks for {selected.label}, {install.python} has {install.version}")
    return EngineVersion(selected.engine, install.version)


def _server(request: pytest.FixtureRequest, engine: str, target: str, draft: str | None) -> Served:
    from pytest_eagle3.live.cpu_serving import cpu_memory_env, cpu_serving_finding
    from pytest_eagle3.live.errors import ServerError
    from pytest_eagle3.live.launch import args_for, parse_engine_args
    from pytest_eagle3.live.llamacpp import ConversionRefused
    from pytest_eagle3.live.server import start_server

    config = request.config
    state = live_state(config)
    key = (engine, str(Path(target).resolve()), str(Path(draft).resolve()) if draft else None)
    if key not in state.servers:
        install = engine_install(config, engine)
        blocker = cpu_serving_finding(install) if draft else None
        if blocker is not None:
            pytest.skip(f"not started: {blocker.summary} (see live.launch)")
        timeout = settings(config).server_timeout
        extra = args_for(engine, parse_engine_args(settings(config).engine_args))
        log_dir = request.getfixturevalue("tmp_path_factory").mktemp("eagle3-servers")
        try:
            kind = _kind(engine)
            if kind is not None and kind.runs_own_loop:  # mlx-vlm: its own loop, no server
                from pytest_eagle3.live.generate_loop import GenerateLoop

                state.servers[key] = GenerateLoop(install, target, draft, log_dir, steps=settings(config).steps,
                                                  device=live_device(config), timeout=max(timeout, 900.0))
            else:  # llama.cpp: given the GGUFs its converter writes of the target and the draft
                served = _gguf_pair(request, install, target, draft) if kind and kind.serving.converts_checkpoint else None
                state.servers[key] = start_server(install, target, draft, log_dir,
                                                  timeout=timeout, steps=settings(config).steps, extra_args=extra,
                                                  env=cpu_memory_env(install, dict(os.environ), extra),
                                                  device=live_device(config), served=served,
                                                  topk=settings(config).topk,
                                                  draft_tokens=settings(config).draft_tokens)
        except (ServerError, ConversionRefused) as exc:  # a refusing converter: a finding, kept like a failed start
            state.servers[key] = exc
    found = state.servers[key]
    if isinstance(found, Exception):
        pytest.fail(str(found), pytrace=False)
    return found


def _gguf_pair(request: pytest.FixtureRequest, install: EngineInstall, target: str,
               draft: str | None) -> tuple[str, str | None]:
    """llama.cpp serves GGUFs: target and draft converted by the converter of the server's own tree (once a run)."""
    from pytest_eagle3.live.llamacpp import (
        BUILD_COMMAND,
        convert_pair,
        converter_missing,
        converter_tree,
    )

    tree = converter_tree(Path(install.python))
    if tree is None:
        pytest.skip(f"{install.python} is not in a llama.cpp tree with convert_hf_to_gguf.py and gguf-py (set "
                    f"EAGLE3_LLAMACPP_DIR to it, or build with {BUILD_COMMAND})")
    missing = converter_missing()
    if missing:
        pytest.skip(f"llama.cpp's converter needs {', '.join(missing)} in this interpreter: {LLAMACPP_EXTRA}")
    state = live_state(request.config)
    if state.gguf_dir is None:
        state.gguf_dir = request.getfixturevalue("tmp_path_factory").mktemp("eagle3-gguf")
    pair = convert_pair(tree, Path(target), Path(draft) if draft else None, state.gguf_dir)
    return str(pair.target), str(pair.draft) if pair.draft else None


def _target_dir(config: pytest.Config) -> str:
    target = settings(config).target
    if target is None:
        pytest.skip("a live server needs the target model: pass --eagle3-target=DIR")
    path = Path(target)
    if path.is_file():
        pytest.skip(f"a live server needs the target's weights: --eagle3-target={target} names only a config")
    return str(path)


@pytest.fixture(scope="session")
def _eagle3_live_servers(request: pytest.FixtureRequest) -> Generator[LiveState, None, None]:
    """Stops every server this run started, at the end of the session."""
    state = live_state(request.config)
    yield state
    from pytest_eagle3.live.errors import ServerError

    failures = []
    for server in list(state.servers.values()):
        if isinstance(server, Exception):
            continue
        try:
            server.stop()
        except ServerError as exc:
            failures.append(str(exc))
    state.servers.clear()
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@pytest.fixture(scope="session")
def eagle3_live_engine(request: pytest.FixtureRequest, eagle3_engine: EngineVersion) -> EngineVersion:
    """The engine version installed in ``--eagle3-{vllm,sglang}-python`` (skips when it cannot serve)."""
    return live_engine(request, eagle3_engine)


@pytest.fixture(scope="session")
def eagle3_server(request: pytest.FixtureRequest, eagle3_checkpoint: Any, eagle3_live_engine: EngineVersion,
                  _eagle3_live_servers: LiveState) -> Generator[Served, None, None]:
    """A real server of the engine serving ``--eagle3-target`` with the checkpoint as EAGLE-3 draft.

    Stopped once the tests of its checkpoint are done (pytest groups them and tears session fixtures
    down when the checkpoint changes), so one draft server runs at a time next to the baseline.
    """
    server = _server(request, eagle3_live_engine.engine, _target_dir(request.config), str(eagle3_checkpoint.path))
    yield server
    _stop(live_state(request.config), server)


def _stop(state: LiveState, server: Served) -> None:
    """Stop ``server`` and forget it (the runs it made stay); a leftover process fails the test that used it."""
    from pytest_eagle3.live.errors import ServerError

    key = next((k for k, v in state.servers.items() if v is server), None)
    if key is None:
        return
    del state.servers[key]
    try:
        server.stop()
    except ServerError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def eagle3_baseline_server(request: pytest.FixtureRequest, eagle3_live_engine: EngineVersion,
                           _eagle3_live_servers: LiveState) -> Served:
    """The same engine serving ``--eagle3-target`` alone: the greedy baseline."""
    return _server(request, eagle3_live_engine.engine, _target_dir(request.config), None)


def live_run(config: pytest.Config, server: Served) -> LiveRun:
    """The server's run over the reference prompts (once per server and run)."""
    from pytest_eagle3.live.expected import live_prompts

    state, options = live_state(config), settings(config)
    key = (server.engine, server.target, server.draft)
    if key not in state.runs:
        from pytest_eagle3.live.errors import ServerError

        prompts = live_prompts(server.target, options.prompts)
        try:
            state.runs[key] = server.run(prompts, options.continuation)
        except ServerError as exc:  # the engine's own words, not a traceback of ours
            pytest.fail(str(exc), pytrace=False)
    return state.runs[key]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Attach the tail of each live server's log the test used."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call":
        return
    funcargs = getattr(item, "funcargs", {})
    for name in SERVER_FIXTURES:
        server = funcargs.get(name)
        if server is not None and hasattr(server, "log_text"):
            lines = server.log_text().splitlines()[-LOG_SECTION_LINES:]
            from pytest_eagle3.words import plural

            header = f"log: {server.log_path} (last {plural(len(lines), 'line')})"
            report.sections.append((f"eagle3 server: {server.label}", "\n".join([header, *lines])))
