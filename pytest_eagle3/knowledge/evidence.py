"""A knowledge row's evidence in machine-readable form: the file and the function (or class, or method) of the
released source that the row's prose describes. The citation check (``python -m pytest_eagle3.scanners.citations``)
reads each :class:`Cite` in every release the row covers and records an AST fingerprint of it per release."""

from __future__ import annotations

from dataclasses import dataclass


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
