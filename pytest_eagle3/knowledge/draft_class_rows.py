"""Behaviour rows per (engine release, draft class), read from the source scan of every release.

``generated/draft_class_table.py`` (``pytest_eagle3/scanners/draft_classes.py``) says, for every EAGLE-3 draft class each
scanned release registers, what that class builds, loads and applies: whether it builds ``fc_norm`` / ``input_norm``
and whether its forward path uses them, whether ``norm_output`` / ``norm_before_residual`` steer it, its layers, its
loader's renames, d2t match and what it does with a tensor no parameter has, and the weights of its own module that
the forward path never reaches ("loaded, not applied"). Each (engine, class, behaviour) is one
:class:`~pytest_eagle3.knowledge.table.Table` whose rows start where that class's own source changes, never at
another class's boundary.

The engine-level rows (:mod:`pytest_eagle3.knowledge.behaviours`) keep what is not a class's: how the engine
turns a speculators config into the flat one the class reads (``fc_norm`` "eagle-format-only" in vLLM 0.22-0.24),
and the engines no scan covers (TensorRT-LLM's source is not on the index; llama.cpp's converter).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.engine import Engine
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.generated import draft_class_table as generated
from pytest_eagle3.knowledge.learned import learned_release
from pytest_eagle3.knowledge.releases import release_text
from pytest_eagle3.knowledge.table import Row, Table, table

GENERATOR = "pytest_eagle3/scanners/draft_classes.py"
#: Class behaviour values: the module or flag is used on the forward path / built and loaded but never used / absent.
READ, UNUSED, NOT_READ = "read", "loaded-not-applied", "not-read"
#: The norm flags the class rows decide, and the behaviour holding the config fields that gate each module.
FLAG_FIELDS = {"fc_norm": "fc_norm_fields", "norm_before_fc": "norm_before_fc_fields"}
NORM_FLAGS = ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output")
#: Every behaviour a scanned class has a row for (the rules read the norm flags, the layers and ``unreached``).
BEHAVIOURS = ("fc_norm", "fc_norm_fields", "norm_before_fc", "norm_before_fc_fields", "norm_output",
              "norm_before_residual", "first_layer", "layer_count", "layer_norms", "attention", "rope", "renames",
              "d2t", "unknown_key", "unreached")



def _scan(engine: Engine) -> tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]:
    """An engine's releases read, registry and classes (``draft_class_table.<PREFIX>_RELEASES / ...``)."""
    prefix = engine.scan_prefix
    return (getattr(generated, f"{prefix}_RELEASES"), getattr(generated, f"{prefix}_REGISTERED"),
            getattr(generated, f"{prefix}_CLASSES"))


_SCANS = {engine.name: _scan(engine) for engine in REGISTRY if engine.scans.draft_class_scan}
#: The engines whose draft classes the scan read.
SCANNED = tuple(_SCANS)


def releases(engine: str) -> tuple[str, ...]:
    """The releases the scan read for ``engine`` (empty where none)."""
    return _SCANS[engine][0] if engine in _SCANS else ()


def registered(engine: str) -> dict[str, tuple[tuple[str, str, str], ...]]:
    """architecture -> runs (first, last, class) of the releases whose registry maps it to that class."""
    return dict(_SCANS[engine][1]) if engine in _SCANS else {}


def classes(engine: str) -> tuple[str, ...]:
    """The draft classes the scan found in any release of ``engine``."""
    return tuple(_SCANS[engine][2]) if engine in _SCANS else ()


def _learned(engine: str, version: Version) -> tuple[str, dict[str, str], dict[str, Any]] | None:
    """A release read by ``learn`` newer than every scanned one: (its release, registry, classes) from its own draft
    class scan; None where it is no such release or its scan failed."""
    read = releases(engine)
    record = learned_release(engine, version) if read and version > Version(read[-1]) else None
    scan = record.scans.get("draft_classes") if record is not None else None
    if record is None or not (isinstance(scan, list) and len(scan) == 2 and all(isinstance(s, dict) for s in scan)):
        return None
    return record.release, scan[0], scan[1]


def registered_at(engine: str, version: Version) -> dict[str, str]:
    """architecture -> class, as the scanned release ``version`` registers them (a release not read: the one before;
    a release read by ``learn``: its own scan)."""
    learned = _learned(engine, version)
    if learned is not None:
        return dict(learned[1])
    read = [r for r in releases(engine) if Version(r) <= version]
    if not read:
        return {}
    at = Version(read[-1])
    return {arch: cls for arch, runs in registered(engine).items() for first, last, cls in runs
            if Version(first) <= at <= Version(last)}


@cache
def class_table(engine: str, klass: str, behaviour: str) -> Table[Any] | None:
    """One behaviour of one draft class as a table: a row per run of releases read with one value, from the
    class's first release; a gap (the class unregistered) ends the row. None where the scan has no such class."""
    if engine not in _SCANS or klass not in _SCANS[engine][2]:
        return None
    read = _SCANS[engine][0]
    runs = _SCANS[engine][2][klass].get(behaviour)
    if runs is None:
        return None
    rows = []
    for i, (first, last, value, where) in enumerate(runs):
        following = runs[i + 1][0] if i + 1 < len(runs) else None
        after = read[read.index(last) + 1] if last != read[-1] else None
        until = after if after is not None and after != following else None
        rows.append(Row(engine, first, _frozen(value),
                        f"{engine} {release_text(engine, first)}-{release_text(engine, last)} {where} ({GENERATOR})",
                        until=until, read_to=last))
    return table(f"{engine} {klass}: {behaviour}", rows, full=False)


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def class_row(engine: str, version: Version, klass: str | None, behaviour: str) -> Row[Any] | None:
    """The scanned row of ``klass`` in force at ``version``; None where no scan covers that class there (a release
    read by ``learn``: its own scan's value; another newer than every release read takes the newest row)."""
    if not klass:
        return None
    learned = _learned(engine, version)
    if learned is not None:  # its own scan: the class as that release builds it
        release, _, scanned = learned
        own = scanned.get(klass)
        if own is None or behaviour not in own.get("values", {}):
            return None
        return Row(engine, release, _frozen(own["values"][behaviour]),
                   f"{engine} {release_text(engine, release)} {own.get('where', klass)} (learned scan, {GENERATOR})",
                   read_to=release)
    found = class_table(engine, klass, behaviour)
    if found is None:
        return None
    row = found.find(engine, version)
    if row is None and releases(engine) and version > Version(releases(engine)[-1]):
        last = found.rows_of(engine)[-1]
        row = last if last.until is None else None
    return row


def label(row: Row[Any]) -> str:
    """A row's source (it names the releases, the file and class, and the generator)."""
    return row.source
