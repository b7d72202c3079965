"""A newcomer's first hour (issue 21): nothing green when nothing ran, the user's own tests kept and said,
bad usage answered in one line naming where the value came from, an idle plugin that costs nothing, and
a bare ``tox`` that runs only the plugin's own tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun, validate_report
from tests.reference_cases import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
DEMO = EXAMPLES / "demo-draft"


# 1. A run where nothing could run is never green, and the format is read all the same.
def test_a_run_where_no_contract_ran_says_not_run_with_the_reasons(
        run_contracts: Callable[..., ContractRun]) -> None:
    run = run_contracts([DEMO], "-m", "engine", "-rs", "--eagle3-engine=vllm", "--eagle3-vllm-python=" + sys.executable,
                        target=EXAMPLES / "demo-target")
    if run.result.parseoutcomes().get("passed"):
        pytest.skip("this interpreter has vllm installed: the live contracts ran")
    run.result.stdout.fnmatch_lines([
        f"*{DEMO}*speculators*any*NOT RUN*",
        "*vllm==*NOT RUN*",
        f"not run for {DEMO} (any, vllm==*): no contract ran:",
        "  [*]: no contract selected (-m, -k or the test ids given left none for this row)",
        "  live.launch: vllm is not installed for *",
    ])
    assert "PASS" not in run.output.split("EAGLE-3 verdict")[1]
    ckpt = run.report["checkpoints"][0]
    assert (ckpt["format"], ckpt["verdict"], ckpt["complete"]) == ("speculators", "not run", False)
    for entry in ckpt["engines"]:
        assert (entry["verdict"], entry["complete"]) == ("not run", False) and entry["not_run"], entry


def test_a_row_with_one_contract_run_is_partial_not_not_run(run_contracts: Callable[..., ContractRun]) -> None:
    run = run_contracts([DEMO], "-k", "readable", "--eagle3-engine=vllm")
    run.result.stdout.fnmatch_lines([f"*{DEMO}*speculators*any*PASS*"])
    entry = run.engine_entry(DEMO, "any")
    assert (entry["verdict"], entry["complete"]) == ("pass", True)


# 3. A checkpoint setting and the user's own tests: both run, and the line after "collected" says so.
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


# 8. Bad usage: one line naming the option (or the env variable, or the ini key) the value came from.
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


def test_check_inside_the_clone_prints_no_pytest_warning(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", "examples/demo-draft", "--engine", "vllm",
                           "--report", str(report)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Warning" not in done.stdout + done.stderr
    validate_report(json.loads(report.read_text()))


# 17.4 / 17.5: the idle plugin imports the shell's light modules only, and the docstring says how many.
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
    light = {"pytest_eagle3", "pytest_eagle3.option_table", "pytest_eagle3.shell", *(
        f"pytest_eagle3.shell.{m}" for m in ("plugin", "options", "fixtures", "live_fixtures", "verdicts", "contract",
                                             "require"))}
    assert set(own) == light
    from pytest_eagle3.shell import plugin

    assert f"{len(light)} modules of its own" in " ".join((plugin.__doc__ or "").split())


def test_option_help_quotes_the_defaults_the_domain_defines() -> None:
    from pytest_eagle3.live.process import DEFAULT_START_TIMEOUT
    from pytest_eagle3.option_table import BY_DEST
    from pytest_eagle3.reference.defaults import (
        DEFAULT_MAX_LOSS,
        DEFAULT_MIN_ACCEPTANCE,
        DEFAULT_NEW_TOKENS,
        DEFAULT_STEPS,
    )

    quoted = {dest: re.search(r"\(default ([\d.]+)", BY_DEST[dest].help).group(1)  # type: ignore[union-attr]
              for dest in ("eagle3_min_acceptance", "eagle3_max_loss", "eagle3_k", "eagle3_continuation",
                           "eagle3_server_timeout")}
    assert {k: float(v) for k, v in quoted.items()} == {
        "eagle3_min_acceptance": DEFAULT_MIN_ACCEPTANCE, "eagle3_max_loss": DEFAULT_MAX_LOSS,
        "eagle3_k": DEFAULT_STEPS, "eagle3_continuation": DEFAULT_NEW_TOKENS,
        "eagle3_server_timeout": DEFAULT_START_TIMEOUT}
    from pytest_eagle3.live.process import MAX_START_TIMEOUT
    from pytest_eagle3.verdict import settings

    assert (settings.DEFAULT_SERVER_TIMEOUT, settings.MAX_SERVER_TIMEOUT) == (DEFAULT_START_TIMEOUT, MAX_START_TIMEOUT)


# 7. Bare tox runs the plugin's own tests alone; engines and producers by label or -e.
def test_bare_tox_runs_only_the_plugins_own_tests() -> None:
    import configparser

    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    assert ini["tox"]["env_list"].split() == ["py3"]
    labels = dict(line.split("=", 1) for line in ini["tox"]["labels"].strip().splitlines())
    assert {k.strip() for k in labels} == {"probes", "producers"}
    tox = shutil.which("tox")
    if tox is not None:
        listed = subprocess.run([tox, "-l"], cwd=ROOT, capture_output=True, text=True, check=False,
                                env={**os.environ, "TOX_ENV": ""}).stdout.split()
        assert listed == ["py3"], listed


# 6. Every documented install line installs what its command imports; a missing optional package is a skip
# naming the extra.
def _requirements(extra: str | None, seen: frozenset[str] = frozenset()) -> set[str]:
    """The distribution names the core dependencies (and ``extra``, following self-references) name."""
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names: set[str] = set()
    for line in project["dependencies"] + (project["optional-dependencies"][extra] if extra else []):
        requirement = Requirement(line)
        if requirement.name == project["name"]:
            for inner in requirement.extras - seen:
                names |= _requirements(inner, seen | {inner})
        else:
            names.add(requirement.name.lower().replace("_", "-"))
    return names


def _imported_distributions(files: list[Path]) -> set[str]:
    """The third-party distributions these files import at module level (try/except ImportError blocks aside)."""
    import ast
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    found: set[str] = set()
    for file in files:
        for node in ast.parse(file.read_text(encoding="utf-8")).body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("pytest_eagle3", "tests", "examples", "__future__"):
                    continue
                found |= {d.lower().replace("_", "-") for d in owners.get(top, [top])}
    return found


def test_the_test_extra_installs_what_the_test_suite_imports() -> None:
    missing = _imported_distributions(sorted((ROOT / "tests").glob("*.py"))) - _requirements("test") - {"pytest"}
    assert missing == set(), f"tests import distributions the [test] extra does not install: {sorted(missing)}"
    assert _requirements("test") <= _requirements("dev"), "[dev] must install what the test command needs"


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
