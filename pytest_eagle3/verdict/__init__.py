"""One verdict pipeline: checkpoint x engine version x target side -> a frozen verdict (measure, judge,
settle, predict) and a judgement (every contract's outcome). Every command and every contract asks it;
nothing else builds a load plan.

The names below are imported on first use: the idle plugin imports ``verdict.report`` in every pytest run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_eagle3.verdict.pipeline import Pipeline, forecast, pipeline_for, predict_acceptance
    from pytest_eagle3.verdict.records import Forecast, TargetSide
    from pytest_eagle3.verdict.settings import RunSettings

__all__ = ["Forecast", "Pipeline", "RunSettings", "TargetSide", "forecast", "pipeline_for", "predict_acceptance"]
_HOME = {"RunSettings": "pytest_eagle3.verdict.settings", "TargetSide": "pytest_eagle3.verdict.records",
         "Forecast": "pytest_eagle3.verdict.records"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME.get(name, "pytest_eagle3.verdict.pipeline")), name)
