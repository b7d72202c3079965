"""Which target layers a draft was trained on, searched beyond the readings of its config's ids.

The reference tries the config's ids under each convention (``acceptance.TRIED_OFFSETS``): enough when the config
names the training layers, blind when it names others (a stale export, a hand edit, ids copied from another
target). The search measures layer sets the way the reference measures a reading (the simulator's acceptance of
the draft as trained, fed those layer inputs), starting from the best of the config's readings and the engines'
default sets, then swapping one layer of the set for another while a swap gains: a hill climb in which every step
is one measurement, bounded by :data:`MAX_SETS`. Sets are ascending, as every engine captures them (in the order
its decoder runs the layers).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_eagle3 import progress
from pytest_eagle3.producers.formats import default_aux_inputs
from pytest_eagle3.reference.acceptance import Acceptance
from pytest_eagle3.reference.evidence import WEAK, Decision, decide
from pytest_eagle3.reference.simulate import FC_BYPASSED
from pytest_eagle3.reference.targets.source import available_layers

if TYPE_CHECKING:
    from pytest_eagle3.reference.predict import DraftPredictor

#: At most this many layer sets are measured (the config's readings not counted). On the bundled 8-layer demo
#: target a search from the wrong ids climbs in 3 swaps and measures about 45 of the 84 sets
#: (benchmarks/bench_fix.py); a 32-layer target's rounds measure 90 sets each.
MAX_SETS = 240


@dataclass(frozen=True)
class LayerSearch:
    """The best layer set found, the runner-up, and how they compare with the config's own ids at their best."""

    best: Acceptance
    runner_up: Acceptance | None
    #: The best reading of the config's ids (the draft's own best as its config names the layers).
    own: Acceptance
    measured: int
    possible: int
    #: The climb stopped at a set no single swap improves (False: :data:`MAX_SETS` ended it first).
    complete: bool
    #: The best set against the config's own best: whether it leads by more than the noise.
    decision: Decision

    @property
    def found(self) -> bool:
        """The search found layers that beat every reading of the config's ids by more than the noise."""
        return self.decision.confirmed and self.inputs != tuple(sorted(self.own.reading.indices))

    @property
    def inputs(self) -> tuple[int, ...]:
        """The best set's layer inputs (HF ``hidden_states`` indices)."""
        return self.best.reading.indices

    @property
    def words(self) -> str:
        """'searched 45 of 84 layer sets: layer inputs [3, 5, 6] reach 3.67, 1.66 above the config's ids at their
        best (input-of [0,1,2] 2.01); runner-up [3, 5, 8] 3.62, within the noise'."""
        best, own = self.best.mean_acceptance_length, self.own.mean_acceptance_length
        bound = "" if self.complete else f", stopped at the bound of {MAX_SETS}"
        text = (f"searched {self.measured} of {self.possible} layer sets{bound}: layer inputs {list(self.inputs)} "
                f"reach {best:.2f}, ")
        if self.inputs == tuple(sorted(self.own.reading.indices)):
            text += f"the config's ids as read ({self.own.reading.label}): no other set measured beats them"
        else:
            noise = "" if self.decision.confirmed else ", within the noise"
            text += f"{best - own:.2f} above the config's ids at their best ({self.own.reading.label} {own:.2f}{noise})"
        if self.runner_up is not None:
            close = "" if decide([self.best, self.runner_up]).confirmed else ", within the noise"
            text += (f"; runner-up {list(self.runner_up.reading.indices)} "
                     f"{self.runner_up.mean_acceptance_length:.2f}{close}")
        return text


def search_layers(predictor: DraftPredictor, limit: int = MAX_SETS) -> LayerSearch | None:
    """Search the layer sets ``predictor``'s draft could have been trained on; None where there is nothing to
    search (fc bypassed, a draft too weak to tell sets apart, or no set besides the config's)."""
    simulator, training = predictor.simulator, predictor.training
    own = training.decision.best
    base = training.feed
    if base.fc == FC_BYPASSED or own is None or own.mean_acceptance_length < WEAK:
        return None
    count = len(base.indices)
    available = available_layers(simulator.target.runs)
    layers = sorted(i for i in range(simulator.target.layers + 1) if available is None or i in available)
    if len(layers) <= count:
        return None
    measured: dict[tuple[int, ...], Acceptance] = {}

    def measure(sets: Iterable[tuple[int, ...]]) -> list[Acceptance]:
        todo = [s for s in dict.fromkeys(sets) if s not in measured][: max(limit - len(measured), 0)]
        for indices in progress.counted(todo, "searching the training layers, set"):
            got = simulator.acceptance(dataclasses.replace(base, indices=indices))
            measured[indices] = dataclasses.replace(got, reading=dataclasses.replace(got.reading, ids=indices))
        return [measured[s] for s in dict.fromkeys(sets) if s in measured]

    mine = tuple(sorted(own.reading.indices))
    seeds = [mine]
    defaults = default_aux_inputs(simulator.target.layers)
    seeds += [tuple(i + shift for i in defaults) for shift in (0, 1)] if len(defaults) == count else []
    seeds = [s for s in seeds if len(set(s)) == count and set(s) <= set(layers)]
    current = max(measure(seeds), key=_rank, default=None)
    complete = current is not None
    while current is not None:
        here = current.reading.indices
        swaps = [tuple(sorted({*here} - {out} | {new})) for out in here for new in layers if new not in here]
        got = measure(swaps)
        if len(got) < len(dict.fromkeys(swaps)):
            complete = False
        step = max(got, key=_rank, default=None)
        if step is None or step.mean_acceptance_length <= current.mean_acceptance_length:
            break
        current = step
    if current is None:
        return None
    ranked = sorted(measured.values(), key=_rank, reverse=True)
    best = ranked[0]
    runner = ranked[1] if len(ranked) > 1 else None
    # the config's best reading, measured on the same feed as the sets (its label kept: how the ids were read)
    if mine in measured:
        own = dataclasses.replace(measured[mine], reading=own.reading)
    versus = decide([best, own]) if best.reading.indices != mine else decide(ranked[:2])
    return LayerSearch(best, runner, own, len(measured), math.comb(len(layers), count), complete, versus)


def _rank(acceptance: Acceptance) -> tuple[float, tuple[int, ...]]:
    """Higher acceptance first; among equals, the lower layers (deterministic)."""
    return acceptance.mean_acceptance_length, tuple(-i for i in acceptance.reading.indices)
