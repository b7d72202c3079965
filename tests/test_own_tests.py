"""The plugin inside a project's own pytest run: the user's tests kept and counted beside the contracts, the
project's testpaths, a run that collected nothing, a live test without the live extra, and an idle plugin that
costs nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.user_runs import (
    DEMO,
    run_python,
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntestpaths = mytests\n")
    tests = pytester.mkdir("mytests")
    (tests / "test_mine.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    return pytester


def test_checkpoint_and_explicit_paths_run_both(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "--eagle3-engine=vllm", "mytests")
    result.stdout.fnmatch_lines(["collected * items*", "eagle3: contracts for 1 checkpoint (* tests) + 2 of your tests"])
    assert "mytests/test_mine.py .." in result.stdout.str() and "EAGLE-3 verdict" in result.stdout.str()


def test_checkpoint_alone_runs_the_contracts_and_says_testpaths_were_left_out(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "--eagle3-engine=vllm")
    result.stdout.fnmatch_lines([
        "eagle3: contracts for 1 checkpoint (* tests); your testpaths (mytests) not collected: name them on the "
        "command line, or set eagle3_with_testpaths = true in the ini file"])
    assert "test_mine.py" not in result.stdout.str()


def test_ini_opt_in_runs_the_contracts_and_the_testpaths(project: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    project.makeini(f"[pytest]\ntestpaths = mytests\neagle3_with_testpaths = true\neagle3_ckpt = {DEMO}\n")
    monkeypatch.setenv("EAGLE3_ENGINES", "vllm")
    result = project.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["eagle3: contracts for 1 checkpoint (* tests) + 2 of your tests"])
    assert "mytests/test_mine.py .." in result.stdout.str()


def test_own_tests_alone_with_a_checkpoint_deselect_the_contract_marker(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "mytests", "-m",
                               "not eagle3_contract")
    result.assert_outcomes(passed=2)


def test_live_tests_without_the_live_extra_skip_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import sys\nsys.modules['mirakuru'] = None  # as if the live extra were not installed\n")
    pytester.makepyfile(test_live="""
        import pytest
        @pytest.mark.engine("vllm")
        def test_serves():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "engine", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*the live tests need mirakuru: pip install 'pytest-eagle3?live?'*"])


def test_idle_plugin_imports_only_the_shells_light_modules(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import sys
        def test_plain():
            print("OWN", sorted(m for m in sys.modules if m.startswith("pytest_eagle3")))
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-s")
    result.assert_outcomes(passed=1)
    line = next(line for line in result.stdout.lines if "OWN [" in line)
    own = re.findall(r"'([\w.]+)'", line.split("OWN ", 1)[1])
    light = {"pytest_eagle3", "pytest_eagle3.option_table", "pytest_eagle3.interpreter_options", "pytest_eagle3.shell", *(
        f"pytest_eagle3.shell.{m}" for m in ("plugin", "options", "fixtures", "live_fixtures", "verdicts", "contract",
                                             "require"))}
    assert set(own) == light
    from pytest_eagle3.shell import plugin

    assert f"{len(light)} modules of its own" in " ".join((plugin.__doc__ or "").split())


@pytest.mark.parametrize("where", ["ini", "env"])
def test_a_checkpoint_from_the_ini_or_the_environment_keeps_the_projects_testpaths(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    ini = "[pytest]\ntestpaths = tests\n" + (f"eagle3_ckpt = {DEMO}\n" if where == "ini" else "")
    pytester.makeini(ini)
    if where == "env":
        monkeypatch.setenv("EAGLE3_CKPT", str(DEMO))
    monkeypatch.setenv("EAGLE3_ENGINES", "vllm")
    (pytester.mkdir("tests") / "test_mine.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["eagle3: contracts for 1 checkpoint (* tests) + 2 of your tests"])
    assert "tests/test_mine.py .." in result.stdout.str() and "EAGLE-3 verdict" in result.stdout.str()
    assert "not collected" not in result.stdout.str()


@pytest.mark.parametrize("args", [["-m", "gpu"], []], ids=["-m gpu", "plain"])
def test_nothing_collected_without_a_checkpoint_says_what_to_give(tmp_path: Path, args: list[str]) -> None:
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", *args], tmp_path, COLUMNS="200")
    assert done.returncode == 5 and "collected 0 items" in done.stdout and "Traceback" not in done.stderr
    assert "eagle3: no checkpoint given, so no EAGLE-3 contract was collected: give the draft with --eagle3-ckpt=PATH " \
           "(or eagle3_ckpt = PATH in the ini file, or $EAGLE3_CKPT)" in done.stdout.splitlines(), done.stdout


def test_a_run_that_collects_tests_is_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text("def test_one():\n    pass\n")
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-m", "gpu"], tmp_path)
    assert done.returncode == 5 and "1 deselected" in done.stdout and "no checkpoint given" not in done.stdout, done.stdout
