"""Public fixtures: the checkpoint view, the target model, the engine version and its load plan.

Per-run state (opened checkpoints, probe results) lives in ``config.stash`` under :data:`RUN_STATE_KEY`,
never in module globals; the target (its config and its one pass) is the run's pipeline's
(``shell.verdicts.pipeline``). The plugin imports this
module in every pytest run, so the readers and the planner are imported inside the fixtures: an
installed plugin costs a run without ``--eagle3-ckpt`` nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_eagle3.shell.contract import contract_scope
from pytest_eagle3.shell.options import is_xdist_worker, settings
from pytest_eagle3.shell.verdicts import forecast_of, pipeline, target_side

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.plan import LoadPlan
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict.judgement import Judgement


@dataclass
class RunState:
    """What one pytest run opens or computes once and shares between contracts."""

    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)
    #: probe.load: the engines to probe (read once, at collection), and each probe's result.
    installed: tuple[InstalledEngine, ...] | None = None
    probes: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)

    def checkpoint(self, path: str) -> Checkpoint:
        """The checkpoint view of ``path``, opened once per run."""
        from pytest_eagle3.checkpoint import Checkpoint

        if path not in self.checkpoints:
            self.checkpoints[path] = Checkpoint.open(path)
        return self.checkpoints[path]


@dataclass(frozen=True)
class InstalledEngine:
    """An engine as ``probe.load`` sees it: the interpreter given for it and the version installed there.

    ``row`` is the engine version the verdict is reported under: the installed one, else (no engine in
    that interpreter) the newest selected version of that engine.
    """

    engine: str
    python: str
    version: str | None
    row: EngineVersion

    @property
    def spec(self) -> str:
        """The version installed, ``vllm==0.33.0``."""
        return self.row.spec

    def __str__(self) -> str:
        return self.spec


RUN_STATE_KEY = pytest.StashKey[RunState]()


def run_state(config: pytest.Config) -> RunState:
    """This run's shared state (created on first use)."""
    if RUN_STATE_KEY not in config.stash:
        config.stash[RUN_STATE_KEY] = RunState()
    return config.stash[RUN_STATE_KEY]


def checkpoint_ids(paths: tuple[str, ...]) -> list[str]:
    """Readable, unique test ids: the folder name, with parents added only to break ties."""
    parts = [(_hub_id(p),) if p.startswith("hf://") else Path(p).resolve().parts or (p,) for p in paths]
    depth = 1
    while True:
        ids = ["/".join(part[-depth:]) for part in parts]
        if len(set(ids)) == len(ids) or depth >= max(len(p) for p in parts):
            break
        depth += 1
    seen: dict[str, int] = {}
    unique = []
    for name in ids:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return unique


def _hub_id(spec: str) -> str:
    """``hf://ORG/NAME@SHA`` as a test id: ``ORG/NAME@`` and the commit's first 7 digits."""
    repo, _, sha = spec.removeprefix("hf://").partition("@")
    return f"{repo}@{sha[:7]}" if sha else repo


@pytest.fixture(scope="session")
def eagle3_checkpoint(request: pytest.FixtureRequest) -> Checkpoint:
    """The draft checkpoint under test (one per ``--eagle3-ckpt``), opened lazily."""
    path = getattr(request, "param", None)
    if path is None:
        pytest.skip("no EAGLE-3 checkpoint given: pass --eagle3-ckpt=PATH (or set EAGLE3_CKPT)")
    return run_state(request.config).checkpoint(str(path))


@pytest.fixture(scope="session")
def eagle3_target(request: pytest.FixtureRequest) -> TargetModel:
    """The target model's config; skips when ``--eagle3-target`` is not given."""
    path = settings(request.config).target
    if path is None:
        pytest.skip("needs the target model: pass --eagle3-target=DIR (or its config.json)")
    return pipeline(request.config).target_model(path)


@pytest.fixture(scope="session")
def eagle3_engine(request: pytest.FixtureRequest) -> EngineVersion:
    """The engine version a contract judges against (one per ``--eagle3-engine`` entry)."""
    spec = getattr(request, "param", None)
    return spec if spec is not None else settings(request.config).engines[0]


@pytest.fixture(scope="session")
def eagle3_load_plan(request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint,
                     eagle3_engine: EngineVersion) -> LoadPlan:
    """What ``eagle3_engine`` will do with ``eagle3_checkpoint`` (and the target, when given)."""
    return forecast_of(request.config, eagle3_checkpoint, eagle3_engine).plan


@pytest.fixture
def eagle3_judgement(request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint) -> Judgement:
    """Every contract's outcome for this checkpoint and, for a test in an engine version's row (its scope), that
    engine version: the pipeline's judgement, which the contracts assert on and every command renders."""
    in_row = contract_scope(request.node, request.fixturenames) == "engine"
    engine = request.getfixturevalue("eagle3_engine") if in_row else None
    from pytest_eagle3.verdict.rows import judgement

    return judgement(pipeline(request.config), eagle3_checkpoint, engine, target_side(request.config))


def installed_engines(config: pytest.Config) -> tuple[InstalledEngine, ...]:
    """The engines probe.load runs: each one given an interpreter, at its installed version (read from the
    package metadata there). Read once per run; without an interpreter option there is none, and no
    process is started."""
    from packaging.version import InvalidVersion, Version

    from pytest_eagle3.knowledge.releases import EngineVersion, newest
    from pytest_eagle3.probes.run import ENGINES, engine_version

    state, options = run_state(config), settings(config)
    if state.installed is None:
        found = []
        for engine in ENGINES:
            selected = [e for e in options.engines if e.engine == engine]
            python = options.python_for(engine)
            if python is None:
                continue
            row = max(selected) if selected else None
            version = engine_version(engine, python)
            try:
                row = EngineVersion(engine, Version(version)) if version else row
            except InvalidVersion:
                pass
            found.append(InstalledEngine(engine, python, version, row or newest(engine)))
        state.installed = tuple(found)
    return state.installed


@pytest.fixture(scope="session")
def eagle3_installed_engine(request: pytest.FixtureRequest) -> InstalledEngine:
    """The engine probe.load runs (one per ``--eagle3-{vllm,sglang}-python``, at its installed version)."""
    found: InstalledEngine | None = getattr(request, "param", None)
    if found is None:
        pytest.skip("no EAGLE-3 checkpoint given: pass --eagle3-ckpt=PATH (or set EAGLE3_CKPT)")
    return found


def probe_result(config: pytest.Config, ckpt: Checkpoint, installed: InstalledEngine, target: str) -> dict[str, Any]:
    """The engine's loader on ``ckpt`` (``probes.run`` schema). On first use for an engine, every probe-ready
    checkpoint of the run is probed in one engine process (under xdist, only this one)."""
    from pytest_eagle3.probes.run import run_probes

    state, options = run_state(config), settings(config)
    key = (installed.engine, installed.python, target)
    here = str(ckpt.path)
    if (*key, here) not in state.probes:
        others = [] if is_xdist_worker(config) else [state.checkpoint(p) for p in options.checkpoints]
        paths = [here, *(str(c.path) for c in others if probe_ready(c) and (*key, str(c.path)) not in state.probes)]
        paths = list(dict.fromkeys(paths))
        results = run_probes(installed.engine, installed.python, [(p, target) for p in paths])
        state.probes.update({(*key, p): r for p, r in zip(paths, results)})
    return state.probes[(*key, here)]


def probe_ready(ckpt: Checkpoint) -> bool:
    """Whether an engine's loader can be pointed at the checkpoint (readable files, a config, a draft)."""
    from pytest_eagle3.rules.draft_kind import classify_checkpoint

    return not ckpt.problems and bool(ckpt.tensors) and ckpt.config_raw is not None and ckpt.weights_local and \
        classify_checkpoint(ckpt).is_draft
