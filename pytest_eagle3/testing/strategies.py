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

from collections.abc import Callable
from dataclasses import dataclass

import torch
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from pytest_eagle3.rules.vocab_map import build_maps
from pytest_eagle3.testing.corruptions import CATALOGUE

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


#: A corrupted map: (d2t, t2d), either absent.
Maps = tuple[torch.Tensor | None, torch.Tensor | None]
#: The Hypothesis form of a corruption: (draw, a correct map) -> the corrupted (d2t, t2d).
MapCorruption = Callable[[st.DrawFn, VocabMap], Maps]


# -- the Hypothesis form of each corruption of the catalogue: a drawn correct map, damaged ---------------
def _maps_absolute(draw: st.DrawFn, m: VocabMap) -> Maps:
    # one draft token: the id and the offset coincide; the first ids: offsets are zeros, no confusion
    assume(m.draft_vocab_size > 1 and not torch.equal(m.selected, torch.arange(m.draft_vocab_size)))
    return m.selected.clone(), m.t2d


def _maps_arange_default(draw: st.DrawFn, m: VocabMap) -> Maps:
    assume(m.draft_vocab_size >= 2)
    return torch.arange(m.draft_vocab_size, dtype=torch.int64), None


def _maps_all_zero(draw: st.DrawFn, m: VocabMap) -> Maps:
    assume(not torch.equal(m.selected, torch.arange(m.draft_vocab_size)))
    return torch.zeros(m.draft_vocab_size, dtype=torch.int64), m.t2d


def _maps_other_selection(draw: st.DrawFn, m: VocabMap) -> Maps:
    assert m.d2t is not None
    assume(bool(m.d2t.any()))  # an all-zero d2t beside a t2d that disagrees is reported as all-zero
    other = draw(st.sets(st.integers(0, m.vocab_size - 1), min_size=m.draft_vocab_size, max_size=m.draft_vocab_size))
    other_t = torch.tensor(sorted(other), dtype=torch.int64)
    assume(not torch.equal(other_t, m.selected))
    _, t2d = build_maps(other_t, m.vocab_size)
    return m.d2t, t2d


def _maps_defaults(draw: st.DrawFn, m: VocabMap) -> Maps:
    return torch.zeros(m.draft_vocab_size, dtype=torch.int64), torch.ones(m.vocab_size, dtype=torch.bool)


def _maps_out_of_range(draw: st.DrawFn, m: VocabMap) -> Maps:
    assert m.d2t is not None
    j = draw(st.integers(0, m.draft_vocab_size - 1))
    d2t = m.d2t.clone()
    d2t[j] += draw(st.sampled_from([m.vocab_size, -m.vocab_size]))
    return d2t, m.t2d


def _maps_duplicate(draw: st.DrawFn, m: VocabMap) -> Maps:
    assume(m.draft_vocab_size >= 2)
    assert m.d2t is not None
    j, k = draw(st.lists(st.integers(0, m.draft_vocab_size - 1), min_size=2, max_size=2, unique=True))
    d2t = m.d2t.clone()
    d2t[k] = (j + m.d2t[j]) - k
    if m.t2d is None:  # without t2d, a map whose values are distinct valid ids reads as absolute ids
        assume(torch.unique(d2t).numel() < d2t.numel() or bool(((d2t < 0) | (d2t >= m.vocab_size)).any()))
    else:
        assume(not torch.equal(d2t, m.selected))
    return d2t, m.t2d


def _maps_missing(draw: st.DrawFn, m: VocabMap) -> Maps:
    return None, m.t2d


def _maps_int32(draw: st.DrawFn, m: VocabMap) -> Maps:
    assert m.d2t is not None
    return m.d2t.to(torch.int32), m.t2d


def _maps_wrong_length(draw: st.DrawFn, m: VocabMap) -> Maps:
    assume(m.draft_vocab_size >= 2)
    assert m.d2t is not None
    return m.d2t[:-1].clone(), m.t2d


def _maps_t2d_extra_id(draw: st.DrawFn, m: VocabMap) -> Maps:
    assume(m.draft_vocab_size < m.vocab_size - 1)
    t2d = build_maps(m.selected, m.vocab_size)[1]
    free = torch.nonzero(~t2d).squeeze(1)
    t2d[free[draw(st.integers(0, free.numel() - 1))]] = True
    return m.d2t, t2d


#: Each catalogue corruption's Hypothesis form, by its name (``corruptions.CATALOGUE``).
MAP_FORMS: dict[str, MapCorruption] = {
    "absolute-ids": _maps_absolute,
    "arange-default": _maps_arange_default,
    "all-zero": _maps_all_zero,
    "t2d-from-other-selection": _maps_other_selection,
    "defaults-never-replaced": _maps_defaults,
    "out-of-range": _maps_out_of_range,
    "duplicate-targets": _maps_duplicate,
    "missing": _maps_missing,
    "int32": _maps_int32,
    "wrong-length": _maps_wrong_length,
    "t2d-extra-id": _maps_t2d_extra_id,
}


#: corruption name -> (how to apply it, the diagnosis code it must produce, needs t2d present); built
#: from the one corruption catalogue (``pytest_eagle3.testing.corruptions.CATALOGUE``).
CORRUPTIONS: dict[str, tuple[MapCorruption, str, bool | None]] = {
    c.name: (MAP_FORMS[c.name], c.diagnosis, c.needs_t2d) for c in CATALOGUE
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
