"""Which draft class each engine version builds for a draft architecture, and what that class holds.

The key map and the parameter set come from the class: the Qwen3 class (vLLM >= 0.24) has
``q_norm`` / ``k_norm`` per layer and sizes ``fc`` from more fields; the MLA classes hold a
DeepSeek MLA attention (``q_a_proj`` and ``kv_a_proj_with_mqa`` fused into one parameter, then
``q_b_proj`` / ``kv_b_proj`` / ``o_proj``). Every row: the registry line that maps the
architecture, with the releases read.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.draft_class import (
    LLAMA as LLAMA,
)
from pytest_eagle3.knowledge.draft_class import (
    LLAMA_ATTENTION as LLAMA_ATTENTION,
)
from pytest_eagle3.knowledge.draft_class import (
    MLA as MLA,
)
from pytest_eagle3.knowledge.draft_class import (
    MLA_NORMS_AND_B as MLA_NORMS_AND_B,
)
from pytest_eagle3.knowledge.draft_class import (
    QWEN3 as QWEN3,
)
from pytest_eagle3.knowledge.draft_class import (
    DraftClass as DraftClass,
)
from pytest_eagle3.knowledge.engine import Engine, TableRow
from pytest_eagle3.knowledge.engines import REGISTRY as ENGINE_REGISTRY
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.engines.shared import LLAMA_COUNT as LLAMA_COUNT
from pytest_eagle3.knowledge.releases import (
    RELEASES,
    EngineVersion,
)
from pytest_eagle3.knowledge.table import Row, Table, table

#: Every engine's draft classes (``Engine.tables.draft_classes``, in the registry's order).
CLASSES: dict[tuple[str, str], DraftClass] = {
    (klass.engine, klass.name): klass for engine in ENGINE_REGISTRY for klass in engine.tables.draft_classes}
#: The class a speculators-format config builds, for engines that build one class whatever its model_type.
#: (Each engine's ``speculators_class``.)
SPECULATORS_CLASS = {engine.name: engine.loading.speculators_class for engine in ENGINE_REGISTRY if engine.loading.speculators_class}
#: Engines whose one class (architectures ignored) builds MLA attention for a draft with kv_lora_rank, by a key
#: plan not read here: such a draft is not modelled for them (the source says where that plan lives; each engine's
#: ``mla_unmodelled``).
MLA_UNMODELLED = {engine.name: engine.loading.mla_unmodelled for engine in ENGINE_REGISTRY if engine.loading.mla_unmodelled}




def _own(engine: Engine, row: TableRow) -> Row[Any]:
    """An engine module's row as the tables hold it, named by the engine."""
    return Row(engine.name, row.since, row.value, row.source, until=row.until, read_to=row.read_to, cites=row.cites,
               unmodelled=row.unmodelled)


#: Registry rows: from ``since``, the engine maps the draft architecture to the class named by the value (the
#: engines' own, ``Engine.tables.registry_rows``, in the registry's order).
_REGISTRY_ROWS: tuple[tuple[str, Row[str]], ...] = (
    *((arch, _own(engine, row)) for engine in ENGINE_REGISTRY for arch, row in engine.tables.registry_rows),)


def _registry() -> dict[tuple[str, str], Table[str]]:
    grouped: dict[tuple[str, str], list[Row[str]]] = {}
    for arch, row in _REGISTRY_ROWS:
        grouped.setdefault((row.engine, arch), []).append(row)
    return {(engine, arch): table(f"{engine} registry: {arch}", rows, full=False)
            for (engine, arch), rows in grouped.items()}


#: The registry: for each (engine, draft architecture), from which release it maps to which class.
REGISTRY: dict[tuple[str, str], Table[str]] = _registry()
#: Whether the engine reads the config's architecture at all (vLLM 0.8.5 builds Eagle3LlamaForCausalLM for
#: method eagle3 whatever the field says).
ARCHITECTURE_READ: Table[bool] = table("architecture field read", (
    *(_own(engine, row) for engine in ENGINE_REGISTRY for row in engine.tables.architecture_read),
))


def accepted(engine: str, version: Version) -> tuple[str, ...]:
    """The draft architectures the engine version registers."""
    return tuple(arch for (eng, arch), t in REGISTRY.items() if eng == engine and t.find(engine, version))


def accepted_rows() -> tuple[Row[tuple[str, ...] | str], ...]:
    """The profile's ``architectures`` behaviour, derived from the registry: one row wherever it changes
    ('*' while the engine ignores the field)."""
    found: list[Row[tuple[str, ...] | str]] = []
    for engine in RELEASES:
        changes: dict[Version, list[Row[Any]]] = {}
        tables: tuple[Table[Any], ...] = (*REGISTRY.values(), ARCHITECTURE_READ)
        for t in tables:
            for row in t.rows_of(engine):
                changes.setdefault(row.start, []).append(row)
                if row.end is not None:  # a registration that ends (vLLM 0.34.0 removed P-EAGLE's names)
                    changes.setdefault(row.end, []).append(row)
        for start in sorted(changes):
            target = EngineVersion(engine, start)
            value: tuple[str, ...] | str = accepted(engine, start) if ARCHITECTURE_READ.value(target) else "*"
            registered = [r.source for r in changes[start] if isinstance(r.value, str)]
            read = [r.source for r in changes[start] if isinstance(r.value, bool)]
            source = "; ".join(dict.fromkeys(read if value == "*" or not registered else registered))
            found.append(Row(engine, str(start), value, source))
    return tuple(found)


def draft_class(engine: str, version: Version, architecture: str) -> DraftClass | None:
    """The class the architecture (after the engine's rewrite) builds at ``version``; None if unregistered."""
    registered = REGISTRY.get((engine, architecture))
    row = registered.find(engine, version) if registered is not None else None
    return CLASSES[(engine, row.value)] if row is not None else None


#: The architecture a fix names first for a family (both engines register it for their Llama class).
PREFERRED = {LLAMA: "LlamaForCausalLMEagle3"}


def _preferred(engine: str, family: str) -> str | None:
    """The architecture a fix names first; an engine's own first choice where it differs (its
    ``preferred_architectures``: LMDeploy sets its draft vocab only on the LlamaForCausalLM path)."""
    own = engine_named(engine).loading.preferred_architectures
    return (dict(own) if own is not None else PREFERRED).get(family)


def _family(engine: str, row: Row[str]) -> str:
    return CLASSES[(engine, row.value)].family


def family_architectures(engine: str, version: Version, family: str) -> tuple[str, ...]:
    """The architectures ``version`` registers whose class is of ``family`` (the preferred one first): the only
    names an architecture fix may offer a draft of that family."""
    names = []
    for (eng, arch), rows in REGISTRY.items():
        row = rows.find(engine, version) if eng == engine else None
        if row is not None and _family(engine, row) == family:
            names.append(arch)
    return tuple(sorted(names, key=lambda a: (a != _preferred(engine, family), a)))


def first_family_release(engine: str, family: str) -> tuple[str, str] | None:
    """The first release (and the architecture) from which ``engine`` registers a class of ``family``."""
    found = [(row.start, row.since, arch) for (eng, arch), rows in REGISTRY.items() if eng == engine
             for row in rows.rows_of(engine) if _family(engine, row) == family]
    if not found:
        return None
    _, since, arch = min(found, key=lambda item: (item[0], item[2] != _preferred(engine, family), item[2]))
    return since, arch


def arch_source(engine: str, architecture: str) -> str:
    """The source of the registry row for ``architecture`` in ``engine``, or a line saying there is none."""
    registered = REGISTRY.get((engine, architecture))
    return registered.rows[0].source if registered else f"{engine}: no registry row for {architecture}"


def speculators_class(model_type: str) -> str:
    """vllm transformers_utils/configs/speculators/algos.py update_eagle3 (0.24+): llama / qwen3."""
    return "Eagle3Qwen3ForCausalLM" if model_type == QWEN3 else "Eagle3LlamaForCausalLM"


#: Model types whose decoder attention normalises q and k per head: a draft of that type trained
#: with its own layer has q_norm/k_norm, which a Llama-class engine does not hold.
QK_NORM_MODEL_TYPES = ("qwen3", "qwen3_moe", "qwen3_next", "gemma3_text", "olmo2")
