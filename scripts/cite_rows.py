"""Codemod: give hand rows machine-readable cites parsed from their prose (re-runnable: rows that already have
cites are left alone).

    python scripts/cite_rows.py SRC FILE...

SRC holds unpacked releases as ``SRC/<engine>/<version>/`` (the distribution's files). Each FILE is a knowledge
module; in it, every row written as a ``spans(...)`` tuple of 4, an engine module's ``_ROWS`` triple, a
``Row(...)`` call or a ``_row(...)`` call without cites gets the places its prose names (a path, then the classes
and functions after it) that exist in every unpacked release the row covers. Rows it cannot resolve are listed
for a hand fix.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.behaviours import TABLES
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.scanners.citations import UNREACHABLE, CitedRow, hand_rows
from pytest_eagle3.scanners.fingerprint import find

SRC_NAMES = {"mlx-vlm": "mlx-vlm"}
PATH = re.compile(r"[A-Za-z_][\w.]*(?:/[\w.]+)+(?:\.py)?|\b\w+\.py\b")
NAME = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\b")
#: Words never taken for a cited name.
SKIP = {"self", "config", "name", "model", "None", "True", "False", "if", "else", "and", "or", "not", "no", "the"}


@cache
def roots(src: Path, engine: str) -> dict[str, Path]:
    base = src / SRC_NAMES.get(engine, engine)
    found = {}
    for d in base.iterdir() if base.is_dir() else ():
        if d.name in RELEASES[engine]:  # the releases the knowledge covers (a newer tree awaits its rows)
            found[d.name] = d
    return found


@cache
def files(root: Path) -> tuple[str, ...]:
    return tuple(str(p.relative_to(root)) for p in root.rglob("*.py"))


@cache
def tree(root: Path, rel: str) -> ast.Module | None:
    try:
        return ast.parse((root / rel).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def resolve_path(root: Path, text: str) -> str | None:
    text = text.rstrip(".")
    wanted = text if text.endswith(".py") else text + ".py"
    hits = [f for f in files(root) if f == wanted or f.endswith("/" + wanted)]
    if not hits and not text.endswith(".py"):
        hits = [f for f in files(root) if f.endswith("/" + text + "/__init__.py")]
    return min(hits, key=len) if hits else None


def resolve_name(module: ast.Module, name: str, prefer: list[str]) -> str | None:
    if find(module, name) is not None:
        return name
    if "." in name:
        return None
    owners = [node.name for node in ast.walk(module) if isinstance(node, ast.ClassDef)
              and any(isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and c.name == name
                      for c in node.body)]
    owners = [o for o in owners if find(module, o) is not None]
    if len(owners) > 1:
        owners = [o for o in owners if o in prefer] or [o for o in owners if "Eagle" in o] or owners
    return f"{owners[0]}.{name}" if len(owners) == 1 else None


def cites_in(prose: str, root: Path) -> list[Cite]:
    found: list[Cite] = []
    matches = list(PATH.finditer(prose))
    for i, m in enumerate(matches):
        rel = resolve_path(root, m.group())
        if rel is None:
            continue
        module = tree(root, rel)
        after = prose[m.end(): matches[i + 1].start() if i + 1 < len(matches) else len(prose)]
        after = re.split(r"[;(]", after, maxsplit=1)[0]
        names: list[str] = []
        if module is not None:
            candidates = [n for n in NAME.findall(after.split(":")[0]) if n not in SKIP][:4]
            for n in candidates:
                got = resolve_name(module, n, names)
                if got is not None and got not in names:
                    names.append(got)
        found += [Cite(rel, n) for n in names] or [Cite(rel)]
    return list(dict.fromkeys(found))


def covered(cited: CitedRow, engine_roots: dict[str, Path]) -> list[Path]:
    return [root for release, root in engine_roots.items() if cited.covers(release)]


def cites_for(prose: str, cited: CitedRow, src: Path) -> list[Cite]:
    where = covered(cited, roots(src, cited.row.engine))
    if not where:
        return []
    ordered = sorted(where, key=lambda r: Version(r.name))
    first = cites_in(prose, ordered[0])
    return [c for c in first if all(tree(r, c.file) is not None and find(tree(r, c.file), c.qualname) is not None  # type: ignore[arg-type]
                                     for r in ordered)]


def render(cites: list[Cite], indent: int) -> str:
    one = [f'Cite("{c.file}"' + (f', "{c.qualname}"' if c.qualname else "") + ")" for c in cites]
    if indent + sum(len(c) + 2 for c in one) > 116:
        return "(" + (",\n" + " " * (indent + 1)).join(one) + ",)"
    inner = ", ".join(f'Cite("{c.file}"' + (f', "{c.qualname}"' if c.qualname else "") + ")" for c in cites)
    return f"({inner},)"


def lookup(engine: str, since: str, prose: str, behaviour: str | None) -> CitedRow | None:
    if behaviour is not None and behaviour in TABLES:
        for row in TABLES[behaviour].rows_of(engine):  # type: ignore[index]
            if row.since == since:
                return CitedRow(TABLES[behaviour], row)  # type: ignore[index]
    for cited in hand_rows(engine):
        if cited.row.since == since and cited.row.source == prose:
            return cited
    return None


def rewrite(path: Path, src: Path) -> None:
    module_name = ".".join(path.with_suffix("").parts[path.parts.index("pytest_eagle3"):])
    namespace = vars(importlib.import_module(module_name))
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[tuple[int, str]] = []
    unresolved: list[str] = []

    def value(node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), str(path), "eval"), namespace)

    def at(node: ast.AST) -> int:
        return offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]

    def closing(node: ast.AST) -> int:
        """Where to insert before the closing bracket of ``node``: after its last element (and any trailing comma)."""
        end = at(node) - 1
        while text[end - 1].isspace() or text[end - 1] == ",":
            end -= 1
        return end

    def add(node: ast.Tuple | ast.Call, engine: str, since: str, source: ast.expr, behaviour: str | None) -> None:
        if engine in UNREACHABLE:
            return
        prose = value(source)
        cited = lookup(engine, since, prose, behaviour)
        if cited is not None and cited.row.unmodelled is not None:
            return
        if cited is None:
            unresolved.append(f"{path.name}:{node.lineno} {engine} {since}: no row found")
            return
        cites = cites_for(prose, cited, src)
        if not cites:
            unresolved.append(f"{path.name}:{node.lineno} {cited.label}: {prose}")
            return
        items = node.elts if isinstance(node, ast.Tuple) else [*node.args, *(k.value for k in node.keywords)]
        later = [e for e in items if e.lineno != node.lineno]
        if later:
            line = lines[later[0].lineno - 1]
            indent = len(line) - len(line.lstrip())
        else:
            indent = items[0].col_offset
        keyword = "cites=" if isinstance(node, ast.Call) else ""
        edits.append((closing(node), f",\n{' ' * indent}{keyword}{render(cites, indent + len(keyword))}"))

    engine_name = namespace.get("NAME")
    first = namespace.get("RELEASES", ("",))[0] if engine_name else ""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = node.func.id
            if fn == "spans" and engine_name and isinstance(node.args[0], ast.Constant):
                behaviour = value(node.args[0])
                for arg in node.args[1:]:
                    if isinstance(arg, ast.Tuple) and len(arg.elts) == 4:
                        add(arg, engine_name, value(arg.elts[0]), arg.elts[3], behaviour)
            elif fn in ("Row", "_row") and len(node.args) >= 4 and not any(k.arg == "cites" for k in node.keywords):
                try:
                    engine, since = value(node.args[0]), value(node.args[1])
                except NameError:  # a row built by code (from a scan), not written by hand
                    continue
                add(node, engine, since, node.args[3], None)
        elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in ("_CENTRAL", "CAPTURE_ROWS")
              and isinstance(node.value, ast.Tuple)):
            for row in node.value.elts:  # capture_engines: CaptureEntry(engine, since, family, support, source, archs)
                if isinstance(row, ast.Call) and len(row.args) == 6 and not row.keywords:
                    add(row, value(row.args[0]), value(row.args[1]), row.args[4], None)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "_ROWS":
            assert isinstance(node.value, ast.Tuple) and engine_name
            for row in node.value.elts:
                if isinstance(row, ast.Tuple) and len(row.elts) == 3:
                    add(row, engine_name, first, row.elts[2], value(row.elts[0]))
    for offset, insert in sorted(edits, reverse=True):
        text = text[:offset] + insert + text[offset:]
    if edits and "import Cite" not in text:
        text = text.replace("\nfrom pytest_eagle3.", "\nfrom pytest_eagle3.knowledge.evidence import Cite\nfrom pytest_eagle3.", 1)
    path.write_text(text, encoding="utf-8")
    print(f"{path}: {len(edits)} rows cited, {len(unresolved)} left for a hand fix")
    for line in unresolved:
        print("  " + line)


def main(argv: list[str]) -> int:
    src, *paths = argv
    for p in paths:
        rewrite(Path(p), Path(src))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
