"""An AST fingerprint of one cited place (:class:`~pytest_eagle3.knowledge.evidence.Cite`) in an unpacked release:
equal fingerprints mean the same code, whatever its line numbers, comments, docstrings or formatting."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from pytest_eagle3.knowledge.evidence import Cite

#: Characters of the sha256 kept: enough to tell releases apart, short enough to read in a table.
DIGITS = 16


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for child in ast.walk(node):
        body = getattr(child, "body", None)
        if (isinstance(child, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            child.body = body[1:] or [ast.Pass()]
    return node


def find(tree: ast.Module, qualname: str) -> ast.AST | None:
    """The class or function ``qualname`` (``Outer.method``) names in ``tree``, at module level, in a class body or
    in an ``if``/``try`` at module level (a platform branch); None where it is not defined."""
    scope: list[ast.stmt] = tree.body
    found: ast.AST | None = tree
    for part in qualname.split(".") if qualname else ():
        found = next((node for node in _definitions(scope) if node.name == part), None)
        if found is None:
            return None
        scope = found.body
    return found


def _definitions(body: list[ast.stmt]) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    out: list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(node)
        elif isinstance(node, ast.If):
            out += _definitions(node.body) + _definitions(node.orelse)
        elif isinstance(node, ast.Try):
            out += _definitions(node.body) + _definitions(node.orelse)
    return out


def fingerprint(root: Path, cite: Cite) -> str | None:
    """The fingerprint of ``cite`` in the release unpacked at ``root`` (the distribution's files: ``root/vllm/...``);
    None where the file or the name does not exist or does not parse."""
    path = root / cite.file
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    node = find(tree, cite.qualname)
    if node is None:
        return None
    dumped = ast.dump(_strip_docstrings(node), include_attributes=False)
    return hashlib.sha256(dumped.encode()).hexdigest()[:DIGITS]
