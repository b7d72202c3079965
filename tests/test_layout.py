"""The layering rule, enforced: import-linter's contracts (pyproject.toml) and no import cycle anywhere."""

from __future__ import annotations

import re
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


PACKAGE = ROOT / "pytest_eagle3"
#: Generated data (their headers name the generator): exempt from the size rule.
GENERATED = PACKAGE / "knowledge" / "generated"
MAX_LOGIC_LINES = 450


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _calls(name: str) -> list[str]:
    """``module:line`` of every line of the package that calls ``name(`` (definitions aside)."""
    found = []
    for path in _modules():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            called = re.search(rf"(?<![\w]){re.escape(name)}\(", code)
            if called and not code.lstrip().startswith(("def ", "class ", '"', "'")) and "``" not in code:
                found.append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_engine_knowledge_rows_live_in_the_knowledge_package_only() -> None:
    outside = [where for where in _calls("Row") if not where.startswith("pytest_eagle3/knowledge/")]
    assert outside == [], outside


def test_behaviours_are_typed_fields_not_strings() -> None:
    assert _calls("prof.value") == [] and _calls("profile(engine).value") == []


def test_only_the_verdict_pipeline_builds_load_plans() -> None:
    """The contracts, plan, fix, the live check and probe.load ask ``pytest_eagle3.verdict``; nothing else
    assembles a plan (``engines/plan.py`` defines it)."""
    outside = [w for w in _calls("load_plan") if not w.startswith(("pytest_eagle3/verdict/", "pytest_eagle3/engines/plan.py"))]
    assert outside == [], outside


def test_each_engine_contract_has_the_area_module_of_its_name() -> None:
    contracts = "\n".join(p.read_text(encoding="utf-8") for p in (PACKAGE / "contracts").glob("test_*.py"))
    areas = sorted(set(re.findall(r'eagle3_contract\("engine\.(\w+)"\)', contracts)) - {"acceptance"})
    assert len(areas) >= 10
    missing = [a for a in areas if not (PACKAGE / "engines" / f"{a}.py").is_file()]
    assert missing == [], f"engine contracts without engines/<area>.py: {missing}"


def test_no_logic_module_is_over_450_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in _modules() if GENERATED not in p.parents
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LOGIC_LINES}
    assert long == {}, long
