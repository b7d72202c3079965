"""A version newer than every release read is looked up on the package index (pip's own, here a local one): a release
the index does not list is a usage error naming the newest it does; where the index cannot be asked (no network,
pip's no-index) the row is NOT JUDGED and names ``learn``; ``learn`` tells "no such release" from "no network".

Every run is the user's command from a folder outside the clone; the index is tests/index_server.py on 127.0.0.1,
reached through pip's configuration (PIP_INDEX_URL, no config file), never the network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.package_index import INDEX_ENV, INDEX_NAMES, file_names, version_of
from pytest_eagle3.knowledge.releases import KNOWN_RANGES
from tests.index_server import closed_port, serve_index
from tests.user_runs import DEMO, run_python


def newest_read(engine: str) -> Version:
    return Version(KNOWN_RANGES[engine][1])


def _later(engine: str, minors: int) -> str:
    read = newest_read(engine)
    return f"{read.major}.{read.minor + minors}.0"


#: A vLLM release out after the newest read (the index lists it), and a typo no index lists.
RELEASED, TYPO = _later("vllm", 1), _later("vllm", 65)


def pip_pointed_at(url: str, knowledge: Path) -> dict[str, str]:
    """pip configured by its environment alone (no config file) to ask ``url``; nothing learned."""
    return {INDEX_ENV: "", "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": url, "PIP_EXTRA_INDEX_URL": "",
            "PIP_FIND_LINKS": "", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_NO_CACHE_DIR": "1",
            "EAGLE3_KNOWLEDGE_DIR": str(knowledge)}


def vllm_files() -> list[str]:
    read = str(newest_read("vllm"))
    return [f"vllm-{read}-cp38-abi3-manylinux1_x86_64.whl", f"vllm-{read}.tar.gz",
            f"vllm-{RELEASED}-cp38-abi3-manylinux1_x86_64.whl", f"vllm-{_later('vllm', 2)}rc1.tar.gz"]


def test_a_release_the_index_does_not_list_is_a_usage_error_naming_the_newest(tmp_path: Path) -> None:
    with serve_index({"vllm": vllm_files()}) as index:
        done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}",
                           f"--eagle3-engine=vllm=={TYPO}"], tmp_path, **pip_pointed_at(index.url, tmp_path / "k"))
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert (f"ERROR: --eagle3-engine: vllm {TYPO} is not on the package index ({index.url}); newest {RELEASED}"
            in done.stderr)
    assert index.asked == ["/simple/vllm/"] and "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("engine", sorted(INDEX_NAMES))
def test_every_engine_is_looked_up_under_its_distribution(engine: str, tmp_path: Path) -> None:
    dist, read = INDEX_NAMES[engine], newest_read(engine)
    typo = f"{read.major + 7}.0.0"
    with serve_index({dist: [f"{dist.replace('-', '_')}-{read}.tar.gz"]}) as index:
        done = run_python(["-m", "pytest_eagle3", "plan", str(DEMO), "--engine", f"{engine}=={typo}"], tmp_path,
                          **pip_pointed_at(index.url, tmp_path / "k"))
    assert done.returncode == 2 and index.asked == [f"/simple/{dist}/"], done.stderr[-2000:]
    assert f"--engine: {dist} {typo} is not on the package index ({index.url}); newest {read}" in done.stderr


def test_a_release_the_index_lists_is_not_judged_until_learned_and_the_index_is_asked_once(tmp_path: Path) -> None:
    with serve_index({"vllm": vllm_files()}) as index:
        done = run_python(["-m", "pytest_eagle3", "plan", str(DEMO), "--engine", f"vllm=={RELEASED}"], tmp_path,
                          **pip_pointed_at(index.url, tmp_path / "k"))
    said = " ".join(done.stdout.split())
    assert done.returncode == 0 and "verdict: NOT JUDGED" in said, done.stderr[-2000:]
    assert f"read it first: python -m pytest_eagle3 learn vllm=={RELEASED}" in said
    assert "release at all is unknown" not in said and index.asked == ["/simple/vllm/"]


def test_without_network_the_row_is_not_judged_naming_learn_and_why(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/simple"
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}",
                       f"--eagle3-engine=vllm=={TYPO}", "-q"], tmp_path, **pip_pointed_at(url, tmp_path / "k"))
    flat = " ".join(done.stdout.split())
    assert done.returncode == 0 and "NOT JUDGED" in flat, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"read it first: python -m pytest_eagle3 learn vllm=={TYPO}" in flat
    assert f"Whether it is a release at all is unknown: the package index could not be asked ({url}:" in flat


def test_pip_no_index_is_not_judged_without_asking(tmp_path: Path) -> None:
    with serve_index({"vllm": vllm_files()}) as index:
        done = run_python(["-m", "pytest_eagle3", "plan", str(DEMO), "--engine", f"vllm=={TYPO}"], tmp_path,
                          **pip_pointed_at(index.url, tmp_path / "k"), PIP_NO_INDEX="1")
    said = " ".join(done.stdout.split())
    assert done.returncode == 0 and "verdict: NOT JUDGED" in said, done.stderr[-2000:]
    assert "unknown: the package index was not asked (pip's no-index is set)" in said and index.asked == []


def test_learn_tells_no_such_release_from_no_network(tmp_path: Path) -> None:
    with serve_index({"vllm": vllm_files()}) as index:
        absent = run_python(["-m", "pytest_eagle3", "learn", f"vllm=={TYPO}"], tmp_path,
                            **pip_pointed_at(index.url, tmp_path / "k"))
    assert absent.returncode == 2 and "Traceback" not in absent.stderr
    assert (f"learn: no such release: vllm {TYPO} is not on the package index ({index.url}); newest {RELEASED}"
            in absent.stderr)
    url = f"http://127.0.0.1:{closed_port()}/simple"
    offline = run_python(["-m", "pytest_eagle3", "learn", f"vllm=={TYPO}"], tmp_path,
                         **pip_pointed_at(url, tmp_path / "k"))
    assert offline.returncode == 2 and "Traceback" not in offline.stderr and "no such release" not in offline.stderr
    assert f"learn: could not download vllm=={TYPO}" in offline.stderr
    assert f"the package index could not be asked ({url}:" in offline.stderr
    assert f"no network here? Where there is network, run: pip download vllm=={TYPO} --no-deps" in offline.stderr


def test_a_simple_page_in_json_or_html_names_the_same_versions() -> None:
    html = '<a href="https://files/x/vllm-0.34.0-cp38-abi3-manylinux1_x86_64.whl#sha256=00">w</a>' \
           '<a href="vllm-0.34.0.tar.gz">s</a><a href="vllm_extra-9.0.tar.gz">other</a>'
    json_page = ('{"meta": {"api-version": "1.1"}, "name": "vllm", "files": [{"filename": '
                 '"vllm-0.34.0-cp38-abi3-manylinux1_x86_64.whl"}, {"filename": "vllm-0.34.0.tar.gz"}, '
                 '{"filename": "vllm_extra-9.0.tar.gz"}]}')
    for body, kind in ((html, "text/html"), (json_page, "application/vnd.pypi.simple.v1+json")):
        assert {version_of(n, "vllm") for n in file_names(body, kind)} == {Version("0.34.0"), None}
