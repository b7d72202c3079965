"""Public Hypothesis strategies: vocab masks, the maps built from them, and their corruptions.

Use them in your own tests::

    from hypothesis import given
    from pytest_eagle3.testing.strategies import corrupted_vocab_maps

    @given(corrupted_vocab_maps())
    def test_my_exporter_rejects(case): ...

Profiles ``eagle3-dev`` and ``eagle3-ci`` are chosen with Hypothesis' own
``--hypothesis-profile`` option.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from pytest_eagle3.rules.vocab_map import build_maps
from pytest_eagle3.testing.corruptions import CATALOGUE, MapCorruption

MAX_VOCAB = 1024
MAX_DRAFT_VOCAB = 96


def register_profiles() -> None:
    """Register ``eagle3-dev`` (quick) and ``eagle3-ci`` (deterministic, thorough)."""
    settings.register_profile("eagle3-dev", max_examples=25, deadline=None)
    settings.register_profile(
        "eagle3-ci",
        max_examples=200,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )


@dataclass(frozen=True)
class VocabMap:
    """A draft vocab: the target ids it keeps, and the maps a correct producer saves."""

    vocab_size: int
    draft_vocab_size: int
    selected: torch.Tensor
    d2t: torch.Tensor | None
    t2d: torch.Tensor | None


@dataclass(frozen=True)
class CorruptedMap:
    """A vocab map after one named corruption, and the diagnosis code it must produce."""

    corruption: str
    diagnosis: str
    base: VocabMap
    d2t: torch.Tensor | None
    t2d: torch.Tensor | None


@st.composite
def vocab_sizes(draw: st.DrawFn, min_draft: int = 1, full_vocab: bool = False) -> tuple[int, int]:
    """``(vocab_size, draft_vocab_size)`` with draft <= vocab (equal when ``full_vocab``)."""
    draft = draw(st.integers(min_draft, MAX_DRAFT_VOCAB))
    vocab = draft if full_vocab else draw(st.integers(draft + 1, max(draft + 1, MAX_VOCAB)))
    return vocab, draft


@st.composite
def vocab_masks(draw: st.DrawFn, min_draft: int = 1) -> tuple[torch.Tensor, int]:
    """A bool mask over the target vocab with exactly ``draft_vocab_size`` True entries."""
    vocab, draft = draw(vocab_sizes(min_draft=min_draft))
    ids = draw(st.sets(st.integers(0, vocab - 1), min_size=draft, max_size=draft))
    mask = torch.zeros(vocab, dtype=torch.bool)
    mask[torch.tensor(sorted(ids), dtype=torch.int64)] = True
    return mask, draft


@st.composite
def vocab_maps(draw: st.DrawFn, min_draft: int = 1, with_t2d: bool | None = None) -> VocabMap:
    """A correct map as sorted producers save it (or, without t2d, in ModelOpt's frequency order)."""
    mask, draft = draw(vocab_masks(min_draft=min_draft))
    selected = torch.nonzero(mask).squeeze(1)
    d2t, t2d = build_maps(selected, mask.numel())
    keep_t2d = draw(st.booleans()) if with_t2d is None else with_t2d
    # Without t2d, a vocab of exactly the first ids (zero offsets) cannot be told apart from a map
    # that was never filled in; the contract reports it, so a "correct" map avoids it.
    assume(keep_t2d or not torch.equal(selected, torch.arange(draft)))
    if not keep_t2d and draw(st.booleans()):
        order = torch.tensor(draw(st.permutations(range(draft))), dtype=torch.int64)
        d2t = selected[order] - torch.arange(draft)
    return VocabMap(mask.numel(), draft, selected, d2t, t2d if keep_t2d else None)


#: corruption name -> (how to apply it, the diagnosis code it must produce, needs t2d present); built
#: from the one corruption catalogue (``pytest_eagle3.testing.corruptions.CATALOGUE``).
CORRUPTIONS: dict[str, tuple[MapCorruption, str, bool | None]] = {
    c.name: (c.on_maps, c.diagnosis, c.needs_t2d) for c in CATALOGUE if c.on_maps is not None
}


@st.composite
def corrupted_vocab_maps(draw: st.DrawFn, corruptions: tuple[str, ...] = tuple(CORRUPTIONS)) -> CorruptedMap:
    """A correct map with one named corruption applied."""
    name = draw(st.sampled_from(corruptions))
    corrupt, diagnosis, needs_t2d = CORRUPTIONS[name]
    base = draw(vocab_maps(with_t2d=needs_t2d))
    d2t, t2d = corrupt(draw, base)
    return CorruptedMap(name, diagnosis, base, d2t, t2d)


@st.composite
def full_vocab_maps(draw: st.DrawFn, identity: bool = True) -> tuple[torch.Tensor, int]:
    """``(d2t, vocab)`` for a draft that keeps the whole vocab: zeros, or a non-identity permutation."""
    vocab, _ = draw(vocab_sizes(min_draft=2, full_vocab=True))
    if identity:
        return torch.zeros(vocab, dtype=torch.int64), vocab
    order = draw(st.permutations(range(vocab)))
    assume(list(order) != list(range(vocab)))
    return torch.tensor(order, dtype=torch.int64) - torch.arange(vocab), vocab
