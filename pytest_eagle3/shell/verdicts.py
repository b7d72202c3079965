"""The run's verdict pipeline, held in ``config.stash``: every fixture, contract and live check asks it.

Imported in every pytest run (by the fixtures): the pipeline itself is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.shell.contract import require_config, require_tensors
from pytest_eagle3.shell.options import is_xdist_worker, settings

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict import Forecast, Pipeline, TargetSide

PIPELINE_KEY = pytest.StashKey["Pipeline"]()


def pipeline(config: pytest.Config) -> Pipeline:
    """The run's pipeline, built from the options on first use: one target run for every engine and checkpoint."""
    from pytest_eagle3.verdict import pipeline_for

    if PIPELINE_KEY not in config.stash:
        built = config.stash[PIPELINE_KEY] = pipeline_for(settings(config))
        if is_xdist_worker(config):  # a pytest-xdist worker: the controller's verdicts and target pass
            from pytest_eagle3.shell.shared_pass import adopt_verdicts, share

            adopt_verdicts(config, built)
            share(config, built.passes)
    return config.stash[PIPELINE_KEY]


def target_side(config: pytest.Config) -> TargetSide:
    """The target as the options give it: its path and a dump of its side."""
    from pytest_eagle3.verdict import TargetSide

    options = settings(config)
    return TargetSide(options.target, options.hidden_states)


def forecast_of(config: pytest.Config, ckpt: Checkpoint, engine: EngineVersion) -> Forecast:
    """The pipeline's verdict for ``engine`` on ``ckpt``; skips where the files or the config are unusable."""
    require_tensors(ckpt)
    require_config(ckpt)
    return pipeline(config).forecast(ckpt, engine, target_side(config))
