"""Every public name of the package says what it is: ``benchmarks/docstring_share.py`` measures the share of public
functions, classes and methods without a docstring (the generated scans aside), and it stays at zero."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docstring_share", ROOT / "benchmarks" / "docstring_share.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docstring_share", module)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_docstring() -> None:
    missing, total = _measure().undocumented()
    assert total > 1000, f"only {total} public names measured: the walk missed the package"
    assert not missing, f"{len(missing)} of {total} public names without a docstring:\n  " + "\n  ".join(missing)


def test_the_measure_finds_a_missing_docstring_and_skips_private_names(tmp_path: Path) -> None:
    measure = _measure()
    package = tmp_path / "pytest_eagle3"
    (package / "knowledge" / "generated").mkdir(parents=True)
    (package / "knowledge" / "generated" / "scan.py").write_text("def read():\n    pass\n")  # data, left out
    (package / "api.py").write_text('''
def said():
    """Said."""

def unsaid():
    pass

def _private():
    pass

class Thing:
    """A thing."""

    def __init__(self):
        pass

    def method(self):
        pass

    def _helper(self):
        pass
''')
    measure.PACKAGE = package
    try:
        missing, total = measure.undocumented(package)
    finally:
        measure.PACKAGE = ROOT / "pytest_eagle3"
    assert (sorted(missing), total) == (["pytest_eagle3/api.py:Thing.method", "pytest_eagle3/api.py:unsaid"], 4)
