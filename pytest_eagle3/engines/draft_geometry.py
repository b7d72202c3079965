"""The attention geometry an engine builds its draft with: the config route it derives it by.

The derivation itself (config-class defaults, routes) lives in ``rules/attention.py``; which route an engine
takes is the engine's side. The fact sheet, the parameter shapes and the ``geometry`` area all read it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_eagle3.knowledge.snapshot import Engine
from pytest_eagle3.rules.attention import ROUTE_AS_WRITTEN, ROUTE_CONFIG_CLASS, Geometry, derive


def route_for(engine: Engine, speculators: bool) -> str:
    """vLLM reads a speculators config as written (speculators/base.py SpeculatorsConfig(**config)); every
    other draft config goes through AutoConfig and its model_type's class."""
    return ROUTE_AS_WRITTEN if engine.loading.reads_speculators_geometry_as_written and speculators \
        else ROUTE_CONFIG_CLASS


def draft_geometry(engine: Engine, config: Mapping[str, Any], speculators: bool) -> Geometry | None:
    """The geometry ``engine`` derives from the draft's ``config`` (None where the config does not give one)."""
    return derive(config, route_for(engine, speculators))
