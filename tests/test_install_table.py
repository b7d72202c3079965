"""Install and speed, as the README states them (issue 47, item 6): every extra in the install table, tox pinned as
``.ci/run`` pins it, developer installs in a venv of their own, a skip naming the extra that lifts it, and timings
that come from a script with the machine they were measured on."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = README.split("\n## Install\n")[1].split("\n## ")[0]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]


def test_every_extra_is_in_the_install_table() -> None:
    missing = [name for name in EXTRAS if f'".[{name}]"' not in INSTALL]
    assert missing == [], f"extras the README's install table leaves out: {missing}"


def test_tox_is_installed_as_ci_pins_it() -> None:
    pinned = re.search(r'pip install --quiet "tox==([^"]+)"', (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert pinned is not None
    assert f'`pip install "tox=={pinned.group(1)}"`' in INSTALL


def test_developer_installs_get_a_venv_of_their_own() -> None:
    """pytest-randomly, which the test extra brings, prints its seed in every run of its venv: a user's too."""
    assert any(dep.startswith("pytest-randomly") for dep in EXTRAS["test"])
    assert "venv of their own" in INSTALL and "pytest-randomly" in INSTALL


def test_the_llamacpp_converter_skip_names_its_extra() -> None:
    from pytest_eagle3.live.llamacpp import CONVERTER_MODULES
    from pytest_eagle3.shell import live_fixtures

    assert "pytest-eagle3[llamacpp]" in live_fixtures.LLAMACPP_EXTRA
    source = inspect.getsource(live_fixtures._gguf_pair)
    assert "LLAMACPP_EXTRA" in source and ".ci/requirements" not in source
    # what the converter imports beyond torch (installed first, with numpy) comes with the extra
    given = {re.split(r"[<>=\[]", dep)[0].lower() for dep in EXTRAS["llamacpp"]}
    wanted = {"yaml": "pyyaml", "sentencepiece": "sentencepiece"}
    assert {wanted[m] for m in CONVERTER_MODULES if m in wanted} <= given
    assert any(dep.startswith("pytest-eagle3[target") for dep in EXTRAS["llamacpp"])  # transformers, safetensors


def test_the_readmes_timings_come_from_the_script_with_their_machine() -> None:
    """Each timing of the main job names the script that measured it and the machine."""
    text = " ".join(README.split())
    stated = re.findall(r"main job: ([\d.]+) s serial, ([\d.]+) s with -n 2 \(([^)]*)\)", text)
    assert stated, "the README states the main job's serial and -n 2 times"
    assert "benchmarks/bench_tiers.py" in text
    for serial, split, machine in stated:
        assert "cores" in machine, machine
        assert float(split) <= float(serial), (serial, split)  # -n 2 is never slower than serial
    assert (ROOT / "benchmarks" / "bench_tiers.py").is_file()


def test_dash_n_on_the_contracts_alone_is_never_slower_than_serial(tmp_path: Path) -> None:
    """``-n 2`` on a run of the contracts alone runs them in this process (each verdict is computed once; workers
    would only add their start-up), says so, keeps the collection line, and writes the serial report."""
    import json
    import os
    import subprocess

    import pytest

    pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e '.[test]')")
    examples = ROOT / "examples"
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--eagle3-ckpt={examples / 'sglang-draft'}", f"--eagle3-ckpt={examples / 'broken-d2t-draft'}",
            f"--eagle3-target={examples / 'tiny-target' / 'config.json'}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_STEP_SUMMARY"))}
    env["PYTHONPATH"] = str(ROOT)
    said = {}
    for name, extra in (("serial", []), ("split", ["-n", "2"])):
        done = subprocess.run([*base, f"--eagle3-report={tmp_path / name}.json", *extra], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False, timeout=900)
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
        said[name] = done.stdout
    assert json.loads((tmp_path / "split.json").read_text()) == json.loads((tmp_path / "serial.json").read_text())
    assert "eagle3: -n 2: the contracts alone run in this process" in said["split"]
    assert "created: 2/2 workers" not in said["split"]
    assert "eagle3: contracts for 2 checkpoints" in said["split"]
