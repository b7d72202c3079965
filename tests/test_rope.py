"""The reference forward's rope types against transformers' own rope init functions."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("transformers", reason="the comparison needs transformers (pip install -e '.[target]')")

import torch

from pytest_eagle3.reference.draft import ROPE_TYPES, DraftLoadError, rope_frequencies

HEAD_DIM = 32
MAX_POSITIONS = 4096
CASES: dict[str, dict[str, Any]] = {
    "linear": {"factor": 4.0},
    "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 512},
    "yarn": {"factor": 4.0, "original_max_position_embeddings": 1024},
    "yarn-mscale": {"factor": 40.0, "original_max_position_embeddings": 1024, "mscale": 1.0, "mscale_all_dim": 0.7,
                    "beta_fast": 16, "beta_slow": 2},
    "dynamic": {"factor": 2.0},
    "longrope": {"original_max_position_embeddings": 1024, "short_factor": [1.0 + i / 32 for i in range(16)],
                 "long_factor": [2.0 + i / 8 for i in range(16)]},
}


def _transformers(kind: str, params: dict[str, Any], seq_len: int | None) -> tuple[torch.Tensor, float]:
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope = {"rope_type": kind, "rope_theta": 10000.0, **params}
    config = LlamaConfig(hidden_size=64, num_attention_heads=2, head_dim=HEAD_DIM,
                         max_position_embeddings=MAX_POSITIONS, rope_parameters=rope)
    inv, factor = ROPE_INIT_FUNCTIONS[kind](config, torch.device("cpu"), seq_len=seq_len)
    return inv.double(), float(factor)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seq_len", [None, 100, 2 * MAX_POSITIONS])
def test_rope_matches_transformers(case: str, seq_len: int | None) -> None:
    kind = case.split("-")[0]
    params = CASES[case]
    theirs, their_factor = _transformers(kind, params, seq_len)
    scaling = {"rope_type": kind, **params, "max_position_embeddings": MAX_POSITIONS}
    ours, our_factor = rope_frequencies(HEAD_DIM, 10000.0, scaling, seq_len)
    assert ours.numpy() == pytest.approx(theirs.numpy(), rel=1e-5)
    assert our_factor == pytest.approx(their_factor, rel=1e-6)


def test_every_rope_type_is_covered() -> None:
    assert {c.split("-")[0] for c in CASES} | {"default"} == set(ROPE_TYPES)


def test_unsupported_rope_type_says_which() -> None:
    with pytest.raises(DraftLoadError, match="'mrope' is not supported.*default, linear, llama3, yarn, dynamic, longrope"):
        rope_frequencies(HEAD_DIM, 10000.0, {"rope_type": "mrope"})
