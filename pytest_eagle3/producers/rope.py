"""The one reader of a draft config's rotary embedding (``rope_parameters``, else ``rope_theta`` and
``rope_scaling``), used by the engine plans, the producer habits and the reference forward."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.producers.names import is_speculators

#: A rope as the simulation's feeds hold it: (rope_theta, sorted rope_scaling items).
RopeKey = tuple[float, tuple[tuple[str, Any], ...]]
#: Both engines' ``getattr(config, "rope_theta", 10000)`` default.
DEFAULT_THETA = 10000.0


def _kind(scaling: Mapping[str, Any] | None) -> str:
    if not scaling:
        return "default"
    return str(scaling.get("rope_type") or scaling.get("type") or "default")


@dataclass(frozen=True)
class Rope:
    """A rotary embedding: the base and the scaling dict (None: plain rope)."""

    theta: float
    scaling: dict[str, Any] | None

    @property
    def kind(self) -> str:
        """The rope scaling type (``default`` without scaling)."""
        return _kind(self.scaling)

    def describe(self) -> str:
        """The rope in words: theta and scaling."""
        theta = str(int(self.theta)) if self.theta.is_integer() else f"{self.theta:g}"
        if self.kind == "default":
            return f"rope_theta {theta}, no scaling"
        extra = {k: v for k, v in (self.scaling or {}).items() if k not in ("rope_type", "type", "rope_theta")}
        return f"rope_theta {theta}, {self.kind} {extra}"

    def logit_scale(self) -> float:
        """How much yarn multiplies every attention logit (cos and sin both carry mscale): mscale squared,
        mscale = attention_factor, else 0.1 ln(factor) + 1 (vllm rotary_embedding/yarn_scaling_rope.py
        YaRNScalingRotaryEmbedding, common.py yarn_get_mscale; 0.32.0 read). 1.0 for other kinds."""
        scaling = self.scaling or {}
        if self.kind != "yarn":
            return 1.0
        factor = float(scaling.get("factor") or 1.0)
        if scaling.get("attention_factor") is not None:
            mscale = float(scaling["attention_factor"])
        elif scaling.get("mscale") and scaling.get("mscale_all_dim"):
            mscale = (0.1 * float(scaling["mscale"]) * math.log(factor) + 1) / (
                0.1 * float(scaling["mscale_all_dim"]) * math.log(factor) + 1)
        else:
            mscale = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
        return mscale * mscale

    def key(self) -> RopeKey:
        """A hashable form (theta, sorted scaling items; () for plain rope), as the simulation's feeds hold it."""
        return self.theta, tuple(sorted((k, _frozen(v)) for k, v in (self.scaling or {}).items()))

    def same_as(self, other: Rope) -> bool:
        """Whether both ropes compute the same frequencies."""
        if not math.isclose(self.theta, other.theta):
            return False
        if self.kind == other.kind == "default":
            return True
        strip = ("rope_theta", "type")
        mine = {k: v for k, v in (self.scaling or {}).items() if k not in strip}
        theirs = {k: v for k, v in (other.scaling or {}).items() if k not in strip}
        return mine == theirs


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _read(config: Mapping[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(theta, the rope dict as written: ``rope_parameters``, else ``rope_scaling``; None when neither)."""
    params = config.get("rope_parameters")
    if isinstance(params, dict):
        return float(params.get("rope_theta") or config.get("rope_theta") or DEFAULT_THETA), params
    scaling = config.get("rope_scaling")
    theta = config.get("rope_theta")
    if theta is None and isinstance(scaling, dict):
        theta = scaling.get("rope_theta")
    return float(theta or DEFAULT_THETA), scaling if isinstance(scaling, dict) else None


def config_rope(config: Mapping[str, Any]) -> Rope:
    """The rope an engine builds from a draft config: ``rope_parameters`` (transformers 5), else
    ``rope_theta`` and ``rope_scaling``, theta 10000 when absent (both engines' ``getattr`` default)."""
    theta, written = _read(config)
    return Rope(theta, written if _kind(written) != "default" else None)


def served_scope(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The config object the engines build the draft from: a speculators config's
    ``transformer_layer_config`` (vLLM's speculators reader turns it into the draft config), else the top level."""
    layer = raw.get("transformer_layer_config")
    return layer if isinstance(layer, dict) and is_speculators(raw) else raw


def served_rope(raw: Mapping[str, Any]) -> Rope:
    """The rope both engines build from a draft's config.json."""
    return config_rope(served_scope(raw))


def forward_rope(raw: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    """The served rope as the reference forward computes it: theta and the whole rope dict as written
    (less ``rope_theta``; default-type keys such as ``partial_rotary_factor`` kept), plus the config's
    ``max_position_embeddings`` when a dict is written (dynamic, longrope and yarn without factor need it)."""
    scope = served_scope(raw)
    theta, written = _read(scope)
    scaling = {k: v for k, v in (written or {}).items() if k != "rope_theta"}
    max_len = scope.get("max_position_embeddings")
    if scaling and isinstance(max_len, int) and "max_position_embeddings" not in scaling:
        scaling["max_position_embeddings"] = max_len
    return theta, scaling
