"""Scan released engine sources for the target architectures that capture EAGLE-3 aux states.

    python -m pytest_eagle3.scanners.capture --out pytest_eagle3/knowledge/generated/capture_table.py \\
        --vllm ROOT... --sglang ROOT... [--unavailable ENGINE==V ...]

ROOT: an unpacked release (a wheel's files) named ``vllm-0.11.2`` / ``sglang-0.5.2``. A class is resolved
through its module's imports (``from .qwen3_vl import X as Y``, the package's absolute imports), its bases
followed to any depth across modules, and the method that captures is checked for delegation:
``self.language_model.set_...(...)`` / ``self.model.layers_to_capture = ...`` need the inner model (the class
assigned to that attribute in an ``__init__``, or named by ``init_vllm_registered_model(architectures=[...])``)
to capture in turn; an inner model that cannot be resolved statically is trusted.

vLLM: the registry's architecture -> (module, class); from 0.10.1 (``SupportsEagle3`` in interfaces.py) the
class must have the interface in its MRO (``supports_eagle3`` is an ``isinstance`` check) and a concrete
``set_aux_hidden_state_layers`` (the interface's own default, where it has one, delegates to the language
model's ``model``, which must be an ``EagleModelMixin``); before 0.10.1 the method alone. SGLang: every
``EntryClass``, which must define or inherit ``set_eagle3_layers_to_capture`` (the model runner calls it).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from pytest_eagle3.scanners.imports import PLATFORM_WORDS, PLATFORMS, Module, SourceOf, index, read_module

MODELS = {"vllm": "vllm/model_executor/models", "sglang": "sglang/srt/models",
          "tokenspeed": "tokenspeed/runtime/models", "mlx-vlm": "mlx_vlm/models", "lmdeploy": "lmdeploy/pytorch/models"}
ABSOLUTE = {"vllm": "vllm.model_executor.models.", "sglang": "sglang.srt.models.",
            "tokenspeed": "tokenspeed.runtime.models.", "mlx-vlm": "mlx_vlm.models.", "lmdeploy": "lmdeploy.pytorch.models."}
METHOD = {"vllm": "set_aux_hidden_state_layers", "sglang": "set_eagle3_layers_to_capture",
          "tokenspeed": "set_eagle3_layers_to_capture"}
FLAG = {"vllm": "aux_hidden_state_layers", "sglang": "layers_to_capture", "tokenspeed": "layers_to_capture"}


#: engine -> packages outside the model package whose modules a registry row or an import may name, keyed by
#: their absolute dotted name (vLLM 0.33.0+: ``vllm.models.deepseek_v4``, a per-platform package).
EXTRA_PACKAGES: dict[str, tuple[str, ...]] = {"vllm": ("vllm.models",)}

ClassRef = tuple[str, ast.ClassDef]  # (module name, class node)


class Release:
    """One release's model package (and the engine's :data:`EXTRA_PACKAGES`), parsed once."""

    #: engine -> the absolute import prefix of its model package (a subclass reading another package sets its own)
    absolute: dict[str, str] = ABSOLUTE
    #: engine -> its model package's path in the wheel (a subclass reading another package sets its own)
    models: dict[str, str] = MODELS

    def __init__(self, engine: str, root: Path) -> None:
        self.engine = engine
        self.wheel = root
        self.root = root / self.models[engine]
        self.source = SourceOf(self.absolute[engine], EXTRA_PACKAGES.get(engine, ()))
        self.paths = index(self.root)
        for package in EXTRA_PACKAGES.get(engine, ()):
            self.paths.update(index(root / package.replace(".", "/"), package))
        self._mro: dict[int, list[ClassRef]] = {}
        self.modules: dict[str, Module] = self._modules()
        self.interface = self.resolve("interfaces", "SupportsEagle3") if engine == "vllm" else None

    def _modules(self) -> dict[str, Module]:
        return {name: self._parse(name, path, package) for name, (path, package) in self.paths.items()}

    def _parse(self, name: str, path: Path, package: bool) -> Module:
        return read_module(name, path, package, self.source)

    def key(self, dotted: str) -> str:
        """A registry row's module (``qwen3_5``, ``vllm.model_executor.models.x``, ``vllm.models.deepseek_v4``)
        as this release keys it."""
        return self.source.key(dotted) or dotted

    def resolve(self, module: str, name: str, depth: int = 0, platform: str = PLATFORMS[0]) -> ClassRef | None:
        """The class ``name`` means in ``module`` on ``platform``, through imports, re-exports and aliases."""
        found = self.modules.get(self.key(module))
        if found is None or depth > 12 or platform in found.raises:
            return None
        binding = found.binding(name, platform)
        if isinstance(binding, ast.ClassDef):
            return found.name, binding
        if binding is not None:
            return self.resolve(binding[0], binding[1], depth + 1, platform)
        for star in found.stars:
            if not name.startswith("_"):
                ref = self.resolve(star, name, depth + 1, platform)
                if ref is not None:
                    return ref
        return None

    def base_refs(self, ref: ClassRef) -> Iterator[ClassRef]:
        """The class's bases resolved from its module (a ``module.Class`` base by its class name alone); a base not
        found is left out."""
        module, node = ref
        for base in node.bases:
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                found = self.resolve(module, base.id)
            elif isinstance(base, ast.Attribute):
                found = self.by_name(base.attr)
            else:
                found = None
            if found is not None:
                yield found

    def by_name(self, name: str) -> ClassRef | None:
        """The first class named ``name`` in any module of the release, or None."""
        for module in self.modules.values():
            if name in module.classes:
                return module.name, module.classes[name]
        return None

    def mro(self, ref: ClassRef) -> list[ClassRef]:
        """The class and its resolved bases, depth first, each once."""
        cached = self._mro.get(id(ref[1]))
        if cached is not None:
            return cached
        out: list[ClassRef] = []
        seen: set[int] = set()

        def walk(r: ClassRef) -> None:
            if id(r[1]) in seen:
                return
            seen.add(id(r[1]))
            out.append(r)
            for b in self.base_refs(r):
                walk(b)
        walk(ref)
        self._mro[id(ref[1])] = out
        return out

    def method(self, ref: ClassRef, name: str) -> tuple[ClassRef, ast.FunctionDef] | None:
        """The first method ``name`` along the class's MRO, with the class that defines it; None where none does."""
        for r in self.mro(ref):
            for node in r[1].body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return r, node
        return None

    def attribute_classes(self, ref: ClassRef, attr: str) -> list[ClassRef]:
        """The classes assigned to ``self.<attr>`` in an ``__init__`` along the MRO (a registered model named by
        ``architectures=[...]`` too)."""
        out: list[ClassRef] = []
        for r in self.mro(ref):
            init = next((n for n in r[1].body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            for node in ast.walk(init) if init else ():
                if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                    continue
                if not any(_self_attr(t) == attr for t in node.targets):
                    continue
                out.extend(self._called(r[0], node.value) or self._factory(ref, node.value))
            if out:
                return out
        return out

    def _called(self, module: str, call: ast.Call) -> list[ClassRef]:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "init_vllm_registered_model":
            archs = [k.value for k in call.keywords if k.arg == "architectures"]
            names = [e.value for a in archs if isinstance(a, ast.List) for e in a.elts
                     if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return [c for c in (self.registered(n) for n in names) if c is not None]
        if isinstance(func, ast.Name):
            found = self.resolve(module, func.id)
            return [found] if found is not None else []
        return []

    def _factory(self, ref: ClassRef, call: ast.Call) -> list[ClassRef]:
        """``self.resolve_model(...)`` returning ``self.model_cls(...)``, ``model_cls = X`` in a class body along
        ``ref``'s MRO (TokenSpeed's BaseCausalLM), or ``self.model_cls(...)`` itself."""
        chain = _self_chain(call.func)
        if not chain or len(chain) != 1:
            return []
        name = chain[0]
        found = self.method(ref, name)
        if found is not None:
            for node in ast.walk(found[1]):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                    inner = _self_chain(node.value.func)
                    if inner and len(inner) == 1:
                        name = inner[0]
                        break
        for r in self.mro(ref):
            for node in r[1].body:
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets) \
                        and isinstance(node.value, ast.Name):
                    klass = self.resolve(r[0], node.value.id)
                    return [klass] if klass is not None else []
        return []

    registry: dict[str, tuple[str, str]] = {}

    def registered(self, arch: str) -> ClassRef | None:
        """The class the registry maps ``arch`` to, resolved; None where it is not registered or not resolved."""
        entry = self.registry.get(arch)
        return self.resolve(*entry) if entry else None


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _self_chain(node: ast.expr) -> list[str] | None:
    """``self.a.b`` -> ["a", "b"]."""
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    return chain if isinstance(node, ast.Name) and node.id == "self" else None


def _is_stub(func: ast.FunctionDef) -> bool:
    body = [n for n in func.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return not body


class Scanner:
    """Which classes of one release capture."""

    def __init__(self, release: Release) -> None:
        self.release = release
        self.engine = release.engine
        self.memo: dict[int, bool] = {}

    def captures(self, ref: ClassRef, depth: int = 0) -> bool:
        """Whether the class captures (kept per class; a class reached again while it is being judged does not)."""
        key = id(ref[1])
        if key not in self.memo:
            self.memo[key] = False  # a cycle does not capture
            self.memo[key] = self._captures(ref, depth)
        return self.memo[key]

    def _captures(self, ref: ClassRef, depth: int) -> bool:
        r = self.release
        mro = r.mro(ref)
        if r.interface is not None and not any(c[1] is r.interface[1] for c in mro):
            return False
        found = r.method(ref, METHOD[self.engine])
        if found is None:
            return False
        owner, func = found
        if r.interface is not None and owner[1] is r.interface[1]:
            return False if _is_stub(func) else self._default(ref, depth)
        return self._delegates_to_capture(ref, func, depth)

    def _default(self, ref: ClassRef, depth: int) -> bool:
        """vLLM's interface default: the language model's (else the class's own) ``model`` is an EagleModelMixin."""
        r = self.release
        holders = r.attribute_classes(ref, "language_model") or [ref]
        inner = [m for h in holders for m in r.attribute_classes(h, "model")]
        if not inner:
            return True  # not resolvable statically: trust the interface
        return any(any(c[1].name == "EagleModelMixin" for c in r.mro(m)) for m in inner)

    def _delegates_to_capture(self, ref: ClassRef, func: ast.FunctionDef, depth: int) -> bool:
        """A method that forwards to ``self.X...`` captures when that inner model does; otherwise it captures."""
        method, flag = METHOD[self.engine], FLAG[self.engine]
        for node in ast.walk(func):
            chain: list[str] | None = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
                chain = _self_chain(node.func.value)
                check = "method"
            elif isinstance(node, ast.Assign):
                target = node.targets[0]
                if isinstance(target, ast.Attribute) and target.attr == flag:
                    chain = _self_chain(target.value)
                    check = "flag"
            if not chain:
                continue
            inner = self._chain_classes(ref, chain)
            if not inner or depth > 6:
                return True
            if check == "method":
                return any(self.captures(c, depth + 1) for c in inner)
            return any(self._reads_flag(c) for c in inner)
        return True

    def _chain_classes(self, ref: ClassRef, chain: list[str]) -> list[ClassRef]:
        current = [ref]
        for attr in chain:
            current = [c for r in current for c in self.release.attribute_classes(r, attr)]
            if not current:
                return []
        return current

    def _reads_flag(self, ref: ClassRef) -> bool:
        """The inner model's ``forward`` (the first along its MRO) reads the capture flag or builds the aux list
        (vLLM >= 0.20: EagleModelMixin._maybe_add_hidden_state); an override of forward without it captures
        nothing (vLLM 0.12-0.14.1 Qwen3MoeLLMModel, SGLang 0.5.2-0.5.4 Glm4Model)."""
        found = self.release.method(ref, "forward")
        if found is None:
            return True  # not resolvable statically: trusted
        flag = FLAG[self.engine]
        for sub in ast.walk(found[1]):
            if isinstance(sub, ast.Attribute) and sub.attr in (flag, "_maybe_add_hidden_state"):
                return True
            if isinstance(sub, ast.Name) and sub.id == "aux_hidden_states":
                return True  # a per-layer flag (SGLang MiniMax-M3 ``_is_layer_to_capture``) feeding the list
        return False


def vllm_registry(root: Path) -> dict[str, tuple[str, str]]:
    """architecture -> (module, class) from the registry's dict literals (speculative drafts left out)."""
    tree = ast.parse((root / MODELS["vllm"] / "registry.py").read_text(encoding="utf-8"))
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target if isinstance(node, ast.AnnAssign) else None
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict) or "SPECULATIVE" in target.id:
            continue
        for key, item in zip(value.keys, value.values):
            if (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(item, ast.Tuple)
                    and len(item.elts) >= 2 and all(isinstance(e, ast.Constant) for e in item.elts[:2])):
                module, cls = (e.value for e in item.elts[:2])  # type: ignore[attr-defined]
                out[key.value] = (str(module), str(cls))
    return out


def sglang_entries(release: Release) -> dict[str, tuple[str, str]]:
    """class name -> (module, class) for every ``EntryClass`` (SGLang registers a model by its class name)."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(release.root.rglob("*.py")):
        name = ".".join(path.relative_to(release.root).with_suffix("").parts)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for entry in entry_class_names(tree):
            found = release.resolve(name, entry)
            out[found[1].name if found else entry] = (found[0], found[1].name) if found else (name, entry)
    return out


def entry_class_names(tree: ast.Module) -> list[str]:
    """The names a module's ``EntryClass = X`` / ``EntryClass = [X, Y]`` registers (SGLang's model registry)."""
    values = [node.value for node in tree.body if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets)]
    return [item.id for value in values for item in (value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value])
            if isinstance(item, ast.Name)]


@dataclass
class ReleaseScan:
    """One release's capture scan: the CUDA reading judged, other platforms noted where their class differs."""

    release: Release
    #: architecture -> the class CUDA builds, for those that capture
    capturing: dict[str, ClassRef]
    #: every registered architecture
    registered: set[str]
    #: architecture -> what the other platforms build, where it differs ("on ROCm: ...")
    platforms: dict[str, str]

    def where(self, ref: ClassRef) -> str:
        """The wheel path of a class's module (``vllm/models/qwen3_5/nvidia/model.py``)."""
        path = self.release.paths.get(ref[0])
        return str(path[0].relative_to(self.release.wheel)) if path else ref[0]


def scan_release(engine: str, root: Path) -> ReleaseScan:
    """Which registered architectures capture in one release (the class a CUDA user gets), with platform notes."""
    release = Release(engine, root)
    registry = vllm_registry(root) if engine == "vllm" else sglang_entries(release)
    release.registry = registry
    scanner = Scanner(release)
    found = ReleaseScan(release, {}, set(registry), {})
    for arch, (module, cls) in registry.items():
        ref = release.resolve(module, cls)
        if ref is not None and scanner.captures(ref):
            found.capturing[arch] = ref
        others: dict[str, list[str]] = {}
        for platform in PLATFORMS[1:]:
            other = release.resolve(module, cls, platform=platform)
            if ref is None or (other is not None and other[1] is ref[1]):
                continue
            if other is None:
                what = "not importable (its module raises)" if any(
                    platform in m.raises for m in release.modules.values() if m.name == release.key(module)) \
                    else "not resolved"
            else:
                what = (f"{other[1].name} of {found.where(other)} "
                        f"({'captures' if scanner.captures(other) else 'lacks the EAGLE-3 capture interface'})")
            others.setdefault(what, []).append(PLATFORM_WORDS[platform])
        if others:
            found.platforms[arch] = "; ".join(f"on {', '.join(p)}: {what}" for what, p in others.items())
    return found


def capturing_classes(engine: str, root: Path) -> tuple[dict[str, str], set[str]]:
    """(architecture -> its class name, for those that capture; every registered architecture) in one release."""
    found = scan_release(engine, root)
    return {arch: ref[1].name for arch, ref in found.capturing.items()}, found.registered


def scan(engine: str, root: Path) -> tuple[set[str], set[str]]:
    """(architectures that capture, every registered architecture) in one release."""
    found = scan_release(engine, root)
    return set(found.capturing), found.registered


def known_roots(engine: str, roots: list[Path]) -> list[tuple[Version, Path]]:
    """The roots, oldest first; a root of a release missing from RELEASES is reported on stderr."""
    from pytest_eagle3.knowledge.releases import RELEASES

    listed = {Version(v) for v in RELEASES[engine]}
    found = sorted(((Version(r.name.rsplit("-", 1)[-1]), r) for r in roots), key=lambda x: x[0])
    for version, root in found:
        if version not in listed:
            print(f"{engine} {version} ({root}) is not in RELEASES (add it there)", file=sys.stderr)
    return found


def _run(runs: dict[str, list[tuple[str, str]]], names: set[str], previous: set[str], version: str) -> None:
    for arch in names:
        if arch in previous:
            runs[arch][-1] = (runs[arch][-1][0], version)
        else:
            runs.setdefault(arch, []).append((version, version))


Runs = dict[str, list[tuple[str, str]]]  # arch -> runs (first, last) of consecutive releases read
Notes = dict[str, list[tuple[str, str, str]]]  # arch -> runs (first, last, note)


def spans(engine: str, roots: list[Path]) -> tuple[list[str], Runs, set[str], Runs, Notes]:
    """(releases read, arch -> runs of consecutive releases read in which it captures, registered archs,
    arch -> runs of consecutive releases read that register it, arch -> runs of its other platforms' note)."""
    releases = known_roots(engine, roots)
    runs: Runs = {}
    listed: Runs = {}
    notes: Notes = {}
    registered: set[str] = set()
    previous: set[str] = set()
    previous_known: set[str] = set()
    previous_version = ""
    for version, root in releases:
        found = scan_release(engine, root)
        capturing, known = set(found.capturing), found.registered
        registered |= known
        _run(runs, capturing, previous, str(version))
        _run(listed, known, previous_known, str(version))
        for arch, note in found.platforms.items():
            had = notes.setdefault(arch, [])
            if had and had[-1][1] == previous_version and had[-1][2] == note:
                had[-1] = (had[-1][0], str(version), note)
            else:
                had.append((str(version), str(version), note))
        previous, previous_known, previous_version = capturing, known, str(version)
        print(f"{engine} {version}: {len(capturing)} of {len(known)} capture", file=sys.stderr)
    return [str(v) for v, _ in releases], runs, registered, listed, notes


HEADER = '''"""Target architectures that capture EAGLE-3 aux states, per engine, scanned from the released sources.

Generated by ``pytest_eagle3/scanners/capture.py`` (do not edit) over the unpacked wheel of every release listed in
``*_RELEASES`` ({counts}).
``*_UNAVAILABLE``: releases in ``knowledge.releases.RELEASES`` with no archive on the index to read (a release not read takes the row of the release read before it).

Classes are resolved through imports across modules, bases to any depth; a method that forwards to an inner
language model captures only when that model's forward collects the aux states (vLLM: ``SupportsEagle3`` in
the MRO from 0.10.1 and a concrete ``set_aux_hidden_state_layers``; SGLang: an ``EntryClass`` defining or
inheriting ``set_eagle3_layers_to_capture``). ``*_SPANS``: per architecture, the runs (first, last) of
consecutive releases read in which it captures; ``*_REGISTERED``: the runs in which the registry lists it.
The class judged is the one a CUDA user gets (a package's ``__init__`` re-exports followed, platform branches
read as on CUDA: ``pytest_eagle3/scanners/imports.py``); ``*_PLATFORMS``: per architecture, the runs (first,
last, note) in which ROCm / XPU / CPU build another class, and what it does.
``*_NEVER``: registered architectures that capture in no release read (vLLM: v1/worker/gpu_model_runner.py RuntimeError "Model does not support EAGLE3 interface",
read 0.12.0-0.17.0; SGLang: AttributeError, or ValueError from 0.5.23). A static scan: a method that exists
may still capture nothing (SGLang Qwen3.5 before 0.5.22): hand-checked rows in ``capture.py`` take precedence.
"""

from __future__ import annotations
'''


def _tuple(items: list[str], per_line: int = 10) -> str:
    lines = [", ".join(repr(i) for i in items[k:k + per_line]) + "," for k in range(0, len(items), per_line)]
    return "(\n" + "".join(f"    {line}\n" for line in lines) + ")" if items else "()"


def runs_dict(name: str, found: dict[str, list[tuple[str, str]]]) -> list[str]:
    """The lines of a generated ``NAME: dict[arch, runs]`` literal, architectures sorted."""
    return [f"{name}: dict[str, tuple[tuple[str, str], ...]] = {{",
            *(f"    {arch!r}: ({''.join(f'({a!r}, {b!r}), ' for a, b in found[arch]).rstrip()})," for arch in sorted(found)),
            "}"]


def scan_main(doc: str, render_roots: Callable[[list[Path]], str], argv: list[str]) -> int:
    """``--out FILE ROOT...``: a one-engine scan's command line (pytest_eagle3/scanners/mlx_capture.py, scanners/lmdeploy_capture.py)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("roots", nargs="+", type=Path)
    args = parser.parse_args(argv)
    args.out.write_text(render_roots(args.roots), encoding="utf-8")
    return 0


def render(found: dict[str, tuple[list[str], Runs, set[str], Runs, Notes]], unavailable: dict[str, list[str]]) -> str:
    """The generated ``capture_table.py`` from each engine's :func:`spans`."""
    counts = "; ".join(f"{e}: {len(r)} releases, {r[0]} to {r[-1]}" for e, (r, *_) in found.items() if r)
    out = [HEADER.format(counts=counts)]
    for engine, (releases, runs, registered, listed, notes) in found.items():
        p = engine.upper()
        out.append(f"\n{p}_RELEASES: tuple[str, ...] = {_tuple(releases)}")
        out.append(f"{p}_UNAVAILABLE: tuple[str, ...] = {_tuple(unavailable.get(engine, []))}")
        out.append(f"{p}_SPANS: dict[str, tuple[tuple[str, str], ...]] = {{")
        for arch in sorted(runs):
            out.append(f"    {arch!r}: ({''.join(f'({a!r}, {b!r}), ' for a, b in runs[arch]).rstrip()}),")
        out.append("}")
        never = sorted(registered - set(runs))
        out.append(f"{p}_NEVER: frozenset[str] = frozenset({{")
        out.extend(f"    {a!r}," for a in never)
        out.append("})")
        out.append(f"{p}_REGISTERED: dict[str, tuple[tuple[str, str], ...]] = {{")
        for arch in sorted(listed):
            out.append(f"    {arch!r}: ({''.join(f'({a!r}, {b!r}), ' for a, b in listed[arch]).rstrip()}),")
        out.append("}")
        out.append(f"{p}_PLATFORMS: dict[str, tuple[tuple[str, str, str], ...]] = {{")
        for arch in sorted(notes):
            out.append(f"    {arch!r}: (")
            out.extend(f"        ({a!r}, {b!r},\n         {note!r})," for a, b, note in notes[arch])
            out.append("    ),")
        out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """Scan the ``--vllm`` / ``--sglang`` / ``--tokenspeed`` release roots and write the capture table to ``--out``
    (``--unavailable``: the releases with no archive to read)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--vllm", nargs="*", type=Path, default=[])
    parser.add_argument("--sglang", nargs="*", type=Path, default=[])
    parser.add_argument("--tokenspeed", nargs="*", type=Path, default=[])
    parser.add_argument("--unavailable", nargs="*", default=[], help="ENGINE==VERSION not on the index")
    args = parser.parse_args(argv)
    unavailable: dict[str, list[str]] = {}
    for item in args.unavailable:
        engine, version = item.split("==")
        unavailable.setdefault(engine, []).append(version)
    found = {engine: spans(engine, roots) for engine, roots in (("vllm", args.vllm), ("sglang", args.sglang),
                                                                ("tokenspeed", args.tokenspeed))}
    args.out.write_text(render(found, unavailable), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
