"""A module's top-level names as Python binds them on import, per platform, read from its AST.

The scanners resolve a class name through a module's bindings: ``class X``, ``from .m import Y as X`` (relative or
absolute into a package the release indexes), ``X = Y`` aliases and ``from .m import *``. Statements under a
module-level ``if`` or ``try`` bind what the branch Python takes binds:

* ``if`` tests over the platform (``current_platform.is_cuda()``, ``is_rocm()``, ``is_xpu()``, ``is_cpu()``,
  ``is_cuda_alike()``, ``TYPE_CHECKING`` (False at run time), ``not``/``and``/``or`` of those) are evaluated for
  each platform in :data:`PLATFORMS`; a test the reading cannot decide takes its first branch;
* ``try`` takes its body (a full install imports); the ``except`` handlers' names are fallbacks;
* a name bound only in a branch not taken (``if TYPE_CHECKING:`` imports) is a fallback binding, used when no
  taken branch binds it;
* a taken top-level ``raise`` (vLLM 0.34.0 ``vllm/models/mistral/mistral_large4/__init__.py``: "only supported on
  NVIDIA and AMD GPUs") makes the module unimportable on that platform.

The CUDA reading is the one judged (the class a CUDA user gets); :class:`Module` keeps the other platforms'
bindings where they differ.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: The platforms read; the first is the judged one.
PLATFORMS = ("cuda", "rocm", "xpu", "cpu")
#: Platform words for a note ("on ROCm: ...").
PLATFORM_WORDS = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU", "cpu": "CPU"}
#: ``current_platform.<method>()`` -> the platforms on which it is true.
_TESTS = {"is_cuda": {"cuda"}, "is_rocm": {"rocm"}, "is_xpu": {"xpu"}, "is_cpu": {"cpu"},
          "is_cuda_alike": {"cuda", "rocm"}, "is_tpu": set(), "is_neuron": set(), "is_hpu": set()}

Import = tuple[str, str]  # (module, name)
Binding = ast.ClassDef | Import


@dataclass
class Module:
    """One module's bindings: the CUDA reading in ``classes``/``imports``/``stars``, others where they differ."""

    name: str
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, Import] = field(default_factory=dict)  # local name -> (module, name)
    stars: list[str] = field(default_factory=list)  # modules of ``from M import *``
    #: platform -> name -> its binding there, for the names bound otherwise than on CUDA
    platforms: dict[str, dict[str, Binding]] = field(default_factory=dict)
    #: platforms on which importing the module raises
    raises: set[str] = field(default_factory=set)

    def binding(self, name: str, platform: str = PLATFORMS[0]) -> Binding | None:
        """What ``name`` is bound to on ``platform`` (None: not bound here)."""
        if platform != PLATFORMS[0] and name in self.platforms.get(platform, {}):
            return self.platforms[platform][name]
        if name in self.classes:
            return self.classes[name]
        return self.imports.get(name)


def test_holds(test: ast.expr, platform: str) -> bool | None:
    """A module-level ``if`` test on ``platform``: True, False, or None where the reading cannot decide."""
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return False
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr in _TESTS \
            and not test.args:
        return platform in _TESTS[test.func.attr]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = test_holds(test.operand, platform)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [test_holds(v, platform) for v in test.values]
        decisive = isinstance(test.op, ast.Or)  # True decides an ``or``, False an ``and``
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    return None


class _Walk:
    """One platform's reading of a module body."""

    def __init__(self, name: str, base: list[str], platform: str, source: SourceOf) -> None:
        self.name, self.base, self.platform, self.source = name, base, platform, source
        self.bound: dict[str, Binding] = {}
        self.fallback: dict[str, Binding] = {}
        self.stars: list[str] = []
        self.shadowed: dict[str, Import] = {}
        self.raises = False

    def body(self, statements: Iterable[ast.stmt], taken: bool) -> None:
        for node in statements:
            self.statement(node, taken)

    def bind(self, name: str, value: Binding, taken: bool) -> None:
        if taken:
            previous = self.bound.get(name)
            if isinstance(value, ast.ClassDef) and isinstance(previous, tuple):
                self.shadowed[name] = previous  # ``class X(X)`` subclasses the imported X
            self.bound[name] = value
        else:
            self.fallback.setdefault(name, value)

    def statement(self, node: ast.stmt, taken: bool) -> None:
        if isinstance(node, ast.ClassDef):
            self.bind(node.name, node, taken)
        elif isinstance(node, ast.ImportFrom):
            source = self.source(node, self.base)
            for alias in node.names if source is not None else ():
                if alias.name == "*":
                    if taken:
                        self.stars.append(source)  # type: ignore[arg-type]
                else:
                    self.bind(alias.asname or alias.name, (source, alias.name), taken)  # type: ignore[arg-type]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Name) and node.targets[0].id != node.value.id:
            self.bind(node.targets[0].id, (self.name, node.value.id), taken)
        elif isinstance(node, ast.If):
            holds = test_holds(node.test, self.platform)
            self.body(node.body, taken and holds is not False)
            self.body(node.orelse, taken and holds is False)
        elif isinstance(node, ast.Try):
            self.body(node.body, taken)
            for handler in node.handlers:
                self.body(handler.body, False)
            self.body(node.orelse, taken)
            self.body(node.finalbody, taken)
        elif isinstance(node, ast.Raise) and taken:
            self.raises = True

    def bindings(self) -> dict[str, Binding]:
        return {**self.fallback, **self.bound}


class SourceOf:
    """The module an ``ImportFrom`` names, in the release's keys (None: outside the packages read)."""

    def __init__(self, relative_prefix: str, absolute_roots: tuple[str, ...] = ()) -> None:
        self.relative_prefix = relative_prefix
        self.absolute_roots = absolute_roots

    def key(self, dotted: str) -> str | None:
        """A dotted module name as the release keys it: relative to the model package, or absolute for a package
        of ``absolute_roots``."""
        if dotted.startswith(self.relative_prefix):
            return dotted[len(self.relative_prefix):]
        if any(dotted == root or dotted.startswith(root + ".") for root in self.absolute_roots):
            return dotted
        return None

    def __call__(self, node: ast.ImportFrom, base: list[str]) -> str | None:
        if node.level:
            up = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            return ".".join([*up, *(node.module.split(".") if node.module else [])])
        return self.key(node.module) if node.module else None


def read_module(name: str, path: Path, package: bool, source: SourceOf) -> Module:
    """The module at ``path`` (``name`` in the release's keys), read for every platform."""
    module = Module(name)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return module
    base = name.split(".") if package else name.split(".")[:-1]
    judged: dict[str, Binding] = {}
    for platform in PLATFORMS:
        walk = _Walk(name, base, platform, source)
        walk.body(tree.body, True)
        found = walk.bindings()
        if walk.raises:
            module.raises.add(platform)
        if platform == PLATFORMS[0]:
            judged = found
            module.stars = walk.stars
            module.imports.update(walk.shadowed)
            for key, value in found.items():
                if isinstance(value, ast.ClassDef):
                    module.classes[key] = value
                else:
                    module.imports[key] = value
            continue
        differs = {key: value for key, value in found.items() if judged.get(key) is not value
                   and judged.get(key) != value}
        if differs:
            module.platforms[platform] = differs
    return module


def index(root: Path, key_prefix: str = "") -> dict[str, tuple[Path, bool]]:
    """module key -> (file, is a package ``__init__``) for every ``.py`` under ``root`` (keys prefixed with
    ``key_prefix.`` where given)."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = [*(key_prefix.split(".") if key_prefix else []),
                 *(rel.parts[:-1] if rel.name == "__init__" else rel.parts)]
        out[".".join(parts)] = (path, rel.name == "__init__")
    return out
