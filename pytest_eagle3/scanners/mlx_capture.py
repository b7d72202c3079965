"""Scan mlx-vlm releases for the target architectures whose language model captures EAGLE-3 aux states.

    python -m pytest_eagle3.scanners.mlx_capture --out pytest_eagle3/knowledge/generated/mlx_vlm_capture_table.py ROOT...

ROOT: an unpacked release wheel named ``mlx_vlm-0.7.10`` (``pip download mlx-vlm==0.7.10 --no-deps``, unzip).

mlx-vlm picks a target's package by its config's ``model_type`` (utils.py ``get_model_and_args``:
``mlx_vlm.models.<model_type>``, after ``MODEL_REMAPPING``). The EAGLE-3 loop (speculative/eagle3.py
``_eagle3_verify_target``, speculative/utils.py) calls the language model (``model.language_model``, else the
model) with ``capture_layer_ids`` and concatenates ``verify_out.hidden_states``: a language model whose
``__call__`` (through its bases, across packages) never reads ``capture_layer_ids`` returns none, and the first
round raises TypeError (seen live on 0.7.10 with a Llama target). Up to 0.6.13 a text-only config with no package
of its own goes to ``models/text_only.py`` (mlx_lm's classes, which take no ``capture_layer_ids``); from 0.6.14 it
is refused at load (ValueError "Model type ... not supported").

The architectures of a model type are the names transformers registers for it in its causal-LM and
image-text-to-text mappings (the transformers of the env the scan runs in, named in the output).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from pytest_eagle3.scanners.capture import ClassRef, Release, _run, _tuple, known_roots, runs_dict, scan_main

ENGINE = "mlx-vlm"
FLAG = "capture_layer_ids"
#: The pseudo model type of a text-only config with no package of its own (models/text_only.py, to 0.6.13).
TEXT_ONLY = "text_only"


def _mappings() -> tuple[str, dict[str, set[str]], set[str]]:
    """(transformers version, model type -> its architectures, the causal-LM model types)."""
    import transformers
    from transformers.models.auto import modeling_auto

    archs: dict[str, set[str]] = {}
    causal: set[str] = set()
    for name in ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
                 "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES"):
        for model_type, arch in getattr(modeling_auto, name, {}).items():
            for one in (arch,) if isinstance(arch, str) else arch:
                archs.setdefault(model_type, set()).add(one)
            if name == "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES":
                causal.add(model_type)
    return transformers.__version__, archs, causal


def _remapping(root: Path) -> dict[str, str]:
    """utils.py MODEL_REMAPPING: config model_type -> package."""
    tree = ast.parse((root / "mlx_vlm" / "utils.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MODEL_REMAPPING"
                                                for t in node.targets) and isinstance(node.value, ast.Dict):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    and isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return {}


def _reads_flag(release: Release, ref: ClassRef) -> bool:
    found = release.method(ref, "__call__")
    if found is None:
        return False
    func = found[1]
    names = {a.arg for a in (*func.args.args, *func.args.kwonlyargs)}
    return FLAG in names or any(isinstance(n, ast.Constant) and n.value == FLAG for n in ast.walk(func))


def _language_model(release: Release, package: str) -> ClassRef | None:
    """The class the loop calls: ``Model``'s ``self.language_model``, else ``Model`` itself."""
    model = release.resolve(package, "Model")
    if model is None:
        return None
    inner = release.attribute_classes(model, "language_model")
    return inner[0] if inner else model


def _supports(root: Path) -> dict[str, bool]:
    """package -> whether the class the loop calls reads ``capture_layer_ids`` (text_only too, where it exists)."""
    release = Release(ENGINE, root)
    packages = sorted(p.name for p in release.root.iterdir() if (p / "__init__.py").is_file())
    if (release.root / "text_only.py").is_file():
        packages.append(TEXT_ONLY)
    support: dict[str, bool] = {}
    for package in packages:
        lm = _language_model(release, package)
        if lm is not None:
            support[package] = _reads_flag(release, lm)
    return support


def scan(root: Path, archs: dict[str, set[str]], causal: set[str]) -> tuple[set[str], dict[str, str], set[str]]:
    """(architectures that capture, every architecture mlx-vlm loads -> its package, architectures of several
    model types whose packages disagree) in one release."""
    support, remap = _supports(root), _remapping(root)
    by_arch: dict[str, dict[str, bool]] = {}
    for model_type, names in archs.items():
        package = remap.get(model_type, model_type)
        if package not in support and model_type in causal and TEXT_ONLY in support:
            package = TEXT_ONLY
        if package in support:
            for name in names:
                by_arch.setdefault(name, {})[package] = support[package]
    mixed = {a for a, found in by_arch.items() if len(set(found.values())) > 1}
    loaded = {a: min(found) for a, found in by_arch.items() if a not in mixed}
    return {a for a in loaded if all(by_arch[a].values())}, loaded, mixed


def spans(roots: list[Path]) -> tuple[list[str], dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]],
                                      set[str], str, dict[str, str]]:
    """(releases read, arch -> runs in which it captures, arch -> runs in which mlx-vlm loads it, archs left out as
    ambiguous, the transformers version whose mappings named the architectures, arch -> its package in the newest
    release read)."""
    version, archs, causal = _mappings()
    runs: dict[str, list[tuple[str, str]]] = {}
    listed: dict[str, list[tuple[str, str]]] = {}
    previous: set[str] = set()
    previous_known: set[str] = set()
    ambiguous: set[str] = set()
    releases = known_roots(ENGINE, roots)
    packages: dict[str, str] = {}
    for release, root in releases:
        capturing, packages, mixed = scan(root, archs, causal)
        known = set(packages)
        ambiguous |= mixed
        _run(runs, capturing, previous, str(release))
        _run(listed, known, previous_known, str(release))
        previous, previous_known = capturing, known
        print(f"{ENGINE} {release}: {len(capturing)} of {len(known)} capture ({len(mixed)} ambiguous)", file=sys.stderr)
    return [str(v) for v, _ in releases], runs, listed, ambiguous, version, packages


HEADER = '''"""Target architectures whose mlx-vlm language model captures EAGLE-3 aux states, scanned from the releases.

Generated by ``pytest_eagle3/scanners/mlx_capture.py`` (do not edit) over the unpacked wheel of every release in
``MLX_VLM_RELEASES`` ({count}); architectures named by transformers {transformers}'s mappings of each model type.

mlx-vlm loads a target by its config's model_type (utils.py get_model_and_args); the EAGLE-3 loop calls the language
model with ``capture_layer_ids`` and concatenates its ``hidden_states``: a language model whose ``__call__``
(through its bases, across packages) never reads them returns none and the first round raises TypeError
(speculative/utils.py; seen live on 0.7.10 with a Llama target). To 0.6.13 a text-only config without a package of
its own goes to models/text_only.py (no capture); from 0.6.14 it is refused at load. ``MLX_VLM_SPANS``: the runs
(first, last) of consecutive releases read in which an architecture captures; ``MLX_VLM_REGISTERED``: those in
which mlx-vlm loads it; ``MLX_VLM_NEVER``: loaded, capturing in no release read. Left out (their model types'
packages disagree, so the architecture alone does not decide): {ambiguous}.
"""

from __future__ import annotations
'''


def render(releases: list[str], runs: dict[str, list[tuple[str, str]]], listed: dict[str, list[tuple[str, str]]],
           ambiguous: set[str], transformers: str, packages: dict[str, str]) -> str:
    """The generated ``mlx_vlm_capture_table.py`` from :func:`spans`."""
    count = f"{len(releases)} releases, {releases[0]} to {releases[-1]}" if releases else "none"
    out = [HEADER.format(count=count, transformers=transformers, ambiguous=", ".join(sorted(ambiguous)) or "none"),
           f"\nMLX_VLM_RELEASES: tuple[str, ...] = {_tuple(releases)}",
           "MLX_VLM_UNAVAILABLE: tuple[str, ...] = ()",
           "MLX_VLM_WHY: dict[str, str] = {",
           "    'refused': (\"the language model it loads never reads capture_layer_ids: no hidden states, TypeError on \"",
           "                \"the first round\"),",
           "}",
           *runs_dict("MLX_VLM_SPANS", runs),
           "MLX_VLM_NEVER: frozenset[str] = frozenset({", *(f"    {a!r}," for a in sorted(set(listed) - set(runs))), "})",
           *runs_dict("MLX_VLM_REGISTERED", listed),
           "#: architecture -> the package mlx-vlm builds it from in the newest release read (models/<package>)",
           "MLX_VLM_PACKAGE_OF: dict[str, str] = {", *(f"    {a!r}: {packages[a]!r}," for a in sorted(packages)), "}"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(scan_main(__doc__ or "", lambda roots: render(*spans(roots)), sys.argv[1:]))
