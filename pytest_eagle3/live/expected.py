"""The acceptance the plugin expects from an engine version: the one figure live runs are judged against.

It is ``engine.acceptance``'s prediction (the verdict pipeline's, :mod:`pytest_eagle3.verdict`):
the draft run the way that version's load plan feeds it. vLLM's CPU backend runs model runner V1,
which reads aux ids like the profile's other mode from 0.23 on (``Prediction.cpu_acceptance``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_eagle3.knowledge.releases import EngineVersion, in_known_range

if TYPE_CHECKING:
    from pytest_eagle3.reference.predict import Prediction


@dataclass(frozen=True)
class Expected:
    """Predicted acceptance for one engine version, and what it rests on."""

    mean_acceptance_length: float
    per_position: tuple[float, ...]
    reading: str
    basis: str
    as_trained: float | None = None
    costs: tuple[str, ...] = ()  # each deviation from training alone, with its cost: "aux layers ...: -0.98"


class NoExpectation(Exception):
    """Nothing to compare with; the message says why (unknown version, refused plan, no reference)."""


def expected_acceptance(prediction: Prediction | None, engine_version: EngineVersion, *,
                        cpu_backend: bool = False, missing: str = "") -> Expected:
    """What ``engine_version`` should reach: the verdict's ``prediction`` (``cpu_backend``: vLLM's CPU build runs
    the other runtime mode); :class:`NoExpectation` with ``missing`` (why there is no prediction) when None."""
    from pytest_eagle3.reference.prediction_findings import named_costs

    if not in_known_range(engine_version.engine, engine_version.version):
        raise NoExpectation(f"{engine_version.label} is outside the profiles' range: no prediction")
    if prediction is None:
        raise NoExpectation(missing or f"{engine_version.label}: no prediction")
    acceptance = prediction.cpu_acceptance if cpu_backend else prediction.acceptance
    if acceptance is None:
        raise NoExpectation(prediction.unavailable or f"{engine_version.label}: no prediction")
    mode = ", CPU backend" if cpu_backend else ""
    deviations = prediction.cpu_deviations if cpu_backend else prediction.deviations
    return Expected(acceptance.mean_acceptance_length, tuple(acceptance.per_position), acceptance.reading.label,
                    f"engine.acceptance for {engine_version.label}{mode} ({prediction.basis})",
                    prediction.training.acceptance.mean_acceptance_length,
                    tuple(named_costs(deviations)))


def live_prompts(target: str, prompts_path: str | None = None) -> list[list[int]]:
    """The prompts the reference uses, as token ids, without loading the target's weights."""
    from pytest_eagle3.reference.acceptance import Target, load_prompts

    root = Path(target)
    root = root.parent if root.is_file() else root
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    vocab = int(config.get("text_config", config).get("vocab_size", config.get("vocab_size", 0)))
    tokenizer = None
    from pytest_eagle3.live.server import has_tokenizer

    if has_tokenizer(str(root)):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
    prompts, _ = load_prompts(Target(None, tokenizer, 0, vocab, "cpu"), prompts_path)
    return prompts
