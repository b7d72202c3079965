"""Words on screen: a count and its noun, in the right number ("1 tensor", "2 tensors")."""

from __future__ import annotations

#: Nouns whose plural is not the singular plus "s".
IRREGULAR = {"entry": "entries", "dummy": "dummies", "this": "these"}


def verb(count: int, one: str, many: str) -> str:
    """The verb agreeing with ``count`` things: ``one`` for 1, else ``many`` ("is" / "are")."""
    return one if count == 1 else many


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, plural unless the count is 1 (``many``: the plural when not ``noun + "s"``)."""
    return f"{count} {noun if count == 1 else many or IRREGULAR.get(noun, noun + 's')}"
