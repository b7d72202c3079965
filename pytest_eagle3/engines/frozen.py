"""Read-only containers for the plan's and the fact sheet's data: a dict and a list that read like
their builtins (JSON, equality, repr), refuse every change, so a shared plan cannot be edited by
whoever holds it; and :data:`JsonValue`, config data made of them."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar, Union

K = TypeVar("K")
V = TypeVar("V")


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError("a frozen mapping cannot change: build a new one (dataclasses.replace on the plan)")


def _refuse_list(*_: Any, **__: Any) -> NoReturn:
    raise TypeError("a frozen list cannot change: build a new one")


class FrozenDict(dict[K, V]):
    """A dict that cannot change after it is built."""

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(map(repr, self.items()))))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict[K, V]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict[K, V]:
        return self


class FrozenList(list[V]):
    """A list that cannot change after it is built (a config's JSON array: still a ``list``, same repr)."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse_list
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse_list

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(map(repr, self)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __copy__(self) -> FrozenList[V]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList[V]:
        return self


#: A JSON value as the fact sheet holds it: objects and arrays frozen.
JsonValue = Union[str, int, float, bool, None, "FrozenList[JsonValue]", "FrozenDict[str, JsonValue]"]


def freeze(value: object) -> JsonValue:
    """JSON data with every dict made a :class:`FrozenDict` and every list a :class:`FrozenList` (still a
    ``list``: config values keep their type)."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"not JSON data: {type(value).__name__}")


def freeze_object(value: object) -> FrozenDict[str, JsonValue]:
    """A JSON object frozen (an empty one for anything else)."""
    frozen = freeze(value) if isinstance(value, dict) else None
    return frozen if isinstance(frozen, FrozenDict) else FrozenDict()
