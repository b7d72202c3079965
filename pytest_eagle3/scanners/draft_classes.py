"""Scan released engine sources for what each EAGLE-3 draft class builds, loads and applies, per release.

    python -m pytest_eagle3.scanners.draft_classes --out pytest_eagle3/knowledge/generated/draft_class_table.py \\
        --vllm ROOT... --sglang ROOT... [--tokenspeed ROOT...] [--lmdeploy ROOT...]

ROOT: an unpacked release (a wheel's files) named ``vllm-0.25.0`` / ``sglang-0.5.12``. The draft classes of a
release are the ones its registry maps an architecture to (vLLM: ``_SPECULATIVE_DECODING_MODELS`` entries whose
module ends in ``eagle3``; SGLang, TokenSpeed: the ``EntryClass`` of a module named ``*eagle3*``; LMDeploy:
``module_map.py`` entries whose module names ``eagle3``). For each class the scan reads, from the AST:

* the object graph its ``__init__`` builds (along the bases, ``super().__init__`` followed, a direct
  ``nn.Module.__init__(self)`` not): every ``self.X = Call(...)`` (``nn.ModuleList([...])`` by its element), the
  draft-config fields of the ``if`` tests around it, and overrides of a child's attribute
  (``self.self_attn.qkv_proj = ...``);
* what the forward path reaches: from the engine's entry methods (vLLM: ``forward``, ``combine_hidden_states``,
  ``compute_logits``, ``embed_input_ids``; SGLang-derived: ``forward``; LMDeploy: ``forward``, ``get_logits``),
  following ``self.m(...)``, a child's ``forward`` when it is called, a child's named method, layers iterated
  or indexed, and method aliases (``self._residual_norm = self._norm_before_residual``). A reference in an
  ``is None`` test does not count as use;
* per config field the class reads: ``read`` (it gates or sets something the forward path uses, or a reached
  method reads it), ``loaded-not-applied`` (it builds or sets something that the forward path never reaches:
  the weights load and are never used) or absent;
* every parameter-holding attribute of the classes defined in the draft's own module that the forward path never
  reaches (``unreached``: loaded, not applied);
* the first layer's module (``midlayer`` / ``layers``) and layer count rule, the norms the first layer applies, the
  loader's name rewrites and its d2t match, what its loader does with a tensor no parameter has, the attention
  class and its rope constructor.

Writes per engine: ``*_RELEASES`` (read), ``*_REGISTERED`` (architecture -> runs (first, last, class)) and
``*_CLASSES`` (class -> behaviour -> runs (first, last, value, where)), one run per stretch of consecutive releases
read with the same value.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytest_eagle3.scanners.capture import ClassRef, Release, known_roots

MODELS = {"vllm": "vllm/model_executor/models", "sglang": "sglang/srt/models",
          "tokenspeed": "tokenspeed/runtime/models", "lmdeploy": "lmdeploy/pytorch/models",
          "mlx-vlm": "mlx_vlm/speculative/drafters"}
ABSOLUTE = {"vllm": "vllm.model_executor.models.", "sglang": "sglang.srt.models.",
            "tokenspeed": "tokenspeed.runtime.models.", "lmdeploy": "lmdeploy.pytorch.models.",
            "mlx-vlm": "mlx_vlm.speculative.drafters."}
ENTRIES = {"vllm": ("forward", "combine_hidden_states", "compute_logits", "embed_input_ids", "get_input_embeddings"),
           "sglang": ("forward",), "tokenspeed": ("forward",), "lmdeploy": ("forward", "get_logits"),
           "mlx-vlm": ("prefill_from_target_hidden", "draft_block", "__call__")}
#: A callee that builds weights the checkpoint fills (no resolvable class in the package).
WEIGHTS = re.compile(r"Norm|Linear|Embedding|LMHead|Parameter|Conv")
#: The config fields whose state the table records (others the classes read are not judged by any rule).
FIELDS = ("norm_before_residual", "norm_before_fc", "eagle_config.norm_before_fc", "fc_norm", "use_aux_norm",
          "norm_output", "eagle_config.use_aux_hidden_state", "num_aux_hidden_states", "num_aux_layers",
          "eagle_aux_hidden_state_layer_ids", "eagle_config.eagle_aux_hidden_state_layer_ids", "target_hidden_size",
          "draft_vocab_size", "tie_word_embeddings", "attention_bias", "bias", "mlp_bias", "logit_scale",
          "num_hidden_layers", "rope_scaling", "rope_parameters", "layer_types", "sliding_window", "head_dim")
READ, UNUSED = "read", "loaded-not-applied"


class DraftRelease(Release):
    """One release's model package (scan_capture's), read for another engine's layout as well."""

    absolute = ABSOLUTE

    def __init__(self, engine: str, root: Path) -> None:
        self.engine = engine
        self.root = root / MODELS[engine]
        self._mro = {}
        self.interface = None
        self.paths: dict[str, tuple[Path, bool]] = {}
        for path in sorted(self.root.rglob("*.py")):
            rel = path.relative_to(self.root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            self.paths[".".join(parts)] = (path, rel.name == "__init__")
        self.modules = _Lazy(self)

    def _parse(self, name: str, path: Path, package: bool) -> Any:
        """scan_capture's reading, plus module-level aliases (``X = Base``, the runtime branch of an ``if
        TYPE_CHECKING:``), which name the class they are bound to."""
        module = super()._parse(name, path, package)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            return module
        body: list[ast.stmt] = []
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                body.extend(node.orelse)
            else:
                body.append(node)
        for node in body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Name) and node.targets[0].id not in module.classes:
                module.imports[node.targets[0].id] = (name, node.value.id)
            elif isinstance(node, ast.ClassDef) and node.name in module.classes and any(
                    isinstance(t, ast.If) and "TYPE_CHECKING" in ast.unparse(t.test) and node in t.body
                    for t in tree.body):
                del module.classes[node.name]
        for node in tree.body:  # classes declared for type checkers only: the runtime alias wins
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for sub in node.body:
                    if isinstance(sub, ast.ClassDef) and module.classes.get(sub.name) is sub:
                        del module.classes[sub.name]
        return module

    def by_name(self, name: str) -> ClassRef | None:
        for module in list(self.paths):
            found = self.modules.get(module)
            if found is not None and name in found.classes:
                return module, found.classes[name]
        return None

    def base_refs(self, ref: ClassRef) -> Iterator[ClassRef]:
        """The bases, where ``class LlamaDecoderLayer(LlamaDecoderLayer)`` names the imported class."""
        module, node = ref
        for base in node.bases:
            while isinstance(base, ast.Subscript):
                base = base.value
            found: ClassRef | None = None
            if isinstance(base, ast.Name):
                found = self.resolve(module, base.id)
                if found is not None and found[1] is node:
                    imported = self.modules[module].imports.get(base.id)
                    found = self.resolve(*imported) if imported else None
            elif isinstance(base, ast.Attribute) and not ast.unparse(base).startswith(("nn.", "torch.")):
                found = self.by_name(base.attr)
            if found is not None and found[1] is not node:
                yield found


class _Lazy(dict):  # type: ignore[type-arg]
    """The release's modules, each parsed on first use (a release has hundreds; a draft class reaches a few)."""

    def __init__(self, release: DraftRelease) -> None:
        super().__init__()
        self.release = release

    def get(self, key: Any, default: Any = None) -> Any:
        if key not in self and key in self.release.paths:
            path, package = self.release.paths[key]
            self[key] = self.release._parse(key, path, package)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found


# ---------------------------------------------------------------- expressions
def _chain(node: ast.AST) -> tuple[str, list[str]] | None:
    """``a.b.c`` -> ("a", ["b", "c"]); ``self.layers[0].x`` -> ("self", ["layers", "*", "x"])."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            parts.insert(0, "*")
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id, parts
        else:
            return None


def fields_of(node: ast.AST, local: dict[str, set[str]], own: dict[str, set[str]]) -> set[str]:
    """The draft-config fields an expression reads (through locals and ``self`` attributes set from fields)."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
            args = [a.value for a in sub.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if name in ("getattr", "hasattr") and len(sub.args) >= 2 and args:
                owner = sub.args[0]
                chain = _chain(owner)
                prefix = "eagle_config." if chain and "eagle_config" in (chain[0], *chain[1]) else ""
                found.add(prefix + args[0])
            elif name == "get" and args and isinstance(sub.func, ast.Attribute):
                chain = _chain(sub.func.value)
                if chain and "eagle_config" in (chain[0], *chain[1]):
                    found.add("eagle_config." + args[0])
                elif chain and "config" in chain[0].lower() + "".join(chain[1]).lower():
                    found.add(args[0])
        elif isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) \
                and isinstance(sub.slice.value, str):
            chain = _chain(sub.value)
            if chain and "eagle_config" in (chain[0], *chain[1]):
                found.add("eagle_config." + sub.slice.value)
        elif isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], ast.In) \
                and isinstance(sub.left, ast.Constant) and isinstance(sub.left.value, str):
            chain = _chain(sub.comparators[0])
            if chain and "eagle_config" in (chain[0], *chain[1]):
                found.add("eagle_config." + sub.left.value)
        elif isinstance(sub, ast.Attribute):
            chain = _chain(sub)
            if chain is None:
                continue
            root, parts = chain
            if root == "self" and parts and parts[0] in own and len(parts) == 1:
                found |= own[parts[0]]
            elif (root.endswith("config") and root != "eagle_config"
                  or (root == "self" and parts[:1] == ["config"])) and parts:
                rest = parts[1:] if root == "self" else parts
                if rest and rest[0] not in ("get",):
                    found.add(rest[0])
        elif isinstance(sub, ast.Name) and sub.id in local:
            found |= local[sub.id]
    return found


def _callee(call: ast.Call) -> ast.expr:
    return call.func


def _name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


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
        key = id(ref[1])
        if key not in self.cache:
            graph = ClassGraph(ref)
            self.cache[key] = graph
            saved = self.defaults
            self._read_init(graph, ref, set(), dict(seed))
            self.defaults = saved
        return self.cache[key]

    def built_graph(self, built: Built) -> ClassGraph:
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
        if isinstance(base, ast.Call) and _name(base.func) == "super":
            target = next((b for b in bases if self._init_of(b) is not None), None)
        elif isinstance(base, (ast.Name, ast.Attribute)):
            target = next((b for b in bases if b[1].name == _name(base)), None)
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
                    chain = _chain(target)
                    if chain is not None and chain[0] == "self" and len(chain[1]) == 1:
                        graph.attrs.pop(chain[1][0], None)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                if self._super(graph, owner, call, seen):
                    continue
                if _name(call.func) == "register_buffer" and call.args and isinstance(call.args[0], ast.Constant):
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
                    chain = _chain(target)
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
        chain = _chain(value)
        if chain is not None and chain[0] == "self" and chain[1]:
            if len(chain[1]) == 1 and self.release.method(owner, chain[1][0]) is not None:
                return Built("method", (chain[1][0],), cond)
            if graph is not None and chain[1][0] in graph.attrs and chain[1][1:] == ["*"]:
                element = next((b for b in graph.attrs[chain[1][0]] if b.kind in ("class", "leaf")), None)
                if element is not None:  # self.midlayer = self.layers[0]
                    return Built(element.kind, element.target, cond)
            return Built("alias", tuple(chain[1]), cond)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):  # [First(...)] + [Layer(...) for ...]
            left = self._built(owner, value.left, cond, local, own, graph, depth)
            counts = set(left.count_fields)
            for gen in (value.right.generators if isinstance(value.right, ast.ListComp) else []):
                counts |= fields_of(gen.iter, local, own)
            return Built(left.kind, left.target, cond, True, frozenset(counts), left.seed) \
                if left.kind != "other" else left
        if isinstance(value, (ast.List, ast.ListComp)):
            element = value.elt if isinstance(value, ast.ListComp) else value.elts[0] if value.elts else None
            if element is not None:
                built = self._built(owner, element, cond, local, own, graph, depth)
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
        name = _name(func)
        if name == "make_layers" and len(value.args) >= 2 and isinstance(value.args[1], ast.Lambda):
            built = self._built(owner, value.args[1].body, cond, local, own, graph, depth)
            return Built(built.kind, built.target, cond, True, frozenset(fields_of(value.args[0], local, own)))
        fchain = _chain(func)
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
            counts: set[str] = set()
            if isinstance(inner, ast.ListComp):
                element = inner.elt
                for gen in inner.generators:
                    counts |= fields_of(gen.iter, local, own)
            elif isinstance(inner, ast.List) and inner.elts:
                element = inner.elts[0]
            if element is not None:
                built = self._built(owner, element, cond, local, own, graph, depth)
                return Built(built.kind, built.target, cond, True, frozenset(counts), built.seed)
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
                chain = _chain(stmt.iter)
                if isinstance(stmt.iter, ast.Call) and _name(stmt.iter.func) in ("enumerate", "zip") and stmt.iter.args:
                    chain = _chain(stmt.iter.args[0])
                    target = stmt.target.elts[-1] if isinstance(stmt.target, ast.Tuple) and _name(stmt.iter.func) \
                        == "enumerate" else stmt.target.elts[0] if isinstance(stmt.target, ast.Tuple) else stmt.target
                else:
                    target = stmt.target
                if chain and chain[0] == "self" and isinstance(target, ast.Name):
                    aliases[target.id] = [*chain[1], "*"]
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                chain = _chain(stmt.value)
                if chain and chain[0] == "self" and chain[1]:
                    aliases[stmt.targets[0].id] = chain[1]
        skip = self._none_tests(func)
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Call) and _name(node.func.value.func) == "super":
                self.method(ref, node.func.attr, prefix, depth + 1, after=owner)
            elif isinstance(node, ast.Call):
                self._call(ref, graph, node, prefix, aliases, depth)
            if isinstance(node, (ast.Attribute, ast.Subscript)) and id(node) not in skip:
                chain = _chain(node)
                if chain is None:
                    continue
                root, parts = chain
                path = parts if root == "self" else [*aliases[root], *parts] if root in aliases else None
                if path:
                    for text, _ in self.classes_at(ref, path):
                        self._use(prefix, text)
        self.read |= fields_of(func, {}, {k: set() for k in ()})

    @staticmethod
    def _none_tests(func: ast.FunctionDef) -> set[int]:
        """Attribute nodes that only appear in ``X is None`` / ``X is not None`` / ``hasattr``."""
        out: set[int] = set()
        for node in ast.walk(func):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                for sub in ast.walk(node.left):
                    out.add(id(sub))
            elif isinstance(node, ast.Call) and _name(node.func) in ("hasattr", "isinstance"):
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
        chain = _chain(call.func)
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


# ---------------------------------------------------------------- one draft class
def weights(graphs: Graphs, ref: ClassRef, prefix: str = "", depth: int = 0,
            cond: frozenset[str] = frozenset()) -> Iterator[tuple[str, str, frozenset[str], ClassRef]]:
    """(path, callee, fields gating it, the class that builds it) of every weight module under ``ref``."""
    if depth > 8:
        return
    graph = graphs.of(ref)
    for attr, builds in graph.attrs.items():
        for built in builds:
            path = f"{prefix}.{attr}" if prefix else attr
            if built.each:
                path += ".*"
            gate = cond | built.fields
            if built.kind == "leaf":
                yield path, str(built.target), gate, ref
            elif built.kind == "class":
                graphs.built_graph(built)
                yield from weights(graphs, built.target, path, depth + 1, gate)


def field_states(graphs: Graphs, reach: Reach, ref: ClassRef, prefix: str = "", depth: int = 0,
                 out: dict[str, str] | None = None, seen: set[int] | None = None) -> dict[str, str]:
    """field -> read / loaded-not-applied, over every class of the graph."""
    out = {} if out is None else out
    seen = set() if seen is None else seen
    if depth > 8 or id(ref[1]) in seen:
        return out
    seen.add(id(ref[1]))
    graph = graphs.of(ref)
    touched = {name: graph.stores.get(name, set()) | graph.gates.get(name, set())
               for name in set(graph.stores) | set(graph.gates)}
    for name, attrs in touched.items():
        paths = [f"{prefix}.{a}" if prefix else a for a in attrs]
        used = any(p in reach.used or p + ".*" in reach.used for p in paths)
        if used or name in reach.read:
            out[name] = READ
        else:
            out.setdefault(name, UNUSED)
    for attr, builds in graph.attrs.items():
        for built in builds:
            if built.kind == "class":
                path = f"{prefix}.{attr}" if prefix else attr
                field_states(graphs, reach, built.target, path + (".*" if built.each else ""), depth + 1, out, seen)
    for name in reach.read:
        out[name] = READ
    return out


def _strings(func: ast.FunctionDef | None) -> list[tuple[str, str]]:
    """The name rewrites a loader writes: ``replace("a", "b")``, dict literals of str -> str, ``re.sub``."""
    out: list[tuple[str, str]] = []
    if func is None:
        return out
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _name(node.func) == "replace" and len(node.args) == 2 and all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args) or isinstance(node, ast.Call) and _name(node.func) == "sub" and len(node.args) >= 2 and all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2]):
            out.append((str(node.args[0].value), str(node.args[1].value)))  # type: ignore[attr-defined]
        elif isinstance(node, ast.Dict) and node.keys and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys) and all(
                isinstance(v, ast.Constant) and isinstance(v.value, str) for v in node.values):
            out.extend((str(k.value), str(v.value)) for k, v in zip(node.keys, node.values))  # type: ignore[union-attr]
    return out


def _mapper(release: DraftRelease, ref: ClassRef) -> list[tuple[str, str]]:
    """``hf_to_vllm_mapper = WeightsMapper(orig_to_new_substr={...})`` class attributes along the MRO."""
    out: list[tuple[str, str]] = []
    for r in release.mro(ref):
        for node in r[1].body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _name(node.value.func) == \
                    "WeightsMapper":
                for kw in node.value.keywords:
                    if kw.arg in ("orig_to_new_substr", "orig_to_new_prefix") and isinstance(kw.value, ast.Dict):
                        out.extend((str(k.value), str(v.value)) for k, v in zip(kw.value.keys, kw.value.values)
                                   if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                                   and isinstance(v.value, str))
    return out


def _d2t(func: ast.FunctionDef | None) -> str:
    if func is None:
        return "none"
    text = ast.unparse(func)
    match = "substring" if re.search(r"'d2t' in name|\"d2t\" in name", text) else \
        "exact" if re.search(r"name == 'd2t'|endswith\('\.d2t'\)", text) else "none"
    if match == "none":
        return "none"
    dest = "draft_id_to_target_id" if "draft_id_to_target_id" in text else "hot_token_id" if "hot_token_id" in text \
        else "other"
    return f"{match}->{dest}"


def _unknown_key(inner: ast.FunctionDef | None, outer: ast.FunctionDef | None) -> str:
    """What the class's loader does with a tensor no parameter has: the inner model's ``load_weights`` decides
    where it has one (vLLM's ``AutoWeightsLoader`` hands a child's names to the child's own ``load_weights``).
    Read on the path a plain name takes (the ``else`` of the loop over the stacked mapping, where there is one):
    ``skipped`` (``if name not in params_dict: continue``, or every ``params_dict[...]`` under an
    ``if ... in params_dict``), ``raises`` (an unguarded ``params_dict[name]``: KeyError), ``engine-loader`` (the
    engine's generic ``AutoWeightsLoader``, whose rule is the engine's) or ``unknown``."""
    func = inner or outer
    if func is None:
        return "unknown"
    plain: list[ast.stmt] = [func]
    for node in ast.walk(func):
        if isinstance(node, ast.For) and node.orelse and "stacked" in ast.unparse(node.iter):
            plain = node.orelse
            break
    region = [n for stmt in plain for n in ast.walk(stmt)]

    def tests_params(test: ast.expr, op: type) -> bool:
        return isinstance(test, ast.Compare) and any(isinstance(o, op) for o in test.ops) \
            and "params" in ast.unparse(test.comparators[0])

    guarded: set[int] = set()
    for node in region:
        if isinstance(node, ast.If) and tests_params(node.test, ast.In):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    skips = any(isinstance(n, ast.If) and tests_params(n.test, ast.NotIn) and any(isinstance(b, ast.Continue)
                for b in n.body) for n in ast.walk(func))
    lookups = [n for n in region if isinstance(n, ast.Subscript) and "params" in ast.unparse(n.value)
               and isinstance(n.ctx, ast.Load)]
    if skips or (lookups and all(id(n) in guarded for n in lookups)):
        return "skipped"
    if lookups:
        return "raises"
    if any(isinstance(n, ast.Call) and _name(n.func) == "AutoWeightsLoader" for n in ast.walk(func)):
        return "engine-loader"
    return "unknown"


@dataclass(frozen=True)
class ClassScan:
    """What one draft class of one release does (each value a short text; ``where``: file.py:Class)."""

    values: dict[str, Any]
    where: str


def scan_class(release: DraftRelease, ref: ClassRef) -> ClassScan:
    engine = release.engine
    graphs = Graphs(release)
    reach = Reach(graphs)
    for name in ENTRIES[engine]:
        reach.method(ref, name, "")
    inner = [b.target for b in graphs.of(ref).attrs.get("model", []) if b.kind == "class"]
    all_weights = list(weights(graphs, ref))
    own_module = ref[0]
    states = field_states(graphs, reach, ref)

    def used(path: str) -> bool:
        return path in reach.used

    def module_state(names: tuple[str, ...]) -> str:
        found = [(p, c) for p, c, _, _ in all_weights if p.split(".")[-1] in names
                 or (p.endswith(".*") and p.split(".")[-2] in names)]
        if not found:
            return "not-read"
        paths = [p.removesuffix(".*") for p, _ in found]
        return READ if any(used(p) for p in paths) else UNUSED

    def gates(names: tuple[str, ...]) -> tuple[str, ...]:
        out: set[str] = set()
        for p, _, gate, _ in all_weights:
            tail = [x for x in p.split(".") if x != "*"][-1]
            if tail in names:
                out |= {g for g in gate if g in FIELDS and g != "eagle_config.use_aux_hidden_state"}
        return tuple(sorted(out))

    def flag(name: str) -> str:
        return states.get(name, "not-read")

    values: dict[str, Any] = {}
    values["fc_norm"] = module_state(("fc_norm",))
    values["fc_norm_fields"] = gates(("fc_norm",))
    values["norm_before_fc"] = module_state(("input_norm",))
    values["norm_before_fc_fields"] = gates(("input_norm",))
    values["norm_output"] = flag("norm_output")
    values["norm_before_residual"] = flag("norm_before_residual")
    # the layers: midlayer or layers, and how many
    model = inner[0] if inner else ref
    model_attrs = graphs.of(model).attrs
    prefix = "model." if inner else ""
    if "layers" in model_attrs and any(b.each for b in model_attrs["layers"]):
        counts = set().union(*(b.count_fields for b in model_attrs["layers"]))
        first, layer_path = "layers", f"{prefix}layers.*"
        count = "config" if "num_hidden_layers" in counts else "one"
    elif "midlayer" in model_attrs:
        first, layer_path, count = "midlayer", f"{prefix}midlayer", "one"
    else:
        first, layer_path, count = "none", "", "unknown"
    if "num_hidden_layers" in graphs.of(model).raises or "num_hidden_layers" in graphs.of(ref).raises:
        count = "one-or-raise"
    values["first_layer"] = first
    values["layer_count"] = count
    norms = sorted({p[len(layer_path) + 1:] for p, c, _, _ in all_weights
                    if layer_path and p.startswith(layer_path + ".") and "Norm" in c and p.count(".") ==
                    layer_path.count(".") + 1 and used(p)})
    values["layer_norms"] = tuple(norms)
    # the attention and its rope
    layer_builds = [b for b in (model_attrs.get("layers") or model_attrs.get("midlayer") or []) if b.kind == "class"]
    attention = "unknown"
    rope = "unknown"
    if layer_builds:
        layer_ref = layer_builds[0].target
        attn = [b for b in graphs.of(layer_ref).attrs.get("self_attn", []) if b.kind == "class"]
        if attn:
            attention = attn[0].target[1].name
            rope = _rope(release, attn[0].target)
    values["attention"] = attention
    values["rope"] = rope
    # the loader
    loader = release.method(ref, "load_weights")
    model_loader = release.method(model, "load_weights") if inner else None
    renames = _strings(loader[1] if loader else None) + _strings(model_loader[1] if model_loader else None) \
        + _mapper(release, model) + (_mapper(release, ref) if inner else [])
    values["renames"] = tuple(sorted({(a, b) for a, b in renames if a != b and "d2t" not in a and "proj" not in a
                                      and "proj" not in b and not a.startswith(".") and a != "model."}))
    values["d2t"] = _d2t(loader[1] if loader else None)
    values["unknown_key"] = _unknown_key(model_loader[1] if model_loader else None, loader[1] if loader else None)
    # weights of the draft's own classes that the forward path never reaches
    unreached = sorted({p for p, callee, _, owner in all_weights if owner[0] == own_module and callee != "buffer"
                        and p not in ("draft_id_to_target_id", "hot_token_id")
                        and not used(p.removesuffix(".*")) and not p.startswith("lm_head")
                        and "rotary" not in p})
    values["unreached"] = tuple(unreached)
    return ClassScan(values, f"{own_module.split('.')[-1]}.py:{ref[1].name}")


def _rope(release: DraftRelease, ref: ClassRef) -> str:
    """The callee that builds the attention's ``rotary_emb`` and whether it passes the config's scaling."""
    graphs = Graphs(release)
    found = release.method(ref, "__init__")
    if found is None:
        return "unknown"
    for node in ast.walk(found[1]):
        if isinstance(node, ast.Assign) and any(_chain(t) in (("self", ["rotary_emb"]), ("self", ["rope"]))
                                                for t in node.targets) \
                and isinstance(node.value, ast.Call):
            keys = sorted(k.arg for k in node.value.keywords if k.arg in ("rope_scaling", "rope_parameters"))
            return f"{_name(node.value.func)}({', '.join(keys)})"
    del graphs
    return "inherited"


# ---------------------------------------------------------------- registries
def registry(release: DraftRelease) -> dict[str, ClassRef]:
    """architecture -> the EAGLE-3 draft class it builds in this release."""
    engine, out = release.engine, {}
    if engine == "vllm":
        path = release.root / "registry.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and "SPECULATIVE" in target.id and isinstance(value, ast.Dict):
                for key, item in zip(value.keys, value.values):
                    if isinstance(key, ast.Constant) and isinstance(item, ast.Tuple) and len(item.elts) >= 2:
                        module, cls = (getattr(e, "value", None) for e in item.elts[:2])
                        if isinstance(module, str) and module.endswith("eagle3") and isinstance(cls, str):
                            found = release.resolve(module, cls)
                            if found is not None:
                                out[str(key.value)] = found
        return out
    if engine == "lmdeploy":
        path = release.root / "module_map.py"
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        for arch, target in re.findall(r"'(\w+)':\s*f?'[^']*?\.(\w*eagle3\w*\.\w+)'", text):
            module, cls = target.rsplit(".", 1)
            found = release.resolve(module, cls)
            if found is not None:
                out[arch] = found
        return out
    if engine == "mlx-vlm":  # speculative/drafters/eagle3/eagle3.py: the one drafter class, by its config type
        found = release.resolve("eagle3.eagle3", "Eagle3DraftModel")
        return {"Eagle3DraftModel": found} if found is not None else {}
    for name in list(release.paths):
        if "eagle3" not in name.split(".")[-1]:
            continue
        module = release.modules.get(name)
        path = release.root / (name.replace(".", "/") + ".py")
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass"
                                                    for t in node.targets):
                items = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                for item in items:
                    if isinstance(item, ast.Name):
                        found = release.resolve(name, item.id)
                        if found is not None:
                            out[found[1].name] = found
        del module
    return out


# ---------------------------------------------------------------- runs over releases
def scan_release(engine: str, root: Path) -> tuple[dict[str, str], dict[str, ClassScan]]:
    release = DraftRelease(engine, root)
    archs = registry(release)
    classes: dict[str, ClassScan] = {}
    for ref in {id(r[1]): r for r in archs.values()}.values():
        classes[ref[1].name] = scan_class(release, ref)
    return {arch: ref[1].name for arch, ref in archs.items()}, classes


Run = tuple[str, str, Any, str]


def _extend(runs: list[Run], version: str, previous: str | None, value: Any, where: str) -> None:
    if runs and runs[-1][1] == previous and runs[-1][2] == value:
        runs[-1] = (runs[-1][0], version, value, runs[-1][3])
    else:
        runs.append((version, version, value, where))


def scan_engine(engine: str, roots: list[Path]) -> tuple[list[str], dict[str, list[Run]],
                                                        dict[str, dict[str, list[Run]]]]:
    releases = known_roots(engine, roots) if engine in ("vllm", "sglang") else sorted(
        ((Version(r.name.rsplit("-", 1)[-1]), r) for r in roots), key=lambda x: x[0])
    registered: dict[str, list[Run]] = {}
    classes: dict[str, dict[str, list[Run]]] = {}
    previous: str | None = None
    for version, root in releases:
        archs, scans = scan_release(engine, root)
        text = str(version)
        for arch, cls in archs.items():
            _extend(registered.setdefault(arch, []), text, previous, cls, scans[cls].where)
        for cls, scan in scans.items():
            for name, value in scan.values.items():
                _extend(classes.setdefault(cls, {}).setdefault(name, []), text, previous, value, scan.where)
        print(f"{engine} {version}: {len(scans)} draft classes, {len(archs)} architectures", file=sys.stderr)
        previous = text
    return [str(v) for v, _ in releases], registered, classes


HEADER = '''"""EAGLE-3 draft classes per engine release: what each class builds, loads and applies, scanned from the source.

Generated by ``pytest_eagle3/scanners/draft_classes.py`` (do not edit) over the unpacked wheel of every release listed in
``*_RELEASES`` ({counts}).

``*_REGISTERED``: per draft architecture, the runs (first, last, class) of consecutive releases read in which the
registry maps it to that EAGLE-3 draft class. ``*_CLASSES``: per class and behaviour, the runs (first, last, value,
where) of consecutive releases read with that value; ``where`` is the file and class it was read in. Behaviours:
``fc_norm`` / ``norm_before_fc`` (the ``fc_norm`` / ``input_norm`` modules: ``read`` = built and used on the
forward path, ``loaded-not-applied`` = built and loaded, never used, ``not-read`` = never built) and the config
fields gating them (``*_fields``); ``norm_output`` / ``norm_before_residual`` (the config field steers the forward
path: ``read``, is read and never used: ``loaded-not-applied``, or is not read); ``first_layer``, ``layer_count``
(``config``: num_hidden_layers layers, ``one``: one midlayer, ``one-or-raise``: ValueError unless 1),
``layer_norms`` (the norms the first layer applies), ``attention`` (its class), ``rope`` (the rope constructor),
``renames`` (the loader's name rewrites), ``d2t`` (how the loader matches d2t and where it puts it),
``unknown_key`` (a tensor no parameter has: ``skipped`` silently, ``raises`` KeyError, or left to the engine's
generic loader: ``engine-loader``), ``unreached`` (weights of the class's own module that the forward path never
reaches: loaded, not applied).
"""

from __future__ import annotations

from typing import Any'''


def _repr(value: Any) -> str:
    return repr(value)


def render(found: dict[str, tuple[list[str], dict[str, list[Run]], dict[str, dict[str, list[Run]]]]]) -> str:
    counts = "; ".join(f"{e}: {len(r)} releases, {r[0]} to {r[-1]}" for e, (r, _, _) in found.items() if r)
    out = [HEADER.format(counts=counts)]
    for engine, (releases, registered, classes) in found.items():
        p = engine.upper().replace("-", "_")
        lines = "".join(f"    {', '.join(repr(r) for r in releases[k:k + 10])},\n" for k in range(0, len(releases), 10))
        out.append(f"\n{p}_RELEASES: tuple[str, ...] = (\n{lines})")
        out.append(f"{p}_REGISTERED: dict[str, tuple[tuple[str, str, str], ...]] = {{")
        for arch in sorted(registered):
            runs = "".join(f"({a!r}, {b!r}, {v!r}), " for a, b, v, _ in registered[arch]).rstrip()
            out.append(f"    {arch!r}: ({runs}),")
        out.append("}")
        out.append(f"{p}_CLASSES: dict[str, dict[str, tuple[tuple[str, str, Any, str], ...]]] = {{")
        for cls in sorted(classes):
            out.append(f"    {cls!r}: {{")
            for name, runs in classes[cls].items():
                body = "".join(f"\n        ({a!r}, {b!r}, {_repr(v)}, {w!r})," for a, b, v, w in runs)
                out.append(f"        {name!r}: ({body}\n        ),")
            out.append("    },")
        out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    for engine in MODELS:
        parser.add_argument(f"--{engine}", nargs="*", type=Path, default=[])
    args = parser.parse_args(argv)
    found = {engine: scan_engine(engine, getattr(args, engine.replace("-", "_"))) for engine in MODELS
             if getattr(args, engine.replace("-", "_"))}
    args.out.write_text(render(found), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
