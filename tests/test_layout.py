"""The layering rule, enforced: import-linter's contracts (pyproject.toml) and no import cycle anywhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept() -> None:
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if linter is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([linter, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_no_import_cycle_between_any_two_modules() -> None:
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install -e '.[test]')")
    graph = grimp.build_graph("pytest_eagle3", exclude_type_checking_imports=True)
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert cycles == [], "\n".join(cycles)
