"""The layering rule, enforced: import-linter's contracts (pyproject.toml) and no import cycle anywhere."""

from __future__ import annotations

import ast
import functools
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


#: Circles known and not yet broken, each as the sorted modules of one strongly connected set; nothing else may be
#: one. None is left: the last, the verdict's (pipeline <-> rows <-> assess_*), is broken by concept (the records
#: in verdict/records.py, the judgement in verdict/rows.py; imports run rows -> assess_* -> pipeline -> records).
KNOWN_CIRCLES: tuple[tuple[str, ...], ...] = ()


def _circles(imports: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Every set of two or more modules that import each other round, through any chain (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[tuple[str, ...]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(imports[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            members = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(members) > 1:
                found.append(tuple(sorted(members)))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return sorted(found)


def test_circles_are_found_through_any_chain() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert _circles({"a": {"b"}, "b": set()}) == []


@functools.cache
def _package_imports() -> dict[str, set[str]]:
    """Each package module -> the package modules it imports: every import, at import time, inside a function or
    only for the type checker (grimp's graph, as import-linter builds it)."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install -e '.[test]')")
    graph = grimp.build_graph("pytest_eagle3", exclude_type_checking_imports=False)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_no_import_circle_through_any_import() -> None:
    """Every import counts, whether it runs at import time, inside a function, or only for the type checker
    (``if TYPE_CHECKING:``): a circle held apart by where an import sits is still one concept split in two."""
    circles = _circles(_package_imports())
    new = [" <-> ".join(c) for c in circles if c not in KNOWN_CIRCLES]
    assert new == [], "import circles (break them by concept, not by hiding an import):\n" + "\n".join(new)
    gone = [c for c in KNOWN_CIRCLES if c not in circles]
    assert gone == [], f"broken circles still listed in KNOWN_CIRCLES: {gone}"

PACKAGE = ROOT / "pytest_eagle3"
#: Generated data (their headers name the generator): exempt from the size rule.
GENERATED = PACKAGE / "knowledge" / "generated"
#: The scanners read each engine's released source tree by its own layout (one reader per engine's package shape):
#: they are the maintainers' tools that write ``generated/``, not the judgement, so naming an engine is their job.
SCANNERS = PACKAGE / "scanners"
#: A module is one concept, not a size: an engine contract area is one module with its whole story (the aux-layer
#: area, from the ids an engine reads to the fix, is about 860 lines), so the bound sits above the largest whole
#: story. It only catches a module that has grown into several concepts; the concepts themselves are held apart by
#: the layers contract, the per-area / per-engine layout tests and the single-importer rule below.
MAX_LOGIC_LINES = 1000
#: The package of the engine contract areas, and the module that assembles them into a plan (it imports each).
ENGINES_PACKAGE = "pytest_eagle3.engines"
PLAN_ASSEMBLER = "pytest_eagle3.engines.plan"


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
    """``engine.<area>`` rests on ``engines/<area>.py`` (``verdict.resting``); only the acceptance, which prices the
    whole plan, has none."""
    from pytest_eagle3.verdict.contract_table import ENGINE, of_scope
    from pytest_eagle3.verdict.resting import area_module

    engine_contracts = of_scope(ENGINE)
    assert len(engine_contracts) >= 10
    missing = [c.id for c in engine_contracts if area_module(c.id) is None]
    assert missing == ["engine.acceptance"], f"engine contracts without engines/<area>.py: {missing}"


def test_no_logic_module_grows_past_the_bound() -> None:
    # An engine's module is one engine's rows (issue 48: an engine is one module), data that grows by a span per
    # release read: its cohesion is the engine, not a size.
    long = {str(p.relative_to(ROOT)): n for p in _modules() if GENERATED not in p.parents
            and ENGINE_MODULES not in p.parents
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LOGIC_LINES}
    assert long == {}, (f"modules over {MAX_LOGIC_LINES} lines: {long}. Such a module holds several concepts: split it "
                        "where its story splits (each part a concept other modules ask for), never at a line count")


def _satellites(imports: dict[str, set[str]], package: str, assembler: str) -> dict[str, str]:
    """Modules of ``package`` that exactly one other module imports, that one not ``assembler``: module -> importer."""
    importers: dict[str, set[str]] = {}
    for module, imported in imports.items():
        for other in imported - {module}:
            importers.setdefault(other, set()).add(module)
    return {module: only for module in sorted(imports) if module.startswith(package + ".")
            and len(found := importers.get(module, set())) == 1 and (only := next(iter(found))) != assembler}


def test_the_single_importer_rule_sees_a_satellite() -> None:
    imports = {"p.engines.plan": {"p.engines.fc", "p.engines.vocab"}, "p.engines.fc": {"p.engines.fc_helper",
               "p.engines.shared"}, "p.engines.vocab": {"p.engines.shared"}, "p.engines.fc_helper": set(),
               "p.engines.shared": set(), "p.scan": {"p.engines.scanned"}, "p.engines.scanned": set()}
    assert _satellites(imports, "p.engines", "p.engines.plan") == {"p.engines.fc_helper": "p.engines.fc",
                                                                    "p.engines.scanned": "p.scan"}


def test_an_engines_module_with_one_importer_is_a_contract_area() -> None:
    """Cohesion, not size (issue 48): in ``engines/``, a module that one other package module alone imports (any
    import, as the circle check counts them) is either a contract area that ``engines/plan.py`` assembles, or part
    of its importer's story, and then it lives in that module."""
    satellites = _satellites(_package_imports(), ENGINES_PACKAGE, PLAN_ASSEMBLER)
    assert satellites == {}, (
        "engines/ modules that only one other module imports, and that engines/plan.py does not assemble as a "
        "contract area (module <- its one importer):\n" + "\n".join(f"  {m} <- {i}" for m, i in satellites.items())
        + "\nA satellite is part of its importer's story: merge it into that module (in the order a reader follows "
        "it), or, where it is the home of a concept of its own, move it to the package that asks for it "
        "(scanners/field_coverage.py); a new contract area is a module that engines/plan.py assembles.")


#: The registry and the engines' own modules: the only place an engine's name may decide anything.
ENGINE_MODULES = PACKAGE / "knowledge" / "engines"
#: The names the tables use for the engines (knowledge.releases), and the lineage map an engine used to be.
ENGINE_CONSTANTS = frozenset({"SGLANG", "VLLM", "TOKENSPEED", "MLX_VLM", "TRTLLM", "LMDEPLOY", "LLAMACPP"})


def _names_an_engine(node: ast.AST, names: frozenset[str]) -> bool:
    """A string literal that is an engine's name, one of the name constants, or a tuple / list / set of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in names
    if isinstance(node, ast.Name):
        return node.id in ENGINE_CONSTANTS
    if isinstance(node, ast.Attribute):
        return node.attr in ENGINE_CONSTANTS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_an_engine(e, names) for e in node.elts)
    return False


def _decides_by_name(node: ast.AST, names: frozenset[str]) -> str | None:
    """What ``node`` does with an engine's name, where it decides by it: a comparison, a lookup, a switch."""
    if isinstance(node, ast.Compare) and any(_names_an_engine(n, names) for n in (node.left, *node.comparators)):
        return "compares an engine's name"
    if isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or getattr(node, "attr", "")) \
            in ("LINEAGE", "RELEASE_PREFIX"):
        return "reads the lineage map"
    if isinstance(node, ast.Dict) and any(k is not None and not isinstance(k, ast.Tuple) and _names_an_engine(k, names)
                                          for k in node.keys):  # a (engine, class) key is a row, not a switch
        return "keys a table by engine name"
    if isinstance(node, ast.Subscript) and _names_an_engine(node.slice, names):
        return "looks up by engine name"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args and _names_an_engine(node.args[0], names):
        return "looks up by engine name"
    if isinstance(node, ast.MatchValue) and _names_an_engine(node.value, names):
        return "matches an engine's name"
    return None


def test_no_module_outside_the_engines_own_decides_by_an_engines_name() -> None:
    """An engine is an object (knowledge/engine.py): the areas, the verdict, the probes, the live code and the
    commands ask it (``prof.kind.loading.fc_without_aux``, ``engine.kind.serving.converts_checkpoint``), never compare its name or
    lineage. Only the registry and the engines' modules (knowledge/engines/) may; a row naming its engine
    (``Row(VLLM, ...)``) or a fix naming another engine's release is not a decision by name."""
    from pytest_eagle3.knowledge.engines import REGISTRY

    names = frozenset(engine.name for engine in REGISTRY)
    found = []
    for path in _modules():
        if ENGINE_MODULES in path.parents or SCANNERS in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = _decides_by_name(node, names)
            if what is not None:
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {what}")
    assert found == [], "\n".join(found)


def test_the_layout_check_sees_each_way_of_deciding_by_name() -> None:
    names = frozenset({"vllm", "llamacpp"})
    decides = ['engine == "vllm"', "e.engine != LLAMACPP", "engine in (SGLANG, VLLM)", "LINEAGE[engine]",
               '{"vllm": 1}', "TEXT[VLLM]", "TEXT.get(LMDEPLOY)", 'match e:\n    case "llamacpp":\n        pass']
    fine = ["Row(VLLM, '0.8.5', 1, 'source')", "engine == other", "prof.kind.serving.converts_checkpoint",
            'serve_with("multi_layer", SGLANG, ok)', "engine_named(name).display"]
    seen = {code: any(_decides_by_name(n, names) for n in ast.walk(ast.parse(code))) for code in decides + fine}
    assert seen == {**dict.fromkeys(decides, True), **dict.fromkeys(fine, False)}


def test_the_engine_record_is_grouped_by_concern() -> None:
    """An engine author reads a short record: its identity and releases, then one group per concern, each a record
    of its own with a default for every field (an engine fills only the groups that apply)."""
    import dataclasses

    from pytest_eagle3.knowledge.engine import Engine

    fields = dataclasses.fields(Engine)
    assert len(fields) <= 25, [f.name for f in fields]
    groups = [f for f in fields if dataclasses.is_dataclass(f.default)]
    assert {f.name for f in groups} >= {"loading", "serving", "live", "interpreter", "scans", "tables"}
    for group in groups:
        assert all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
                   for f in dataclasses.fields(group.default)), group.name  # type: ignore[arg-type]
