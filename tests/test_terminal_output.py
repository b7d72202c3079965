"""What a terminal shows: the verdict table and the failures fit its width, a log keeps whole lines, the
matrix prints as text, a reader that leaves early gets no traceback, and ``check`` in the clone prints no
warning."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import validate_report
from tests.user_runs import (
    DEMO,
    DEMO_SGLANG,
    EXAMPLES,
    ROOT,
    run_python,
)


def test_check_inside_the_clone_prints_no_pytest_warning(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", "examples/demo-draft", "--engine", "vllm",
                           "--report", str(report)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Warning" not in done.stdout + done.stderr
    validate_report(json.loads(report.read_text()))


@pytest.mark.parametrize("columns", [80, 100])
def test_the_verdict_and_the_failures_fit_the_terminal(tmp_path: Path, columns: int) -> None:
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-ckpt={DEMO_SGLANG}",
                 f"--eagle3-target={EXAMPLES / 'tiny-target' / 'config.json'}"], tmp_path, COLUMNS=str(columns))
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failures = lines[lines.index(next(line for line in lines if "FAILURES" in line)):
                     lines.index(next(line for line in lines if "short test summary info" in line))]
    too_wide = [line for line in failures if len(line) > columns]
    assert not too_wide, too_wide
    verdict = "\n".join(failures[next(i for i, line in enumerate(failures) if "EAGLE-3 verdict" in line):])
    assert f"{DEMO}  speculators" in verdict and re.search(r"\n  sglang==0\.5\.23 +FAIL +- +engine\.architecture\n",
                                                           verdict), verdict
    assert "reference.acceptance: reference acceptance needs the target's weights:" in verdict


def test_a_log_keeps_whole_lines(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--eagle3-ckpt={DEMO}", "-k", "readable or architecture"], capture_output=True, text=True,
                          cwd=tmp_path, check=False, env=env)
    assert re.search(rf"\n{re.escape(str(DEMO))} +speculators +any +PASS", done.stdout), done.stdout[-3000:]


def test_the_matrix_prints_as_text_for_a_terminal(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest_eagle3", "matrix"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "<!--" not in done.stdout and "|" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert re.search(r"\n0\.5\.12 +refused +loads", done.stdout) and "matrix --markdown" in done.stdout
    markdown = run_python(["-m", "pytest_eagle3", "matrix", "--markdown"], tmp_path).stdout
    assert markdown.startswith("<!-- generated") and "| from | speculators |" in markdown


@pytest.mark.parametrize("program", [["-m", "pytest_eagle3"],
                                     ["-c", "import sys; from pytest_eagle3.shell.cli import main; sys.exit(main())"]],
                         ids=["python -m pytest_eagle3", "pytest-eagle3"])
def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path: Path, program: list[str]) -> None:
    """``... | head -1``: the reader is gone before the first line is written (``pytest-eagle3`` is the console
    script, which calls ``main`` as this does)."""
    child = subprocess.Popen([sys.executable, *program, "plan", str(DEMO), "--engine", "sglang==*,vllm"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    error = child.stderr.read()
    assert child.wait(timeout=300) == 0 and "Traceback" not in error and "BrokenPipe" not in error, error
