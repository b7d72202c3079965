"""What a fix did: each change with its reason and rule, and why a draft is refused."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    """One edit of the copy: ``kind`` (config, rename, tensor, drop), what changed, why, and the rule behind it."""

    kind: str
    what: str
    why: str
    engines: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The change as ``eagle3-fix.json`` records it."""
        out = asdict(self)
        out["engines"] = list(self.engines)
        return out


class RepairRefused(Exception):
    """A draft a copy cannot fix, with the reason (one line per problem)."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons

    def render(self) -> str:
        """The refusal as text: nothing written, and each reason."""
        head = "fix: refused, nothing written:"
        return "\n".join([head, *(f"  - {r}" for r in self.reasons)])
