"""Quiet and tidy output, as a new user meets it (issue 47, item 5): lines fit an 80-column terminal, counts
agree with their nouns, no ``None`` on screen, one figure per quantity per run, the ``any`` row the same on
screen and in the step summary, the predicted column says what was measured, an empty engine selection is a
usage error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: The lines pytest itself writes whole (its short test summary): not ours to wrap.
PYTESTS_OWN = ("FAILED ", "ERROR ", "SKIPPED ", "platform ", "rootdir: ", "plugins: ", "cachedir: ")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_STEP_SUMMARY", "COLUMNS"))}
    return {**env, "PYTHONPATH": str(ROOT), **extra}  # this clone's code, wherever the run starts


def _pytest(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=cwd, env=_env(**env), capture_output=True, text=True, check=False, timeout=900)


def _command(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_eagle3", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, check=False, timeout=900)


def test_every_line_of_ours_fits_an_80_column_terminal() -> None:
    """The header, the collection line (with its testpaths advice), the failures, the table and the lines under
    it: none wider than the terminal."""
    done = _pytest(f"--eagle3-ckpt={EXAMPLES / 'broken-d2t-draft'}", f"--eagle3-ckpt={EXAMPLES / 'sglang-draft'}",
                   f"--eagle3-target={EXAMPLES / 'tiny-target' / 'config.json'}", COLUMNS="80")
    lines = done.stdout.splitlines()
    assert any("contracts for 2 checkpoints" in line for line in lines), done.stdout[-2000:]
    wide = [line for line in lines if len(line) > 80 and not line.startswith(PYTESTS_OWN)]
    assert wide == [], "\n".join(wide)


def test_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    from pytest_eagle3.words import plural, verb

    assert [plural(1, "tensor"), plural(2, "tensor"), plural(0, "change"), plural(1, "entry"), plural(3, "entry")] \
        == ["1 tensor", "2 tensors", "0 changes", "1 entry", "3 entries"]
    assert (verb(1, "is", "are"), verb(2, "is", "are")) == ("is", "are")
    report = tmp_path / "report.json"
    _pytest(f"--eagle3-ckpt={EXAMPLES / 'sglang-draft'}", "--eagle3-engine=vllm", f"--eagle3-report={report}",
            cwd=tmp_path)
    contracts = {c["id"]: c for e in json.loads(report.read_text())["checkpoints"][0]["engines"]
                 for c in e["contracts"]}
    assert contracts["checkpoint.readable"]["message"].endswith(" tensors in 1 file, 151040 bytes")


def test_no_none_on_screen() -> None:
    """``plan`` without a target: what is unknown says so, never ``None``."""
    for draft in ("speculators-draft", "sglang-draft"):
        done = _command("plan", str(EXAMPLES / draft))
        assert done.returncode == 0, done.stderr
        assert "None" not in done.stdout, done.stdout


@pytest.mark.parametrize("argv", [("pytest", "--eagle3-engine="), ("check", "--engine="), ("plan", "--engine=")])
def test_an_empty_engine_selection_is_a_usage_error(argv: tuple[str, str], tmp_path: Path) -> None:
    """``--eagle3-engine=`` (an unset variable) never falls back to the defaults under "(from option)"."""
    draft = str(EXAMPLES / "sglang-draft")
    if argv[0] == "pytest":
        done = _pytest(f"--eagle3-ckpt={draft}", argv[1], cwd=tmp_path)
        assert done.returncode == pytest.ExitCode.USAGE_ERROR
        assert "--eagle3-engine: empty" in done.stderr, done.stderr
        return
    done = _command(argv[0], draft, argv[1], cwd=tmp_path)
    assert done.returncode == 2 and "--engine: empty" in done.stderr, done.stderr


def test_the_predicted_column_names_what_was_measured() -> None:
    from pytest_eagle3.verdict.report_lines import as_trained_cell, predicted_cell

    assert predicted_cell({"mean_acceptance_length": 3.671, "basis": "measured"}) == "3.67 (sim, layers measured)"
    assert predicted_cell({"mean_acceptance_length": 2.5, "basis": "assumed"}) == "2.50 (sim, layers assumed)"
    assert predicted_cell({"mean_acceptance_length": None, "basis": "measured"}) == "refused"
    assert as_trained_cell({"mean_acceptance_length": 3.666}) == "3.67 as trained"
    assert as_trained_cell(None) == "-"


@pytest.mark.slow
def test_one_figure_per_quantity_and_the_any_row_alike_on_screen_and_in_the_summary(tmp_path: Path) -> None:
    """The reference acceptance, the "as trained" figure of the predictions and the ``any`` row are one number,
    on screen and in the step summary."""
    pytest.importorskip("transformers", reason="the reference runs the target (pip install -e '.[target]')")
    report, summary = tmp_path / "report.json", tmp_path / "summary.md"
    done = _pytest(f"--eagle3-ckpt={EXAMPLES / 'demo-draft-sglang'}", f"--eagle3-target={EXAMPLES / 'demo-target'}",
                   f"--eagle3-report={report}", f"--eagle3-summary={summary}", cwd=tmp_path, COLUMNS="200")
    data = json.loads(report.read_text())["checkpoints"][0]
    reference = data["reference"]["mean_acceptance_length"]
    trained = {e["predicted_acceptance"]["as_trained"] for e in data["engines"] if e.get("predicted_acceptance")
               and e["predicted_acceptance"].get("as_trained") is not None}
    assert trained == {reference}, (trained, reference)
    figure = f"{reference:.2f} as trained"
    any_row = next(line for line in done.stdout.splitlines() if " any " in line and "PASS" in line)
    assert figure in any_row, any_row
    assert f"| `examples/demo-draft-sglang` | any | PASS | - | {figure} |" in summary.read_text().replace(
        str(EXAMPLES.parent) + "/", "") or f"| {figure} |" in summary.read_text()
    assert f"reference acceptance {EXAMPLES / 'demo-draft-sglang'}: {reference:.2f} at k=3" in done.stdout


def test_the_commands_lines_fit_an_80_column_terminal(tmp_path: Path) -> None:
    """``sweep`` and ``fix`` print what they wrote and what follows, wrapped like the pytest run's lines."""
    env = _env(COLUMNS="80")
    runs = [["sweep", str(EXAMPLES / "demo-draft"), "--target", str(EXAMPLES / "demo-target" / "config.json"),
             "--out", str(tmp_path / "sweep")],
            ["fix", str(EXAMPLES / "demo-draft-sglang"), str(tmp_path / "fixed"), "--to", "vllm==0.33.0"]]
    for argv in runs:
        done = subprocess.run([sys.executable, "-m", "pytest_eagle3", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False, timeout=900)
        assert done.stdout.strip(), done.stderr
        wide = [line for line in done.stdout.splitlines() if len(line) > 80]
        assert wide == [], (argv[0], wide)
