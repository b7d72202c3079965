"""Scan llama.cpp trees for the target architectures whose graph exposes the layer inputs an EAGLE-3 draft reads.

    python -m pytest_eagle3.scanners.llamacpp_capture --out pytest_eagle3/knowledge/generated/llamacpp_capture_table.py \\
        TREE...

TREE: an unpacked llama-cpp-python sdist named ``llamacpp-0.3.36`` (its ``vendor/llama.cpp``: ``src/``,
``conversion/``, ``convert_hf_to_gguf.py``, ``gguf-py/gguf/constants.py``); the build it vendors comes from
``knowledge/llamacpp_builds.py``. Per build, every Hugging Face architecture the converter registers is followed:

* the converter class that registers it (``@ModelBase.register("LlamaForCausalLM", ...)`` in ``conversion/*.py`` or
  ``convert_hf_to_gguf.py``) and its ``model_arch = gguf.MODEL_ARCH.X`` (along the converter's bases);
* ``MODEL_ARCH_NAMES`` (gguf-py) gives the GGUF name, ``src/llama-arch.cpp`` the ``LLM_ARCH_*`` with that name,
  ``llama_model_mapping`` in ``src/llama-model.cpp`` the ``llama_model_*`` class built for it;
* the class's graph: its own ``graph`` (``src/models/*.cpp``), a ``using graph = other::graph`` alias, what its
  ``build_arch_graph`` makes, or its base's (``src/models/models.h``);
* ``captures``: that graph sets ``res->t_layer_inp[il]`` (common/speculative.cpp reads it through
  ``llama_set_embeddings_layer_inp``); ``refused``: it does not, and llama-graph.cpp's
  ``GGML_ASSERT(t_layer_inp[il] != nullptr && "layer input tensor is null")`` aborts the first target pass.

An architecture whose converter class or graph the scan cannot follow gets no row (the plan says "not modelled").
Writes ``LLAMACPP_BUILDS`` and ``LLAMACPP_CAPTURE`` (architecture -> runs (first build, last build, support, where)).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

CAPTURES, REFUSED = "captures", "refused"


def _tree(root: Path) -> Path:
    found = sorted(root.glob("*/vendor/llama.cpp")) or sorted(root.glob("vendor/llama.cpp"))
    if not found:
        raise SystemExit(f"{root}: no vendor/llama.cpp")
    return found[0]


def converter_archs(tree: Path) -> dict[str, str]:
    """HF architecture -> MODEL_ARCH member name, from the converter's registrations."""
    files = sorted((tree / "conversion").glob("*.py")) + [tree / "convert_hf_to_gguf.py"]
    classes: dict[str, tuple[list[str], list[str], str | None]] = {}  # name -> (registered, bases, model_arch)
    for path in files:
        if not path.is_file():
            continue
        try:
            module = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for node in module.body:
            if not isinstance(node, ast.ClassDef):
                continue
            registered: list[str] = []
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.func.attr == "register":
                    registered += [a.value for a in deco.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            arch = None
            for stmt in node.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    if any(isinstance(t, ast.Name) and t.id == "model_arch" for t in targets) \
                            and isinstance(stmt.value, ast.Attribute):
                        arch = stmt.value.attr
            bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                     for b in node.bases]
            classes.setdefault(node.name, (registered, bases, arch))

    def arch_of(name: str, depth: int = 0) -> str | None:
        found = classes.get(name)
        if found is None or depth > 8:
            return None
        if found[2] is not None:
            return found[2]
        return next((a for a in (arch_of(b, depth + 1) for b in found[1]) if a), None)

    out: dict[str, str] = {}
    for name, (registered, _, _) in classes.items():
        arch = arch_of(name)
        for hf in registered:
            if arch is not None:
                out.setdefault(hf, arch)
    return out


def gguf_names(tree: Path) -> dict[str, str]:
    """MODEL_ARCH member -> GGUF name (gguf-py constants.py MODEL_ARCH_NAMES)."""
    text = (tree / "gguf-py" / "gguf" / "constants.py").read_text(encoding="utf-8")
    return dict(re.findall(r"MODEL_ARCH\.(\w+)\s*:\s*\"([^\"]+)\"", text))


def llm_archs(tree: Path) -> dict[str, str]:
    """GGUF name -> LLM_ARCH_* (src/llama-arch.cpp)."""
    text = (tree / "src" / "llama-arch.cpp").read_text(encoding="utf-8")
    return {name: enum for enum, name in re.findall(r"\{\s*(LLM_ARCH_\w+)\s*,\s*\"([^\"]+)\"\s*\}", text)}


def model_classes(tree: Path) -> dict[str, str]:
    """LLM_ARCH_* -> the llama_model_* class llama_model_mapping builds."""
    text = (tree / "src" / "llama-model.cpp").read_text(encoding="utf-8")
    start = text.find("llama_model_mapping(")
    body = text[start:start + 40000] if start >= 0 else ""
    out: dict[str, str] = {}
    pending: list[str] = []
    for case, built in re.findall(r"case\s+(LLM_ARCH_\w+)\s*:|return\s+new\s+(\w+)\s*[(<]", body):
        if case:
            pending.append(case)
        elif built:
            for arch in pending:
                out.setdefault(arch, built)
            pending = []
    return out


class Graphs:
    """Which llama_model_* graph sets ``t_layer_inp`` (src/models)."""

    def __init__(self, tree: Path) -> None:
        models = tree / "src" / "models"
        header = (models / "models.h").read_text(encoding="utf-8") if (models / "models.h").is_file() else ""
        self.bases: dict[str, str] = dict(re.findall(r"struct\s+(\w+)\s*:\s*public\s+(\w+)", header))
        self.aliases: dict[str, str] = {}
        self.own: set[str] = set()
        for match in re.finditer(r"struct\s+(\w+)\s*:\s*public\s+\w+\s*\{", header):
            end = header.find("\n};", match.end())
            body = header[match.end():end if end > 0 else len(header)]
            alias = re.search(r"using\s+graph\s*=\s*(\w+)::graph", body)
            if alias:
                self.aliases[match.group(1)] = alias.group(1)
            elif re.search(r"struct\s+graph\s*:", body):
                self.own.add(match.group(1))
        self.captures: dict[str, tuple[bool, str]] = {}  # class -> (sets t_layer_inp, file)
        self.builds: dict[str, str] = {}  # class -> the class whose graph its build_arch_graph makes
        for path in sorted(models.glob("*.cpp")):
            text = path.read_text(encoding="utf-8", errors="replace")
            marks = list(re.finditer(r"^(?:[^\n/#]*?[\s*&])?(\w+)::(graph(?:<\w+>)?::graph|build_arch_graph)\s*\(",
                                     text, re.MULTILINE))
            for i, mark in enumerate(marks):
                region = text[mark.start():marks[i + 1].start() if i + 1 < len(marks) else len(text)]
                klass = mark.group(1)
                if mark.group(2).startswith("graph"):
                    sets = "t_layer_inp[" in region
                    previous = self.captures.get(klass)
                    self.captures[klass] = ((previous[0] if previous else False) or sets, path.name)
                else:
                    other = re.search(r"make_unique<\s*(\w+)::graph", region)
                    if other:
                        self.builds[klass] = other.group(1)

    def of(self, klass: str, depth: int = 0) -> tuple[bool, str] | None:
        """(sets t_layer_inp, the file) of the graph ``klass`` builds; None where the scan cannot follow it."""
        if depth > 8:
            return None
        if klass in self.builds and self.builds[klass] != klass:
            return self.of(self.builds[klass], depth + 1)
        if klass in self.aliases:
            return self.of(self.aliases[klass], depth + 1)
        if klass in self.captures:
            return self.captures[klass]
        base = self.bases.get(klass)
        return self.of(base, depth + 1) if base else None


def scan_tree(tree: Path) -> dict[str, tuple[str, str]]:
    """HF architecture -> (support, where) in one build."""
    hf = converter_archs(tree)
    names = gguf_names(tree)
    enums = llm_archs(tree)
    classes = model_classes(tree)
    graphs = Graphs(tree)
    out: dict[str, tuple[str, str]] = {}
    for arch, member in sorted(hf.items()):
        name = names.get(member)
        enum = enums.get(name or "")
        klass = classes.get(enum or "")
        found = graphs.of(klass) if klass else None
        if found is None:
            continue
        sets, file = found
        out[arch] = (CAPTURES if sets else REFUSED, f"{name} -> {klass} src/models/{file}")
    return out


HEADER = '''"""llama.cpp: the target architectures whose graph exposes the layer inputs the EAGLE-3 draft reads, per build.

Generated by ``pytest_eagle3/scanners/llamacpp_capture.py`` (do not edit) over the ``vendor/llama.cpp`` tree of the
llama-cpp-python sdist of every build in ``LLAMACPP_BUILDS`` ({count} builds: {first} to {last}).

``LLAMACPP_CAPTURE``: per Hugging Face architecture the converter registers, the runs (first build, last build,
support, where) of consecutive builds read with one value: ``captures`` (the graph sets ``res->t_layer_inp[il]``)
or ``refused`` (it does not: llama-graph.cpp ``GGML_ASSERT(... "layer input tensor is null")`` aborts the first
target pass); ``where``: GGUF arch -> llama_model class and the file of its graph.
"""

from __future__ import annotations
'''


def render(builds: list[str], runs: dict[str, list[tuple[str, str, str, str]]]) -> str:
    """The generated ``llamacpp_capture_table.py`` from the builds read and each architecture's runs."""
    out = [HEADER.format(count=len(builds), first=builds[0], last=builds[-1])]
    out.append(f"LLAMACPP_BUILDS: tuple[str, ...] = ({', '.join(repr(b) for b in builds)},)")
    out.append("LLAMACPP_CAPTURE: dict[str, tuple[tuple[str, str, str, str], ...]] = {")
    for arch in sorted(runs):
        body = "".join(f"\n        ({a!r}, {b!r}, {s!r}, {w!r})," for a, b, s, w in runs[arch])
        out.append(f"    {arch!r}: ({body}\n    ),")
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """Scan each llama-cpp-python sdist tree given, by the build it vendors (``knowledge/llamacpp_builds.py``; a tree of
    no known build is skipped), and write the capture table to ``--out``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pytest_eagle3.knowledge.llamacpp_builds import vendored_build

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("trees", nargs="+", type=Path)
    args = parser.parse_args(argv)
    found: list[tuple[int, dict[str, tuple[str, str]]]] = []
    for root in args.trees:
        build = vendored_build(root.name.rsplit("-", 1)[-1])
        if build is None:
            print(f"{root}: no build in knowledge/llamacpp_builds.py", file=sys.stderr)
            continue
        scanned = scan_tree(_tree(root))
        print(f"llama.cpp b{build}: {sum(v[0] == CAPTURES for v in scanned.values())} of {len(scanned)} capture",
              file=sys.stderr)
        found.append((int(build), scanned))
    found.sort()
    builds = [str(b) for b, _ in found]
    runs: dict[str, list[tuple[str, str, str, str]]] = {}
    previous: dict[str, tuple[str, str]] = {}
    last_build: str | None = None
    for number, scanned in found:
        text = str(number)
        for arch, (support, where) in scanned.items():
            arch_runs = runs.setdefault(arch, [])
            if arch_runs and arch_runs[-1][1] == last_build and previous.get(arch, ("", ""))[0] == support:
                arch_runs[-1] = (arch_runs[-1][0], text, support, arch_runs[-1][3])
            else:
                arch_runs.append((text, text, support, where))
        previous, last_build = scanned, text
    args.out.write_text(render(builds, runs), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
