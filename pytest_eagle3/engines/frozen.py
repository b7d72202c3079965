"""A read-only dict for the plan's and the fact sheet's mappings: reads like a dict (JSON, equality,
repr), refuses every change, so a shared plan cannot be edited by whoever holds it."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenDict(dict[K, V]):
    """A dict that cannot change after it is built."""

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise TypeError("a frozen mapping cannot change: build a new one (dataclasses.replace on the plan)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment, unused-ignore]
    __ior__ = _refuse  # type: ignore[assignment, unused-ignore]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(map(repr, self.items()))))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict[K, V]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict[K, V]:
        return self


def freeze(value: Any) -> Any:
    """JSON-like data with every dict made a :class:`FrozenDict` (lists stay lists: config values keep their type)."""
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return [freeze(v) for v in value]
    return value
