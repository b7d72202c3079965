"""The run's verdict pipeline, held in ``config.stash``: every fixture, contract and live check asks it.

Imported in every pytest run (by the fixtures): the pipeline itself is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import pytest

from pytest_eagle3.shell.contract import require_config, require_tensors
from pytest_eagle3.shell.options import settings

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict import Pipeline, TargetSide, Verdict

PIPELINE_KEY = pytest.StashKey["Pipeline"]()


def pipeline(config: pytest.Config) -> Pipeline:
    """The run's pipeline, built from the options on first use: one target run for every engine and checkpoint."""
    from pytest_eagle3.verdict import Pipeline, VerdictSettings

    if PIPELINE_KEY not in config.stash:
        options = settings(config)
        config.stash[PIPELINE_KEY] = Pipeline(VerdictSettings(
            options.engines, options.aux_convention, options.max_loss, options.device, options.steps,
            options.continuation, options.prompts))
    return config.stash[PIPELINE_KEY]


def target_side(config: pytest.Config) -> TargetSide:
    """The target as the options give it: its path and a dump of its side."""
    from pytest_eagle3.verdict import TargetSide

    options = settings(config)
    return TargetSide(options.target, options.hidden_states)


def verdict_of(config: pytest.Config, ckpt: Checkpoint, engine: EngineVersion) -> Verdict:
    """The pipeline's verdict for ``engine`` on ``ckpt``; skips where the files or the config are unusable."""
    require_tensors(ckpt)
    require_config(ckpt)
    return pipeline(config).verdict(ckpt, engine, target_side(config))


def require_matching_target(config: pytest.Config, ckpt: Checkpoint, area: str | None = None,
                            engine: EngineVersion | None = None) -> None:
    """Skip a contract that needs the target when the target given is not this draft's (target.consistent fails
    alone): with ``engine``, only when the target would change ``area``'s verdict."""
    if engine is None:
        reason = pipeline(config).mismatch(ckpt, target_side(config))
    else:
        found = verdict_of(config, ckpt, engine)
        reason = found.target_mismatch if area is None or area in found.target_areas else ""
    if reason:
        pytest.skip(f"not run: {reason}")


def skip_for_target(config: pytest.Config, ckpt: Checkpoint, reason: str) -> NoReturn:
    """Skip for want of the target: the mismatch when the target given does not match the draft, else ``reason``."""
    require_matching_target(config, ckpt)
    pytest.skip(reason)
