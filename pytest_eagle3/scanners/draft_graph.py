"""The draft-class scan's object graph (what each ``__init__`` builds) and forward path (what the entry methods
reach), read from a release's AST. Used by ``scanners/draft_classes.py``, whose docstring says what is recorded."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.scanners.capture import ClassRef
from pytest_eagle3.scanners.draft_release import WEIGHTS, DraftRelease, chain_of, fields_of, name_of


# ---------------------------------------------------------------- the object graph
@dataclass
class Built:
    """One ``self.X = ...`` of an ``__init__``."""

    kind: str  # "class" (a package class), "leaf" (a weight module), "none", "alias", "method", "other"
    target: Any  # ClassRef | callee name | alias chain | method names
    fields: frozenset[str]
    each: bool = False  # a ModuleList: the element is built once per item
    count_fields: frozenset[str] = frozenset()
    #: the config fields each ``__init__`` parameter of the class is given (``Layer(config, config.flag)``)
    seed: tuple[tuple[str, frozenset[str]], ...] = ()


@dataclass
class ClassGraph:
    """What one class's ``__init__`` builds: each ``self`` attribute's builds, the config fields they are set from or
    gated by, and the fields tested around a raise."""

    ref: ClassRef
    attrs: dict[str, list[Built]] = field(default_factory=dict)
    #: field -> attributes set from it (their value reads the field) / gated by it (built under an if reading it)
    stores: dict[str, set[str]] = field(default_factory=dict)
    gates: dict[str, set[str]] = field(default_factory=dict)
    #: fields tested around a raise (``if config.num_hidden_layers != 1: raise``)
    raises: set[str] = field(default_factory=set)


class Graphs:
    """The ``__init__`` reading of every class a draft class reaches."""

    def __init__(self, release: DraftRelease) -> None:
        self.release = release
        self.cache: dict[int, ClassGraph] = {}
        #: the ``__init__`` being read: parameter -> the class name its default names (``attn_layer_type``)
        self.defaults: dict[str, str] = {}

    def of(self, ref: ClassRef, seed: tuple[tuple[str, frozenset[str]], ...] = ()) -> ClassGraph:
        """``ref``'s :class:`ClassGraph`, read once (``seed``, on that first read: the config fields each ``__init__``
        parameter is given)."""
        key = id(ref[1])
        if key not in self.cache:
            graph = ClassGraph(ref)
            self.cache[key] = graph
            saved = self.defaults
            self._read_init(graph, ref, set(), dict(seed))
            self.defaults = saved
        return self.cache[key]

    def built_graph(self, built: Built) -> ClassGraph:
        """The :class:`ClassGraph` of the class a ``class`` build makes, seeded with the fields its call passes."""
        return self.of(built.target, built.seed)

    def _seed(self, ref: ClassRef, call: ast.Call, local: dict[str, set[str]],
              own: dict[str, set[str]]) -> tuple[tuple[str, frozenset[str]], ...]:
        found = self.release.method(ref, "__init__")
        if found is None:
            return ()
        params = [a.arg for a in found[1].args.args[1:]]
        out: list[tuple[str, frozenset[str]]] = []
        for param, arg in zip(params, call.args):
            fields = fields_of(arg, local, own)
            if fields and not isinstance(arg, ast.Name):
                out.append((param, frozenset(fields)))
        for kw in call.keywords:
            fields = fields_of(kw.value, local, own) if kw.arg else set()
            if fields and kw.arg and not isinstance(kw.value, ast.Name):
                out.append((kw.arg, frozenset(fields)))
        return tuple(out)

    def _init_of(self, ref: ClassRef) -> tuple[ClassRef, ast.FunctionDef] | None:
        return self.release.method(ref, "__init__")

    def _read_init(self, graph: ClassGraph, ref: ClassRef, seen: set[int],
                   seed: dict[str, frozenset[str]] | None = None) -> None:
        found = self._init_of(ref)
        if found is None or id(found[1]) in seen:
            return
        seen.add(id(found[1]))
        owner, func = found
        local: dict[str, set[str]] = {k: set(v) for k, v in (seed or {}).items()}
        own: dict[str, set[str]] = {}
        args = func.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        self.defaults = {a.arg: d.id for a, d in pairs if isinstance(d, ast.Name)}
        for key, value in graph.stores.items():
            for attr in value:
                own.setdefault(attr, set()).add(key)
        self._block(graph, owner, func.body, frozenset(), local, own, seen)

    def _super(self, graph: ClassGraph, owner: ClassRef, call: ast.Call, seen: set[int]) -> bool:
        """``super().__init__(...)`` / ``Base.__init__(self, ...)``: the base's ``__init__`` read in place."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
            return False
        base = func.value
        bases = list(self.release.base_refs(owner))
        if isinstance(base, ast.Call) and name_of(base.func) == "super":
            target = next((b for b in bases if self._init_of(b) is not None), None)
        elif isinstance(base, (ast.Name, ast.Attribute)):
            target = next((b for b in bases if b[1].name == name_of(base)), None)
        else:
            target = None
        if target is not None:
            self._read_init(graph, target, seen)
        return True

    def _block(self, graph: ClassGraph, owner: ClassRef, body: list[ast.stmt], cond: frozenset[str],
               local: dict[str, set[str]], own: dict[str, set[str]], seen: set[int]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = frozenset(fields_of(stmt.test, local, own))
                if any(isinstance(s, ast.Raise) for s in stmt.body):
                    graph.raises |= test
                self._block(graph, owner, stmt.body, cond | test, local, own, seen)
                self._block(graph, owner, stmt.orelse, cond | test, local, own, seen)
            elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
                for part in ("body", "orelse", "finalbody"):
                    self._block(graph, owner, getattr(stmt, part, []) or [], cond, local, own, seen)
                for handler in getattr(stmt, "handlers", []) or []:
                    self._block(graph, owner, handler.body, cond, local, own, seen)
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    chain = chain_of(target)
                    if chain is not None and chain[0] == "self" and len(chain[1]) == 1:
                        graph.attrs.pop(chain[1][0], None)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                if self._super(graph, owner, call, seen):
                    continue
                if name_of(call.func) == "register_buffer" and call.args and isinstance(call.args[0], ast.Constant):
                    self._set(graph, str(call.args[0].value), Built("leaf", "buffer", cond), cond, set())
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                value = stmt.value
                if value is None:
                    continue
                read = fields_of(value, local, own)
                for target in targets:
                    if isinstance(target, ast.Name):
                        local[target.id] = read
                        continue
                    chain = chain_of(target)
                    if chain is None or chain[0] != "self" or not chain[1]:
                        continue
                    attr = ".".join(chain[1])
                    built = self._built(owner, value, cond, local, own, graph)
                    self._set(graph, attr, built, cond, read)
                    if len(chain[1]) == 1 and built.kind in ("other", "none"):
                        own[attr] = read | own.get(attr, set())

    def _class_attribute(self, ref: ClassRef, name: str) -> ClassRef | None:
        """``model_cls = Eagle3LlamaModel`` in the class body, along the MRO."""
        for r in self.release.mro(ref):
            for node in r[1].body:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                    if isinstance(node, ast.AnnAssign) else []
                value = getattr(node, "value", None)
                if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(value, ast.Name):
                    return self.release.resolve(r[0], value.id)
        return None

    def _set(self, graph: ClassGraph, attr: str, built: Built, cond: frozenset[str], read: set[str]) -> None:
        if not cond and built.kind != "none":
            graph.attrs[attr] = [built]
        else:
            graph.attrs.setdefault(attr, []).append(built)
        for name in cond:
            graph.gates.setdefault(name, set()).add(attr)
        for name in read:
            graph.stores.setdefault(name, set()).add(attr)

    def _built(self, owner: ClassRef, value: ast.expr, cond: frozenset[str], local: dict[str, set[str]],
               own: dict[str, set[str]], graph: ClassGraph | None = None, depth: int = 0) -> Built:
        if isinstance(value, ast.Constant) and value.value is None:
            return Built("none", None, cond)
        if isinstance(value, ast.IfExp):
            return self._built(owner, value.body, cond | frozenset(fields_of(value.test, local, own)), local, own,
                               graph, depth)
        chain = chain_of(value)
        if chain is not None and chain[0] == "self" and chain[1]:
            if len(chain[1]) == 1 and self.release.method(owner, chain[1][0]) is not None:
                return Built("method", (chain[1][0],), cond)
            if graph is not None and chain[1][0] in graph.attrs and chain[1][1:] == ["*"]:
                first = next((b for b in graph.attrs[chain[1][0]] if b.kind in ("class", "leaf")), None)
                if first is not None:  # self.midlayer = self.layers[0]
                    return Built(first.kind, first.target, cond)
            return Built("alias", tuple(chain[1]), cond)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):  # [First(...)] + [Layer(...) for ...]
            left = self._built(owner, value.left, cond, local, own, graph, depth)
            summed = set(left.count_fields)
            for gen in (value.right.generators if isinstance(value.right, ast.ListComp) else []):
                summed |= fields_of(gen.iter, local, own)
            return Built(left.kind, left.target, cond, True, frozenset(summed), left.seed) \
                if left.kind != "other" else left
        if isinstance(value, (ast.List, ast.ListComp)):
            item = value.elt if isinstance(value, ast.ListComp) else value.elts[0] if value.elts else None
            if item is not None:
                built = self._built(owner, item, cond, local, own, graph, depth)
                counts = set(built.count_fields)
                comps = [value] if isinstance(value, ast.ListComp) else [
                    e.value for e in value.elts if isinstance(e, ast.Starred) and isinstance(e.value, ast.ListComp)]
                for comp in comps:
                    for gen in comp.generators:
                        counts |= fields_of(gen.iter, local, own)
                return Built(built.kind, built.target, cond, True, frozenset(counts), built.seed)
            return Built("other", None, cond)
        if not isinstance(value, ast.Call):
            return Built("other", None, cond)
        func = value.func
        name = name_of(func)
        if name == "make_layers" and len(value.args) >= 2 and isinstance(value.args[1], ast.Lambda):
            built = self._built(owner, value.args[1].body, cond, local, own, graph, depth)
            return Built(built.kind, built.target, cond, True, frozenset(fields_of(value.args[0], local, own)))
        fchain = chain_of(func)
        if fchain is not None and fchain[0] == "self" and len(fchain[1]) == 1 and graph is not None and depth < 4:
            factory = self.release.method(graph.ref, fchain[1][0])
            if factory is not None:  # self.resolve_model(...): what the method returns
                for node in ast.walk(factory[1]):
                    if isinstance(node, ast.Return) and node.value is not None:
                        built = self._built(factory[0], node.value, cond, local, own, graph, depth + 1)
                        if built.kind != "other":
                            return built
            cls = self._class_attribute(graph.ref, fchain[1][0])
            if cls is not None:  # self.model_cls(...)
                return Built("class", cls, cond)
        if name == "ModuleList" and value.args:
            inner = value.args[0]
            element: ast.expr | None = None
            repeats: set[str] = set()
            if isinstance(inner, ast.ListComp):
                element = inner.elt
                for gen in inner.generators:
                    repeats |= fields_of(gen.iter, local, own)
            elif isinstance(inner, ast.List) and inner.elts:
                element = inner.elts[0]
            if element is not None:
                built = self._built(owner, element, cond, local, own, graph, depth)
                return Built(built.kind, built.target, cond, True, frozenset(repeats), built.seed)
            return Built("other", None, cond)
        if isinstance(func, ast.Name):
            found = self.release.resolve(owner[0], self.defaults.get(func.id, func.id))
            if found is not None:
                return Built("class", found, cond, seed=self._seed(found, value, local, own))
        if WEIGHTS.search(name):
            return Built("leaf", name, cond)
        return Built("other", name, cond)


# ---------------------------------------------------------------- the forward path
class Reach:
    """The attribute paths (from the draft class) the forward path uses, and the fields reached methods read."""

    def __init__(self, graphs: Graphs) -> None:
        self.graphs = graphs
        self.release = graphs.release
        self.used: set[str] = set()
        self.read: set[str] = set()
        self.seen: set[tuple[int, int, str, str]] = set()

    def classes_at(self, ref: ClassRef, path: list[str]) -> list[tuple[str, Built]]:
        """What ``self.<path>`` is when ``self`` is ``ref``: (path text, build) per alternative."""
        current: list[tuple[ClassRef | None, str, Built | None]] = [(ref, "", None)]
        for part in path:
            following: list[tuple[ClassRef | None, str, Built | None]] = []
            for cls, text, last in current:
                if part == "*":
                    following.append((cls, text + ".*" if last is not None and last.each else text, last))
                    continue
                if cls is None:
                    continue
                graph = self.graphs.of(cls)
                for built in graph.attrs.get(part, []):
                    if built.kind == "class":
                        self.graphs.built_graph(built)
                    nxt = f"{text}.{part}" if text else part
                    if built.kind == "alias":
                        for _alt_text, alt in self.classes_at(cls, list(built.target)):
                            target = alt.target if alt.kind == "class" else None
                            following.append((target, nxt, alt))
                        continue
                    following.append((built.target if built.kind == "class" else None, nxt, built))
            current = following
        return [(text, b) for _, text, b in current if b is not None]

    def method(self, ref: ClassRef, name: str, prefix: str, depth: int = 0, after: ClassRef | None = None) -> None:
        """Walk ``ref.name`` (``after``: the class whose ``super().name`` this is: found past it in the MRO)."""
        if after is not None:
            mro = self.release.mro(ref)
            index = next((i for i, r in enumerate(mro) if r[1] is after[1]), len(mro))
            found = next(((r, n) for r in mro[index + 1:] for n in r[1].body
                          if isinstance(n, ast.FunctionDef) and n.name == name), None)
        else:
            found = self.release.method(ref, name)
        key = (id(found[1]) if found else 0, id(ref[1]), name, prefix)
        if found is None or key in self.seen or depth > 12:
            return
        self.seen.add(key)
        owner, func = found
        graph = self.graphs.of(ref)
        aliases: dict[str, list[str]] = {}  # local name -> self path
        for stmt in ast.walk(func):
            if isinstance(stmt, ast.For):
                chain = chain_of(stmt.iter)
                if isinstance(stmt.iter, ast.Call) and name_of(stmt.iter.func) in ("enumerate", "zip") and stmt.iter.args:
                    chain = chain_of(stmt.iter.args[0])
                    target = stmt.target.elts[-1] if isinstance(stmt.target, ast.Tuple) and name_of(stmt.iter.func) \
                        == "enumerate" else stmt.target.elts[0] if isinstance(stmt.target, ast.Tuple) else stmt.target
                else:
                    target = stmt.target
                if chain and chain[0] == "self" and isinstance(target, ast.Name):
                    aliases[target.id] = [*chain[1], "*"]
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                chain = chain_of(stmt.value)
                if chain and chain[0] == "self" and chain[1]:
                    aliases[stmt.targets[0].id] = chain[1]
        skip = self._none_tests(func)
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Call) and name_of(node.func.value.func) == "super":
                self.method(ref, node.func.attr, prefix, depth + 1, after=owner)
            elif isinstance(node, ast.Call):
                self._call(ref, graph, node, prefix, aliases, depth)
            if isinstance(node, (ast.Attribute, ast.Subscript)) and id(node) not in skip:
                chain = chain_of(node)
                if chain is None:
                    continue
                root, parts = chain
                path = parts if root == "self" else [*aliases[root], *parts] if root in aliases else None
                if path:
                    for text, _ in self.classes_at(ref, path):
                        self._use(prefix, text)
        self.read |= fields_of(func, {}, {})

    @staticmethod
    def _none_tests(func: ast.FunctionDef) -> set[int]:
        """Attribute nodes that only appear in ``X is None`` / ``X is not None`` / ``hasattr``."""
        out: set[int] = set()
        for node in ast.walk(func):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                for sub in ast.walk(node.left):
                    out.add(id(sub))
            elif isinstance(node, ast.Call) and name_of(node.func) in ("hasattr", "isinstance"):
                for arg in node.args:
                    for sub in ast.walk(arg):
                        out.add(id(sub))
        return out

    def _use(self, prefix: str, text: str) -> None:
        full = f"{prefix}.{text}" if prefix else text
        parts = full.split(".")
        for i in range(1, len(parts) + 1):
            self.used.add(".".join(parts[:i]))

    def _call(self, ref: ClassRef, graph: ClassGraph, call: ast.Call, prefix: str, aliases: dict[str, list[str]],
              depth: int) -> None:
        chain = chain_of(call.func)
        if chain is None:
            return
        root, parts = chain
        path = parts if root == "self" else [*aliases[root], *parts] if root in aliases else None
        if not path:
            return
        if len(path) == 1 and root == "self":
            if self.release.method(ref, path[0]) is not None:
                self.method(ref, path[0], prefix, depth + 1)
                return
            for built in graph.attrs.get(path[0], []):
                if built.kind == "method":
                    for name in built.target:
                        self.method(ref, name, prefix, depth + 1)
        # a child called: its forward; a child's method called: that method
        for text, built in self.classes_at(ref, path):
            full = f"{prefix}.{text}" if prefix else text
            self._use(prefix, text)
            if built.kind == "class":
                self.method(built.target, "forward", full, depth + 1)
                self.method(built.target, "__call__", full, depth + 1)
        if len(path) >= 2:
            for text, built in self.classes_at(ref, path[:-1]):
                if built.kind == "class":
                    full = f"{prefix}.{text}" if prefix else text
                    self.method(built.target, path[-1], full, depth + 1)

