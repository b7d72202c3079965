"""Public fixtures: the checkpoint view and the target model, for the contracts and users' tests.

Imports of torch and the readers happen inside the fixtures, never at plugin import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.options import aux_convention, resolve

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.engines.plan import LoadPlan
    from pytest_eagle3.engines.versions import EngineVersion
    from pytest_eagle3.target import TargetModel

_OPENED: dict[str, Checkpoint] = {}


def open_cached(path: str) -> Checkpoint:
    """One ``Checkpoint`` per path and process: headers are parsed once per session."""
    from pytest_eagle3.checkpoint import Checkpoint

    if path not in _OPENED:
        _OPENED[path] = Checkpoint.open(path)
    return _OPENED[path]


_PLANS: dict[tuple[str, str, str | None, str | None], LoadPlan] = {}


def clear_cache() -> None:
    """Forget opened checkpoints and plans (end of a run; in-process pytester runs reuse the module)."""
    _OPENED.clear()
    _PLANS.clear()


def checkpoint_ids(paths: tuple[str, ...]) -> list[str]:
    """Readable, unique test ids: the folder name, with parents added only to break ties."""
    parts = [Path(p).resolve().parts or (p,) for p in paths]
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


@pytest.fixture(scope="session")
def eagle3_checkpoint(request: pytest.FixtureRequest) -> Checkpoint:
    """The draft checkpoint under test (one per ``--eagle3-ckpt``), opened lazily."""
    path = getattr(request, "param", None)
    if path is None:
        pytest.skip("no EAGLE-3 checkpoint given: pass --eagle3-ckpt=PATH (or set EAGLE3_CKPT)")
    return open_cached(str(path))


@pytest.fixture(scope="session")
def eagle3_target(request: pytest.FixtureRequest) -> TargetModel:
    """The target model's config; skips when ``--eagle3-target`` is not given."""
    from pytest_eagle3.target import TargetModel

    resolved = resolve(request.config, "eagle3_target")
    if resolved.value is None:
        pytest.skip("needs the target model: pass --eagle3-target=DIR (or its config.json)")
    return TargetModel.open(resolved.value)


@pytest.fixture(scope="session")
def eagle3_engine(request: pytest.FixtureRequest) -> EngineVersion:
    """The engine version a contract judges against (one per ``--eagle3-engine`` entry)."""
    from pytest_eagle3.engines.versions import EngineVersion, parse_selection

    spec = getattr(request, "param", None)
    if spec is None:
        return parse_selection("all")[0]
    if isinstance(spec, EngineVersion):
        return spec
    return parse_selection(str(spec))[0]


@pytest.fixture(scope="session")
def eagle3_load_plan(request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint,
                     eagle3_engine: EngineVersion) -> LoadPlan:
    """What ``eagle3_engine`` will do with ``eagle3_checkpoint`` (and the target, when given)."""
    from pytest_eagle3.contract import require_config, require_tensors
    from pytest_eagle3.engines.plan import load_plan
    from pytest_eagle3.target import TargetModel

    require_tensors(eagle3_checkpoint)
    require_config(eagle3_checkpoint)
    target_path = resolve(request.config, "eagle3_target").value
    convention = aux_convention(request.config)
    key = (str(eagle3_checkpoint.path), eagle3_engine.spec, target_path, convention)
    if key not in _PLANS:
        target = TargetModel.open(target_path) if target_path else None
        usable = target if target is not None and target.problem is None else None
        _PLANS[key] = load_plan(eagle3_checkpoint, eagle3_engine, usable, convention)
    return _PLANS[key]
