"""Aux-id fields and transforms: the ids a config names -> the layer inputs an engine requests, and back.

Layer-input indices as in :mod:`.aux_layers`: index j is the residual stream entering decoder layer j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_eagle3.engines.facts import lookup
from pytest_eagle3.knowledge.engines.shared import AuxField, Transform
from pytest_eagle3.producers.formats import OUTPUT_OF


def transform(rule: str, ids: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
    """Requested layer-input indices for configured ``ids`` under a profile's transform rule (ValueError: no such
    rule)."""
    try:
        return Transform(rule).apply(ids, layers)
    except ValueError:
        raise ValueError(f"unknown aux transform {rule!r}") from None


def trained_inputs(ids: Sequence[int], convention: str) -> tuple[int, ...]:
    """The layer inputs a draft was trained on: input-of ids as-is, output-of ids + 1."""
    shift = 1 if convention == OUTPUT_OF else 0
    return tuple(sorted({i + shift for i in ids}))


def _ids(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def field_text(field: AuxField) -> str:
    """A field as a message names it: ``dflash_config.target_layer_ids (+1)``."""
    return field.text()


def read_ids(config: Mapping[str, Any],
             fields: Sequence[AuxField]) -> tuple[AuxField | None, tuple[int, ...] | None]:
    """The first field in ``fields`` that holds ids, as the engine's resolver reads it (ids as written)."""
    return first_ids({field.path: _ids(lookup(config, field.path)) for field in fields}, fields)


def first_ids(written: Mapping[str, tuple[int, ...] | None],
              fields: Sequence[AuxField]) -> tuple[AuxField | None, tuple[int, ...] | None]:
    """The first field in ``fields`` whose path holds ids in ``written`` (path -> ids, the fact sheet's)."""
    for field in fields:
        ids = written.get(field.path)
        if ids:
            return field, ids
    return None, None


def inverse_transform(rule: str, trained: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
    """Non-negative ids the engine reads as exactly ``trained`` under ``rule``; None when no ids do (a
    conditional rule such as ``+1-if-first-is-1`` cannot be made to request some index sets)."""
    wanted, how = tuple(trained), Transform(rule)
    for offset in (1, 0) if how.may_add_one else (0,):
        ids = tuple(j - offset for j in wanted)
        if min(ids, default=0) >= 0 and how.apply(ids, layers) == wanted:
            return ids
    return None
