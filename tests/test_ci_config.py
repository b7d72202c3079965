"""The house's own CI and packaging, as the README states them: a bare ``tox`` runs only the plugin's own
tests, the ``test`` extra installs what the suite imports, and ``.ci/run`` runs the README's install lines as
written and goes on past its disk line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.user_runs import (
    EXAMPLES,
    ROOT,
)


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


def test_ci_runs_the_readmes_install_lines_as_written() -> None:
    root = EXAMPLES.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    install, tests = block[0].split("#")[0].strip(), block[2].split("#")[0].strip()
    ci = [line.strip() for line in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert install in ci and "--index-url https://download.pytorch.org/whl/cpu" in install
    developer, _, command = tests.partition(" && ")
    assert developer == 'pip install -e ".[test]"' and command.startswith("pytest -n 2")
    # .ci/run installs the dev extra (the test extra and the linters) and runs the README's test command as written
    assert 'pip install -e ".[dev]"' in ci and any(line.endswith(command.removeprefix("pytest ")) for line in ci)


def test_ci_goes_on_past_its_disk_line_where_pip_has_no_cache(tmp_path: Path) -> None:
    """.ci/run's disk line, under the script's own ``set -euo pipefail``, on a machine where pip's cache dir does
    not exist (a fresh CI machine): it says 'nothing' and the run goes on to the engine envs (du failing inside the
    substitution used to end the run there, silently)."""
    run = (EXAMPLES.parent / ".ci" / "run").read_text(encoding="utf-8")
    function = re.search(r"^du_report\(\) \{\n.*?^\}\n", run, re.S | re.M)
    assert function is not None
    script = f"set -euo pipefail\nwork={tmp_path}\n{function.group(0)}du_report\necho 'on to the engines'\n"
    env = {**os.environ, "PIP_CACHE_DIR": str(tmp_path / "no-cache"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nothing in pip's cache" in done.stdout and "on to the engines" in done.stdout
