"""The drafting an acceptance figure is for: the chain length ``k`` and, for an engine that drafts a tree
(SGLang's EAGLE tree), its top-k per node and its number of verified tokens. Standard library only: the
options layer validates against it."""

from __future__ import annotations

from dataclasses import dataclass

#: Bound of --eagle3-topk: the simulation expands topk * topk children per step (cost), and SGLang's own
#: recipes stay far below it (server_args picks topk 1 or 4).
MAX_TOPK = 16


def max_draft_tokens(steps: int, topk: int) -> int:
    """The most verified tokens a tree can hold: the root plus every candidate SGLang keeps
    (``topk`` at the first step, ``topk * topk`` at each later one: sglang 0.5.23
    srt/speculative/eagle_utils.py ``organize_draft_results`` takes ``num_draft_token - 1`` of them)."""
    return 1 + topk + (steps - 1) * topk * topk


@dataclass(frozen=True)
class DraftSetting:
    """``steps`` draft tokens deep; ``topk`` > 1: SGLang's tree keeping ``draft_tokens`` verified tokens (the
    root included, SGLang's ``--speculative-num-draft-tokens``); a chain has ``steps + 1``."""

    steps: int
    topk: int = 1
    draft_tokens: int = 0

    @property
    def tree(self) -> bool:
        """Whether the engine drafts a tree (top-k above 1) rather than a chain."""
        return self.topk > 1

    @property
    def verified(self) -> int:
        """Tokens verified per step, the root included (SGLang's num_draft_tokens)."""
        return self.draft_tokens if self.tree and self.draft_tokens else self.steps + 1

    def chain(self) -> DraftSetting:
        """The chain of the same length (what an engine without a tree drafts)."""
        return DraftSetting(self.steps)

    def words(self) -> str:
        """``k=3`` for a chain, ``k=3, topk=4, 8 draft tokens`` for a tree."""
        if not self.tree:
            return f"k={self.steps}"
        return f"k={self.steps}, topk={self.topk}, {self.verified} draft tokens"
