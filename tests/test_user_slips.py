"""The slips a first-time user makes, each run as they would run it (from a folder outside the clone): an engine
entry left empty, one checkpoint given twice, a mistyped Hub id, a symlink loop, a narrow terminal, a sweep read
on the terminal, and ``-n`` where the install has no pytest-xdist. Each gets a clear message or the one verdict."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from pytest_eagle3.shell.terminal import fit_table
from pytest_eagle3.verdict.contract_table import CONTRACTS
from tests.user_runs import DEMO, DEMO_SGLANG, ROOT, TARGET, run_python

CONFIG = TARGET / "config.json"


@pytest.mark.parametrize(("engines", "said"), [
    ("vllm==", "'vllm==' gives no version after ==; give one (vllm==0."),
    ("vllm,", "'vllm,' has an empty entry (a comma with no engine beside it); name an engine in every entry"),
    ("sglang,,vllm", "'sglang,,vllm' has an empty entry"),
])
def test_an_engine_entry_left_empty_is_a_usage_error(tmp_path: Path, engines: str, said: str) -> None:
    """``vllm==`` and ``vllm,`` (an unset variable after them) never fall back to the newest release in silence."""
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-engine={engines}"],
                      tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    assert f"ERROR: --eagle3-engine: {said}" in done.stderr and "EAGLE-3 verdict" not in done.stdout
    plan = run_python(["-m", "pytest_eagle3", "plan", str(DEMO)], tmp_path, EAGLE3_ENGINES=engines)
    assert plan.returncode == 2 and f"EAGLE3_ENGINES: {said}" in plan.stderr, plan.stderr


def test_one_checkpoint_given_as_a_folder_with_a_slash_or_by_a_link_is_judged_once(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(DEMO)
    report = tmp_path / "r.json"
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-ckpt={DEMO}/",
                       "--eagle3-ckpt=link", f"--eagle3-ckpt={DEMO_SGLANG}", "--eagle3-engine=vllm",
                       f"--eagle3-report={report}"], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert [c["path"] for c in json.loads(report.read_text())["checkpoints"]] == [str(DEMO), str(DEMO_SGLANG)]
    assert "contracts for 2 checkpoints" in done.stdout and f"{DEMO}/ " not in done.stdout


@pytest.mark.parametrize(("given", "said"), [
    ("hf:/org/name", "hf:/org/name does not exist; a Hub id is written hf://org/name"),
    ("HF://org/name@main", "HF://org/name@main does not exist; a Hub id is written hf://org/name@main"),
    ("hf:org/name", "hf:org/name does not exist; a Hub id is written hf://org/name"),
    ("hf:///org/name", "hf:///org/name is not a Hub id hf://ORG/NAME[@REVISION] (did you mean hf://org/name?)"),
])
def test_a_mistyped_hub_id_is_told_how_a_hub_id_is_written(tmp_path: Path, given: str, said: str) -> None:
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={given}"], tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR and f"ERROR: --eagle3-ckpt: {said}" in done.stderr, \
        done.stderr
    target = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}",
                         f"--eagle3-target={given}"], tmp_path)
    assert f"ERROR: --eagle3-target: {said}" in target.stderr, target.stderr


def test_a_symlink_loop_and_a_link_to_nothing_are_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dangling").symlink_to("nowhere")
    loop = "loop is a symlink loop (a link that leads back to itself, directly or through others)"
    for flag in ("--eagle3-ckpt", "--eagle3-target"):
        done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"{flag}=loop"], tmp_path)
        assert done.returncode == pytest.ExitCode.USAGE_ERROR and f"ERROR: {flag}: {loop}" in done.stderr, done.stderr
    check = run_python(["-m", "pytest_eagle3", "check", "dangling"], tmp_path)
    assert check.returncode == 2 and "PATH: 'dangling' is a link to nowhere, which does not exist" in check.stderr, \
        check.stderr
    assert "does not exist" not in run_python(["-m", "pytest_eagle3", "plan", "loop"], tmp_path).stderr


def _table(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "EAGLE-3 verdict" in line) + 1
    return lines[start:next(i for i in range(start, len(lines)) if not lines[i].startswith((" ", "checkpoint",
                                                                                           str(DEMO))))]


def _names_whole(lines: list[str]) -> None:
    """Every contract-like word of the table is a whole contract id: none is split across lines."""
    words = {w.rstrip(",") for line in lines for w in line.split() if re.match(r"^[a-z]+\.[a-z_]*", w)}
    assert words and words <= set(CONTRACTS), words - set(CONTRACTS)


@pytest.mark.parametrize("columns", [55, 62, 80])
def test_a_narrow_terminal_wraps_the_table_between_contract_names(tmp_path: Path, columns: int) -> None:
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-ckpt={DEMO_SGLANG}",
                       f"--eagle3-target={CONFIG}"], tmp_path, COLUMNS=str(columns))
    table = _table(done.stdout)
    _names_whole(table)
    assert any("engine.architecture" in line for line in table) and any("engine.aux_layers" in line for line in table)
    assert max(len(line) for line in table) <= columns, table


@pytest.mark.slow
def test_at_80_columns_the_main_jobs_table_keeps_its_contract_names_whole(tmp_path: Path) -> None:
    """The main job (the target's weights: the predicted column is wide) at 80 columns."""
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-ckpt={DEMO_SGLANG}",
                       f"--eagle3-target={TARGET}"], tmp_path, COLUMNS="80")
    table = _table(done.stdout)
    _names_whole(table)
    assert any("engine.acceptance, engine.aux_layers" in line for line in table), table


@pytest.mark.parametrize("width", range(40, 141, 3))
def test_the_table_never_splits_a_name_at_any_width(width: int) -> None:
    rows = [("checkpoint", "format", "engine", "verdict", "predicted", "failing contracts"),
            ("out/checkpoint-4000-with-a-long-name", "specforge (SGLang export, no embed_tokens)", "any", "PASS",
             "3.67 as trained", "-"),
            ("", "", "vllm==0.34.0", "FAIL", "2.68 ± 0.14 at k=3 (sim, layers measured)",
             "engine.acceptance, engine.aux_layers, reference.convention")]
    lines = fit_table(rows, width)
    _names_whole(lines)
    text = " ".join(" ".join(lines).split())
    assert "out/checkpoint-4000-with-a-long-name" in text
    assert "engine.acceptance, engine.aux_layers, reference.convention" in text


def test_sweep_prints_its_table(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest_eagle3", "sweep", str(DEMO), str(DEMO_SGLANG), "--target", str(CONFIG), "--out",
                       "sweep"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("checkpoint ")))
    assert lines[head].split() == ["checkpoint", "as", "trained", "engine", "verdict", "predicted", "failing",
                                   "contracts"]
    assert re.match(r"demo-draft +- +sglang==0\.5\.23 +FAIL +refused +engine\.architecture$", lines[head + 1])
    assert re.match(r" +vllm==0\.34\.0 +FAIL +- +engine\.aux_layers$", lines[head + 4]), lines[head:head + 5]


def test_the_readmes_dash_n_for_the_main_job_installs_pytest_xdist_as_the_lock_pins_it() -> None:
    """The main job's install ([target]) has no pytest-xdist: where the README times ``-n 2`` for it, it says how to
    get it, at the version CI's lock takes (the test extra, which has it, is a developer's install)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pinned = re.search(r"^pytest-xdist==(\S+)$", (ROOT / ".ci" / "locks" / "py3.txt").read_text(), re.MULTILINE)
    assert pinned is not None
    main_job = next(line for line in readme.splitlines() if line.startswith("main job:") and "-n 2" in line)
    assert f'pip install "pytest-xdist=={pinned.group(1)}"' in main_job
    assert "pytest-xdist" not in " ".join(_extra("target")) and "pytest-xdist" in " ".join(_extra("test"))


def _extra(name: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return list(extras[name])
