"""Releases read by ``python -m pytest_eagle3 learn`` on the user's machine, and the fingerprints every release read
recorded: the bundled ones (``generated/fingerprints.json``, written by the citation check) and each learned
release's own.

A learned release is one JSON file, ``<knowledge dir>/<engine>/<release>.json`` (:func:`knowledge_dir`:
``$EAGLE3_KNOWLEDGE_DIR``, else ``pytest-eagle3/knowledge`` under the platform's cache directory), written by
:mod:`pytest_eagle3.scanners.learn`: where it was read from, the fingerprint of every place a knowledge row cites
(``FILE:QUALNAME`` -> 16 hex digits, or None where the place does not exist in it) and its scans. This module reads
them; it imports nothing of the project but the engine registry, so the release list can ask it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.evidence import UNREAD, recorded_fingerprints

#: The environment variable that moves the learned knowledge.
KNOWLEDGE_DIR_ENV = "EAGLE3_KNOWLEDGE_DIR"
#: The format of a learned release's file (a file of another format is not read).
FORMAT = 1


def knowledge_dir() -> Path:
    """Where learned releases live: ``$EAGLE3_KNOWLEDGE_DIR``, else the platform's user cache directory."""
    given = os.environ.get(KNOWLEDGE_DIR_ENV)
    if given:
        return Path(given).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytest-eagle3" / "knowledge"


@dataclass(frozen=True)
class LearnedRelease:
    """One release read by ``learn``: its fingerprints and scans, and where it was read from."""

    engine: str
    release: str
    #: What was read: ``vllm-0.35.0-py3-none-any.whl``, a directory, an interpreter.
    source: str
    #: ``FILE:QUALNAME`` -> fingerprint (None: the place does not exist in this release).
    fingerprints: dict[str, str | None] = field(default_factory=dict)
    #: Each scanner's result in JSON (``capture``, ``draft_classes``, ...), or its error text.
    scans: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record as the user cache stores it (``FORMAT`` names its version)."""
        return {"format": FORMAT, "engine": self.engine, "release": self.release, "source": self.source,
                "fingerprints": self.fingerprints, "scans": self.scans}

    @property
    def path(self) -> Path:
        """Where the record lives: ``<knowledge dir>/<engine>/<release>.json``."""
        return knowledge_dir() / self.engine / f"{self.release}.json"

    def write(self) -> Path:
        """Write the record to the knowledge directory (its parent made); returns the file."""
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        _read_dir.cache_clear()
        return path


def _stamp(engine_dir: Path) -> int:
    try:
        return engine_dir.stat().st_mtime_ns
    except OSError:
        return -1


@cache
def _read_dir(engine_dir: Path, stamp: int) -> dict[str, LearnedRelease]:
    found: dict[str, LearnedRelease] = {}
    if stamp < 0:
        return found
    for path in sorted(engine_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            Version(str(data["release"]))
        except (OSError, ValueError, KeyError, TypeError, InvalidVersion):
            continue  # a damaged or foreign file is not a release read
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("engine") != engine_dir.name:
            continue
        prints = data.get("fingerprints") or {}
        found[str(data["release"])] = LearnedRelease(
            data["engine"], str(data["release"]), str(data.get("source", "")),
            {str(k): (str(v) if v is not None else None) for k, v in prints.items()}, dict(data.get("scans") or {}))
    return found


def learned(engine: str) -> dict[str, LearnedRelease]:
    """Every release of ``engine`` read by ``learn`` on this machine, by release text."""
    engine_dir = knowledge_dir() / engine
    return _read_dir(engine_dir, _stamp(engine_dir))


def learned_release(engine: str, version: Version) -> LearnedRelease | None:
    """The learned record of ``engine`` at ``version``, or None where ``learn`` has not read it."""
    return next((r for text, r in learned(engine).items() if Version(text) == version), None)


def learned_versions(engine: str) -> tuple[Version, ...]:
    """The learned releases of ``engine``, oldest first."""
    return tuple(sorted(Version(text) for text in learned(engine)))


#: What :func:`recorded_fingerprint` answers for a place no fingerprint was recorded of at that release (the
#: citation check's own word for it).
NOT_RECORDED = UNREAD


def recorded_fingerprint(engine: str, release: str, key: str) -> str | None:
    """The fingerprint recorded of ``key`` (``FILE:QUALNAME``) at a read release: a learned release's own, else the
    bundled file's; None where the place does not exist there; :data:`NOT_RECORDED` where nobody recorded it."""
    version = Version(release)
    record = learned_release(engine, version)
    if record is not None:
        return record.fingerprints.get(key, NOT_RECORDED)
    per_release = recorded_fingerprints().get(engine, {}).get(key)
    if not isinstance(per_release, dict):
        return NOT_RECORDED
    for text, value in per_release.items():
        try:
            if Version(text) == version:
                return value
        except InvalidVersion:
            continue
    return NOT_RECORDED
