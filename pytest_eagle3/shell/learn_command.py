"""``python -m pytest_eagle3 learn SOURCE`` (read a release the bundle does not hold: ``scanners.learn``) and
``python -m pytest_eagle3 releases`` (per engine, the newest release on the package index against the newest read),
and the run's own learning: an engine interpreter whose release nobody read is learned before the run judges it."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.package_index import file_names, version_of

if TYPE_CHECKING:
    from pytest_eagle3.verdict.settings import RunSettings

#: ``releases --index-url``'s default: PyPI's JSON API (``{index}/{distribution}/json``); an index whose address
#: holds ``/simple`` is read as a PEP 503 simple index (``{index}/{distribution}/``: the files' names).
PYPI = "https://pypi.org/pypi"
#: Seconds one index request may take.
TIMEOUT = 20


def learn_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``learn`` and ``releases`` subcommands."""
    from pytest_eagle3.scanners.learn import add_arguments

    learn = sub.add_parser("learn", help="read an engine release the bundled knowledge does not hold (a wheel, an "
                                         "unpacked release, ENGINE==VERSION, or --python PATH --engine NAME) into "
                                         "the user's knowledge ($EAGLE3_KNOWLEDGE_DIR); --eagle3-engine then judges it")
    add_arguments(learn)
    releases = sub.add_parser("releases", help="per engine, the newest release on the package index against the "
                                               "newest read (bundled or learned)")
    releases.add_argument("--index-url", default=PYPI, metavar="URL",
                          help=f"the package index: PyPI's JSON API (default {PYPI}) or a PEP 503 simple index "
                               "(an address with /simple); http(s) or file://")


def learn(args: argparse.Namespace) -> int:
    """Run ``learn``: 0 when learned, 2 with one line why not."""
    from pytest_eagle3.scanners.learn import run

    return run(args)


def newest_on_index(index: str, dist: str) -> Version | None:
    """The newest final release of ``dist`` on the index (None: not there); URLError/OSError when unreachable."""
    base = index.rstrip("/")
    simple = "/simple" in base
    url = f"{base}/{canonicalize_name(dist)}/" + ("" if simple else "json")
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            body = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    except FileNotFoundError:
        return None
    if simple:
        versions = [v for v in (version_of(n, dist) for n in file_names(body, "text/html")) if v is not None]
    else:
        data = json.loads(body)
        versions = []
        for text in [*(data.get("releases") or {}), str((data.get("info") or {}).get("version", ""))]:
            try:
                versions.append(Version(text))
            except InvalidVersion:
                continue
    finals = [v for v in versions if not v.is_prerelease and not v.is_devrelease]
    return max(finals or versions, default=None)


def releases(args: argparse.Namespace) -> int:
    """Run ``releases``: one line per engine; 2 with one line when the index cannot be reached."""
    from pytest_eagle3.knowledge.learned import learned_versions
    from pytest_eagle3.knowledge.package_index import INDEX_NAMES
    from pytest_eagle3.knowledge.releases import DISPLAY, ENGINES, learn_command, newest_read, release_text
    from pytest_eagle3.scanners.learn import DISTRIBUTIONS

    rows = [("engine", "on the index", "newest read", "")]
    reached = 0
    errors: list[str] = []
    for engine in ENGINES:
        read = newest_read(engine)
        where = "learned" if read in learned_versions(engine) else "bundled"
        read_cell = f"{release_text(engine, read)} ({where})"
        dist = INDEX_NAMES.get(engine)
        if dist is None:
            rows.append((DISPLAY[engine], "not on the index", read_cell, ""))
            continue
        try:
            newest = newest_on_index(args.index_url, dist)
            reached += 1
        except (urllib.error.URLError, OSError, ValueError) as exc:
            errors.append(f"{dist}: {getattr(exc, 'reason', exc)}")
            rows.append((DISPLAY[engine], "unreachable", read_cell, ""))
            continue
        if newest is None:
            rows.append((DISPLAY[engine], f"no {dist} there", read_cell, ""))
            continue
        learn = (learn_command(f"{engine}=={newest}") if engine in DISTRIBUTIONS
                 else f"{learn_command('DIR')} (DIR: its unpacked source; the index holds stubs)")
        todo = f"read it: {learn}" if newest > read else "up to date"
        rows.append((DISPLAY[engine], str(newest), read_cell, todo))
    if not reached and errors:
        print(f"releases: cannot reach the package index {args.index_url} ({errors[0]}); run it where there is "
              "network, or give --index-url of a mirror", file=sys.stderr)
        return 2
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print(("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3]).rstrip())
    for error in errors:
        print(f"unreachable: {error}", file=sys.stderr)
    return 0


def learn_interpreters(settings: RunSettings) -> list[str]:
    """Before a run: each engine interpreter given (``--eagle3-vllm-python``, ...) whose release nobody read is
    learned; one line per release learned (or why it could not be)."""
    from pytest_eagle3.knowledge.engines import REGISTRY
    from pytest_eagle3.knowledge.releases import RELEASES, newest_read
    from pytest_eagle3.scanners.learn import LearnError, interpreter_root
    from pytest_eagle3.scanners.learn import learn as learn_source

    lines = []
    for engine in REGISTRY:
        python = settings.python_for(engine.name) if engine.interpreter.python_option else None
        if python is None:
            continue
        try:
            source = interpreter_root(python, engine.name)
            version = Version(source.release)
        except (LearnError, InvalidVersion, ValueError):
            continue  # the probe says what is wrong with the interpreter
        if str(version) in RELEASES[engine.name] or version <= newest_read(engine.name):
            continue
        try:
            learn_source(source)
        except LearnError as exc:
            lines.append(f"{engine.display} {version} of {python} is not read and could not be learned: {exc}")
            continue
        lines.append(f"{engine.display} {version} of {python} was not read: learned it now "
                     f"(python -m pytest_eagle3 learn --python {python} --engine {engine.name})")
    return lines
