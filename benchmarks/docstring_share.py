"""The share of public names in ``pytest_eagle3/`` without a docstring.

A public name is a module-level function or class, or a method of a public class, whose name has no leading
underscore (dunder methods aside); the generated scans are data and are left out.
``python benchmarks/docstring_share.py`` prints the share and each name without one; ``tests/test_docstrings.py``
holds the share at zero.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_eagle3"
#: Folders of data, not API: the generated scans.
LEFT_OUT = ("knowledge/generated",)


def modules(package: Path = PACKAGE) -> Iterator[Path]:
    """Every module of the package that is measured."""
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if not any(relative == left or relative.startswith(left + "/") for left in LEFT_OUT):
            yield path


def _public(name: str) -> bool:
    return not name.startswith("_")


def public_names(path: Path) -> Iterator[tuple[str, bool]]:
    """(``module:qualified name``, has a docstring) for each public function, class and method in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(PACKAGE.parent).as_posix()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _public(node.name):
            yield f"{where}:{node.name}", ast.get_docstring(node) is not None
            if isinstance(node, ast.ClassDef):
                for inner in node.body:
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(inner.name) \
                            and not _overrides(inner):
                        yield f"{where}:{node.name}.{inner.name}", ast.get_docstring(inner) is not None


#: Decorators that give the function its docstring: ``@override`` (said where it is declared) and ``@contract_test``
#: (the contract table's description, ``shell/contract.py``).
DOCUMENTING = ("override", "contract_test")


def _overrides(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method whose decorator documents it (:data:`DOCUMENTING`) says what it does elsewhere."""
    return any((isinstance(d, ast.Name) and d.id in DOCUMENTING)
               or (isinstance(d, ast.Attribute) and d.attr in DOCUMENTING) for d in method.decorator_list)


def undocumented(package: Path = PACKAGE) -> tuple[list[str], int]:
    """The public names without a docstring, and how many public names there are."""
    missing, total = [], 0
    for path in modules(package):
        for name, documented in public_names(path):
            total += 1
            if not documented:
                missing.append(name)
    return missing, total


def main() -> int:
    missing, total = undocumented()
    share = len(missing) / total if total else 0.0
    print(f"{len(missing)} of {total} public names without a docstring ({share:.1%})")
    for name in missing:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
