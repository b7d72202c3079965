"""Capture reach: which layer inputs a target class's EAGLE-3 capture loop can reach, per engine release.

Stated in layer-input indices (``engines/aux_layers.py``): j is the residual stream entering decoder layer j, 0 the
embeddings, L the last layer's output. The rows come from ``pytest_eagle3/scanners/reach.py`` over every
released source (``reach_table.py``, generated), one :class:`~pytest_eagle3.knowledge.table.Table` per
(engine, target architecture); an architecture the scan could not read falls back to the profile
behaviour ``capture_range`` (:data:`RANGE_REACH`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.generated import reach_table
from pytest_eagle3.knowledge.learned import learned_release
from pytest_eagle3.knowledge.releases import DISPLAY
from pytest_eagle3.knowledge.table import Row, Table, table

EMBEDDINGS = "embeddings"
CRASH = "crash"
UNREACHED = "unreached"
UNREAD = "unread"
INDEX_ERROR = "index-error"


@dataclass(frozen=True)
class Reach:
    """What one capture loop reaches.

    ``zero``: index 0 is captured (``embeddings``), fails the first forward (``crash``: ``hidden_states +
    residual`` while residual is None) or never fires (``unreached``); ``last``: index L is reachable;
    ``index``: ``global`` ids are model layer ids under pipeline parallelism, ``stage`` ids count from
    each stage's first layer (the loop enumerates the stage's slice); ``past``: an index past the loop
    ``never-fires`` (silently) or raises ``index-error`` at startup (the model flags ``self.layers[i]``);
    ``final_past``: index L + 1 takes the last layer's output after the loop (TokenSpeed's final residual)."""

    zero: str
    last: bool
    index: str = "global"
    past: str = "never-fires"
    final_past: bool = False

    def bounds(self, layers: int) -> tuple[int, int]:
        """(lowest, highest) layer input that fires with ``layers`` target layers."""
        return (0 if self.zero == EMBEDDINGS else 1), (layers if self.last else layers - 1)

    @property
    def words(self) -> str:
        """The layer inputs the capture loop reaches, in words."""
        low = "0 (the embeddings)" if self.zero == EMBEDDINGS else "1"
        high = "L (the last layer's output)" if self.last else "L-1"
        tail = "; 0 fails the first forward (residual is None)" if self.zero == CRASH else ""
        final = "; index L+1 takes L (the last layer's output, after the loop)" if self.final_past else ""
        return f"layer inputs {low}..{high}{tail}{final}"


#: The profile behaviour ``capture_range`` as a reach, for targets the scan did not read.
RANGE_REACH = {"inner": Reach(CRASH, False), "all": Reach(EMBEDDINGS, True),
               "outputs": Reach(UNREACHED, True),  # layer outputs 0..L-1 = inputs 1..L (TensorRT-LLM)
               "inner-final": Reach(CRASH, False, final_past=True)}  # TokenSpeed: L + 1 is the final residual

#: Each scanned engine's releases read and reach per architecture (``reach_table.<PREFIX>_RELEASES / _REACH``).
_SCANS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    engine.name: (getattr(reach_table, f"{engine.scan_prefix}_RELEASES"),
                  getattr(reach_table, f"{engine.scan_prefix}_REACH"))
    for engine in REGISTRY if engine.scans.reach_scan}


@cache
def reach_table_of(engine: str, architecture: str) -> Table[Reach] | None:
    """The scanned reach of one target architecture, one row per change; None when the scan never read it."""
    if engine not in _SCANS:
        return None  # no reach scan for this engine: its profile's capture_range decides
    releases, scanned = _SCANS[engine]
    entries = scanned.get(architecture)
    if not entries:
        return None
    rows = []
    for i, (since, zero, last, index, past, where) in enumerate(entries):
        following = entries[i + 1][0] if i + 1 < len(entries) else None
        if zero == UNREAD:  # a release whose loop the scan could not read: no row, the profile decides
            continue
        read = [r for r in releases if Version(since) <= Version(r) and (following is None
                                                                          or Version(r) < Version(following))]
        rows.append(Row(engine, since, Reach(zero, last, index, past),
                        f"{engine} {since} {where} capture loop (pytest_eagle3/scanners/reach.py)", until=following,
                        read_to=read[-1]))
    return table(f"{engine} capture reach: {architecture}", rows, full=False)


def reach_at(engine: str, version: Version, architecture: str) -> Row[Reach] | None:
    """The scanned row in force for ``architecture`` at ``version``; None where the scan has none (a release read by
    ``learn``, newer than every release scanned: its own scan)."""
    releases = _SCANS[engine][0] if engine in _SCANS else ()
    record = learned_release(engine, version) if releases and version > Version(releases[-1]) else None
    scan = record.scans.get("reach") if record is not None else None
    if record is not None and isinstance(scan, dict) and "error" not in scan:
        loop = scan.get(architecture)
        if not isinstance(loop, dict) or loop.get("zero") == UNREAD:
            return None
        return Row(engine, record.release, Reach(loop["zero"], bool(loop["last"]), loop["index"], loop["past"]),
                   f"{engine} {record.release} {loop['where']} capture loop (learned scan, "
                   "pytest_eagle3/scanners/reach.py)", read_to=record.release)
    found = reach_table_of(engine, architecture)
    return found.find(engine, version) if found is not None else None


def label(engine: str, architecture: str, row: Row[Reach]) -> str:
    """A row's source with the releases it covers."""
    found = reach_table_of(engine, architecture)
    return found.label(row) if found is not None and row in found.rows else row.source


def first_reaching(engine: str, architecture: str, index: str, after: Version) -> str | None:
    """The first release after ``after`` whose loop reaches ``index`` (``"last"`` or ``"zero"``), as
    ``vLLM 0.18.0``; None when no release read does."""
    found = reach_table_of(engine, architecture)
    for row in found.rows_of(engine) if found is not None else ():
        reaches = row.value.last if index == "last" else row.value.zero == EMBEDDINGS
        if reaches and row.start > after:
            return f"{DISPLAY[engine]} {row.since}"
    return None
