"""The corruption catalogue: every way a producer's vocab map goes wrong, once.

Each :class:`Corruption` carries the ``vocab.map`` diagnosis it must produce and up to two forms of
the same damage: ``on_draft`` changes a synthetic checkpoint's tensors before they are written (a
file fault in :data:`pytest_eagle3.testing.faults.FAULTS`, named by ``fault``), ``on_maps`` draws
the damage for a Hypothesis-generated map (:data:`pytest_eagle3.testing.strategies.CORRUPTIONS`,
named by ``name``). Both tables are built from :data:`CATALOGUE`; nothing here imports torch or
Hypothesis until a corruption is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from pytest_eagle3.producers.formats import MODELOPT
from pytest_eagle3.testing.layouts import PRODUCERS, WITH_T2D

if TYPE_CHECKING:
    import torch
    from hypothesis.strategies import DrawFn

    from pytest_eagle3.testing.faults import Draft
    from pytest_eagle3.testing.strategies import VocabMap

Maps = tuple[Optional["torch.Tensor"], Optional["torch.Tensor"]]
#: The Hypothesis form: (draw, a correct map) -> the corrupted (d2t, t2d).
MapCorruption = Callable[["DrawFn", "VocabMap"], Maps]
#: The file form: changes a draft's tensors in place before they are written.
DraftCorruption = Callable[["Draft"], None]

VOCAB_MAP = "vocab.map"


@dataclass(frozen=True)
class Corruption:
    """One vocab-map corruption: the diagnosis it must produce and its two forms."""

    name: str
    diagnosis: str
    description: str
    #: The file fault's name in FAULTS; None when the damage has no checkpoint form.
    fault: str | None
    on_draft: DraftCorruption | None
    on_maps: MapCorruption | None
    #: The Hypothesis base map must have t2d (True), must not (False), or either (None).
    needs_t2d: bool | None = None
    #: Layouts the file form applies to.
    producers: tuple[str, ...] = PRODUCERS
    #: The tensor the file form changes; a layout without it is left as it is.
    needs: str = "d2t"
    contract: str = VOCAB_MAP


# -- file forms: a synthetic draft's tensors --------------------------------------------------
def _draft_absolute(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.sort(d.targets()).values if d.spec.producer != MODELOPT else d.targets()


def _draft_all_zero(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.zeros_like(d.tensors["d2t"])


def _draft_other_selection(d: Draft) -> None:
    import torch

    from pytest_eagle3.testing.tensors import generator

    dv = d.spec.draft_vocab_size
    other = torch.sort(torch.randperm(d.spec.vocab_size, generator=generator(d.spec.seed + 7))[:dv]).values
    d.tensors["d2t"] = other - torch.arange(dv)


def _draft_defaults(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.zeros_like(d.tensors["d2t"])
    d.tensors["t2d"] = torch.ones(d.spec.vocab_size, dtype=torch.bool)


def _draft_out_of_range(d: Draft) -> None:
    bad = d.tensors["d2t"].clone()
    bad[-1] = d.spec.vocab_size  # target = dv - 1 + v >= v
    d.tensors["d2t"] = bad


def _draft_duplicates(d: Draft) -> None:
    dup = d.tensors["d2t"].clone()
    dup[1] = d.targets()[0] - 1
    d.tensors["d2t"] = dup


def _draft_missing(d: Draft) -> None:
    d.tensors.pop("d2t")
    d.tensors.pop("t2d", None)


def _draft_int32(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = d.tensors["d2t"].to(torch.int32)


def _draft_wrong_length(d: Draft) -> None:
    d.tensors["d2t"] = d.tensors["d2t"][: d.spec.draft_vocab_size // 2].clone()


def _draft_t2d_extra_id(d: Draft) -> None:
    import torch

    t2d = d.tensors["t2d"].clone()
    t2d[int(torch.nonzero(~t2d)[0])] = True
    d.tensors["t2d"] = t2d


# -- Hypothesis forms: a drawn correct map ------------------------------------------------------
def _maps_absolute(draw: DrawFn, m: VocabMap) -> Maps:
    import torch
    from hypothesis import assume

    # one draft token: the id and the offset coincide; the first ids: offsets are zeros, no confusion
    assume(m.draft_vocab_size > 1 and not torch.equal(m.selected, torch.arange(m.draft_vocab_size)))
    return m.selected.clone(), m.t2d


def _maps_arange_default(draw: DrawFn, m: VocabMap) -> Maps:
    import torch
    from hypothesis import assume

    assume(m.draft_vocab_size >= 2)
    return torch.arange(m.draft_vocab_size, dtype=torch.int64), None


def _maps_all_zero(draw: DrawFn, m: VocabMap) -> Maps:
    import torch
    from hypothesis import assume

    assume(not torch.equal(m.selected, torch.arange(m.draft_vocab_size)))
    return torch.zeros(m.draft_vocab_size, dtype=torch.int64), m.t2d


def _maps_other_selection(draw: DrawFn, m: VocabMap) -> Maps:
    import torch
    from hypothesis import assume
    from hypothesis import strategies as st

    from pytest_eagle3.rules.vocab_map import build_maps

    assert m.d2t is not None
    assume(bool(m.d2t.any()))  # an all-zero d2t beside a t2d that disagrees is reported as all-zero
    other = draw(st.sets(st.integers(0, m.vocab_size - 1), min_size=m.draft_vocab_size, max_size=m.draft_vocab_size))
    other_t = torch.tensor(sorted(other), dtype=torch.int64)
    assume(not torch.equal(other_t, m.selected))
    _, t2d = build_maps(other_t, m.vocab_size)
    return m.d2t, t2d


def _maps_defaults(draw: DrawFn, m: VocabMap) -> Maps:
    import torch

    return torch.zeros(m.draft_vocab_size, dtype=torch.int64), torch.ones(m.vocab_size, dtype=torch.bool)


def _maps_out_of_range(draw: DrawFn, m: VocabMap) -> Maps:
    from hypothesis import strategies as st

    assert m.d2t is not None
    j = draw(st.integers(0, m.draft_vocab_size - 1))
    d2t = m.d2t.clone()
    d2t[j] += draw(st.sampled_from([m.vocab_size, -m.vocab_size]))
    return d2t, m.t2d


def _maps_duplicate(draw: DrawFn, m: VocabMap) -> Maps:
    import torch
    from hypothesis import assume
    from hypothesis import strategies as st

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


def _maps_missing(draw: DrawFn, m: VocabMap) -> Maps:
    return None, m.t2d


def _maps_int32(draw: DrawFn, m: VocabMap) -> Maps:
    import torch

    assert m.d2t is not None
    return m.d2t.to(torch.int32), m.t2d


def _maps_wrong_length(draw: DrawFn, m: VocabMap) -> Maps:
    from hypothesis import assume

    assume(m.draft_vocab_size >= 2)
    assert m.d2t is not None
    return m.d2t[:-1].clone(), m.t2d


def _maps_t2d_extra_id(draw: DrawFn, m: VocabMap) -> Maps:
    import torch
    from hypothesis import assume
    from hypothesis import strategies as st

    from pytest_eagle3.rules.vocab_map import build_maps

    assume(m.draft_vocab_size < m.vocab_size - 1)
    t2d = build_maps(m.selected, m.vocab_size)[1]
    free = torch.nonzero(~t2d).squeeze(1)
    t2d[free[draw(st.integers(0, free.numel() - 1))]] = True
    return m.d2t, t2d


#: Every vocab-map corruption, in the order ``synth --list-faults`` prints the file faults. Sources of the
#: real-world cases are in each description.
CATALOGUE: tuple[Corruption, ...] = (
    Corruption("absolute-ids", "absolute-ids", "d2t stores absolute target ids (verl-SpeCo#67)",
               "d2t-absolute", _draft_absolute, _maps_absolute, needs_t2d=True),
    Corruption("arange-default", "absolute-ids", "d2t left as arange(draft vocab), no t2d (never filled in)",
               None, None, _maps_arange_default),
    Corruption("all-zero", "all-zero", "d2t all zero with a reduced vocab (NeMo Automodel#2447)",
               "d2t-all-zero", _draft_all_zero, _maps_all_zero),
    Corruption("t2d-from-other-selection", "t2d-mismatch", "d2t and t2d from different selections (data-prep bug)",
               "d2t-t2d-mismatch", _draft_other_selection, _maps_other_selection, needs_t2d=True,
               producers=WITH_T2D),
    Corruption("defaults-never-replaced", "defaults-never-replaced",
               "SpecForge default buffers saved: t2d all True, d2t zeros",
               "t2d-defaults", _draft_defaults, _maps_defaults, producers=WITH_T2D),
    Corruption("out-of-range", "out-of-range", "d2t maps past the target vocab",
               "d2t-out-of-range", _draft_out_of_range, _maps_out_of_range),
    Corruption("duplicate-targets", "duplicate-targets", "two draft tokens map to one target token",
               "d2t-duplicates", _draft_duplicates, _maps_duplicate, producers=(MODELOPT,)),
    Corruption("missing", "missing-map", "reduced vocab with no d2t in the checkpoint",
               "d2t-missing", _draft_missing, _maps_missing),
    Corruption("int32", "d2t-dtype", "d2t saved as int32", "d2t-int32", _draft_int32, _maps_int32),
    Corruption("wrong-length", "d2t-length", "d2t cached for another draft vocab size (SpecForge#602)",
               "d2t-wrong-length", _draft_wrong_length, _maps_wrong_length),
    Corruption("t2d-extra-id", "t2d-count", "t2d marks more ids than the draft vocab",
               "t2d-wrong-count", _draft_t2d_extra_id, _maps_t2d_extra_id, needs_t2d=True, producers=WITH_T2D,
               needs="t2d"),
)
