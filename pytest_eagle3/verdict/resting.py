"""Which behaviours each engine contract rests on, and which of them a learned release does not carry over.

The map is derived from the areas' own source (an AST scan of ``engines/*.py``): contract ``engine.<area>`` rests on
every behaviour its module ``engines/<area>.py`` reads (``snapshot.behaviours.NAME``, ``snapshot.source("NAME")``,
``rule_for(..., "NAME", ...)``), on those of the ``engines/`` modules it imports (transitively), and on those the
fact sheet reads (every area reads the sheet); ``engine.acceptance`` prices the whole plan, so it rests on all of them.

A learned release carries a behaviour's row over from the nearest read release below it only where every place
the row cites (:attr:`~pytest_eagle3.knowledge.table.Row.cites`) has the same fingerprint in both
(:func:`changed`); a row that cites nothing is carried over unchecked.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from packaging.version import Version

from pytest_eagle3.knowledge.behaviours import NAMES, TABLES, BehaviourName
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.learned import NOT_RECORDED, learned_release, learned_versions, recorded_fingerprint
from pytest_eagle3.knowledge.releases import RELEASES, EngineVersion, release_text
from pytest_eagle3.verdict.contract_table import ENGINE, of_scope

#: Modules that build or carry the plan rather than judge an area: not followed.
_NOT_AREAS = frozenset({"plan", "plan_types", "__init__"})
_ENGINES = Path(__file__).resolve().parent.parent / "engines"


@cache
def _reads(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """The behaviours ``engines/<module>.py`` reads, and the ``engines`` modules it imports."""
    tree = ast.parse((_ENGINES / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    imports: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "behaviours" and node.attr in NAMES):
            found.add(node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("source", "row", "rule_for"):
                found.update(a.value for a in node.args if isinstance(a, ast.Constant) and a.value in NAMES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_eagle3.engines."):
            imports.add(node.module.rsplit(".", 1)[1])
    return frozenset(found), frozenset(imports - _NOT_AREAS)


def _closure(module: str, seen: set[str]) -> set[str]:
    if module in seen or not (_ENGINES / f"{module}.py").is_file():
        return set()
    seen.add(module)
    found, imports = _reads(module)
    out = set(found)
    for imported in imports:
        out |= _closure(imported, seen)
    return out


def area_module(contract: str) -> str | None:
    """The module ``engines/<area>.py`` of the engine contract ``engine.<area>``; None for one without (the
    acceptance, which prices the whole plan)."""
    area = contract.partition(".")[2]
    return area if (_ENGINES / f"{area}.py").is_file() else None


@cache
def resting() -> dict[str, frozenset[BehaviourName]]:
    """Contract id (``engine.keys``) -> the behaviours it rests on (every area's, for one without a module)."""
    sheet = _closure("facts", set())
    modules = {c.id: area_module(c.id) for c in of_scope(ENGINE)}
    areas = {cid: frozenset(n for n in NAMES if n in _closure(module, set()) | sheet)
             for cid, module in modules.items() if module is not None}
    every = frozenset(n for names in areas.values() for n in names)
    return {cid: areas.get(cid, every) for cid in modules}


def _read_below(engine: str, version: Version) -> Version | None:
    """The nearest release read (bundled or learned) older than ``version``."""
    older = [v for v in (*(Version(r) for r in RELEASES[engine]), *learned_versions(engine)) if v < version]
    return max(older) if older else None


@cache
def _cite_change(engine: str, version: Version, cite: Cite) -> str | None:
    """Why ``cite`` does not carry over to the learned ``version`` (changed, or not comparable), or None."""
    record = learned_release(engine, version)
    base = _read_below(engine, version)
    if record is None or base is None:
        return None
    if learned_release(engine, base) is not None:
        earlier = _cite_change(engine, base, cite)
        if earlier is not None:
            return earlier
    now = record.fingerprints.get(cite.key, NOT_RECORDED)
    then = recorded_fingerprint(engine, str(base), cite.key)
    at, read = release_text(engine, version), release_text(engine, base)
    if then == NOT_RECORDED or now == NOT_RECORDED:
        return f"{cite.key} has no fingerprint recorded at {read if then == NOT_RECORDED else at} (read up to {read})"
    if cite.absent and now is not None:
        return f"{cite.key} appears in {at} (read up to {read}; the row rests on its absence)"
    if now != then:
        return f"{cite.key} changed in {at} (read up to {read})"
    return None


@cache
def changed(target: EngineVersion) -> dict[BehaviourName, str]:
    """For a learned release: behaviour -> why its row is not carried over (the first cited place that changed);
    empty for a bundled release or one whose every cited place kept its fingerprint."""
    if learned_release(target.engine, target.version) is None:
        return {}
    out: dict[BehaviourName, str] = {}
    for name in NAMES:
        row = TABLES[name].find(target.engine, target.version)
        for cite in row.cites if row is not None else ():
            why = _cite_change(target.engine, target.version, cite)
            if why is not None:
                out[name] = why
                break
    return out


def not_carried(target: EngineVersion) -> dict[str, str]:
    """Contract id -> why it is not modelled at a learned release (a behaviour it rests on changed); empty for a
    bundled release, or a learned one whose every cited place kept its fingerprint."""
    stale = changed(target)
    if not stale:
        return {}
    out: dict[str, str] = {}
    for contract, names in resting().items():
        hit = [name for name in sorted(names) if name in stale]
        if hit:
            more = f" and {len(hit) - 1} more)" if len(hit) > 1 else ")"
            out[contract] = f"not modelled: {stale[hit[0]]} (behaviour {hit[0]}{more}"
    return out


def forget() -> None:
    """Drop what was computed from the learned releases (after ``learn`` wrote one)."""
    _cite_change.cache_clear()
    changed.cache_clear()
