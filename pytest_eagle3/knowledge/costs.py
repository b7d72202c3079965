"""Costs on acceptance measured once, by an experiment in the repository, for deviations the static plan finds.

A habit or deviation that differs from what the engine does fails only where its cost is known to exceed
``--eagle3-max-loss``: priced with the target's weights by the simulation (``verdict.settle.price_deviations``),
or, without them, by a row here. Each row names the experiment that measured it (a script that builds the drafts
and runs the reference forward both ways), its setup, its date, and the precondition under which the figure
holds; a draft outside the precondition is not priced by the row (a note says what would price it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.producers.names import MODELOPT


@dataclass(frozen=True)
class RecordedCost:
    """What one deviation cost on acceptance in one experiment, and where the figure holds."""

    producer: str
    #: The simulated feed field that differs (``reference.simulate.Feed``), as the plan's assumptions name it.
    deviation: str
    #: Accepted tokens lost per step (the worst of the experiment's drafts).
    cost: float
    #: The figure holds for a first-layer norm weight whose largest / smallest magnitude is at most this.
    max_spread: float
    experiment: str
    setup: str
    measured_on: str
    #: The producer's code the experiment reproduces (release, file, function).
    source: str
    #: The experiment's figures, per draft.
    figures: str = ""

    @property
    def words(self) -> str:
        """'0.007 by scripts/price_modelopt_norm.py (setup, date)'."""
        return f"{self.cost:.3f} by {self.experiment} ({self.setup}; measured {self.measured_on})"


MODELOPT_EXTRA_NORM = RecordedCost(
    MODELOPT, "hidden_prenorm", 0.010, 1.358,
    "scripts/price_modelopt_norm.py --seeds 3",
    "3 drafts trained with ModelOpt's forward on examples/demo-target, served as vLLM feeds them",
    "2026-12-05",
    "nvidia-modelopt 0.47.0 torch/speculative/plugins/modeling_eagle.py EagleModule._eagle3_attention_forward_pre_hook "
    "(LlamaDecoderLayer.forward applies input_layernorm before the pre-hook's hidden_norm)",
    "drafts trained as hidden_norm(input_layernorm(fc output)) on the outputs of layers [1, 3, 4], predicted as "
    "vllm==0.33.0 feeds them (hidden_norm(fc output)); input_layernorm trained to spreads 1.352, 1.358, 1.325 (real "
    "ModelOpt heads: 0.98..1.03); costs 0.007, 0.010, -0.021 accepted tokens against 3.747, 3.729, 3.754 as trained; "
    "the extra norm moves the normalised state by 6.1%, 5.5%, 6.3% (relative L2)",
)

#: Every recorded cost.
COSTS: tuple[RecordedCost, ...] = (MODELOPT_EXTRA_NORM,)


def recorded_cost(producer: str, deviation: str, spread: float) -> RecordedCost | None:
    """The recorded cost of ``producer``'s ``deviation`` for a norm weight of this ``spread``, None where none holds."""
    return next((c for c in COSTS if (c.producer, c.deviation) == (producer, deviation) and spread <= c.max_spread),
                None)


def recorded_for(producer: str, deviation: str) -> RecordedCost | None:
    """The recorded cost of ``producer``'s ``deviation`` whatever its precondition (to say why it does not hold)."""
    return next((c for c in COSTS if (c.producer, c.deviation) == (producer, deviation)), None)
