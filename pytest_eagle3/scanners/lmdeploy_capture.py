"""Scan LMDeploy releases for the target architectures whose PyTorch engine captures EAGLE-3 aux states.

    python -m pytest_eagle3.scanners.lmdeploy_capture --out pytest_eagle3/knowledge/generated/lmdeploy_capture_table.py ROOT...

ROOT: an unpacked release wheel named ``lmdeploy-0.18.0`` (``pip download lmdeploy==0.18.0 --no-deps``; only
``lmdeploy/pytorch`` is read).

LMDeploy builds a target's engine config with the first ``AutoModelConfigBuilder`` subclass whose ``condition``
matches (pytorch/configurations/builder.py; modules in name order, ``DefaultModelConfigBuilder`` last); under spec
method eagle3 a builder that assigns ``hf_config.aux_hidden_state_layers`` (itself or through a builder whose
``build`` it calls) names the layers, and the model's forward captures them where it reads
``config.aux_hidden_state_layers`` (models/llama.py, models/kimi_k2_language.py). A model that reads the layers
from ``spec_model_ctx.target_aux_hidden_state_layers`` gets them only from a DFlash config (pytorch/config.py
``parse_dflash_config``; the scan checks that no other assignment feeds them): under EAGLE-3 it sends its final
hidden state and the draft skips fc (silent). A builder that asserts ``spec_method == 'deepseek_mtp'`` refuses
EAGLE-3 at startup. The architectures: pytorch/models/module_map.py ``MODULE_MAP``; a builder's model types are
matched to architectures through transformers' auto mappings (the env the scan runs in, named in the output).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pytest_eagle3.scanners.capture import ClassRef, Release, _run, _tuple, known_roots, runs_dict, scan_main
from pytest_eagle3.scanners.mlx_capture import _mappings

ENGINE = "lmdeploy"
PKG = "lmdeploy/pytorch"
FLAG = "aux_hidden_state_layers"
CTX_FLAG = "target_aux_hidden_state_layers"
CAPTURES, REFUSED, SILENT = "captures", "refused", "silent-no-capture"


@dataclass
class Builder:
    """One LMDeploy config builder: the architectures and model types its ``condition`` matches, and whether under
    eagle3 its ``build`` sets the aux layers or refuses."""

    name: str
    archs: set[str] = field(default_factory=set)
    model_types: set[str] = field(default_factory=set)
    sets_aux: bool = False
    refuses: bool = False
    #: the builders whose build() it calls with the spec method passed on
    calls: set[str] = field(default_factory=set)


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _condition(func: ast.FunctionDef, builder: Builder) -> None:
    """``hf_config.architectures[0] in [...]`` / ``model_arch == ...`` / ``hf_config.model_type in [...]``."""
    for node in ast.walk(func):
        if not (isinstance(node, ast.Compare) and len(node.comparators) == 1):
            continue
        left, right = node.left, _strings(node.comparators[0])
        text = ast.unparse(left)
        if "model_type" in text:
            builder.model_types |= right
        elif "architectures" in text or "arch" in text:
            builder.archs |= right


def _under_eagle3(func: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of ``func`` that run under spec method eagle3: a branch taken only when ``spec_method !=
    'eagle3'`` (Kimi-K2's MTP path) is left out."""
    out: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        out.append(node)
        if isinstance(node, ast.If):
            test = ast.unparse(node.test).replace('"', "'")
            visit(node.test)
            for branch in node.body if "spec_method != 'eagle3'" not in test else ():
                visit(branch)
            for branch in node.orelse if "spec_method == 'eagle3'" not in test else ():
                visit(branch)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(func)
    return out


def _build(func: ast.FunctionDef, builder: Builder, names: set[str], bases: set[str]) -> None:
    for node in _under_eagle3(func):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == FLAG for t in node.targets):
            builder.sets_aux = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) > 1 and FLAG in _strings(node.args[1]):
            builder.sets_aux = True
        elif isinstance(node, ast.Assert) and "deepseek_mtp" in ast.unparse(node.test) and "spec_method" in ast.unparse(node.test):
            builder.refuses = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "build":
            # a call with spec_method=None builds the plain target: what the callee does under eagle3 does not apply
            if any(k.arg == "spec_method" and ast.unparse(k.value) == "None" for k in node.keywords):
                continue
            called = ast.unparse(node.func.value)
            if called in names:
                builder.calls.add(called)
            elif called == "super()":  # the builder it subclasses
                builder.calls |= bases & names


def builders(root: Path) -> list[Builder]:
    """The config builders in the order AutoModelConfigBuilder tries them (module name order, Default left out)."""
    trees = [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted((root / PKG / "configurations").glob("*.py"))]
    classes = [(n, tree) for _, tree in trees for n in tree.body if isinstance(n, ast.ClassDef)
               and any(ast.unparse(b).endswith("ModelConfigBuilder") for b in n.bases)]
    names = {n.name for n, _ in classes}
    found: list[Builder] = []
    for node, _ in classes:
        builder = Builder(node.name)
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "condition":
                _condition(item, builder)
            elif isinstance(item, ast.FunctionDef) and item.name == "build":
                _build(item, builder, names, {ast.unparse(b) for b in node.bases})
        found.append(builder)
    by_name = {b.name: b for b in found}
    for builder in found:  # what a builder's build() calls, to any depth
        todo, seen = list(builder.calls), set()
        while todo:
            other = by_name.get(todo.pop())
            if other is None or other.name in seen:
                continue
            seen.add(other.name)
            builder.sets_aux |= other.sets_aux
            builder.refuses |= other.refuses
            todo.extend(other.calls)
    return [b for b in found if b.name != "DefaultModelConfigBuilder"]


def module_map(root: Path) -> dict[str, tuple[str, str]]:
    """architecture -> (module, class) from MODULE_MAP.update({...}) calls."""
    tree = ast.parse((root / PKG / "models" / "module_map.py").read_text(encoding="utf-8"))
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
                and ast.unparse(node.func.value) == "MODULE_MAP" and node.args and isinstance(node.args[0], ast.Dict)):
            continue
        for key, value in zip(node.args[0].keys, node.args[0].values):
            path = ast.unparse(value).split("}")[-1].strip(".'\"f")
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and "." in path:
                module, cls = path.rsplit(".", 1)
                out[key.value] = (module, cls)
    return out


def _mentions(release: Release, ref: ClassRef, name: str, depth: int = 0) -> bool:
    """The class (its bases included) or a model it builds as an attribute reads ``name`` off a config (not off
    ``self``: ``self.aux_hidden_state_layers = ...spec_model_ctx...`` is the DFlash path)."""
    if depth > 3:
        return False
    for owner in release.mro(ref):
        for node in ast.walk(owner[1]):
            if isinstance(node, ast.Attribute) and node.attr == name and ast.unparse(node.value) != "self" or \
                    isinstance(node, ast.Constant) and node.value == name:
                return True
    for attr in ("model", "language_model"):
        if any(_mentions(release, inner, name, depth + 1) for inner in release.attribute_classes(ref, attr)):
            return True
    return False


def _context_is_dflash_only(root: Path) -> bool:
    """pytorch/config.py: every non-None value given to ``target_layer_ids`` comes from parse_dflash_config."""
    tree = ast.parse((root / PKG / "config.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = [t for t in node.targets for t in (t.elts if isinstance(t, ast.Tuple) else [t])]
            if any(isinstance(t, ast.Name) and t.id == "target_layer_ids" for t in targets):
                value = ast.unparse(node.value)
                if value != "None" and "parse_dflash_config" not in value:
                    return False
    return True


def scan(root: Path, archs_of: dict[str, set[str]]) -> dict[str, str]:
    """architecture -> support in one release."""
    release = Release(ENGINE, root)
    if not _context_is_dflash_only(root):
        print(f"{root}: target_layer_ids set from outside parse_dflash_config: read spec_model_ctx by hand",
              file=sys.stderr)
    order = builders(root)
    types_of: dict[str, set[str]] = {}
    for model_type, names in archs_of.items():
        for name in names:
            types_of.setdefault(name, set()).add(model_type)
    registry = module_map(root)
    out: dict[str, str] = {}
    for arch, (module, cls) in registry.items():
        ref = release.resolve(module.removeprefix("lmdeploy.pytorch.models."), cls)
        # a checkpoint's model_type decides the builder: every architecture registered to the same class shares it
        types = {t for other, entry in registry.items() if entry == (module, cls) for t in types_of.get(other, ())}
        chosen = next((b for b in order if arch in b.archs or types & b.model_types), None)
        if chosen is not None and chosen.refuses:
            out[arch] = REFUSED
        elif chosen is not None and chosen.sets_aux and ref is not None and _mentions(release, ref, FLAG):
            out[arch] = CAPTURES
        else:
            out[arch] = SILENT
    return out


def spans(roots: list[Path]) -> tuple[list[str], dict[str, dict[str, list[tuple[str, str]]]], str]:
    """(releases read, support -> arch -> runs of consecutive releases read with that support, transformers version)."""
    version, archs_of, _ = _mappings()
    runs: dict[str, dict[str, list[tuple[str, str]]]] = {k: {} for k in (CAPTURES, REFUSED, SILENT, "registered")}
    previous: dict[str, set[str]] = {k: set() for k in runs}
    releases = known_roots(ENGINE, roots)
    for release, root in releases:
        found = scan(root, archs_of)
        now = {k: {a for a, s in found.items() if s == k} for k in (CAPTURES, REFUSED, SILENT)}
        now["registered"] = set(found)
        for key, names in now.items():
            _run(runs[key], names, previous[key], str(release))
        previous = now
        print(f"{ENGINE} {release}: {len(now[CAPTURES])} capture, {len(now[REFUSED])} refused, "
              f"{len(now[SILENT])} silent of {len(found)}", file=sys.stderr)
    return [str(v) for v, _ in releases], runs, version


HEADER = '''"""Target architectures whose LMDeploy PyTorch engine captures EAGLE-3 aux states, scanned from the releases.

Generated by ``pytest_eagle3/scanners/lmdeploy_capture.py`` (do not edit) over ``lmdeploy/pytorch`` of every release wheel in
``LMDEPLOY_RELEASES`` ({count}); builders' model types matched to architectures by transformers {transformers}.

A target captures where the config builder LMDeploy picks for it assigns ``aux_hidden_state_layers`` under spec
method eagle3 and its model reads them off the config (configurations/llama.py + models/llama.py,
configurations/kimi_k2.py + models/kimi_k2_language.py). ``LMDEPLOY_REFUSED``: the builder asserts spec_method ==
'deepseek_mtp' (AssertionError at startup). Every other registered architecture sends its final hidden state
(``LMDEPLOY_OTHERWISE``: the draft skips fc, silently; the spec_model_ctx layers are DFlash's only). Runs are
(first, last) of consecutive releases read; ``LMDEPLOY_REGISTERED``: those in which MODULE_MAP lists it.
"""

from __future__ import annotations
'''


def render(releases: list[str], runs: dict[str, dict[str, list[tuple[str, str]]]], transformers: str) -> str:
    """The generated ``lmdeploy_capture_table.py`` from :func:`spans`."""
    count = f"{len(releases)} releases, {releases[0]} to {releases[-1]}" if releases else "none"
    never = sorted(set(runs["registered"]) - set(runs[CAPTURES]))
    out = [HEADER.format(count=count, transformers=transformers),
           f"\nLMDEPLOY_RELEASES: tuple[str, ...] = {_tuple(releases)}",
           "LMDEPLOY_UNAVAILABLE: tuple[str, ...] = ()",
           f"LMDEPLOY_OTHERWISE = {SILENT!r}",
           "LMDEPLOY_WHY: dict[str, str] = {",
           f"    {REFUSED!r}: \"its config builder asserts spec_method == 'deepseek_mtp': AssertionError at startup\",",
           f"    {SILENT!r}: (\"no config builder sets aux_hidden_state_layers for it under eagle3, or its model does not \"",
           "                          \"read them: it sends its final hidden state and the draft skips fc\"),",
           "}",
           *runs_dict("LMDEPLOY_SPANS", runs[CAPTURES]),
           *runs_dict("LMDEPLOY_REFUSED", runs[REFUSED]),
           "LMDEPLOY_NEVER: frozenset[str] = frozenset({", *(f"    {a!r}," for a in never), "})",
           *runs_dict("LMDEPLOY_REGISTERED", runs["registered"])]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(scan_main(__doc__ or "", lambda roots: render(*spans(roots)), sys.argv[1:]))
