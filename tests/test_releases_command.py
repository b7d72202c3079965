"""``python -m pytest_eagle3 releases``: per engine, the newest release on the package index against the newest read,
against a local index stand-in (PyPI-JSON-shaped files, and a PEP 503 simple index, served by http.server on
localhost), and offline: one clear line, exit code 2, no traceback."""

from __future__ import annotations

import functools
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.learned import KNOWLEDGE_DIR_ENV
from pytest_eagle3.knowledge.releases import KNOWN_RANGES
from pytest_eagle3.shell import cli

ROOT = Path(__file__).resolve().parent.parent
NEWEST_VLLM = KNOWN_RANGES["vllm"][1]
NEWEST_SGLANG = KNOWN_RANGES["sglang"][1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An http.server on localhost over ``tmp_path / "index"``: (its address, its folder)."""
    folder = tmp_path / "index"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_learned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KNOWLEDGE_DIR_ENV, str(tmp_path / "knowledge"))


def _json_project(folder: Path, name: str, versions: list[str]) -> None:
    where = folder / "pypi" / name
    where.mkdir(parents=True)
    (where / "json").write_text(json.dumps({"info": {"name": name, "version": versions[-1]},
                                            "releases": {v: [] for v in versions}}))


def _lines(out: str) -> dict[str, str]:
    return {line.split("  ")[0]: line for line in out.splitlines()}


def test_releases_against_a_json_index(served: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    url, folder = served
    _json_project(folder, "vllm", ["0.8.5", NEWEST_VLLM, "0.99.0rc1", "0.95.1"])
    _json_project(folder, "sglang", ["0.4.4", NEWEST_SGLANG])
    _json_project(folder, "tensorrt-llm", ["1.2.1", "1.3.0rc29", "1.3.0"])  # stubs: learn needs the source tree
    assert cli.main(["releases", "--index-url", f"{url}/pypi"]) == 0
    lines = _lines(capsys.readouterr().out)
    assert "0.95.1" in lines["vLLM"] and f"{NEWEST_VLLM} (bundled)" in lines["vLLM"]
    assert lines["vLLM"].endswith("read it: python -m pytest_eagle3 learn vllm==0.95.1")  # not the pre-release
    assert lines["SGLang"].endswith("up to date")
    assert "no mlx-vlm there" in lines["mlx-vlm"]
    assert lines["TensorRT-LLM"].endswith("read it: python -m pytest_eagle3 learn DIR (DIR: its unpacked source; "
                                          "the index holds stubs)"), lines["TensorRT-LLM"]
    assert "not on the index" in lines["llama.cpp"]


def test_releases_against_a_simple_index(served: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    url, folder = served
    project = folder / "simple" / "vllm"
    project.mkdir(parents=True)
    files = [f"vllm-{NEWEST_VLLM}-cp38-abi3-manylinux1_x86_64.whl", "vllm-0.96.0.tar.gz",
             "vllm-0.97.0-cp38-abi3-manylinux1_x86_64.whl#sha256=00"]
    (project / "index.html").write_text("<html><body>" + "".join(f'<a href="../../files/{f}">{f}</a>' for f in files)
                                        + "</body></html>")
    assert cli.main(["releases", "--index-url", f"{url}/simple/"]) == 0
    assert _lines(capsys.readouterr().out)["vLLM"].endswith("learn vllm==0.97.0")


def test_releases_offline_is_one_line_exit_2(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), KNOWLEDGE_DIR_ENV: str(tmp_path / "knowledge")}
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "releases", "--index-url",
                           f"http://127.0.0.1:{port}/pypi"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.startswith(f"releases: cannot reach the package index http://127.0.0.1:{port}/pypi")
    assert "run it where there is network" in done.stderr
