"""Aux-id fields and transforms: the ids a config names -> the layer inputs an engine requests, and back.

Layer-input indices as in :mod:`.aux_layers`: index j is the residual stream entering decoder layer j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_eagle3.engines.facts import lookup
from pytest_eagle3.producers.formats import OUTPUT_OF


def transform(rule: str, ids: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
    """Requested layer-input indices for configured ``ids`` under a profile's transform rule."""
    if rule == "+1":
        return tuple(i + 1 for i in ids)
    if rule == "as-is":
        return tuple(ids)
    if rule == "as-is-at-least-1":  # mlx-vlm: the output of layer max(id - 1, 0)
        return tuple(max(i, 1) for i in ids)
    if rule == "+1-if-first-is-1":
        return tuple(i + 1 for i in ids) if ids and ids[0] == 1 else tuple(ids)
    if rule == "+1-unless-max-is-L":
        if layers is None:
            return None
        return tuple(ids) if ids and max(ids) == layers else tuple(i + 1 for i in ids)
    raise ValueError(f"unknown aux transform {rule!r}")


def trained_inputs(ids: Sequence[int], convention: str) -> tuple[int, ...]:
    """The layer inputs a draft was trained on: input-of ids as-is, output-of ids + 1."""
    shift = 1 if convention == OUTPUT_OF else 0
    return tuple(sorted({i + shift for i in ids}))


def _ids(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def id_field(spec: str) -> tuple[str, int]:
    """(config path, what the engine adds to each id read there) of a profile's aux-id field:
    ``dflash_config.target_layer_ids+1`` is read from ``dflash_config.target_layer_ids``, plus 1."""
    path, _, shift = spec.partition("+")
    return path, int(shift or 0)


def field_text(spec: str) -> str:
    """A field as a message names it: ``dflash_config.target_layer_ids (+1)``."""
    path, shift = id_field(spec)
    return f"{path} (+{shift})" if shift else path


def read_ids(config: Mapping[str, Any], fields: Sequence[str]) -> tuple[str | None, tuple[int, ...] | None]:
    """The first field in ``fields`` that holds ids, as the engine's resolver reads it (ids as written)."""
    return first_ids({id_field(name)[0]: _ids(lookup(config, id_field(name)[0])) for name in fields}, fields)


def first_ids(written: Mapping[str, tuple[int, ...] | None],
              fields: Sequence[str]) -> tuple[str | None, tuple[int, ...] | None]:
    """The first field in ``fields`` whose path holds ids in ``written`` (path -> ids, the fact sheet's)."""
    for name in fields:
        ids = written.get(name.partition("+")[0])
        if ids:
            return name, ids
    return None, None


def inverse_transform(rule: str, trained: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
    """Non-negative ids the engine reads as exactly ``trained`` under ``rule``; None when no ids do (a
    conditional rule such as ``+1-if-first-is-1`` cannot be made to request some index sets)."""
    wanted = tuple(trained)
    for offset in (1, 0) if rule.startswith("+1") else (0,):
        ids = tuple(j - offset for j in wanted)
        if min(ids, default=0) >= 0 and transform(rule, ids, layers) == wanted:
            return ids
    return None
