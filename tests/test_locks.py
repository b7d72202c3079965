"""Every tox env installs from its lock (.ci/locks/ENV.txt, tox.ini's PIP_CONSTRAINT), and every lock still
satisfies the requirements it was generated from: a requirement changed without `python .ci/lock.py ENV` fails
here, before a fresh machine builds something else than what passed."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ROOT / ".ci" / "locks"


def _tox() -> configparser.ConfigParser:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    return ini


def _envs() -> list[str]:
    """Every env tox.ini defines: the default one, the named sections, the factor lists."""
    ini, envs = _tox(), ["py3"]
    for section in ini.sections():
        if section.startswith("testenv:"):
            name = section.removeprefix("testenv:")
            envs += name.strip("{}").split(",") if name.startswith("{") else [name]
    return list(dict.fromkeys(e.strip() for e in envs))


def _lines(text: str) -> list[str]:
    return [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]


def _requirements(env: str) -> list[Requirement]:
    """What the env asks for: its deps (requirement files followed), the project's own requirements and extras,
    and the releases its commands_pre install by name."""
    ini = _tox()
    section = next((s for s in ini.sections() if s.startswith("testenv:") and env in s.removeprefix("testenv:")
                    .strip("{}").split(",")), "testenv")
    deps = ini.get(section, "deps", fallback=ini.get("testenv", "deps"))
    lines = _lines(deps.replace("{env_name}", env))
    found: list[str] = []
    while lines:
        line = lines.pop(0)
        if line.startswith("-r"):
            path = ROOT / line.removeprefix("-r").strip()
            lines = [*(f"-r {path.parent / x.removeprefix('-r').strip()}" if x.startswith("-r") else x
                       for x in _lines(path.read_text())), *lines]
        elif not line.startswith("-"):
            found.append(line)
    found += _project(ini.get(section, "extras", fallback=ini.get("testenv", "extras", fallback="")).split())
    pre = ini.get(section, "commands_pre", fallback="")
    found += re.findall(rf"(?:^|\s){re.escape(env)}: python -m pip install --no-deps (\S+==\S+)", pre)
    found += re.findall(r"^\s*python -m pip install --no-deps (\S+==\S+)", pre, re.MULTILINE)
    return [Requirement(r) for r in found]


def _project(extras: list[str]) -> list[str]:
    """The project's own requirements with ``extras`` (its self-references followed)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found, todo, seen = list(project["dependencies"]), list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in project["optional-dependencies"].get(extra, []):
            parsed = Requirement(req)
            if canonicalize_name(parsed.name) == "pytest-eagle3":
                todo.extend(parsed.extras)
            else:
                found.append(req)
    return found


def _lock(env: str) -> dict[str, Version]:
    pins = {}
    for line in _lines((LOCKS / f"{env}.txt").read_text()):
        name, _, version = line.partition("==")
        pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_env_has_a_lock_and_tox_installs_from_it() -> None:
    ini = _tox()
    assert "PIP_CONSTRAINT = {env:EAGLE3_LOCK:{tox_root}{/}.ci{/}locks{/}{env_name}.txt}" in ini.get("testenv", "set_env")
    for section in ini.sections():  # an env that sets its own set_env keeps the base one (and its lock)
        if section.startswith("testenv:") and ini.has_option(section, "set_env"):
            assert "{[testenv]set_env}" in ini.get(section, "set_env"), section
    missing = [env for env in _envs() if not (LOCKS / f"{env}.txt").is_file()]
    assert missing == [], f"no lock for {missing}: python .ci/lock.py {' '.join(missing)}"


@pytest.mark.parametrize("env", _envs())
def test_the_lock_satisfies_what_the_env_asks_for(env: str) -> None:
    if not (LOCKS / f"{env}.txt").is_file():
        pytest.skip(f"no lock for {env} (test_every_env_has_a_lock_and_tox_installs_from_it says so)")
    pins = _lock(env)
    stale = [f"{req} (locked {pins.get(canonicalize_name(req.name))})" for req in _requirements(env)
             if req.marker is None or req.marker.evaluate()
             if canonicalize_name(req.name) not in pins
             or not req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True)]
    assert stale == [], f"{env}'s lock no longer satisfies {stale}: python .ci/lock.py {env}"


def test_ci_installs_from_the_py3_lock() -> None:
    """The README's install runs first, as a user runs it (torch's own dependencies from what its CPU index line
    reaches: the lock's versions are PyPI's); the lock then applies to it and to every install after."""
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lock = run.index('export PIP_CONSTRAINT="$PWD/.ci/locks/py3.txt"')
    assert run.index("pip install torch==2.13.0 --index-url") < lock
    assert lock < run.index('pip install --quiet -e ".[target]"') < run.index('pip install -e ".[dev]"')
    assert lock < run.index("for env in vllm0320 sglang0523") < run.index("tox --workdir")
