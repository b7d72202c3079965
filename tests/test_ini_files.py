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
    (tmp_path / name).write_text(FILES[name], encoding="utf-8")
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
