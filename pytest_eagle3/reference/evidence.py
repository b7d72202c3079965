"""When a measured reading is evidence: it must lead by more than the noise of the measurement.

Each reading's mean acceptance length is a mean over ``drafts`` draft walks of the accepted
count ``a`` in 0..k; from the per-position rates ``P(a >= j)`` its variance is
``E[a^2] - E[a]^2`` with ``E[a] = sum_j P(a >= j)`` and ``E[a^2] = sum_j (2j - 1) P(a >= j)``.
Two readings' standard errors combine as independent (conservative: both are measured on the same
sequences). A reading is *confirmed* when it leads the runner-up by more than ``Z`` combined
standard errors and by at least ``MIN_LEAD``, and the draft reaches ``WEAK`` at all; otherwise the
measurement is *undecided* and every verdict keeps its assumption.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_eagle3.reference.acceptance import Acceptance

#: Standard errors the lead must exceed (3: a chance lead is rarer than 1 in 700).
Z = 3.0
#: Absolute floor on the lead, in accepted tokens (a huge sample must still show a real difference).
MIN_LEAD = 0.05
#: Below this mean acceptance length the best reading is too weak to tell readings apart.
WEAK = 1.1


def standard_error(acc: Acceptance) -> float:
    """Standard error of the mean acceptance length, from the per-position rates."""
    if acc.drafts <= 0:
        return math.inf
    rates = acc.per_position
    mean = sum(rates)
    square = sum((2 * j - 1) * p for j, p in enumerate(rates, 1))
    return math.sqrt(max(square - mean * mean, 0.0) / acc.drafts)


@dataclass(frozen=True)
class Decision:
    """The best reading, its lead over the runner-up, the noise, and whether that settles it."""

    best: Acceptance | None
    runner_up: Acceptance | None
    lead: float
    noise: float
    confirmed: bool
    reason: str

    @property
    def words(self) -> str:
        """The decision in words: the best reading, its figure, and the runner-up."""
        if self.best is None:
            return "nothing measured"
        head = f"{self.best.reading.label} {self.best.mean_acceptance_length:.2f}"
        if self.runner_up is None:
            return f"{head}, no other reading ({self.reason})"
        return (f"{head} leads {self.runner_up.reading.label} by {self.lead:.2f} "
                f"(noise {self.noise:.2f}: {self.reason})")


def decide(results: Sequence[Acceptance]) -> Decision:
    """``results`` best first. Confirmed only with a lead above the noise and a draft that is not weak."""
    if not results:
        return Decision(None, None, 0.0, 0.0, False, "undecided: no reading measured")
    best = results[0]
    runner = results[1] if len(results) > 1 else None
    if best.mean_acceptance_length < WEAK:
        return Decision(best, runner, 0.0, 0.0, False,
                        f"undecided: the draft is too weak to tell readings apart (< {WEAK:g})")
    if runner is None:
        return Decision(best, None, 0.0, 0.0, False, "undecided: a single reading")
    lead = best.mean_acceptance_length - runner.mean_acceptance_length
    noise = Z * math.hypot(standard_error(best), standard_error(runner))
    if lead > max(noise, MIN_LEAD):
        return Decision(best, runner, lead, noise, True, "confirmed")
    return Decision(best, runner, lead, noise, False, "undecided: the lead is within the noise")
