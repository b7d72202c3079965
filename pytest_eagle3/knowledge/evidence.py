"""A knowledge row's evidence in machine-readable form: the file and the function (or class, or method) of the
released source that the row's prose describes. The citation check (``python -m pytest_eagle3.scanners.citations``)
reads each :class:`Cite` in every release the row covers and records an AST fingerprint of it per release;
:func:`recorded_fingerprint` reads the record back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal


@dataclass(frozen=True, order=True)
class Cite:
    """One place in an engine's released source: ``file`` from the distribution's root
    (``vllm/transformers_utils/configs/speculators/algos.py``) and ``qualname`` inside it (``update_eagle3``,
    ``LlamaModel.load_weights``; empty: the module itself). ``absent``: the row rests on the place NOT existing in
    the releases it covers (a field no code reads, a file not yet written)."""

    file: str
    qualname: str = ""
    absent: bool = False

    @property
    def key(self) -> str:
        """``FILE:QUALNAME`` (``FILE`` alone for a module): how fingerprints and messages name it."""
        return f"{self.file}:{self.qualname}" if self.qualname else self.file

    def __str__(self) -> str:
        return ("no " if self.absent else "") + self.key


#: What :func:`recorded_fingerprint` answers where the release or the place was never recorded.
UNREAD = "unread"
#: ``fingerprints.json`` beside the generated tables: ``{engine: {FILE:QUALNAME: {release: hex16 | null}}}``.
FINGERPRINTS = Path(__file__).resolve().parent / "generated" / "fingerprints.json"
Recorded = dict[str, dict[str, dict[str, str | None]]]


@cache
def recorded_fingerprints() -> Recorded:
    """Every recorded fingerprint (``python -m pytest_eagle3.scanners.citations ENGINE ROOT... --record``);
    empty where none was recorded."""
    try:
        data: Recorded = json.loads(FINGERPRINTS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return data


def recorded_fingerprint(engine: str, release: str, cite: Cite) -> str | None | Literal["unread"]:
    """The AST fingerprint of ``cite`` recorded in ``engine``'s ``release``: 16 hex digits where the place exists,
    None where it was read and does not exist there, :data:`UNREAD` where that release (or that place) was not
    recorded. Two releases with equal fingerprints have the same code at the place."""
    by_release = recorded_fingerprints().get(engine, {}).get(cite.key)
    if by_release is None or release not in by_release:
        return UNREAD
    return by_release[release]
