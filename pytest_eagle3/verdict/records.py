"""The records the verdict's steps hand on: the target side a checkpoint is judged with, and one engine version's
frozen :class:`Forecast` (plain frozen data, below the pipeline that makes them and the contracts that read them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_eagle3.engines.plan_types import LoadPlan, Measured
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.reference.predict import Prediction


@dataclass(frozen=True)
class TargetSide:
    """What the verdict knows of the target: its config (None when not given), where its weights are, a dump.

    ``path`` is what the user gave (a model directory or its ``config.json``); ``hidden_states`` a dump of
    the target's side (``python -m pytest_eagle3 capture``) used in place of running it here.
    """

    path: str | None = None
    hidden_states: str | None = None

    @property
    def given(self) -> bool:
        """Whether a target was given."""
        return self.path is not None


@dataclass(frozen=True)
class Forecast:
    """What one engine version will do with one checkpoint, and what it is predicted to reach.

    ``plan`` is the judged and settled load plan every engine contract reads; ``predictions`` the
    prediction under each plausible aux-id reading (label -> prediction, the reported one first; empty
    without a predictor, and ``no_prediction`` says why).
    """

    engine: EngineVersion
    plan: LoadPlan
    measured: Measured | None = None
    predictions: dict[str, Prediction] = field(default_factory=dict)
    no_prediction: str = ""
    #: Why the given target is not this draft's (target.consistent's rule), "" when it is or none was given:
    #: the plan was then judged as if no target were given.
    target_mismatch: str = ""
    #: With a mismatched target: the plan areas whose verdict the target would have changed (not run).
    target_areas: frozenset[str] = frozenset()
    #: The target side it was made with (``Pipeline.side_for``: the one given, else the one the config names).
    side: TargetSide = TargetSide()

    @property
    def prediction(self) -> Prediction | None:
        """The reported prediction (the first reading's), or None."""
        return next(iter(self.predictions.values()), None)

    @property
    def outcome(self) -> str:
        """The plan's outcome: "loads", "loads with loss" or "refused"."""
        return self.plan.outcome

