"""The citation check as a maintainer runs it (``python -m pytest_eagle3.scanners.citations``), the cites every
hand row carries, and the recorded fingerprints that cover them; in an engine env (marker ``engine``), the check
over the installed engine's own package for the rows covering its version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.knowledge import evidence
from pytest_eagle3.knowledge.evidence import Cite, recorded_fingerprint
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.table import Row, table
from pytest_eagle3.probes.run import engine_version, find_engine_python
from pytest_eagle3.scanners import citations
from pytest_eagle3.scanners.citations import UNREACHABLE, CitedRow, check, hand_rows, main, record
from pytest_eagle3.scanners.fingerprint import fingerprint

#: Engines whose released trees the check reads (wheels; ATOM: its release tags' trees), the others it names as unreachable.
CHECKABLE = ("vllm", "sglang", "tokenspeed", "lmdeploy", "mlx-vlm", "atom", "tpu-inference", "vllm-ascend")
FIRST, SECOND = RELEASES["lmdeploy"][:2]
ALGOS = "lmdeploy/pytorch/models/llama_eagle3.py"

LOADER = '''
class Eagle3LlamaForCausalLM:
    """The draft."""

    def load_weights(self, weights):
        # the checkpoint's names, as-is
        return dict(weights)
'''


def _release(root: Path, version: str, method: str = "load_weights", comment: str = "") -> Path:
    tree = root / version
    (tree / ALGOS).parent.mkdir(parents=True)
    (tree / ALGOS).write_text(comment + LOADER.replace("def load_weights", f"def {method}"), encoding="utf-8")
    return tree


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """One LMDeploy hand row citing load_weights (and the absence of a rename table) stands for every hand table."""
    rows = (Row("lmdeploy", FIRST, "as-is", "lmdeploy llama_eagle3.py load_weights: the names as written",
                cites=(Cite(ALGOS, "Eagle3LlamaForCausalLM.load_weights"), Cite(ALGOS, "legacy_name_map", absent=True))),)
    monkeypatch.setattr(citations, "hand_tables", lambda: (table("synthetic key names", rows, full=False),))
    return tmp_path


def test_check_passes_then_names_row_release_and_cite_once_the_function_is_renamed(
        synthetic: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _release(synthetic, FIRST)
    _release(synthetic, SECOND)
    assert main(["lmdeploy", str(synthetic / FIRST), str(synthetic / SECOND)]) == 0
    assert "0 failing" in capsys.readouterr().out

    (synthetic / SECOND / ALGOS).write_text(LOADER.replace("load_weights", "load_checkpoint"), encoding="utf-8")
    assert main(["lmdeploy", str(synthetic / FIRST), str(synthetic / SECOND)]) == 1
    out = capsys.readouterr().out
    assert (f"FAIL synthetic key names LMDeploy {FIRST}-{RELEASES['lmdeploy'][-1]} 'as-is': at {SECOND}, "
            f"{ALGOS}:Eagle3LlamaForCausalLM.load_weights not found") in out
    assert f"at {FIRST}" not in out


def test_an_absent_cite_fails_where_the_place_appears(synthetic: Path) -> None:
    tree = _release(synthetic, FIRST)
    (tree / ALGOS).write_text(LOADER + "\nlegacy_name_map = {}\n\n\ndef legacy_name_map():\n    pass\n", encoding="utf-8")
    problems = check("lmdeploy", {FIRST: tree})
    assert [str(p.cite) for p in problems] == [f"no {ALGOS}:legacy_name_map"]
    assert "exists, but the row says it does not" in str(problems[0])


def test_the_cli_run_as_a_maintainer_runs_it_names_what_fails(tmp_path: Path) -> None:
    """Through the module's entry point (a real process): an engine release where a cited file is missing fails."""
    root = tmp_path / FIRST
    root.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3.scanners.citations", "lmdeploy", str(root)],
                          capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 1, done.stderr
    assert f"at {FIRST}, lmdeploy/pytorch/models/llama_eagle3.py:Eagle3LlamaForCausalLM.load_weights not found" \
        in done.stdout


def test_unreachable_engines_are_named_not_passed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for engine in UNREACHABLE:
        assert main([engine, str(tmp_path)]) == 2
        assert "not checked here" in capsys.readouterr().out


def test_fingerprints_ignore_layout_and_follow_code(tmp_path: Path) -> None:
    one = _release(tmp_path, "1.0.0")
    two = _release(tmp_path, "2.0.0", comment="# moved down two lines\n\n")
    cite = Cite(ALGOS, "Eagle3LlamaForCausalLM.load_weights")
    assert fingerprint(one, cite) == fingerprint(two, cite) is not None
    (two / ALGOS).write_text(LOADER.replace("dict(weights)", "list(weights)"), encoding="utf-8")
    assert fingerprint(one, cite) != fingerprint(two, cite)


def test_record_writes_the_format_the_reader_reads(synthetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = synthetic / "fingerprints.json"
    monkeypatch.setattr(evidence, "FINGERPRINTS", out)
    evidence.recorded_fingerprints.cache_clear()
    record("lmdeploy", {FIRST: _release(synthetic, FIRST), SECOND: _release(synthetic, SECOND, "load_checkpoint")}, out)
    data = json.loads(out.read_text())
    key = f"{ALGOS}:Eagle3LlamaForCausalLM.load_weights"
    assert set(data["lmdeploy"][key]) == {FIRST, SECOND} and data["lmdeploy"][key][SECOND] is None
    cite = Cite(ALGOS, "Eagle3LlamaForCausalLM.load_weights")
    assert len(str(recorded_fingerprint("lmdeploy", FIRST, cite))) == 16
    assert recorded_fingerprint("lmdeploy", SECOND, cite) is None
    assert recorded_fingerprint("lmdeploy", "9.9.9", cite) == evidence.UNREAD
    evidence.recorded_fingerprints.cache_clear()


@pytest.mark.parametrize("engine", CHECKABLE)
def test_every_hand_row_of_a_checkable_engine_cites_its_source_or_says_what_is_unmodelled(engine: str) -> None:
    bare = [cited.label for cited in hand_rows(engine) if not cited.row.cites and cited.row.unmodelled is None]
    assert bare == []


def _recorded_releases(engine: str) -> set[str]:
    return {release for places in evidence.recorded_fingerprints().get(engine, {}).values() for release in places}


@pytest.mark.parametrize("engine", CHECKABLE)
def test_the_recorded_fingerprints_cover_every_cite_of_every_row(engine: str) -> None:
    releases = _recorded_releases(engine)
    if not releases:
        pytest.skip(f"no {engine} release recorded (python -m pytest_eagle3.scanners.citations {engine} ROOT... --record)")
    missing = sorted({f"{cite.key} at {release}" for cited in hand_rows(engine) for cite in cited.row.cites
                      for release in releases if cited.covers(release)
                      and recorded_fingerprint(engine, release, cite) == evidence.UNREAD})
    assert missing == []


@pytest.mark.parametrize("engine", CHECKABLE)
def test_the_recorded_fingerprints_agree_with_the_cites(engine: str) -> None:
    """A recorded None is a cited place missing from a release the row covers (or an absent one present)."""
    wrong = [f"{cited.label}: {cite} at {release}" for cited in hand_rows(engine) for cite in cited.row.cites
             for release in sorted(_recorded_releases(engine)) if cited.covers(release)
             and (recorded_fingerprint(engine, release, cite) is None) != cite.absent]
    assert wrong == []


# ---------------------------------------------------------------- the installed engine (tox -e vllm0320, sglang0523)
#: The distribution's root: the directory holding the engine's package (found without importing the engine).
WHERE = "import importlib.util, pathlib, sys; print(pathlib.Path(importlib.util.find_spec(sys.argv[1]).origin).parent.parent)"


@pytest.mark.engine
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_installed_engine_holds_every_cite_of_the_rows_covering_its_version(engine: str) -> None:
    python = find_engine_python(engine)
    if python is None:
        pytest.skip(f"no {engine} interpreter (tox -e {'vllm0320' if engine == 'vllm' else 'sglang0523'})")
    version = (engine_version(engine, python) or "").split("+")[0]
    root = subprocess.run([python, "-c", WHERE, engine], capture_output=True, text=True, check=True).stdout.strip()
    covering = [cited for cited in hand_rows(engine) if cited.covers(version) and cited.row.cites]
    assert covering, f"no cited {engine} row covers {version}"
    assert [str(p) for p in check(engine, {version: Path(root)})] == []


def test_cited_rows_are_labelled_as_the_tables_print_them() -> None:
    row = next(iter(hand_rows("lmdeploy")))
    assert isinstance(row, CitedRow) and row.label.startswith(row.table.name + " LMDeploy ")
