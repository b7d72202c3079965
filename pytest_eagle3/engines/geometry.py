"""What each engine does with an attention geometry that contradicts the tensors.

The derivation (config-class defaults, routes) lives in ``rules/attention.py``; this module adds
the engines' side: which route each engine takes and what its weight loaders do with a mismatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.engines.draft_geometry import draft_geometry
from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import Engine, Snapshot
from pytest_eagle3.rules.attention import (
    CLASS_DEFAULTS,
    ROUTE_AS_WRITTEN,
    ROUTE_CONFIG_CLASS,
    Disagreement,
    Geometry,
    derive,
    disagreements,
    implied,
)
from pytest_eagle3.words import plural

__all__ = ["CLASS_DEFAULTS", "ROUTE_AS_WRITTEN", "ROUTE_CONFIG_CLASS", "Disagreement", "Geometry",
           "derive", "disagreements", "geometry_finding", "implied", "plan_geometry"]


# What a disagreement does at load (an engine's ``load_assert``). The weight loaders first narrow the
# checkpoint tensor to the parameter's tensor-parallel shard (``loaded_weight.narrow(output_dim, tp_rank *
# shard_size, shard_size)``; input_dim for RowParallelLinear), then assert equal shapes: a tensor larger along that
# dim is cut to its first rows without a word, a smaller one fails the narrow, any other difference fails the
# assert. Engines whose loader checks shapes exactly (``exact_shapes``: no shard narrow) refuse a larger one.


#: "Derive it from the config" (a derived geometry may itself be None).
DERIVE: Any = object()


def geometry_finding(label: str, engine: Engine, config: Mapping[str, Any], speculators: bool,
                     shape_of: Callable[[str], tuple[int, ...] | None], names: list[str] | set[str],
                     derived: Geometry | None = DERIVE) -> Finding | None:
    """A refusal finding when the engine's geometry contradicts the attention tensors, else None
    (``derived``: the geometry the engine derives from ``config``, when already known)."""
    geometry = draft_geometry(engine, config, speculators) if derived is DERIVE else derived
    if geometry is None:
        return None
    found = disagreements(geometry, shape_of, names)
    if not found:
        return None
    fields = implied(found, geometry)
    first = found[0]
    fix = ("write " + ", ".join(f"{k}: {v}" for k, v in sorted(fields.items())) + " into the draft's config.json"
           if fields else "make num_attention_heads, num_key_value_heads and head_dim describe the saved q/k/v/o")
    silent = all(d.truncated for d in found) and not engine.loading.exact_shapes
    effect = (f"the loader cuts {plural(len(found), 'tensor')} to their first rows without a word: attention runs on a "
              "truncated copy and acceptance collapses" if silent
              else "the weight loader's narrow / shape assert stops startup")
    return Finding(
        "attention-geometry-truncated" if silent else "attention-geometry",
        f"{label} builds draft attention with {geometry.heads} heads, {geometry.kv_heads} KV heads, head_dim "
        f"{geometry.head_dim}; {first.tensor} is {list(first.shape)}, not {list(first.expected)} "
        f"({first.fields}): {effect}",
        tuple(Evidence(d.tensor, str(list(d.shape)), f"{list(d.expected)} ({d.fields})") for d in found[:6]),
        fix,
        tuple(f"{k}: {v}" for k, v in sorted(geometry.sources.items()))
        + tuple(f"rule: {rule}" for rule in (engine.loading.load_assert,) if rule),
    )


@dataclass(frozen=True)
class GeometryArea:
    """What the area files, and the tensors the loader cuts to the parameter's rows (counted as dropped)."""

    filed: Filed = Filed()
    cut: FrozenDict[str, str] = field(default_factory=FrozenDict)


def plan_geometry(sheet: FactSheet, snapshot: Snapshot) -> GeometryArea:
    """The engine's attention-geometry refusal (or silent truncation), if any: area ``geometry``."""
    finding = geometry_finding(snapshot.label, snapshot.kind, sheet.config, sheet.speculators, sheet.shapes.get,
                               set(sheet.tensors), sheet.draft_geometry)
    if finding is None:
        return GeometryArea()
    out = Filing()
    if finding.code != "attention-geometry-truncated":
        out.refuse("geometry", finding)
        return GeometryArea(out.filed())
    out.lose("geometry", finding)
    # what lands is a cut copy: the probes' audit counts it as dropped
    cut = {item.key: "cut to the parameter's rows by the loader's shard narrow" for item in finding.evidence}
    return GeometryArea(out.filed(), FrozenDict(cut))
