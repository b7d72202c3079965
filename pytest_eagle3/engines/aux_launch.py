"""Aux layers named by a launch setting, not by the draft config (behaviour ``aux_default`` launch-setting).

TensorRT-LLM never reads the draft's aux ids: ``speculative_config.eagle3_layers_to_capture`` (layer OUTPUTS)
names the layers, else ``{1, L//2 - 1, L - 4}``, and a target of 5 layers or fewer has no default at all.
What the launch gives arrives in ``EngineVersion.launch`` (``knowledge.launch_settings``); the fact sheet's
``default_inputs`` already holds the layer inputs it feeds. A fix here is a launch, never a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_eagle3.engines.plan_types import AuxPlan, Filing, describe_inputs
from pytest_eagle3.engines.profiles import Profile
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.launch_settings import LAYERS_PATH, captured_layers, launch_fix

LAUNCH_SETTING = "launch-setting"
#: TensorRT-LLM's default, as its own field description writes it (layer outputs).
DEFAULT_WORDS = "{1, L//2 - 1, L - 4} (layer outputs)"
#: The most target layers for which the default raises (eagle3.py: ``if self.num_layers <= 5``).
NO_DEFAULT_BELOW = 5


def launched(prof: Profile) -> bool:
    """Whether ``prof``'s engine takes its aux layers from a launch setting."""
    return prof.behaviours.aux_default == LAUNCH_SETTING


def how_read(prof: Profile, requested: Sequence[int] | None) -> str:
    """What the engine reads instead of the draft's ids, for a headline."""
    ids = captured_layers(prof.target)
    given = (f"{LAYERS_PATH} = {list(ids)} (layer outputs)" if ids is not None
             else f"no {LAYERS_PATH} at launch, so its default {DEFAULT_WORDS}")
    return (f"{prof.label} never reads the draft config's aux ids; it captures {given} -> inputs of layers "
            f"{list(requested or ())}")


def fix(trained: Sequence[int]) -> str | None:
    """The launch that feeds the layer inputs ``trained`` (setting ids = inputs - 1); None for the embeddings."""
    ids = [j - 1 for j in trained]
    return launch_fix(ids) if ids and min(ids) >= 0 else None


def no_default(out: Filing, prof: Profile, layers: int | None, trained: Sequence[int] | None) -> bool:
    """File the startup failure of the default on a target of <= 5 layers; True when filed."""
    if not launched(prof) or captured_layers(prof.target) is not None or layers is None or layers > NO_DEFAULT_BELOW:
        return False
    wanted = fix(trained) if trained else None
    out.refuse("aux_layers", Finding(
        "aux-no-default",
        f"{prof.label} has no default aux layers for a target of {layers} layers: ValueError 'Not enough hidden "
        "layers for default EAGLE3 capture' at startup",
        (Evidence(LAYERS_PATH, "not set at launch", f"the layers the draft was trained on ({describe_inputs(trained)})"),),
        wanted or f"launch with {LAYERS_PATH} naming the layers the draft was trained on",
        (f"rule: {prof.source('aux_default')}",),
    ))
    return True


def aux_fix(aux: AuxPlan) -> str:
    """The fix line of an aux-layers finding for a launch-setting engine."""
    wanted = fix(aux.trained or ())
    return wanted or (f"the draft was trained on layer inputs {list(aux.trained or ())}: input 0 (the embeddings) "
                      f"is no layer output, so no {LAYERS_PATH} feeds it")
