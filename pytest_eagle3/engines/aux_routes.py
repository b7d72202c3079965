"""What a producer's written aux ids mean for this target: one reading per capture route it may have trained through.

``producers/capture_routes.py`` says which backends a producer release trained through; here each route is applied
to the target's class: an engine-class route reads the ids with that engine's rule for the class's family at each
release the producer pinned (``knowledge.capture.capture_support`` gives the family, the profile's
``aux_transform_<family>`` the rule), a fixed route with its own rule. A pin whose class does not capture for this
target, or a transformers route for a class transformers does not ship, cannot have trained the draft: it is no
reading. The caller joins the readings (``engines/aux_layers.py``): one set of layer inputs stands; sets that
disagree are judged each against what the engine feeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from packaging.version import Version

from pytest_eagle3.engines.aux_ids import transform
from pytest_eagle3.engines.profiles import profile
from pytest_eagle3.knowledge.capture import CAPTURES, capture_support
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.producers.aux_defaults import release_of
from pytest_eagle3.producers.capture_routes import TRANSFORMERS, CaptureRoute, routes_of


@dataclass(frozen=True)
class RouteReading:
    """The layer inputs the ids name when the draft was trained through one route (and one pinned release)."""

    label: str
    inputs: tuple[int, ...]
    source: str
    #: A transformers route: a reading only where transformers ships the target's class (checked when it matters).
    transformers: bool = False


def _covers(route: CaptureRoute, release: Version | None) -> bool:
    if release is None:
        return True
    return (route.since is None or Version(route.since) <= release) and (
        route.until is None or release < Version(route.until))


def _engine_readings(route: CaptureRoute, arch: str, ids: Sequence[int], layers: int) -> list[RouteReading]:
    """One reading per pinned release whose class for ``arch`` captures: the engine's rule for its family."""
    found = []
    for release in route.releases:
        version = Version(release)
        support = capture_support(str(route.engine), version, arch)
        if support.support != CAPTURES:
            continue
        prof = profile(EngineVersion(str(route.engine), version))
        rule = str(prof.behaviours.aux_transform(support.family))
        inputs = transform(rule, ids, layers)
        if inputs is None:
            continue
        label = f"{route.producer} {route.releases_words} through {prof.label}'s {arch} ({rule})"
        found.append(RouteReading(label, tuple(sorted(set(inputs))), f"{route.source}; rule: {support.source}; "
                                  f"{prof.source(_transform_behaviour(support.family))}"))
    return found


def _transform_behaviour(family: str) -> Any:
    return {"deepseek": "aux_transform_deepseek", "gpt_oss": "aux_transform_gpt_oss"}.get(family, "aux_transform_llama")


def route_readings(producer: str, config: Mapping[str, Any], arch: str | None, layers: int | None,
                   ids: Sequence[int]) -> tuple[RouteReading, ...] | None:
    """The readings of ``ids`` for a target of class ``arch``; None where the producer has no routes on record or the
    target's class or depth is not known (then its record's convention holds, ``producers/records.py``)."""
    routes = routes_of(producer)
    if not routes or arch is None or layers is None or not ids:
        return None
    release = release_of(producer, config)
    found: list[RouteReading] = []
    for route in (r for r in routes if _covers(r, release)):
        if route.rule is None:
            found += _engine_readings(route, arch, ids, layers)
            continue
        inputs = tuple(sorted({i + (1 if route.rule == "+1" else 0) for i in ids}))
        how = "the output of layer id" if route.rule == "+1" else "the input of layer id"
        found.append(RouteReading(f"{route.label} ({how})", inputs, route.source,
                                  transformers=route.supports == TRANSFORMERS))
    others = {r.inputs for r in found if not r.transformers}
    # a transformers route matters only where it reads the ids otherwise; then it must load the target's class
    kept = tuple(r for r in found if not r.transformers or {r.inputs} <= others or ships(arch))
    return kept


@cache
def ships(arch: str) -> bool:
    """transformers' AutoModelForCausalLM maps ``arch`` (the class an HF backend loads); True where transformers is
    not installed (the reading is kept)."""
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError:  # pragma: no cover - transformers is a dependency of the reference rung
        return True
    return arch in set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
