"""llama.cpp live: the ``llama-server`` binary a user built, its tree's HF -> GGUF converter, the GGUFs it serves.

llama.cpp serves GGUF files, so a live run converts the target and the draft first, with the converter of the
same tree the server was built from (``convert_hf_to_gguf.py`` and its own gguf-py: PyPI's gguf has no EAGLE-3
entries). A refusal by the converter is a finding about the draft, as in the probe. The server is found at
``--eagle3-llamacpp-server`` / ``EAGLE3_LLAMACPP_SERVER`` (the binary or a folder it was built in), else in the
cache ``python .ci/build_llama_server.py`` builds into.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from pytest_eagle3.knowledge.releases import LLAMACPP
from pytest_eagle3.live.errors import EXCEPTION_LINE
from pytest_eagle3.live.interpreter import EngineInstall

SERVER_ENV = "EAGLE3_LLAMACPP_SERVER"
#: The documented build (CMake, CPU, the llama-server target only) of llama-cpp-python 0.3.36's llama.cpp (b11312).
BUILD_COMMAND = "python .ci/build_llama_server.py"
#: The sdist the build script builds by default, and the layout it extracts it in (under the cache).
DEFAULT_SDIST = "0.3.36"
SERVER_NAME = "llama-server"
#: What :class:`EngineInstall` records as the distribution of a llama-server binary.
DISTRIBUTION = "llama-server"
#: ``llama-server --version`` (stderr): "version: 0.5.0-dev (build 11312, commit 0c1e57098)" (b11312
#: common/common.cpp, from LLAMA_BUILD_NUMBER / LLAMA_BUILD_COMMIT).
VERSION_LINE = re.compile(r"build (\d+), commit ([0-9a-f]+)")
#: Where a target with no tokenizer of its own keeps one the converter recognises (the demo target does:
#: examples/build_demo_tokenizer.py); used only to convert, so the plugin's own prompts stay token ids.
TOKENIZER_FOLDER = "gguf-tokenizer"
#: What the converter imports (convert_hf_to_gguf.py, conversion/, gguf-py; conversion/base.py
#: _create_vocab_sentencepiece imports sentencepiece before it looks for a tokenizer.model).
CONVERTER_MODULES = ("numpy", "torch", "safetensors", "sentencepiece", "yaml", "transformers")
CONVERT_TIMEOUT = 600.0


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/pytest-eagle3``, else ``~/.cache/pytest-eagle3`` (the build script's default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-eagle3"


def default_server(sdist: str = DEFAULT_SDIST) -> Path:
    """Where the build script puts the binary of ``sdist``'s llama.cpp."""
    tree = cache_root() / f"llama-cpp-python-{sdist}" / f"llama_cpp_python-{sdist}" / "vendor" / "llama.cpp"
    return tree / "build" / "bin" / SERVER_NAME


def server_binary(path: str | None) -> Path | None:
    """The binary ``path`` names (itself, or ``bin/`` / ``build/bin/`` under a folder), else the default build's;
    None when there is none."""
    if path is None:
        found = default_server()
        return found if found.is_file() else None
    given = Path(path)
    for candidate in (given, given / SERVER_NAME, given / "bin" / SERVER_NAME, given / "build" / "bin" / SERVER_NAME):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def missing_reason(path: str | None) -> str:
    """Why no server is there, and how to build one."""
    where = f"{path} holds no {SERVER_NAME}" if path else f"no {SERVER_NAME} at {default_server()}"
    return (f"llama.cpp live tests need the llama-server binary: {where}; build it with {BUILD_COMMAND} "
            f"(about 15 min on 2 cores; or tox -e llamacpp11312live) and pass --eagle3-llamacpp-server=PATH "
            f"or set {SERVER_ENV}")


def inspect_server(binary: Path, timeout: float = 60.0) -> EngineInstall:
    """The build a binary reports (``--version``) as an :class:`EngineInstall` whose ``python`` is the binary."""
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return EngineInstall(LLAMACPP, str(binary), None, None, f"cannot run {binary}: {exc}")
    found = VERSION_LINE.search(done.stdout + done.stderr)
    if found is None:
        text = (done.stderr or done.stdout).strip().splitlines()
        return EngineInstall(LLAMACPP, str(binary), None, None,
                             f"cannot run {binary}: no build number in --version ({(text or ['no output'])[-1]})")
    return EngineInstall(LLAMACPP, str(binary), DISTRIBUTION, Version(found.group(1)), None, (DISTRIBUTION,))


def converter_tree(binary: Path) -> Path | None:
    """The llama.cpp tree the binary was built in (it holds ``convert_hf_to_gguf.py`` and ``gguf-py``), else the
    one ``EAGLE3_LLAMACPP_DIR`` names."""
    candidates = list(binary.resolve().parents)[:4]
    named = os.environ.get("EAGLE3_LLAMACPP_DIR")
    candidates += [Path(named)] if named else []
    return next((c for c in candidates if (c / "convert_hf_to_gguf.py").is_file() and (c / "gguf-py").is_dir()), None)


def converter_missing() -> list[str]:
    """The modules the converter imports that this interpreter lacks."""
    import importlib.util

    return [name for name in CONVERTER_MODULES if importlib.util.find_spec(name) is None]


class ConversionRefused(Exception):
    """llama.cpp's converter exited with an error; ``cause`` is its last exception line."""

    def __init__(self, model: str, cause: str, command: Sequence[str], log_tail: Sequence[str]) -> None:
        self.model, self.cause, self.command, self.log_tail = model, cause, tuple(command), tuple(log_tail)
        lines = [f"llama.cpp's convert_hf_to_gguf.py refused {model}: {cause}", "  command: " + " ".join(command),
                 *(f"    | {line}" for line in log_tail)]
        super().__init__("\n".join(lines))


def convert(tree: Path, model: Path, out: Path, *, target: Path | None = None, python: str = sys.executable,
            timeout: float = CONVERT_TIMEOUT) -> Path:
    """``convert_hf_to_gguf.py MODEL --outfile OUT --outtype f32 [--target-model-dir TARGET]`` with the tree's own
    gguf-py first on the path; raises :class:`ConversionRefused` with the converter's own error."""
    argv = [python, str(tree / "convert_hf_to_gguf.py"), str(model), "--outfile", str(out), "--outtype", "f32"]
    argv += ["--target-model-dir", str(target)] if target is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "gguf-py"), os.environ.get("PYTHONPATH", "")])}
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise ConversionRefused(str(model), f"no result within {timeout:g} s", argv, ()) from None
    if done.returncode == 0 and out.is_file():
        return out
    lines = (done.stdout + done.stderr).strip().splitlines()
    causes = [m.group(0) for line in lines if (m := EXCEPTION_LINE.search(line))]
    cause = causes[-1] if causes else f"exit code {done.returncode}"
    raise ConversionRefused(str(model), cause, argv, lines[-12:])


def staged_target(target: Path, work: Path) -> Path:
    """The folder to convert the target from: itself when it has a tokenizer, else a folder of links to its files
    and to the tokenizer in ``TARGET/gguf-tokenizer/`` (absent: the target itself, and the converter says why)."""
    from pytest_eagle3.live.server import has_tokenizer

    vocab = target / TOKENIZER_FOLDER
    if has_tokenizer(str(target)) or not vocab.is_dir():
        return target
    staged = work / f"{target.name}-with-tokenizer"
    staged.mkdir(parents=True, exist_ok=True)
    for source in [p for p in target.iterdir() if p.is_file()] + [p for p in vocab.iterdir() if p.is_file()]:
        link = staged / source.name
        if not link.exists():
            link.symlink_to(source.resolve())
    return staged


@dataclass(frozen=True)
class GgufPair:
    """The files llama-server is given: the target's GGUF and, unless serving it alone, the draft's."""

    target: Path
    draft: Path | None


def convert_pair(tree: Path, target: Path, draft: Path | None, work: Path) -> GgufPair:
    """Target and draft converted once into ``work`` (reused when already there); :class:`ConversionRefused`."""
    staged = staged_target(target, work)
    target_gguf = work / f"{target.name}.gguf"
    if not target_gguf.is_file():
        convert(tree, staged, target_gguf)
    if draft is None:
        return GgufPair(target_gguf, None)
    draft_gguf = work / f"{draft.name}.gguf"
    if not draft_gguf.is_file():
        convert(tree, draft, draft_gguf, target=staged)
    return GgufPair(target_gguf, draft_gguf)
