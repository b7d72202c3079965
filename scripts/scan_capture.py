"""Scan released engine sources for the target architectures that capture EAGLE-3 aux states.

    python scripts/scan_capture.py vllm DIR... > table.json     (DIR: an unpacked wheel root per release)
    python scripts/scan_capture.py sglang DIR...

vLLM: a registered architecture captures when its class (or a base, resolved by name across the
model files) lists ``SupportsEagle3`` or defines ``set_aux_hidden_state_layers``. SGLang: when it
defines or inherits ``set_eagle3_layers_to_capture`` (the method the model runner calls). Prints
``{"releases": [...], "since": {arch: first release}, "last": {arch: last release}, "never": [registered
architectures that capture in no release read]}``; an
architecture whose support ends before the newest release read was removed or broken there.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

from packaging.version import Version

def known_roots(engine: str, roots: list[Path]) -> list[tuple[Version, Path]]:
    """The release roots, oldest first, checked against the one release list (pytest_eagle3/knowledge/releases.py
    RELEASES): a root of an unlisted release, and a listed release without a root, are reported on stderr."""
    from pytest_eagle3.knowledge.releases import RELEASES

    listed = {Version(v) for v in RELEASES[engine]}
    found = sorted(((Version(r.name.rsplit("-", 1)[-1]), r) for r in roots), key=lambda x: x[0])
    for version, root in found:
        if version not in listed:
            print(f"{engine} {version} ({root}) is not in RELEASES (add it there)", file=sys.stderr)
    missing = sorted(listed - {v for v, _ in found})
    if missing:
        print(f"{engine}: no root for {', '.join(map(str, missing))} (listed in RELEASES)", file=sys.stderr)
    return found


MARKERS = {"vllm": ("SupportsEagle3", "set_aux_hidden_state_layers"), "sglang": ("set_eagle3_layers_to_capture",)}


def _classes(models: Path) -> dict[str, tuple[list[str], set[str]]]:
    """class name -> (base names, method names), over every model file (later files win on clashes)."""
    found: dict[str, tuple[list[str], set[str]]] = {}
    for path in sorted(models.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                found.setdefault(node.name, (bases, methods))
    return found


def _supports(name: str, classes: dict[str, tuple[list[str], set[str]]], markers: tuple[str, ...],
              seen: set[str] | None = None) -> bool:
    seen = seen or set()
    if name in seen or name not in classes:
        return False
    seen.add(name)
    bases, methods = classes[name]
    if any(m in bases or m in methods for m in markers):
        return True
    return any(_supports(b, classes, markers, seen) for b in bases)


def _vllm_registry(root: Path) -> dict[str, str]:
    text = (root / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")
    head = text.split("_SPECULATIVE_DECODING_MODELS")[0]
    return {arch: cls for arch, cls in re.findall(r'"(\w+)":\s*\(\s*"[\w.]+",\s*"(\w+)"\s*\)', head)}


def _sglang_entries(root: Path) -> dict[str, str]:
    entries: dict[str, str] = {}
    for path in (root / "sglang/srt/models").glob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(r"^EntryClass\s*=\s*(\[[^\]]*\]|\w+)", text, re.MULTILINE):
            for name in re.findall(r"\w+", match.group(1)):
                entries[name] = name
    return entries


def scan(engine: str, root: Path) -> tuple[set[str], set[str]]:
    """(architectures that capture, every registered architecture) in one release."""
    models = root / ("vllm/model_executor/models" if engine == "vllm" else "sglang/srt/models")
    classes = _classes(models)
    registry = _vllm_registry(root) if engine == "vllm" else _sglang_entries(root)
    return {arch for arch, cls in registry.items() if _supports(cls, classes, MARKERS[engine])}, set(registry)


def main(argv: list[str]) -> int:
    engine, roots = argv[0], [Path(a) for a in argv[1:]]
    releases = known_roots(engine, roots)
    since: dict[str, str] = {}
    last: dict[str, str] = {}
    registered: set[str] = set()
    for version, root in releases:
        capturing, known = scan(engine, root)
        registered |= known
        for arch in sorted(capturing):
            since.setdefault(arch, str(version))
            last[arch] = str(version)
    json.dump({"releases": [str(v) for v, _ in releases], "since": since, "last": last,
               "never": sorted(registered - set(since))}, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
