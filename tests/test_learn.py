"""``learn``: a release the plugin has not read is read, not guessed.

A synthetic vLLM package (a real .whl: a zip with the package's files and a dist-info) stands in for two releases
newer than every bundled one, 0.90.0 and 0.91.0, alike but for ONE cited function. vLLM's code cannot be reproduced
in a synthetic package, so the bundled newest release's recorded fingerprints are overridden in-process with those of
the synthetic 0.90.0 (the base is comparable). The changed function is one the real rows cite (the first in a file
no row cites whole); every other cited place is written into the package unchanged. Then: ``learn`` both wheels, and the
contracts resting on the changed function say "not modelled" naming it, while the others are judged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.behaviours import TABLES, BehaviourName
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.learned import KNOWLEDGE_DIR_ENV, learned_release
from pytest_eagle3.knowledge.releases import KNOWN_RANGES
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.scanners.fingerprint import fingerprint
from pytest_eagle3.shell import cli
from pytest_eagle3.verdict import resting

ROOT = Path(__file__).resolve().parent.parent
DRAFT = ROOT / "examples" / "demo-draft"
NEWEST = KNOWN_RANGES["vllm"][1]


def _newest_rows() -> dict[BehaviourName, tuple[Cite, ...]]:
    newest = Version(NEWEST)
    return {name: row.cites for name, t in TABLES.items() if (row := t.find("vllm", newest)) is not None}


def _changed() -> tuple[Cite, frozenset[str]]:
    """The function the synthetic 0.91.0 changes: the first function a vLLM row in force at the newest release cites
    in a file no row cites whole (a whole-file cite changes with any function in it), and the behaviours citing it."""
    rows = _newest_rows()
    whole = {c.file for cites in rows.values() for c in cites if not c.qualname}
    changed = min(c for cites in rows.values() for c in cites if c.qualname and not c.absent and c.file not in whole)
    return changed, frozenset(name for name, cites in rows.items() if changed in cites)


CHANGED, BEHAVIOURS = _changed()


def _cited() -> tuple[Cite, ...]:
    """Every place the vLLM rows in force at the newest release cite."""
    resting.forget()
    return tuple(sorted({c for cites in _newest_rows().values() for c in cites}))


def _source(cites: tuple[Cite, ...], changed: bool) -> dict[str, str]:
    """Module text per file: a stub class or function at each cited qualname; CHANGED's body differs when ``changed``."""
    files: dict[str, list[str]] = {}
    for cite in cites:
        if cite.absent:
            continue
        lines = files.setdefault(cite.file, [])
        parts = cite.qualname.split(".") if cite.qualname else []
        body = "return 1" if changed and cite == CHANGED else "return 0"
        if len(parts) == 1:
            lines.append(f"def {parts[0]}(*args):\n    {body}\n")
        elif len(parts) >= 2:
            lines.append(f"class {parts[0]}:\n    def {parts[1]}(self, *args):\n        {body}\n")
    return {path: "\n".join(dict.fromkeys(lines)) for path, lines in files.items()}


def _wheel(where: Path, version: str, files: dict[str, str]) -> Path:
    wheel = where / f"vllm-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/__init__.py", f"__version__ = {version!r}\n")
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"vllm-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    return wheel


@pytest.fixture
def knowledge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    where = tmp_path / "knowledge"
    monkeypatch.setenv(KNOWLEDGE_DIR_ENV, str(where))
    resting.forget()
    yield where
    resting.forget()


def _plan_json(capsys: pytest.CaptureFixture[str], spec: str) -> dict[str, Any]:
    capsys.readouterr()
    assert cli.main(["plan", str(DRAFT), "--engine", spec, "--json"]) in (0, 1)
    out = capsys.readouterr().out
    row: dict[str, Any] = json.loads(out[out.index("{"):])
    return row


def _contracts(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in row["contracts"]}


def test_a_changed_function_leaves_its_contracts_not_modelled(knowledge: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    cites = _cited()
    base = _wheel(tmp_path, "0.90.0", _source(cites, changed=False))
    new = _wheel(tmp_path, "0.91.0", _source(cites, changed=True))
    unpacked = tmp_path / "base"
    with zipfile.ZipFile(base) as archive:
        archive.extractall(unpacked)
    real = resting.recorded_fingerprint

    def recorded(engine: str, release: str, key: str) -> str | None:  # the bundled newest, as the synthetic base
        if engine == "vllm" and Version(release) == Version(NEWEST):
            return fingerprint(unpacked, next(c for c in cites if c.key == key))
        return real(engine, release, key)

    monkeypatch.setattr(resting, "recorded_fingerprint", recorded)
    for wheel in (base, new):
        assert cli.main(["learn", str(wheel)]) == 0
    said = capsys.readouterr().out
    assert f"learned vLLM 0.91.0 from {new.name}" in said
    for behaviour in BEHAVIOURS:
        assert f"not carried over: {behaviour}: {CHANGED.key} changed in 0.91.0 (read up to 0.90.0)" in said
    record = learned_release("vllm", Version("0.91.0"))
    assert record is not None and record.fingerprints[CHANGED.key] != fingerprint(unpacked, CHANGED)

    row = _contracts(_plan_json(capsys, "vllm==0.91.0"))
    base_row = _contracts(_plan_json(capsys, "vllm==0.90.0"))
    rests = resting.resting()
    unmodelled = {cid for cid, behaviours in rests.items() if behaviours & BEHAVIOURS}
    assert "engine.acceptance" in unmodelled and len(unmodelled) < len(rests), unmodelled
    for cid in unmodelled:
        assert row[cid]["status"] == "not modelled", row[cid]
        assert f"not modelled: {CHANGED.key} changed in 0.91.0 (read up to 0.90.0)" in row[cid]["message"]
        assert "judged by" not in row[cid]["message"]
    judged = [cid for cid in rests if cid not in unmodelled and base_row[cid]["outcome"] == "passed"]
    assert judged, base_row
    for cid in judged:
        assert row[cid]["outcome"] == "passed", row[cid]  # judged: the rows they rest on carried over
    assert base_row["engine.acceptance"]["status"] != "not modelled"  # the base, unchanged, is judged whole


def test_without_learn_a_newer_release_is_not_judged_naming_the_command(knowledge: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (engine,) = parse_selection("vllm==0.91.0")
    assert engine.unread is not None and "judged by" not in engine.label
    entry = _plan_json(capsys, "vllm==0.91.0")
    assert entry["verdict"] == "not judged"
    for contract in entry["contracts"]:
        assert contract["status"] == "not modelled"
        assert contract["message"].startswith(f"vllm==0.91.0 is newer than every vLLM release read (newest {NEWEST}): "
                                              "not judged; read it first: python -m pytest_eagle3 learn vllm==0.91.0")


@pytest.mark.slow
def test_check_says_not_judged_and_the_command(tmp_path: Path) -> None:
    env = {**os.environ, KNOWLEDGE_DIR_ENV: str(tmp_path / "none"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(DRAFT), "--engine", "vllm==0.91.0",
                           "-p", "no:cacheprovider"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert "vllm==0.91.0 (not read)" in done.stdout or "vllm==0.91.0" in done.stdout
    assert "NOT JUDGED for" in done.stdout
    assert "read it first: python -m pytest_eagle3 learn vllm==0.91.0" in done.stdout
    assert "judged by" not in done.stdout


def test_learn_offline_says_what_to_run_where_there_is_network(knowledge: Path, tmp_path: Path) -> None:
    env = {**os.environ, KNOWLEDGE_DIR_ENV: str(knowledge), "PYTHONPATH": str(ROOT),
           "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2",
           "PIP_NO_CACHE_DIR": "1", "PIP_CONFIG_FILE": os.devnull}
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "learn", "vllm==0.91.0"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    assert "learn: could not download vllm==0.91.0" in done.stderr
    assert "Where there is network, run: pip download vllm==0.91.0 --no-deps -d DIR" in done.stderr


def test_learn_a_source_it_cannot_read_is_one_line(knowledge: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tree").mkdir()
    assert cli.main(["learn", str(tmp_path / "tree")]) == 2
    assert "cannot tell which engine release this is" in capsys.readouterr().err
    assert cli.main(["learn", "nosuchengine==1.0"]) == 2
    assert "unknown engine 'nosuchengine'" in capsys.readouterr().err


def test_every_contract_rests_on_what_its_area_reads() -> None:
    """The derived map: each area's own behaviours (spot checks read in its module), acceptance on all."""
    found = resting.resting()
    assert "d2t_present" in found["engine.vocab"] and "d2t_present" not in found["engine.architecture"]
    assert "embed_source" in found["engine.embeddings"] and "embed_source" not in found["engine.fc"]
    assert "capture_range" in found["engine.aux_layers"]
    assert found["engine.acceptance"] == frozenset().union(*(v for k, v in found.items() if k != "engine.acceptance"))


def test_an_engine_interpreter_whose_release_is_unread_is_learned_at_the_start(
        knowledge: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An interpreter whose vllm (a synthetic 0.92.0 on its path, with its dist-info) is unread: ``learn --python``
    reads it, and a run given it as ``--eagle3-vllm-python`` learns it first, saying so in one line."""
    from pytest_eagle3.shell.learn_command import learn_interpreters
    from pytest_eagle3.verdict.settings import RunSettings

    site = tmp_path / "site"
    with zipfile.ZipFile(_wheel(tmp_path, "0.92.0", _source((CHANGED,), changed=False))) as archive:
        archive.extractall(site)
    monkeypatch.setenv("PYTHONPATH", str(site))
    settings = RunSettings(interpreters={"vllm": sys.executable})
    (line,) = learn_interpreters(settings)
    assert line == (f"vLLM 0.92.0 of {sys.executable} was not read: learned it now "
                    f"(python -m pytest_eagle3 learn --python {sys.executable} --engine vllm)")
    assert learned_release("vllm", Version("0.92.0")) is not None
    assert learn_interpreters(settings) == []  # read now: nothing to learn
    assert cli.main(["learn", "--python", sys.executable, "--engine", "vllm"]) == 0
    assert f"learned vLLM 0.92.0 from vLLM of {sys.executable}" in capsys.readouterr().out


def test_a_learned_release_answers_capture_from_its_own_scan(knowledge: Path) -> None:
    """The capture lookup at a learned release reads that release's scan (as ``learn`` writes it: the capturing
    and the registered architectures), not the newest bundled release's."""
    from pytest_eagle3.knowledge.capture import CAPTURE_TABLES, CAPTURES, REFUSED, capture_support
    from pytest_eagle3.knowledge.generated.capture_table import VLLM_SPANS
    from pytest_eagle3.knowledge.learned import LearnedRelease

    scanned = sorted(a for a, runs in VLLM_SPANS.items() if runs[-1][1] == NEWEST and ("vllm", a) not in CAPTURE_TABLES)
    assert scanned and capture_support("vllm", Version(NEWEST), scanned[0]).support == CAPTURES
    LearnedRelease("vllm", "0.93.0", "test", {}, {"capture": [["NewArchForCausalLM"], ["NewArchForCausalLM",
                                                                                        "OtherForCausalLM"]]}).write()
    learned = capture_support("vllm", Version("0.93.0"), "NewArchForCausalLM")
    assert (learned.support, learned.source) == (CAPTURES, "learned scan of vllm 0.93.0: captures")
    gone = capture_support("vllm", Version("0.93.0"), scanned[0])  # captured up to the newest bundled release
    assert (gone.support, gone.source) == (REFUSED, "learned scan of vllm 0.93.0: not registered")


def test_a_learned_release_answers_draft_classes_from_its_own_scan(knowledge: Path) -> None:
    """The draft-class rows at a learned release are its own scan's (as ``learn`` writes it: registry, classes)."""
    from pytest_eagle3.knowledge.draft_class_rows import class_row, registered_at
    from pytest_eagle3.knowledge.learned import LearnedRelease

    klass = "Eagle3LlamaForCausalLM"
    newest = class_row("vllm", Version(NEWEST), klass, "layer_count")
    assert newest is not None and newest.value != "one-or-raise"
    LearnedRelease("vllm", "0.93.0", "test", {}, {"draft_classes": [
        {"Eagle3LlamaForCausalLM": klass}, {klass: {"values": {"layer_count": "one-or-raise"}, "where": "x.py:C"}}]}).write()
    row = class_row("vllm", Version("0.93.0"), klass, "layer_count")
    assert row is not None and row.value == "one-or-raise" and "vllm 0.93.0 x.py:C (learned scan" in row.source
    assert registered_at("vllm", Version("0.93.0")) == {"Eagle3LlamaForCausalLM": klass}
    assert class_row("vllm", Version("0.94.0"), klass, "layer_count") == newest  # not learned: the newest row


def test_a_learned_release_answers_reach_from_its_own_scan(knowledge: Path) -> None:
    """The capture reach at a learned release is its own scan's loop (as ``learn`` writes it)."""
    from pytest_eagle3.knowledge.learned import LearnedRelease
    from pytest_eagle3.knowledge.reach import CRASH, label, reach_at

    bundled = reach_at("vllm", Version(NEWEST), "LlamaForCausalLM")
    assert bundled is not None and bundled.value.zero != CRASH
    LearnedRelease("vllm", "0.93.0", "test", {}, {"reach": {"LlamaForCausalLM": {
        "zero": CRASH, "last": False, "index": "global", "past": "never-fires", "where": "llama.py:LlamaModel.forward"}}}
                   ).write()
    row = reach_at("vllm", Version("0.93.0"), "LlamaForCausalLM")
    assert row is not None and (row.value.zero, row.value.last) == (CRASH, False)
    assert label("vllm", "LlamaForCausalLM", row).startswith("vllm 0.93.0 llama.py:LlamaModel.forward capture loop")
    assert reach_at("vllm", Version("0.93.0"), "GoneForCausalLM") is None


@pytest.mark.slow
def test_check_judges_a_learned_release(tmp_path: Path) -> None:
    """``learn WHEEL`` then ``check --engine``: the release is judged from what was read (its row is labelled
    learned; no contract says it was not read), in a fresh process as a user runs it."""
    env = {**os.environ, KNOWLEDGE_DIR_ENV: str(tmp_path / "knowledge"), "PYTHONPATH": str(ROOT)}
    wheel = _wheel(tmp_path, "0.95.0", _source((CHANGED,), changed=False))
    learned = subprocess.run([sys.executable, "-m", "pytest_eagle3", "learn", str(wheel)], capture_output=True,
                             text=True, env=env, timeout=300)
    assert learned.returncode == 0 and "judge with it: --eagle3-engine=vllm==0.95.0" in learned.stdout
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(DRAFT), "--engine", "vllm==0.95.0",
                           "-p", "no:cacheprovider"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert "vllm==0.95.0 (learned)" in done.stdout
    assert "newer than every vLLM release read" not in done.stdout and "judged by" not in done.stdout


def test_fix_writes_no_copy_for_a_release_it_has_not_read(knowledge: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fixed"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["fix", str(ROOT / "examples" / "demo-draft-sglang"), str(out), "--to", "vllm==0.91.0",
                  "--target", str(ROOT / "examples" / "demo-target" / "config.json")])
    assert exit_.value.code == 2 and not out.exists()
    said = " ".join(capsys.readouterr().err.split())
    assert ("--to: vllm==0.91.0 is newer than every vLLM release read (newest "
            f"{NEWEST}): not judged; read it first: python -m pytest_eagle3 learn vllm==0.91.0") in said
    assert said.endswith("; fix writes no copy for a release it has not read")  # the index's word between (offline)
