"""A contract is defined once, in ``verdict/contract_table.py``: the contract tests pytest collects, the row each is
parametrised for, the judgement's contracts and the report's order all follow from its rows."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from pytest_eagle3.shell.contract import CONTRACT_MARKER, contract_class
from pytest_eagle3.verdict.contract_table import BY_ID, CHECKPOINT, CONTRACTS, ENGINE, TABLE, defined_at, of_scope
from tests.user_runs import DEMO, TARGET

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_eagle3"


def _collected_tests() -> dict[str, tuple[str, object]]:
    """Contract id -> (``Class.method``, the test function), over the installed contract modules in their order."""
    import pytest_eagle3.contracts as contracts

    found: dict[str, tuple[str, object]] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(contracts.__path__)):
        namespace = vars(importlib.import_module(f"pytest_eagle3.contracts.{module}"))
        for cls in (v for k, v in namespace.items() if k.startswith("Test") and isinstance(v, type)):
            for name, fn in vars(cls).items():
                if name.startswith("test_"):
                    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == CONTRACT_MARKER]
                    assert len(marks) == 1, f"{cls.__name__}.{name} has {len(marks)} contract markers"
                    found[str(marks[0].args[0])] = (f"{cls.__name__}.{name}", fn)
    return found


def test_the_contract_tests_are_the_tables_rows_in_its_order() -> None:
    """Each row is one test, the one its row names, documented with its description; no test outside the table."""
    found = _collected_tests()
    assert list(found) == list(CONTRACTS)
    for contract in TABLE:
        test, fn = found[contract.id]
        assert test == contract.test and getattr(fn, "__doc__", None) == contract.description


def test_a_test_takes_the_engine_version_by_its_scope_not_its_signature() -> None:
    """An engine contract's test is given the engine version (``usefixtures``) because its row is an engine's; a
    checkpoint contract's is not. No contract test names a fixture it does not use."""
    tests = {c.test_name: c for c in TABLE}
    for cls in (contract_class("TestEagle3Engine", "doc"), contract_class("TestEagle3Checkpoint", "doc")):
        for name, fn in vars(cls).items():
            if not name.startswith("test_"):
                continue
            used = [a for m in getattr(fn, "pytestmark", []) if m.name == "usefixtures" for a in m.args]
            assert used == (["eagle3_engine"] if tests[name].scope == ENGINE else []), name
            assert "eagle3_engine" not in fn.__code__.co_varnames


def test_a_class_the_table_gives_no_contract_is_refused() -> None:
    with pytest.raises(LookupError, match="TestNothing"):
        contract_class("TestNothing", "doc")


def test_every_judged_contract_has_its_function_and_a_unique_test() -> None:
    assert len(set(CONTRACTS)) == len(CONTRACTS)
    assert len({c.test for c in TABLE}) == len(TABLE)
    judged = of_scope(CHECKPOINT) + of_scope(ENGINE)
    assert all(c.area is not None for c in judged)
    assert all(c.area is None for c in TABLE if c not in judged), "a live or probe contract is judged by its test"


def test_the_judgement_lists_the_tables_contracts_of_its_row_in_its_order() -> None:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.knowledge.releases import newest
    from pytest_eagle3.verdict import TargetSide, pipeline_for
    from pytest_eagle3.verdict.rows import judgement

    pipeline, ckpt, side = pipeline_for(), Checkpoint.open(str(DEMO)), TargetSide(str(TARGET / "config.json"))
    for engine, scope in ((None, CHECKPOINT), (newest("vllm"), ENGINE)):
        made = judgement(pipeline, ckpt, engine, side)
        assert [o.contract for o in made] == [c.id for c in of_scope(scope)]


def test_a_skipped_contract_points_at_its_row_in_the_table(tmp_path: Path) -> None:
    """``-rs`` lists each skipped contract at its own row of the table (a built test has no source line of its own),
    one line per contract and reason, as when each test was written out."""
    from tests.user_runs import run_python

    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "--eagle3-engine=vllm",
                       "-rs", "-q"], tmp_path)
    skipped = re.findall(r"^SKIPPED \[(\d+)\] (.+?):(\d+): needs the target model", done.stdout, re.M)
    rows = {defined_at(c): c for c in CONTRACTS if BY_ID[c].area is not None}
    named = sorted(rows[int(line)] for _, path, line in skipped if path.endswith("verdict/contract_table.py"))
    assert named == ["engine.acceptance", "reference.acceptance", "reference.convention", "target.consistent"], (
        done.stdout)
