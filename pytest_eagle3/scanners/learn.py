"""``python -m pytest_eagle3 learn SOURCE``: read one engine release the bundled knowledge does not hold.

SOURCE is a wheel (``vllm-0.35.0-...whl``), an unpacked release (a directory holding the package and its
``*.dist-info``), an engine interpreter (``--python PATH --engine vllm``: its installed package), or
``ENGINE==VERSION`` (``pip download --no-deps`` into the user cache). Every scanner that reads the engine runs on it,
every place a knowledge row cites is fingerprinted (:mod:`pytest_eagle3.scanners.fingerprint`), and the record is
written to the user's knowledge directory (:mod:`pytest_eagle3.knowledge.learned`). Afterwards
``--eagle3-engine=ENGINE==VERSION`` judges that release: a hand row is carried over from the nearest release read
only where every place it cites kept its fingerprint (:mod:`pytest_eagle3.verdict.resting`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.behaviours import TABLES
from pytest_eagle3.knowledge.engines import BY_NAME, REGISTRY
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.learned import LearnedRelease, knowledge_dir
from pytest_eagle3.knowledge.package_index import missing_release, unasked
from pytest_eagle3.knowledge.releases import DISPLAY, release_text
from pytest_eagle3.scanners.fingerprint import fingerprint

#: Each engine's distribution on the package index that ``learn`` downloads, where it has one (the probes' first
#: distribution; the others from the engines' own modules: TensorRT-LLM's index package is a stub, llama.cpp ships
#: builds). :data:`~pytest_eagle3.knowledge.package_index.INDEX_NAMES` (where a release is looked
#: up) adds TensorRT-LLM's.
DISTRIBUTIONS: dict[str, str] = {
    **{e.name: e.interpreter.probe.distributions[0] for e in REGISTRY if e.interpreter.probe is not None and e.name != "llamacpp"},
    "lmdeploy": "lmdeploy", "tokenspeed": "tokenspeed", "vllm-ascend": "vllm-ascend",
    "tpu-inference": "tpu-inference"}


class LearnError(Exception):
    """Why a source could not be read; ``str()`` is the message the user sees (no traceback)."""


@dataclass(frozen=True)
class Source:
    """An unpacked release ready to scan."""

    engine: str
    release: str
    root: Path
    #: What the user gave, in words.
    given: str


def engine_of(distribution: str) -> str | None:
    """The engine whose distribution is ``distribution`` (any spelling), or None."""
    wanted = canonicalize_name(distribution)
    return next((e for e, d in DISTRIBUTIONS.items() if canonicalize_name(d) == wanted), None)


def _dist_info(root: Path) -> tuple[str, str] | None:
    """(distribution, version) from the ``*.dist-info`` directory of an unpacked release, else from the
    ``PKG-INFO`` of an unpacked sdist (vLLM-Ascend 0.23.0.post1 ships only one)."""
    for info in sorted(root.glob("*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        if name and version:
            return name, version
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        headers = dict(line.split(": ", 1) for line in pkg_info.read_text(encoding="utf-8", errors="replace")
                       .split("\n\n", 1)[0].splitlines() if ": " in line)
        if headers.get("Name") and headers.get("Version"):
            return headers["Name"], headers["Version"]
    return None


def unpack_wheel(wheel: Path, into: Path) -> Path:
    """The wheel's ``*.py`` files and its dist-info, unpacked under ``into`` (kept: a second learn reuses it)."""
    target = into / wheel.stem
    if (target / ".complete").is_file():
        return target
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.endswith(".py") or ".dist-info/" in name:
                    archive.extract(name, target)
    except (OSError, zipfile.BadZipFile) as exc:
        raise LearnError(f"{wheel} is not a readable wheel: {exc}") from exc
    (target / ".complete").write_text("")
    return target


def _from_root(root: Path, given: str, engine: str | None, release: str | None) -> Source:
    info = _dist_info(root)
    name = engine or (engine_of(info[0]) if info else None)
    version = release or (info[1] if info else None)
    if name is None or version is None:
        raise LearnError(f"{given}: cannot tell which engine release this is (no *.dist-info naming one): "
                         "give --engine NAME and --release VERSION")
    if name not in BY_NAME:
        raise LearnError(f"{given}: unknown engine {name!r} (one of {', '.join(BY_NAME)})")
    try:
        Version(version)
    except InvalidVersion as exc:
        raise LearnError(f"{given}: {version!r} is not a release") from exc
    return Source(name, version, root, given)


def download(engine: str, version: str, into: Path, pip: Callable[[list[str]], subprocess.CompletedProcess[str]]
             | None = None) -> Path:
    """``pip download ENGINE==VERSION --no-deps`` into ``into``; the wheel's path (LearnError when it fails)."""
    dist = DISTRIBUTIONS.get(engine)
    if dist is None:
        raise LearnError(f"{DISPLAY[engine]} has no package on the index to download: give its unpacked source "
                         f"(python -m pytest_eagle3 learn DIR --engine {engine} --release VERSION)")
    into.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", f"{dist}=={version}", "--no-deps", "--no-input",
            "--disable-pip-version-check", "-d", str(into)]
    run = pip or (lambda args: subprocess.run(args, capture_output=True, text=True, timeout=900, check=False))
    try:
        done = run(argv)
    except (OSError, subprocess.TimeoutExpired) as exc:
        done = subprocess.CompletedProcess(argv, 1, "", str(exc))
    wheels = sorted(into.glob(f"{canonicalize_name(dist).replace('-', '_')}-{version}-*.whl"))
    if done.returncode != 0 or not wheels:
        said = (done.stderr or done.stdout or "").strip()
        last = (said.splitlines()[-1:] or ["no wheel came"])[0][:200]
        unknown = unasked(engine)
        why = (f"{unknown}: no network here? Where there is network, run" if unknown is not None
               else "a release the package index lists; download it yourself")
        raise LearnError(f"could not download {dist}=={version} ({last}); {why}: "
                         f"pip download {dist}=={version} --no-deps -d DIR, then here: "
                         f"python -m pytest_eagle3 learn DIR/<the {dist} wheel> (python -m pytest_eagle3 releases "
                         "lists the newest release on the index)")
    return wheels[0]


def interpreter_root(python: str, engine: str) -> Source:
    """The package directory of ``engine`` installed in interpreter ``python`` (asked in a subprocess)."""
    dist = DISTRIBUTIONS.get(engine, engine)
    probe = BY_NAME[engine].interpreter.probe
    module = probe.module if probe is not None else engine.replace("-", "_")
    code = ("import importlib.metadata as m, importlib.util as u, json, os, sys\n"
            f"spec = u.find_spec({module!r})\n"
            f"v = m.version({dist!r})\n"
            "print(json.dumps([os.path.dirname(os.path.dirname(spec.origin)), v]))")
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LearnError(f"{python}: cannot run it ({exc})") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LearnError(f"{python} has no {DISPLAY[engine]} installed ({last[:200]})")
    root, version = json.loads(done.stdout.strip().splitlines()[-1])
    return Source(engine, str(version), Path(root), f"{DISPLAY[engine]} of {python}")


def resolve(given: str, *, engine: str | None = None, release: str | None = None, python: str | None = None,
            cache: Path | None = None) -> Source:
    """The release ``given`` names, unpacked: a wheel, a directory, ``ENGINE==VERSION``, or (``python``) the engine
    installed in that interpreter."""
    cache = cache or knowledge_dir().parent / "wheels"
    if python is not None:
        if engine is None:
            raise LearnError("--python needs --engine NAME: which engine of that interpreter to read")
        return interpreter_root(python, engine)
    spec = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", given)
    path = Path(given)
    if spec and not path.exists():
        name, version = spec.groups()
        name = name if name in BY_NAME else engine_of(name) or name
        if name not in BY_NAME:
            raise LearnError(f"{given}: unknown engine {name!r} (one of {', '.join(BY_NAME)})")
        try:
            absent = missing_release(name, Version(version), version)
        except InvalidVersion:
            raise LearnError(f"{given}: {version!r} is not a version number") from None
        if absent is not None:
            raise LearnError(f"no such release: {absent} (python -m pytest_eagle3 releases lists the newest "
                             "release of every engine)")
        if bundled(name, version):  # read already: its own rows judge it (no download: some ship only an sdist)
            return Source(name, version, path, given)
        wheel = download(name, version, cache)
        return _from_root(unpack_wheel(wheel, cache / "unpacked"), f"{wheel.name}", name, version)
    if path.is_file() and path.suffix == ".whl":
        stem = path.name.split("-")
        name = engine or engine_of(stem[0])
        return _from_root(unpack_wheel(path, cache / "unpacked"), path.name, name, release or
                          (stem[1] if len(stem) > 1 else None))
    if path.is_dir():
        return _from_root(path, str(path), engine, release)
    raise LearnError(f"{given}: not a wheel, a directory or ENGINE==VERSION")


def bundled(engine: str, release: str) -> bool:
    """Whether ``release`` is one the bundled knowledge read (its rows judge it; a learned record would be ignored)."""
    from pytest_eagle3.knowledge.releases import in_known_range

    return in_known_range(engine, Version(release))


def cites_of(engine: str) -> tuple[Cite, ...]:
    """Every place a behaviour row of ``engine`` cites (the places learn fingerprints)."""
    return tuple(sorted({c for t in TABLES.values() for row in t.rows_of(engine) for c in row.cites}))


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def scans(source: Source) -> dict[str, Any]:
    """Every scanner that reads this engine, run on the release (a scanner that raises records its error)."""
    from pytest_eagle3.scanners import capture, draft_classes, fields, reach

    kind = BY_NAME[source.engine]
    runs: dict[str, Callable[[], Any]] = {"fields": lambda: fields.scan(source.engine, source.root,
                                                                          Version(source.release))}
    if kind.scans.capture_scan == "wheels" and source.engine in ("vllm", "sglang", "tokenspeed"):
        runs["capture"] = lambda: capture.scan(source.engine, source.root)
    if kind.scans.draft_class_scan:
        runs["draft_classes"] = lambda: draft_classes.scan_release(source.engine, source.root)
    if kind.scans.reach_scan:
        runs["reach"] = lambda: reach.scan(source.engine, source.root)
    out: dict[str, Any] = {}
    for name, run in runs.items():
        try:
            out[name] = _jsonable(run())
        except Exception as exc:  # a scanner that cannot read this release: said, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def learn(source: Source) -> LearnedRelease:
    """Read one release: its scans and the fingerprint of every cited place; written to the knowledge directory."""
    prints = {cite.key: fingerprint(source.root, cite) for cite in cites_of(source.engine)}
    record = LearnedRelease(source.engine, source.release, source.given, prints, scans(source))
    record.write()
    from pytest_eagle3.verdict.resting import forget

    forget()
    return record


def summary(record: LearnedRelease) -> list[str]:
    """What ``learn`` tells the user: where the knowledge went, what the scans found, what is not carried over."""
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict.resting import changed

    spec = f"{record.engine}=={release_text(record.engine, record.release)}"
    lines = [f"learned {DISPLAY[record.engine]} {record.release} from {record.source}: {record.path}"]
    for name, found in record.scans.items():
        said = found["error"] if isinstance(found, dict) and "error" in found else _size(found)
        lines.append(f"  scan {name}: {said}")
    lines += [f"  {line}" for line in unclassified_fields(record)]
    lines.append(f"  {len(record.fingerprints)} cited places fingerprinted "
                 f"({sum(v is None for v in record.fingerprints.values())} absent)")
    stale = changed(EngineVersion(record.engine, Version(record.release)))
    lines += [f"  not carried over: {name}: {why}" for name, why in sorted(stale.items())]
    lines.append(f"judge with it: --eagle3-engine={spec}")
    return lines


def unclassified_fields(record: LearnedRelease) -> list[str]:
    """The config fields this release reads that no coverage entry (``scanners/field_coverage.py``) classifies: what
    its verdicts cannot speak for until one does."""
    from pytest_eagle3.scanners.field_coverage import classify

    found = record.scans.get("fields")
    if not isinstance(found, list):
        return []
    new = sorted({(f, role) for f, role, *_ in found if classify(record.engine, f, role) is None})
    if not new:
        return []
    return [f"{len(new)} config fields read that no coverage entry classifies (scanners/field_coverage.py): "
            + ", ".join(f"{f} ({role})" for f, role in new[:12]) + (", ..." if len(new) > 12 else "")]


def _size(found: Any) -> str:
    if isinstance(found, list) and len(found) == 2 and all(isinstance(x, list) for x in found):
        return f"{len(found[0])} capturing of {len(found[1])} registered architectures"
    if isinstance(found, list) and len(found) == 2 and all(isinstance(x, dict) for x in found):
        return f"{len(found[0])} draft architectures, {len(found[1])} classes"
    return f"{len(found) if isinstance(found, (list, dict)) else 1} entries"


def main(argv: list[str] | None = None, *, prog: str = "learn") -> int:
    """The command; exit 2 with one line where the source cannot be read."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args)


def add_arguments(parser: Any) -> None:
    """The command's arguments (also ``python -m pytest_eagle3 learn``)."""
    parser.add_argument("source", metavar="SOURCE", nargs="?", default="",
                        help="a wheel, an unpacked release directory, or ENGINE==VERSION (downloaded with pip)")
    parser.add_argument("--engine", choices=sorted(BY_NAME), help="the engine (needed with --python, or for a "
                                                                  "directory without a dist-info)")
    parser.add_argument("--release", help="the release (for a directory without a dist-info)")
    parser.add_argument("--python", metavar="PATH", help="read the engine installed in this interpreter")


def run(args: Any) -> int:
    """Run the parsed command: 0 learned, 2 with one line why not."""
    if not args.source and not args.python:
        print("learn: give SOURCE (a wheel, a directory, ENGINE==VERSION) or --python PATH --engine NAME",
              file=sys.stderr)
        return 2
    try:
        source = resolve(args.source, engine=args.engine, release=args.release, python=args.python)
        if bundled(source.engine, source.release):
            print(f"{DISPLAY[source.engine]} {source.release} is bundled: its own rows judge it, nothing to learn")
            return 0
        record = learn(source)
    except LearnError as exc:
        print(f"learn: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary(record)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
