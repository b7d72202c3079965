"""One reading of the settings: every config file pytest 9 reads names the engine versions for ``plan``, ``check``,
``sweep`` and pytest alike (the command line asks pytest's own ``locate_config``), and a file pytest cannot read is
refused by the command line too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEMO = EXAMPLES / "demo-draft"
#: Each config file kind pytest 9 reads, as a project writes it, naming one vLLM version.
FILES = {
    "pytest.toml": '[pytest]\neagle3_engines = "vllm==0.32.0"\n',
    ".pytest.toml": '[pytest]\neagle3_engines = "vllm==0.32.0"\n',
    "pytest.ini": "[pytest]\neagle3_engines = vllm==0.32.0\n",
    ".pytest.ini": "[pytest]\neagle3_engines = vllm==0.32.0\n",
    "pyproject.toml": '[tool.pytest.ini_options]\neagle3_engines = "vllm==0.32.0"\n',
    "pyproject.toml [tool.pytest]": '[tool.pytest]\neagle3_engines = "vllm==0.32.0"\n',  # pytest 9's native TOML
    "tox.ini": "[pytest]\neagle3_engines = vllm==0.32.0\n",
    "setup.cfg": "[tool:pytest]\neagle3_engines = vllm==0.32.0\n",
}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3_")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=300)


def _engines(report: Path) -> list[str]:
    entries = json.loads(report.read_text(encoding="utf-8"))["checkpoints"][0]["engines"]
    return [f"{e['engine']}=={e['version']}" for e in entries if e["version"]]


@pytest.mark.parametrize("name", list(FILES))
def test_every_config_file_pytest_reads_gives_the_same_versions_to_plan_check_and_pytest(name: str,
                                                                                          tmp_path: Path) -> None:
    (tmp_path / name.split()[0]).write_text(FILES[name], encoding="utf-8")
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", f"--eagle3-ckpt={DEMO}",
                 f"--eagle3-report={tmp_path / 'pytest.json'}"], tmp_path)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr
    assert _engines(tmp_path / "pytest.json") == ["vllm==0.32.0"]
    check = _run(["-m", "pytest_eagle3", "check", str(DEMO), "--report", str(tmp_path / "check.json")], tmp_path)
    assert check.returncode in (0, 1), check.stderr
    assert _engines(tmp_path / "check.json") == ["vllm==0.32.0"]
    plan = _run(["-m", "pytest_eagle3", "plan", str(DEMO), "--json"], tmp_path)
    assert plan.returncode == 0, plan.stderr
    rows = json.loads(plan.stdout)
    assert [f"{r['engine']}=={r['version']}" for r in (rows if isinstance(rows, list) else [rows])] == ["vllm==0.32.0"]


@pytest.mark.slow
def test_sweep_reads_the_same_config_file(tmp_path: Path) -> None:
    (tmp_path / "pytest.toml").write_text(FILES["pytest.toml"], encoding="utf-8")
    done = _run(["-m", "pytest_eagle3", "sweep", str(DEMO), "--target", str(EXAMPLES / "demo-target"), "--out",
                 str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "sweep.json").read_text(encoding="utf-8"))["engines"] == ["vllm==0.32.0"]


def test_a_config_file_pytest_cannot_read_is_refused_by_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "pytest.toml").write_text('[pytest]\neagle3_engines = "vllm==0.32.0\n', encoding="utf-8")
    plan = _run(["-m", "pytest_eagle3", "plan", str(DEMO)], tmp_path)
    assert plan.returncode == 2 and "pytest's config file cannot be read" in plan.stderr, plan.stderr
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}"], tmp_path)
    assert done.returncode != 0


def _three_readings(cwd: Path, reports: Path) -> dict[str, list[str] | str]:
    """The versions pytest, ``check`` and ``plan`` judge when run from ``cwd`` (or what each said on refusing)."""
    said: dict[str, list[str] | str] = {}
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", f"--eagle3-ckpt={DEMO}",
                 f"--eagle3-report={reports / 'pytest.json'}"], cwd)
    said["pytest"] = _engines(reports / "pytest.json") if done.returncode in (0, 1) else done.stderr.strip()
    check = _run(["-m", "pytest_eagle3", "check", str(DEMO), "--report", str(reports / "check.json")], cwd)
    said["check"] = _engines(reports / "check.json") if check.returncode in (0, 1) else check.stderr.strip()
    plan = _run(["-m", "pytest_eagle3", "plan", str(DEMO), "--json"], cwd)
    if plan.returncode == 0:
        rows = json.loads(plan.stdout)
        said["plan"] = [f"{r['engine']}=={r['version']}" for r in (rows if isinstance(rows, list) else [rows])]
    else:
        said["plan"] = plan.stderr.strip()
    return said


def test_from_a_subfolder_the_file_pytest_picks_first_names_the_versions_for_all_three(tmp_path: Path) -> None:
    """pytest.toml and pyproject.toml side by side, run from a folder below: pytest's order (pytest.toml first)
    decides, for pytest, ``check`` and ``plan`` alike."""
    (tmp_path / "pytest.toml").write_text(FILES["pytest.toml"], encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\neagle3_engines = "vllm==0.31.0"\n',
                                             encoding="utf-8")
    below = tmp_path / "work" / "deeper"
    below.mkdir(parents=True)
    assert _three_readings(below, tmp_path) == {"pytest": ["vllm==0.32.0"], "check": ["vllm==0.32.0"],
                                                "plan": ["vllm==0.32.0"]}


def test_a_native_toml_list_for_a_string_key_is_refused_alike(tmp_path: Path) -> None:
    """``eagle3_engines`` is one comma-separated string; a TOML list under ``[tool.pytest]`` is refused by pytest,
    and by ``check`` and ``plan`` with pytest's own words (``plan`` used to read the list's text as an engine
    name: unknown engine "['vllm")."""
    (tmp_path / "pyproject.toml").write_text('[tool.pytest]\neagle3_engines = ["vllm==0.32.0", "sglang==0.5.9"]\n',
                                             encoding="utf-8")
    said = _three_readings(tmp_path, tmp_path)
    words = "config option 'eagle3_engines' expects a string, got list"
    assert all(isinstance(text, str) and words in text for text in said.values()), said
    assert "unknown engine" not in str(said)

