"""Public fixtures: the checkpoint view and the target model, for the contracts and users' tests.

Imports of torch and the readers happen inside the fixtures, never at plugin import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.options import resolve

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.target import TargetModel

_OPENED: dict[str, Checkpoint] = {}


def open_cached(path: str) -> Checkpoint:
    """One ``Checkpoint`` per path and process: headers are parsed once per session."""
    from pytest_eagle3.checkpoint import Checkpoint

    if path not in _OPENED:
        _OPENED[path] = Checkpoint.open(path)
    return _OPENED[path]


def clear_cache() -> None:
    """Forget opened checkpoints (end of a pytest run; in-process pytester runs reuse the module)."""
    _OPENED.clear()


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
