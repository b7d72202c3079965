"""How each engine version groups the draft's KV-cache layers with the target's (one row per change, with sources)."""

from __future__ import annotations

from enum import StrEnum

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.releases import (
    EngineVersion,
)
from pytest_eagle3.knowledge.table import Row, Table, table


class KvGrouping(StrEnum):
    """How an engine version groups the draft's KV layers with the target's."""

    EQUAL_PAGE = "equal-page"
    UNIFORM_TYPE_ELSE_EQUAL = "uniform-type-else-equal-page"
    UNIFORM_TYPE_ELSE_DIVISIBLE = "uniform-type-else-divisible"
    UNIFORM_TYPE_ELSE_PADDED = "uniform-type-else-padded"
    SEPARATE_POOL = "separate-pool"


EQUAL_PAGE = KvGrouping.EQUAL_PAGE
UNIFORM_TYPE_ELSE_EQUAL = KvGrouping.UNIFORM_TYPE_ELSE_EQUAL
UNIFORM_TYPE_ELSE_DIVISIBLE = KvGrouping.UNIFORM_TYPE_ELSE_DIVISIBLE
UNIFORM_TYPE_ELSE_PADDED = KvGrouping.UNIFORM_TYPE_ELSE_PADDED
SEPARATE_POOL = KvGrouping.SEPARATE_POOL

OK = "ok"
REFUSED = "refused"
UNKNOWN = "unknown"

#: One KV-grouping row (kept under its old name for callers).
KvRule = Row[KvGrouping]

KV_TABLE: Table[KvGrouping] = table("KV-cache grouping of draft and target layers", (
    # the engines' own rows (``Engine.tables.kv_rows``, in the registry's order)
    *(Row(engine.name, row.since, KvGrouping(row.value), row.source, until=row.until, read_to=row.read_to,
          cites=row.cites, unmodelled=row.unmodelled) for engine in REGISTRY for row in engine.tables.kv_rows),
))
KV_RULES: tuple[KvRule, ...] = KV_TABLE.rows
#: Where each engine's draft dtype comes from (its ``draft_dtype_source``).
DTYPE_SOURCE = {engine.name: engine.loading.draft_dtype_source for engine in REGISTRY}


def kv_rule(target: EngineVersion) -> KvRule:
    """The KV-cache grouping rule of one engine version."""
    return KV_TABLE.at(target)
