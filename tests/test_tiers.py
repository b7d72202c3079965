"""The unit tier keeps its promise: each of its modules exists and starts nothing (no subprocess, no pytester run,
no run of the commands as a user types them, no target forward), so ``pytest -m unit`` stays pure and fast."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.tiers import UNIT_MODULES

TESTS = Path(__file__).resolve().parent
#: What a unit module may not name: each starts a process or runs a model.
FORBIDDEN = {"subprocess", "Popen", "pytester", "runpytest", "run_contracts", "user_runs", "run_python",
             "TransformersSource", "load_target", "transformers"}


def _names(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {part for alias in node.names for part in alias.name.split(".")}
            if isinstance(node, ast.ImportFrom) and node.module:
                found |= set(node.module.split("."))
    return found


@pytest.mark.parametrize("module", sorted(UNIT_MODULES))
def test_a_unit_module_starts_no_process_and_runs_no_model(module: str) -> None:
    path = TESTS / f"{module}.py"
    assert path.is_file(), f"tests/tiers.py names {module}, which is not a test module"
    started = sorted(_names(path) & FORBIDDEN)
    assert not started, f"{module} names {started}: it belongs in the fast tier, not the unit tier"


def test_the_forbidden_names_are_found_where_a_module_uses_them(tmp_path: Path) -> None:
    module = tmp_path / "test_runs.py"
    module.write_text("import subprocess\n\ndef test_x(pytester):\n    subprocess.run(['true'])\n")
    assert _names(module) & FORBIDDEN == {"subprocess", "pytester"}


def test_the_collected_tests_are_marked_as_the_tier_says(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    marked = {i.nodeid.split("::")[0] for i in items if i.get_closest_marker("unit") is not None}
    assert marked <= {f"tests/{m}.py" for m in UNIT_MODULES}, marked - {f"tests/{m}.py" for m in UNIT_MODULES}
    assert not [i.nodeid for i in items if i.get_closest_marker("unit") and any(
        i.get_closest_marker(m) for m in ("slow", "engine", "gpu"))]
    assert request.node.get_closest_marker("unit") is not None  # this module is in the tier, and so is this test
