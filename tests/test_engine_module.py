"""An engine is one module (issue 48): a copy of ``knowledge/engines/tokenspeed.py`` under another module name,
with its ``NAME`` changed and no other edit, is listed by ``matrix`` and in both help texts, judged with TokenSpeed's verdicts, and passes
the layout tests; a third-party package's engine comes in through the ``pytest_eagle3.engines`` entry points.

Each check runs the command line on a copy of the package (the discovery reads the package's own folder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ROOT / "pytest_eagle3" / "knowledge" / "engines"
DEMO = ROOT / "examples" / "demo-draft"
COPY = "tokenspeed-copy"


def _renamed(name: str) -> str:
    """tokenspeed.py with only its NAME line changed."""
    source = (ENGINES / "tokenspeed.py").read_text()
    renamed, count = re.subn(r'^NAME = "tokenspeed"$', f'NAME = "{name}"', source, flags=re.M)
    assert count == 1, "tokenspeed.py has no NAME line to change"
    return renamed


def _copy_package(into: Path) -> Path:
    """A copy of the package (and what the layout tests read) under ``into``."""
    shutil.copytree(ROOT / "pytest_eagle3", into / "pytest_eagle3",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", into / "pyproject.toml")
    (into / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "test_layout.py", into / "tests" / "test_layout.py")
    return into


def _run(cwd: Path, *args: str, path: tuple[Path, ...]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=600)
    return done


def _plan(cwd: Path, spec: str, path: tuple[Path, ...]) -> dict[str, Any]:
    done = _run(cwd, "-m", "pytest_eagle3", "plan", str(DEMO), "--engine", spec, "--json", path=path)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _as(plan: dict[str, Any], name: str) -> dict[str, Any]:
    """The plan with the engine's name written as ``name`` wherever it appears."""
    text = json.dumps(plan)
    renamed: dict[str, Any] = json.loads(text.replace(f'"{plan["engine"]}', f'"{name}').replace(
        f"{plan['engine']}==", f"{name}=="))
    return renamed


@pytest.mark.slow
def test_a_copy_of_tokenspeed_py_is_an_engine_judged_as_tokenspeed(tmp_path: Path) -> None:
    root = _copy_package(tmp_path / "copy")
    (root / "pytest_eagle3" / "knowledge" / "engines" / "tokenspeed_copy.py").write_text(_renamed(COPY))
    path = (root,)

    listed = _run(root, "-c", "from pytest_eagle3.knowledge.engines import REGISTRY; "
                  "print(' '.join(e.name for e in REGISTRY))", path=path)
    from pytest_eagle3.knowledge.engines import REGISTRY

    bundled = [e.name for e in REGISTRY]  # the copy takes TokenSpeed's rank: right after it (then by name)
    after = bundled.index("tokenspeed") + 1
    assert listed.stdout.split() == [*bundled[:after], COPY, *bundled[after:]], listed.stderr[-3000:]

    pytest_help = _run(root, "-m", "pytest", "--help", path=path).stdout
    engine_help = " ".join(pytest_help.split("--eagle3-engine=LIST")[1].split("--eagle3-")[0].split())
    assert f"tokenspeed, {COPY}, mlx-vlm" in engine_help, engine_help
    cli_help = " ".join(_run(root, "-m", "pytest_eagle3", "--help", path=path).stdout.split())
    assert f"TokenSpeed, TokenSpeed ({COPY}), mlx-vlm" in cli_help, cli_help

    matrix = _run(root, "-m", "pytest_eagle3", "matrix", path=path)
    assert matrix.returncode == 0, matrix.stderr[-3000:]
    original = _run(ROOT, "-m", "pytest_eagle3", "matrix", path=(ROOT,))
    # the copy adds its own sections (display "TokenSpeed", as the copied module says), the same as TokenSpeed's
    assert matrix.stdout.count("TokenSpeed 0.1.0-0.1.1") == 2 * original.stdout.count("TokenSpeed 0.1.0-0.1.1") == 2
    assert len(matrix.stdout) > len(original.stdout)

    copied = _plan(root, f"{COPY}==0.1.1", path)
    judged = _plan(root, "tokenspeed==0.1.1", path)
    assert copied["engine"] == COPY and judged["engine"] == "tokenspeed"
    assert (copied["verdict"], copied["failing"], copied["not_judged"]) == (
        judged["verdict"], judged["failing"], judged["not_judged"])
    assert copied["verdict"] == "fail" and "engine.architecture" in copied["failing"]
    assert _as(copied, "tokenspeed") == judged

    layout = _run(root, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/test_layout.py", path=path)
    assert layout.returncode == 0, layout.stdout[-4000:]
    assert " passed" in layout.stdout and "failed" not in layout.stdout


@pytest.mark.slow
def test_a_third_party_engine_comes_in_through_its_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "other_engine.py").write_text(_renamed("other-engine"))
    info = site / "other_engine-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-engine\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_eagle3.engines]\nother-engine = other_engine:ENGINE\n")
    path = (ROOT, site)

    listed = _run(tmp_path, "-c", "from pytest_eagle3.knowledge.engines import REGISTRY; "
                  "print(' '.join(e.name for e in REGISTRY))", path=path)
    assert "other-engine" in listed.stdout.split(), listed.stderr[-3000:]
    copied = _plan(tmp_path, "other-engine==0.1.1", path)
    judged = _plan(tmp_path, "tokenspeed==0.1.1", path)
    assert copied["engine"] == "other-engine"
    assert _as(copied, "tokenspeed") == judged


def test_tokenspeed_rows_live_in_its_module_only() -> None:
    """The cross-engine tables gather TokenSpeed's rows from its Engine; none names it any more."""
    from pytest_eagle3.knowledge import capture_engines, confirmation, draft_classes, runtime
    from pytest_eagle3.knowledge.engines import engine_named
    from pytest_eagle3.knowledge.releases import EngineVersion

    engine = engine_named("tokenspeed")
    for module in (capture_engines, confirmation, draft_classes, runtime):
        assert "TOKENSPEED" not in Path(module.__file__ or "").read_text(), module.__name__
    assert engine.scans.scan_of == "tokenspeed" and engine.scan_prefix == "TOKENSPEED"
    assert [k for k in draft_classes.CLASSES if k[0] == "tokenspeed"] == [(k.engine, k.name) for k in engine.tables.draft_classes]
    assert draft_classes.ARCHITECTURE_READ.at(EngineVersion("tokenspeed", _v("0.1.1"))).value is True
    assert runtime.kv_rule(EngineVersion("tokenspeed", _v("0.1.1"))).value == runtime.SEPARATE_POOL
    assert [r for r in confirmation.ROWS if r.engine == "tokenspeed"] == list(engine.tables.confirmation)
    assert [e for e in capture_engines.ENTRIES if e.engine == "tokenspeed"] == list(engine.tables.capture_rows)


def _v(text: str) -> Any:
    from packaging.version import Version

    return Version(text)
