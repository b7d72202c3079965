"""Property tests of the vocab-map contract: every correct map passes, every corruption is named."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_eagle3.rules.vocab_map import diagnose_vocab_map
from pytest_eagle3.testing.strategies import (
    CORRUPTIONS,
    CorruptedMap,
    VocabMap,
    corrupted_vocab_maps,
    full_vocab_maps,
    vocab_maps,
)


@given(vocab_maps())
def test_every_correct_map_passes(m: VocabMap) -> None:
    assert diagnose_vocab_map(m.d2t, m.t2d, m.vocab_size, m.draft_vocab_size) == []


@given(vocab_maps(with_t2d=True))
def test_correct_map_sends_each_draft_token_to_its_kept_target(m: VocabMap) -> None:
    assert m.d2t is not None
    targets = torch.arange(m.draft_vocab_size) + m.d2t
    assert torch.equal(targets, m.selected)


@given(corrupted_vocab_maps())
def test_every_corruption_fails_with_its_diagnosis(case: CorruptedMap) -> None:
    findings = diagnose_vocab_map(case.d2t, case.t2d, case.base.vocab_size, case.base.draft_vocab_size)
    codes = [f.code for f in findings]
    assert codes, f"{case.corruption} was not detected"
    assert codes[0] == case.diagnosis, f"{case.corruption}: expected {case.diagnosis}, got {codes}"
    assert findings[0].fix, "every diagnosis says how to fix it"


@settings(max_examples=15)
@given(st.sampled_from(sorted(CORRUPTIONS)).flatmap(lambda name: corrupted_vocab_maps(corruptions=(name,))))
def test_each_corruption_is_reachable(case: CorruptedMap) -> None:
    codes = [f.code for f in diagnose_vocab_map(case.d2t, case.t2d, case.base.vocab_size, case.base.draft_vocab_size)]
    assert codes[:1] == [case.diagnosis]


@given(full_vocab_maps(identity=True))
def test_full_vocab_identity_map_passes(case: tuple[torch.Tensor, int]) -> None:
    d2t, vocab = case
    assert diagnose_vocab_map(d2t, None, vocab, vocab) == []
    assert diagnose_vocab_map(None, None, vocab, vocab) == []


@given(full_vocab_maps(identity=False))
def test_full_vocab_permutation_is_flagged(case: tuple[torch.Tensor, int]) -> None:
    d2t, vocab = case
    assert [f.code for f in diagnose_vocab_map(d2t, None, vocab, vocab)] == ["full-vocab-nonidentity"]


def test_absolute_ids_message_names_the_wrong_target() -> None:
    selected = torch.tensor([3, 5, 9, 12])
    finding = diagnose_vocab_map(selected.clone(), _mask(selected, 20), 20, 4)[0]
    assert finding.code == "absolute-ids"
    assert "draft token 1 is served as target token 6 instead of 5" in finding.summary


def test_draft_vocab_of_first_ids_with_zero_offsets_is_correct() -> None:
    selected = torch.arange(4)
    assert diagnose_vocab_map(torch.zeros(4, dtype=torch.int64), _mask(selected, 10), 10, 4) == []


def _mask(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    mask = torch.zeros(vocab, dtype=torch.bool)
    mask[ids] = True
    return mask
