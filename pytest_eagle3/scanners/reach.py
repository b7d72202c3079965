"""Scan released engine sources for the layer ids each target class's EAGLE-3 capture loop can reach.

    python -m pytest_eagle3.scanners.reach vllm DIR... > reach.json     (DIR: an unpacked wheel root per release)
    python -m pytest_eagle3.scanners.reach sglang DIR...
    python -m pytest_eagle3.scanners.reach --module sglang.json vllm.json > pytest_eagle3/knowledge/generated/reach_table.py

For every registered architecture that captures aux states (the test of ``scanners/capture.py``), the
scan finds the ``forward`` holding the capture loop (the class itself, a base, or the inner model it
builds as ``self.model = X(...)``, bases resolved by name) and reads four facts from its AST, all in
*layer-input indices* j (j = the residual stream entering decoder layer j; L = the last layer's output):

* ``zero``: what index 0 does: ``embeddings`` (captured: a pre-loop capture, or a loop capture guarded
  against ``residual is None`` or without a residual), ``crash`` (``hidden_states + residual`` while
  residual is still None: TypeError on the first forward);
* ``last``: whether index L is reachable (a capture after the loop, e.g. ``if len(self.layers) in ...``,
  or an in-loop ``idx + 1`` capture after the layer call);
* ``index``: ``global`` (the loop runs over ``range(start_layer, end_layer)``: ids are model layer ids
  under pipeline parallelism) or ``stage`` (``enumerate`` over the stage's slice: ids count from the
  stage's first layer);
* ``past``: what an index past the loop does: ``never-fires`` (silently), or ``index-error`` (the model's
  ``set_eagle3_layers_to_capture`` flags ``self.layers[i]`` for each index: IndexError at startup);
* ``where``: ``file.py:Class.forward`` of the loop.

Prints ``{"releases": [...], "reach": {arch: [[first release, zero, last, index, past, where], ...]}}``: one
entry per change, oldest first. A class whose loop the scan cannot read gets no entry.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytest_eagle3.scanners.capture import known_roots, scan_release

#: The attribute holding the requested indices, per engine; vLLM 0.18+ also captures via a mixin call.
CAPTURE_SETS = {"vllm": ("aux_hidden_state_layers",), "sglang": ("layers_to_capture",)}
MIXIN_CALL = "_maybe_add_hidden_state"
UNREAD = "unread"
#: Attributes an outer class keeps its inner model in.
INNER = ("model", "language_model", "llm", "transformer", "text_model")


@dataclass(frozen=True)
class Loop:
    """One capture loop's reading: ``zero``, ``last``, ``index``, ``past`` and ``where``, as the module docstring
    defines them."""

    zero: str
    last: bool
    index: str
    where: str
    past: str = "never-fires"


@dataclass
class ClassInfo:
    """One class of a model package: its base names, method names, the inner-model classes its ``__init__`` builds, and
    its capture loop."""

    bases: list[str]
    methods: set[str]
    inner: list[str] = field(default_factory=list)
    loop: Loop | None = None


def _attr_name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _mentions_set(node: ast.AST, sets: tuple[str, ...]) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in sets for n in ast.walk(node))


#: SGLang from 0.5.4.post2 (Qwen2-MoE and later): the layer carries a flag its model set per index.
LAYER_FLAG = "_is_layer_to_capture"


def _flag(node: ast.AST) -> TypeGuard[ast.Call]:
    """``getattr(layer, "_is_layer_to_capture", False)``: the layer's own capture flag."""
    return isinstance(node, ast.Call) and _attr_name(node.func) == "getattr" and len(node.args) >= 2 \
        and isinstance(node.args[1], ast.Constant) and node.args[1].value == LAYER_FLAG


def _compares(node: ast.AST, sets: tuple[str, ...], var: str | None = None) -> list[ast.expr]:
    """The left sides of ``X in <capture set>`` anywhere in ``node``, the index arg of mixin calls, and
    (given the loop variable) a layer-flag test, read as ``var in <capture set>``."""
    found: list[ast.expr] = []
    for n in ast.walk(node):
        if _flag(n):
            found.append(n)
            continue
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In) \
                and _mentions_set(n.comparators[0], sets):
            found.append(n.left)
        elif isinstance(n, ast.Call) and _attr_name(n.func) == MIXIN_CALL and len(n.args) >= 2:
            found.append(n.args[1])
    return found


def _offset(expr: ast.expr, var: str) -> int | None:
    """0 for ``var`` (and a layer-flag test), k for ``var + k`` / ``var - k``; None for anything else."""
    if (isinstance(expr, ast.Name) and expr.id == var) or _flag(expr):
        return 0
    if isinstance(expr, ast.BinOp) and isinstance(expr.left, ast.Name) and expr.left.id == var \
            and isinstance(expr.right, ast.Constant) and isinstance(expr.right.value, int):
        if isinstance(expr.op, ast.Add):
            return expr.right.value
        if isinstance(expr.op, ast.Sub):
            return -expr.right.value
    return None


def _loop_var(loop: ast.For) -> tuple[str | None, str]:
    """(the index variable, ``global`` or ``stage``) of a layer loop."""
    target, it = loop.target, loop.iter
    if isinstance(it, ast.Call) and _attr_name(it.func) == "enumerate" and isinstance(target, ast.Tuple) \
            and target.elts and isinstance(target.elts[0], ast.Name):
        starts = [k.value for k in it.keywords if k.arg == "start"] or it.args[1:2]
        sliced = any(isinstance(n, (ast.Slice,)) or (isinstance(n, ast.Call) and _attr_name(n.func) == "islice")
                     for n in ast.walk(it.args[0])) if it.args else False
        return target.elts[0].id, "global" if starts or not sliced else "stage"
    if isinstance(it, ast.Call) and _attr_name(it.func) == "range" and isinstance(target, ast.Name):
        return target.id, "global"
    return (target.id if isinstance(target, ast.Name) else None), "global"


def _layer_calls(node: ast.AST) -> list[ast.Call]:
    """The decoder-layer calls in ``node``: ``layer(...)``, ``decoder_layer(...)`` or ``self.layers[i](...)``."""
    found = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id in ("layer", "decoder_layer")) or (
                    isinstance(f, ast.Subscript) and _attr_name(f.value) == "layers"):
                found.append(n)
    return found


def _flat(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements in order, ``with`` blocks opened (a layer loop often runs inside a recorder context)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.extend(_flat(stmt.body) if isinstance(stmt, ast.With) else [stmt])
    return out


def _guarded(node: ast.AST) -> bool:
    """A capture that tolerates residual None (``... if residual is not None else ...``, ``snapshot(h, r)``,
    the mixin), or has no residual."""
    text = ast.unparse(node)
    return any(w in text for w in ("is not None", "is None", "snapshot(", MIXIN_CALL)) or "residual" not in text


def _read_loop(func: ast.FunctionDef, sets: tuple[str, ...], where: str) -> Loop | None:
    loops = [n for n in ast.walk(func) if isinstance(n, ast.For) and _compares(n, sets)]
    if not loops:
        return None
    loop = loops[0]
    var, index = _loop_var(loop)
    if var is None:
        return None
    zero, last, before_layer = "", False, True
    for stmt in _flat(loop.body):
        calls = _layer_calls(stmt)
        inside = {id(n) for c in calls for n in ast.walk(c)}
        for expr in _compares(stmt, sets):
            shift = _offset(expr, var)
            if shift is None:
                continue
            as_argument = id(expr) in inside  # a capture handed to the layer: the layer's input
            after = not before_layer and not as_argument
            reach = shift + (1 if after else 0)
            if reach >= 1 and after:
                last = True
            if reach == 0:
                zero = "embeddings" if (as_argument or _guarded(stmt)) else "crash"
        if calls:
            before_layer = False
    if "residual = None" not in ast.unparse(func) and zero == "crash":
        zero = "embeddings"  # residual is never None here
    body = func.body
    pos = next(i for i, s in enumerate(body) if any(n is loop for n in ast.walk(s)))
    if any(_compares(s, sets) for s in body[:pos]):
        zero = "embeddings"
    if any(_compares(s, sets) for s in body[pos + 1:]):
        last = True
    return Loop(zero or "unreached", last, index, where)


def _flags_layers(fn: ast.FunctionDef) -> bool:
    """``for layer_id in ids: setattr(self.layers[layer_id], ...)``: each requested index subscripts the layers."""
    return any(isinstance(n, ast.Subscript) and _attr_name(n.value) == "layers" and isinstance(n.slice, ast.Name)
               for loop in ast.walk(fn) if isinstance(loop, ast.For) for n in ast.walk(loop))


def classes(models: Path | list[Path], sets: tuple[str, ...]) -> dict[str, ClassInfo]:
    """class name -> bases, methods, inner-model classes and capture loop of the package's top-level files (or
    the files given; first file wins on clashes)."""
    found: dict[str, ClassInfo] = {}
    for path in sorted(models.glob("*.py")) if isinstance(models, Path) else models:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name in found:
                continue
            info = ClassInfo([_attr_name(b) for b in node.bases],
                             {n.name for n in node.body if isinstance(n, ast.FunctionDef)})
            builders: list[str] = []
            for fn in node.body:
                if not isinstance(fn, ast.FunctionDef):
                    continue
                if fn.name == "__init__":
                    for n in ast.walk(fn):
                        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and any(
                                isinstance(t, ast.Attribute) and t.attr in INNER for t in n.targets):
                            info.inner.append(_attr_name(n.value.func))
                    builders.extend(info.inner)
                elif info.loop is None and fn.name.startswith(("forward", "_forward")):
                    info.loop = _read_loop(fn, sets, f"{path.name}:{node.name}.{fn.name}")
            if info.loop is not None and any(_flags_layers(fn) for fn in node.body if isinstance(fn, ast.FunctionDef)
                                             and fn.name == "set_eagle3_layers_to_capture"):
                info.loop = dataclasses.replace(info.loop, past="index-error")
            for fn in node.body:  # self.model = self._init_model(...): the classes that builder returns
                if isinstance(fn, ast.FunctionDef) and fn.name in builders:
                    info.inner += [_attr_name(r.value.func) for r in ast.walk(fn)
                                   if isinstance(r, ast.Return) and isinstance(r.value, ast.Call)]
            found[node.name] = info
    return found


def find_loop(name: str, found: dict[str, ClassInfo]) -> Loop | None:
    """The capture loop ``name`` runs: its own forward's, else the inner model's its ``__init__`` builds (a
    multimodal class's ``language_model``), else a base's; where that reading finds none, bases first."""
    return _find_loop(name, found, set(), inner_first=True) or _find_loop(name, found, set(), inner_first=False)


def _find_loop(name: str, found: dict[str, ClassInfo], seen: set[str], inner_first: bool) -> Loop | None:
    if name in seen or name not in found:
        return None
    seen.add(name)
    info = found[name]
    if info.loop is not None:
        return info.loop
    for other in (*info.inner, *info.bases) if inner_first else (*info.bases, *info.inner):
        loop = _find_loop(other, found, seen, inner_first)
        if loop is not None:
            return loop
    return None


def scan(engine: str, root: Path) -> dict[str, Loop]:
    """Architecture -> the capture loop it runs, for every capturing architecture of one release (``unread``
    where the scan cannot read it: the table then falls back to the profile for that release)."""
    models = root / ("vllm/model_executor/models" if engine == "vllm" else "sglang/srt/models")
    found = classes(models, CAPTURE_SETS[engine])
    release = scan_release(engine, root)  # the capture scan's own decision, the class CUDA builds
    reach: dict[str, Loop] = {}
    for arch, ref in release.capturing.items():
        inner = [c for attr in INNER for c in release.release.attribute_classes(ref, attr)]
        paths = {p for r in (ref, *inner) for p, _ in [release.release.paths.get(r[0], (models, False))]}
        files = sorted(p for p in paths if p.parent != models)  # a package's module: its own file wins
        own = {**found, **classes(files, CAPTURE_SETS[engine])} if files else dict(found)
        info = own.get(ref[1].name)
        if info is not None:  # ``self.model = self.model_cls(...)``: the class the capture scan resolved
            own[ref[1].name] = dataclasses.replace(info, inner=[*info.inner, *(c[1].name for c in inner)])
        reach[arch] = find_loop(ref[1].name, own) or Loop(UNREAD, False, "", "")
    return reach


HEADER = '''"""Capture reach per target architecture and release, scanned from the released sources.

Generated by ``pytest_eagle3/scanners/reach.py`` (its docstring says what each field means) over every release in
``*_RELEASES``: ``*_REACH[architecture]`` is ``(first release, zero, last, index, past, loop)``, one entry per
change, oldest first. Read by ``reach.py``.
"""

from __future__ import annotations

'''


def module(sglang: dict[str, object], vllm: dict[str, object]) -> str:
    """The generated ``reach_table.py`` from the two engines' JSON scans."""
    lines = [HEADER]
    for name, scan_ in (("SGLANG", sglang), ("VLLM", vllm)):
        lines.append(f"{name}_RELEASES: tuple[str, ...] = (")
        releases = list(scan_["releases"])  # type: ignore[call-overload]
        for i in range(0, len(releases), 8):
            lines.append("    " + " ".join(f"{r!r}," for r in releases[i:i + 8]))
        lines.append(")")
        lines.append(f"{name}_REACH: dict[str, tuple[tuple[str, str, bool, str, str, str], ...]] = {{")
        for arch, entries in sorted(scan_["reach"].items()):  # type: ignore[attr-defined]
            lines.append(f"    {arch!r}: (")
            lines.extend(f"        {tuple(e)!r}," for e in entries)
            lines.append("    ),")
        lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Scan an engine's release roots and print the reach JSON (``--module SGLANG.json VLLM.json``: print the generated
    ``reach_table.py`` from the two scans)."""
    if argv[0] == "--module":
        sglang, vllm = (json.loads(Path(a).read_text(encoding="utf-8")) for a in argv[1:3])
        sys.stdout.write(module(sglang, vllm))
        return 0
    engine, roots = argv[0], [Path(a) for a in argv[1:]]
    releases = known_roots(engine, roots)
    changes: dict[str, list[list[object]]] = {}
    for version, root in releases:
        for arch, loop in sorted(scan(engine, root).items()):
            entry = [str(version), loop.zero, loop.last, loop.index, loop.past, loop.where]
            rows = changes.setdefault(arch, [])
            if not rows and loop.zero == UNREAD:
                del changes[arch]
                continue
            if not rows or rows[-1][1:5] != entry[1:5]:
                rows.append(entry)
    json.dump({"releases": [str(v) for v, _ in releases], "reach": changes}, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
