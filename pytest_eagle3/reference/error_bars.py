"""Error bars of the predicted acceptance, from the recorded live comparisons.

``recorded_gaps.json`` (written by ``scripts/record_prediction_gaps.py`` from ``examples/vllm_acceptance.json``:
vLLM's own counters on the demo target, and the prediction for each run) holds one :class:`LiveComparison` per
(engine version, draft, set-up). An engine's error bar is the largest |predicted - live| recorded for it; an
engine with none recorded (and any tree: no live tree run is recorded) gets :data:`DEFAULT_ERROR`, said so.
Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pytest_eagle3.reference.draft_setting import DraftSetting

RECORD = Path(__file__).with_name("recorded_gaps.json")
#: The error bar where nothing is recorded: the largest recorded gap (0.142, vLLM's LLM class serving 16
#: requests in one batch), rounded up.
DEFAULT_ERROR = 0.15


@dataclass(frozen=True)
class LiveComparison:
    """One recorded live run against the prediction for it."""

    engine: str
    version: str
    draft: str
    setup: str
    setting: str
    predicted: float
    live: float
    source: str
    #: Tokens accepted at each draft position, and the drafts counted (the rates' denominator), on each side.
    predicted_accepted: tuple[int, ...] = ()
    live_accepted: tuple[int, ...] = ()
    predicted_drafts: int = 0
    live_drafts: int = 0

    @property
    def gap(self) -> float:
        """How far the prediction was from the live figure."""
        return abs(self.predicted - self.live)


@dataclass(frozen=True)
class ErrorBar:
    """± ``value`` on a predicted mean acceptance length, and what it rests on."""

    value: float
    basis: str
    recorded: int = 0

    def to_json(self) -> dict[str, Any]:
        """The error bar as the JSON report writes it."""
        return {"value": round(self.value, 4), "basis": self.basis, "recorded": self.recorded}


@cache
def comparisons() -> tuple[LiveComparison, ...]:
    """Every recorded comparison (none when the record is missing)."""
    if not RECORD.is_file():
        return ()
    data = json.loads(RECORD.read_text(encoding="utf-8"))
    return tuple(LiveComparison(**{**entry, "predicted_accepted": tuple(entry.get("predicted_accepted", ())),
                                   "live_accepted": tuple(entry.get("live_accepted", ()))})
                 for entry in data["comparisons"])


def error_bar(engine: str, setting: DraftSetting) -> ErrorBar:
    """The largest gap recorded for ``engine`` at a chain of the same kind; else the default, saying why."""
    if setting.tree:
        return ErrorBar(DEFAULT_ERROR, f"default: no live run of a tree ({setting.words()}) is recorded")
    found = [c for c in comparisons() if c.engine == engine]
    if not found:
        return ErrorBar(DEFAULT_ERROR, f"default: no live comparison recorded for {engine}")
    worst = max(found, key=lambda c: c.gap)
    versions = ", ".join(sorted({c.version for c in found}))
    return ErrorBar(worst.gap, f"largest gap of {len(found)} recorded {engine} runs ({versions}; {worst.setup}): "
                               f"{worst.draft} {worst.version} live {worst.live:.3f} vs predicted "
                               f"{worst.predicted:.3f} ({worst.source})", len(found))


def figure(value: float, bar: ErrorBar) -> str:
    """``3.67 ± 0.14``."""
    return f"{value:.2f} ± {bar.value:.2f}"
