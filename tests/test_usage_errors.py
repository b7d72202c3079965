"""Bad usage as a user meets it: one line on stderr naming where the value came from (the option, the env
variable, the ini key or the command's own argument), before anything runs, never a traceback; versions typed as
users type them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun
from tests.user_runs import (
    DEMO,
    DEMO_SGLANG,
    EXAMPLES,
    VLLM,
    run_python,
)


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--eagle3-report=DIR"], {}, "ERROR: --eagle3-report: DIR is a directory; give a file path such as "
                                  "DIR/eagle3-report.json"),
    (["--eagle3-report="], {}, "ERROR: --eagle3-report: is empty (an unset shell variable?)*"),
    ([], {"EAGLE3_REPORT": "DIR"}, "ERROR: EAGLE3_REPORT: DIR is a directory*"),
    (["--eagle3-vllm-python=DIR/no/python"], {}, "ERROR: --eagle3-vllm-python: DIR/no/python does not exist*"),
    ([], {"EAGLE3_SGLANG_PYTHON": "DIR/no/python"}, "ERROR: EAGLE3_SGLANG_PYTHON: DIR/no/python does not exist*"),
    (["--eagle3-k=0"], {"EAGLE3_K": "x"}, "ERROR: --eagle3-k: '0' is outside*"),
    ([], {"EAGLE3_K": "x"}, "ERROR: EAGLE3_K: 'x' is not an integer*"),
])
def test_bad_usage_is_one_line_naming_where_the_value_came_from(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str],
        message: str) -> None:
    folder = str(pytester.path)
    for key, value in env.items():
        monkeypatch.setenv(key, value.replace("DIR", folder))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}",
                                *(a.replace("DIR", folder) for a in args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message.replace("DIR", folder)])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_an_empty_checkpoint_is_not_the_current_folder(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--eagle3-ckpt=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --eagle3-ckpt: is empty (an unset shell variable?)*"])


def test_checkpoint_from_env_is_named_by_its_variable(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLE3_CKPT", "no-such-draft")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["ERROR: EAGLE3_CKPT: no-such-draft does not exist*"])


def test_missing_interpreter_without_a_checkpoint_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "engine", "--eagle3-vllm-python=/no/such/python")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --eagle3-vllm-python: /no/such/python does not exist*"])


def test_report_to_a_directory_keeps_nothing_half_done(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-report={pytester.path}")
    assert "IsADirectoryError" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(("report", "reason"), [
    ("notes.txt/eagle3-report.json", "notes.txt is a file, not a folder"),
    ("notes.txt/out/eagle3-report.json", "notes.txt is a file, not a folder"),
    ("/proc/eagle3-report.json", "/proc takes no new files (*)"),
])
def test_a_report_that_cannot_be_written_is_a_usage_error_before_anything_runs(
        pytester: pytest.Pytester, report: str, reason: str) -> None:
    if report.startswith("/proc") and not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    (pytester.path / "notes.txt").write_text("my notes\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-report={report}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --eagle3-report: {report} cannot be written: {reason}"])
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "collected" not in output and "EAGLE-3 verdict" not in output
    assert (pytester.path / "notes.txt").read_text() == "my notes\n"


def test_a_report_lost_during_the_run_still_prints_the_verdict(pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_eagle3.verdict.report import Collector

    def full_disk(self: Collector, path: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Collector, "write", full_disk)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "--eagle3-report=r.json",
                                "-m", "not engine")
    result.stdout.fnmatch_lines(["*EAGLE-3 verdict*", "*demo-draft*any*",
                                 "JSON report NOT written to r.json: No space left on device"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_check_with_a_report_that_cannot_be_written_names_its_own_argument(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("my notes\n")
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(DEMO), "--report",
                           "notes.txt/verdict.json"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 2, done.stderr
    assert "--report: notes.txt/verdict.json cannot be written: notes.txt is a file, not a folder" in done.stderr
    assert "Traceback" not in done.stderr and "EAGLE-3 verdict" not in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["check", "nope"], "PATH: 'nope' does not exist; give the draft checkpoint's directory"),
    (["check", ""], "PATH: '' is empty"),
    (["check", str(DEMO), "--target", "nope"], "--target: nope does not exist"),
    (["check", str(DEMO), "--report", "."], "--report: '.' is not a file path"),
])
def test_check_names_its_own_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", *args], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "--eagle3-ckpt" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("engine", "message"), [
    ("sglang==0.5", "ERROR: --eagle3-engine: SGLang 0.5 is not a release; it could mean 0.5.1, 0.5.2, 0.5.3, ..., "
                    "0.5.21, 0.5.22, 0.5.23 (42 releases; give one: sglang==0.5.23)"),
    ("sglang==0.5.0", "ERROR: --eagle3-engine: SGLang 0.5.0 is not a release; the releases around it: 0.4.10.post2, "
                      "0.5.1 (give one: sglang==0.4.10.post2)"),
    ("vllm>=0.30", "ERROR: --eagle3-engine: 'vllm>=0.30' is a range, and a range is not accepted: give one version "
                   "per entry, comma-separated (vllm==0.30.0,vllm==0.33.0), or NAME==* for one per profile segment"),
])
def test_a_version_that_is_no_release_is_a_usage_error_naming_what_it_could_mean(
        pytester: pytest.Pytester, engine: str, message: str) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-engine={engine}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


#: The newest vLLM release read (bundled); a version after it is not judged until ``learn`` reads it.
NEWEST_VLLM = VLLM.split("==")[1]


def test_an_engine_newer_than_every_release_read_is_not_judged_and_names_learn(
        run_contracts: Callable[..., ContractRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLE3_KNOWLEDGE_DIR", str(tmp_path / "none"))
    run = run_contracts([DEMO_SGLANG], "--eagle3-engine=vllm==0.90.0", "-m", "not engine",
                        target=EXAMPLES / "demo-target" / "config.json")
    entry = run.engine_entry(DEMO_SGLANG, "vllm==0.90.0")
    assert (entry["rules_from"], entry["verdict"], entry["failing"]) == (None, "not judged", [])
    run.result.stdout.fnmatch_lines(["*EAGLE-3 verdict*", "*vllm==0.90.0*NOT JUDGED*",
                                     "*engine.aux_layers: vllm==0.90.0 is newer than every vLLM release read*"
                                     "read it first: python -m pytest_eagle3 learn vllm==0.90.0*"])
    assert "judged by" not in run.result.stdout.str()


def test_a_version_newer_than_every_release_read_is_not_judged_and_names_the_learn_command(tmp_path: Path) -> None:
    for version in ("0.90.0", "9.9"):
        unlearned = {"EAGLE3_KNOWLEDGE_DIR": str(tmp_path / "none")}
        done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}",
                           f"--eagle3-engine=vllm=={version}", "-q"], tmp_path, **unlearned)
        said = (f"vllm=={version} is newer than every vLLM release read (newest {NEWEST_VLLM}): not judged; "
                f"read it first: python -m pytest_eagle3 learn vllm=={version}")
        flat = " ".join(done.stdout.split())
        assert said in flat and "NOT JUDGED" in flat and "judged by" not in flat, done.stdout[-2000:]
        plan = run_python(["-m", "pytest_eagle3", "plan", str(DEMO), "--engine", f"vllm=={version}"], tmp_path,
                          **unlearned)
        assert said in " ".join(plan.stderr.split()) and plan.returncode == 0
        assert f"load plan, vLLM {version} (not read): {said}" in " ".join(plan.stdout.split())
        assert "verdict: NOT JUDGED" in " ".join(plan.stdout.split())
