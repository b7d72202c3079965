"""--eagle3-summary: the verdicts as a markdown table for a CI job summary, and $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.shell.summary import FIX_CHARS, render

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: The demo pair against the target's config: static contracts only (seconds), one failure per draft.
DEMO = (f"--eagle3-ckpt={EXAMPLES / 'demo-draft'}", f"--eagle3-ckpt={EXAMPLES / 'demo-draft-sglang'}",
        f"--eagle3-target={EXAMPLES / 'demo-target' / 'config.json'}", "--eagle3-engine=sglang==0.5.23,vllm==0.33.0",
        "-p", "no:cacheprovider")


def _rows(markdown: str) -> list[list[str]]:
    """The table's rows (header and rule left out), cells stripped."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")][2:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str, dict[str, Any], str]:
    """One contract run on the demo pair with --eagle3-summary, the report, and $GITHUB_STEP_SUMMARY set."""
    import subprocess
    import sys

    work = tmp_path_factory.mktemp("summary")
    step = work / "step-summary.md"
    step.write_text("earlier step\n", encoding="utf-8")
    summary, report = work / "out" / "summary.md", work / "verdict.json"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("EAGLE3_")}
    env["GITHUB_STEP_SUMMARY"] = str(step)
    done = subprocess.run([sys.executable, "-m", "pytest", *DEMO, f"--eagle3-summary={summary}",
                           f"--eagle3-report={report}"], capture_output=True, text=True, env=env, cwd=work, check=False)
    return (done.returncode, summary.read_text(encoding="utf-8"), step.read_text(encoding="utf-8"),
            json.loads(report.read_text(encoding="utf-8")), done.stdout)


def test_the_summary_has_a_row_per_checkpoint_and_engine_with_failing_contracts_and_fix(
        demo_run: tuple[int, str, str, dict[str, Any], str]) -> None:
    code, summary, _, report, stdout = demo_run
    assert code == pytest.ExitCode.TESTS_FAILED
    assert summary.startswith("## EAGLE-3 verdict\n")
    assert "2 of 2 checkpoints failing" in summary
    rows = _rows(summary)
    assert [r[1] for r in rows] == ["any", "sglang==0.5.23", "vllm==0.33.0"] * 2
    assert rows[0][0] == f"`{EXAMPLES / 'demo-draft'}`" and rows[1][0] == ""
    by_engine = {(i // 3, r[1]): r for i, r in enumerate(rows)}
    refused = by_engine[(0, "sglang==0.5.23")]
    assert refused[2:6] == ["**FAIL**", "engine.architecture", "-", "refused"]
    assert refused[6].startswith("convert the config for SGLang")
    lossy = by_engine[(1, "vllm==0.33.0")]
    assert lossy[2:4] == ["**FAIL**", "engine.aux_layers"] and lossy[5] == "loads with loss"
    assert lossy[6].startswith("write [3, 5, 6] into eagle_aux_hidden_state_layer_ids")
    assert by_engine[(1, "sglang==0.5.23")][2] == "PASS (static)"  # the target's config only: acceptance unmeasured
    assert "PASS (static): every rule ran and passed, acceptance not measured" in summary
    # the rows are the JSON report's: the same verdicts and failing contracts
    entries = [e for c in report["checkpoints"] for e in c["engines"]]
    assert [", ".join(e["failing"]) or "-" for e in entries] == [r[3] for r in rows]
    assert "markdown summary appended to $GITHUB_STEP_SUMMARY" in stdout


def test_a_long_fix_is_cut_and_points_at_the_json_report(demo_run: tuple[int, str, str, dict[str, Any], str]) -> None:
    _, summary, _, report, _ = demo_run
    fix = next(e["fix"][0] for c in report["checkpoints"] for e in c["engines"] if e["fix"])
    assert len(fix) > FIX_CHARS  # the recorded fix is long: the cell keeps its start
    cells = [r[6] for r in _rows(summary) if r[6] != "-"]
    assert all(len(c) < FIX_CHARS + 60 for c in cells), cells
    assert all(c.endswith("… (in full: JSON report)") for c in cells), cells
    assert summary.rstrip().endswith("verdict.json`.")  # the footer names the file


def test_github_step_summary_is_appended_not_overwritten(demo_run: tuple[int, str, str, dict[str, Any], str]) -> None:
    _, summary, step, _, _ = demo_run
    assert step.startswith("earlier step\n")
    assert step.removeprefix("earlier step\n").strip() == summary.strip()


def test_an_unwritable_summary_path_is_a_usage_error_before_anything_runs(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    note = tmp_path / "notes.txt"
    note.write_text("a file, not a folder\n", encoding="utf-8")
    result = pytester.runpytest(*DEMO, f"--eagle3-summary={note / 'summary.md'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(f"ERROR: --eagle3-summary: {note / 'summary.md'} cannot be written: "
                                  f"{note} is a file, not a folder")])
    result = pytester.runpytest(*DEMO, f"--eagle3-summary={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--eagle3-summary: " in result.stderr.str() and "is a directory" in result.stderr.str()
    assert "collected" not in result.stdout.str()


def test_the_env_variable_and_step_summary_alone(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                 make_checkpoint: Any) -> None:
    """EAGLE3_SUMMARY names the file like the option; $GITHUB_STEP_SUMMARY alone gets the table too."""
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    monkeypatch.setenv("EAGLE3_SUMMARY", str(pytester.path / "from-env.md"))
    draft = make_checkpoint(producer="specforge")
    result = pytester.runpytest(f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    written = (pytester.path / "from-env.md").read_text(encoding="utf-8")
    assert [r[2] for r in _rows(written)] == ["PASS (partial)", "NOT JUDGED"]
    assert step.read_text(encoding="utf-8").strip() == written.strip()
    monkeypatch.delenv("EAGLE3_SUMMARY")
    step.unlink()
    pytester.runpytest(f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm", "-p", "no:cacheprovider")
    assert _rows(step.read_text(encoding="utf-8"))[0][0] == f"`{draft}`"


def test_cells_never_break_the_table() -> None:
    """A pipe or a newline in a value is escaped; the predicted cell says refused where the engine refuses."""
    from pytest_eagle3.findings import Finding
    from pytest_eagle3.verdict.contract_table import rank
    from pytest_eagle3.verdict.judgement import ContractOutcome
    from pytest_eagle3.verdict.report import Collector, ContractReport

    refused = ContractOutcome("engine.keys", "fail", "engine.keys [x]: y", (Finding("x", "y", fix="rename a|b\nto c"),),
                              prediction={"mean_acceptance_length": None, "basis": "measured"}, load_outcome="refused")
    collector = Collector(engines=["vllm==0.33.0"])
    collector.add(ContractReport("x|y", "vllm==0.33.0", rank("engine.keys"), "speculators", refused))
    rows = _rows(render(collector))
    assert rows[1:] == [["", "vllm==0.33.0", "**FAIL**", "engine.keys", "refused", "refused", "rename a\\|b to c"]]
    assert rows[0][:3] == ["`x\\|y`", "any", "NOT RUN"]
