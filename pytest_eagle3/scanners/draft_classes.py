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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pytest_eagle3.scanners.capture import ClassRef, entry_class_names, known_roots
from pytest_eagle3.scanners.draft_graph import Graphs, Reach
from pytest_eagle3.scanners.draft_release import ENTRIES, FIELDS, MODELS, READ, UNUSED, DraftRelease, chain_of, name_of


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
        if isinstance(node, ast.Call) and (name_of(node.func) == "replace" and len(node.args) == 2
                                           or name_of(node.func) == "sub" and len(node.args) >= 2):
            texts = [a.value for a in node.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(texts) == 2:
                out.append((texts[0], texts[1]))
        elif isinstance(node, ast.Dict) and node.keys:
            pairs = [(k.value, v.value) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and isinstance(k.value, str)
                     and isinstance(v, ast.Constant) and isinstance(v.value, str)]
            if len(pairs) == len(node.keys):
                out.extend(pairs)
    return out


def _mapper(release: DraftRelease, ref: ClassRef) -> list[tuple[str, str]]:
    """``hf_to_vllm_mapper = WeightsMapper(orig_to_new_substr={...})`` class attributes along the MRO."""
    out: list[tuple[str, str]] = []
    for r in release.mro(ref):
        for node in r[1].body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and name_of(node.value.func) == \
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
    if any(isinstance(n, ast.Call) and name_of(n.func) == "AutoWeightsLoader" for n in ast.walk(func)):
        return "engine-loader"
    return "unknown"


@dataclass(frozen=True)
class ClassScan:
    """What one draft class of one release does (each value a short text; ``where``: file.py:Class)."""

    values: dict[str, Any]
    where: str


def scan_class(release: DraftRelease, ref: ClassRef) -> ClassScan:
    """What one draft class does in one release (the behaviours the module docstring lists), as a :class:`ClassScan`."""
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
        if isinstance(node, ast.Assign) and any(chain_of(t) in (("self", ["rotary_emb"]), ("self", ["rope"]))
                                                for t in node.targets) \
                and isinstance(node.value, ast.Call):
            keys = sorted(k.arg for k in node.value.keywords if k.arg in ("rope_scaling", "rope_parameters"))
            return f"{name_of(node.value.func)}({', '.join(keys)})"
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
        for entry in entry_class_names(tree):
            found = release.resolve(name, entry)
            if found is not None:
                out[found[1].name] = found
        del module
    return out


# ---------------------------------------------------------------- runs over releases
def scan_release(engine: str, root: Path) -> tuple[dict[str, str], dict[str, ClassScan]]:
    """(architecture -> its draft class's name, class name -> its :class:`ClassScan`) in one release."""
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
    """(releases read, architecture -> runs of its class, class -> behaviour -> runs of its value) over one engine's
    release roots, oldest first."""
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
    """The generated ``draft_class_table.py`` from each engine's :func:`scan_engine`."""
    counts = "; ".join(f"{e}: {len(r)} releases, {r[0]} to {r[-1]}" for e, (r, _, _) in found.items() if r)
    out = [HEADER.format(counts=counts)]
    for engine, (releases, registered, classes) in found.items():
        p = engine.upper().replace("-", "_")
        lines = "".join(f"    {', '.join(repr(r) for r in releases[k:k + 10])},\n" for k in range(0, len(releases), 10))
        out.append(f"\n{p}_RELEASES: tuple[str, ...] = (\n{lines})")
        out.append(f"{p}_REGISTERED: dict[str, tuple[tuple[str, str, str], ...]] = {{")
        for arch in sorted(registered):
            text = "".join(f"({a!r}, {b!r}, {v!r}), " for a, b, v, _ in registered[arch]).rstrip()
            out.append(f"    {arch!r}: ({text}),")
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
    """Scan the release roots given per engine (``--vllm ROOT...``, one option per engine) and write the draft-class
    table to ``--out``."""
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
