"""The contract modules are found the same way from an editable install, a wheel, and a non-editable
install run from the clone's root (where Python imports the source tree, not the installed copy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHERE = "import pytest_eagle3.shell.plugin as p; print(p.__file__); print(p.contracts_dir())"


@pytest.fixture(scope="module")
def wheel_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel (built from this tree, no dependencies) unpacked into a folder of its own."""
    pytest.importorskip("setuptools", reason="building the wheel needs setuptools")
    import shutil

    out = tmp_path_factory.mktemp("wheel")
    source = out / "source"  # a copy: setuptools writes build/ and *.egg-info into the tree it builds
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "pytest_eagle3", source / "pytest_eagle3", ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out / "dist"), str(source)], capture_output=True, text=True, check=False)
    if build.returncode != 0:
        pytest.skip(f"pip could not build the wheel here: {build.stderr.strip().splitlines()[-1:]}")
    (wheel,) = (out / "dist").glob("pytest_eagle3-*.whl")
    target = out / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    return target


def _run(argv: list[str], cwd: Path, pythonpath: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=600)


def _check(cwd: Path, pythonpath: Path | None, report: Path) -> tuple[str, str]:
    """Where the plugin and the contracts were found, after a `check` run that wrote its verdict."""
    where = _run(["-c", WHERE], cwd, pythonpath)
    assert where.returncode == 0, where.stderr
    plugin, contracts = where.stdout.split()
    done = _run(["-m", "pytest_eagle3", "check", str(ROOT / "examples" / "demo-draft"), "--engine", "vllm",
                 "--report", str(report)], cwd, pythonpath)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["checkpoints"][0]["format"] == "speculators"
    assert {c["id"] for c in data["checkpoints"][0]["engines"][0]["contracts"]} >= {"checkpoint.readable", "vocab.map"}
    return plugin, contracts


def test_the_wheel_carries_the_contracts_and_finds_them(wheel_install: Path, tmp_path: Path) -> None:
    plugin, contracts = _check(tmp_path, wheel_install, tmp_path / "r.json")
    assert Path(plugin).is_relative_to(wheel_install) and Path(contracts) == wheel_install / "pytest_eagle3" / "contracts"
    assert (wheel_install / "pytest_eagle3" / "verdict" / "report.schema.json").is_file()
    # every data file the package reads (recorded probe runs, scans, the schema) is in the wheel
    data = [p.relative_to(ROOT) for p in (ROOT / "pytest_eagle3").rglob("*")
            if p.is_file() and p.suffix in (".json", ".typed") and "__pycache__" not in p.parts]
    assert data and [p for p in data if not (wheel_install / p).is_file()] == []


def test_a_non_editable_install_run_from_the_clones_root_uses_the_source_tree(wheel_install: Path,
                                                                              tmp_path: Path) -> None:
    plugin, contracts = _check(ROOT, wheel_install, tmp_path / "r.json")
    assert Path(plugin).is_relative_to(ROOT) and Path(contracts) == ROOT / "pytest_eagle3" / "contracts"


def test_an_editable_install_finds_the_contracts_in_the_tree(tmp_path: Path) -> None:
    plugin, contracts = _check(tmp_path, ROOT, tmp_path / "r.json")
    assert Path(contracts) == ROOT / "pytest_eagle3" / "contracts"


#: A stand-in for a venv without some distributions: their modules cannot be imported (sys.argv[1]: their names).
WITHOUT = """
import importlib.abc, sys
absent = set(sys.argv.pop(1).split(","))
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in absent:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
import pytest
sys.exit(pytest.main())
"""


def _extra(name: str) -> list[str]:
    """The requirements of one of the project's extras (``""``: its dependencies), its own extras expanded."""
    import re

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = []
    for requirement in project["dependencies"] if not name else project["optional-dependencies"][name]:
        own = re.fullmatch(r"pytest-eagle3\[(.+)\]", requirement)
        found.extend([r for extra in own.group(1).split(",") for r in _extra(extra)] if own else [requirement])
    return found


def _closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements bring, with what they require in turn (as installed here)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(r) for r in metadata.requires(requirement.name) or [])
        except metadata.PackageNotFoundError:
            continue
    return seen


@pytest.mark.slow
def test_pytest_m_gpu_collects_in_a_clone_with_the_readmes_first_install_only() -> None:
    """``pytest -m gpu`` in a clone after only the README's first install line (the target extra; neither live nor
    test): no collection error; the project's own tests that need another extra skip, naming it. The other extras'
    distributions are made unimportable here (``.ci/run`` runs the same in a fresh venv)."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    given = _closure(_extra("") + _extra("target"))
    absent = _closure(_extra("live") + _extra("test")) - given
    assert {"psutil", "pytest-xdist"} <= absent
    modules = sorted(module for module, dists in metadata.packages_distributions().items()
                     if {canonicalize_name(d) for d in dists} <= absent)
    plugins = sorted(ep.name for name in absent for ep in _entry_points(name, "pytest11"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "PYTEST_"))}
    done = subprocess.run([sys.executable, "-c", WITHOUT, ",".join(modules), "-m", "gpu", "--collect-only", "-q",
                           "-rs", "-p", "no:cacheprovider", *(a for p in plugins for a in ("-p", f"no:{p}"))],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "error" not in done.stdout.splitlines()[-1], done.stdout[-2000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped and all("pytest-eagle3[" in line or "pip install" in line for line in skipped), skipped
    assert any("test_live_vllm.py" in line and "[live]" in line for line in skipped), skipped


def _entry_points(distribution: str, group: str) -> list[Any]:
    """The entry points of ``group`` an installed distribution declares (none when it is not installed)."""
    from importlib import metadata

    try:
        return [ep for ep in metadata.distribution(distribution).entry_points if ep.group == group]
    except metadata.PackageNotFoundError:
        return []
