"""The draft config as one engine version reads it: which fields it sees, with which defaults.

vLLM converts a speculators config into its own shape (``speculators/algos.py update_eagle3``);
SGLang reads the HF config as it is. Flags the engine does not read take the value its code
hard-wires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.engines.profiles import Profile
from pytest_eagle3.engines.versions import SGLANG
from pytest_eagle3.producers.formats import is_speculators, lookup

__all__ = ["EngineView", "engine_view", "lookup"]


@dataclass(frozen=True)
class EngineView:
    """What the engine's draft class sees: a flat config, and the flags as it applies them."""

    config: dict[str, Any]
    speculators: bool
    flags: dict[str, bool]
    flag_notes: dict[str, str]


def engine_view(raw: Mapping[str, Any], profile: Profile) -> EngineView:
    """Flatten the config the way ``profile``'s engine does, and resolve the norm flags."""
    speculators = is_speculators(raw)
    config = _speculators_to_eagle(raw, profile) if speculators else dict(raw)
    flags, notes = _flags(raw, config, speculators, profile)
    return EngineView(config, speculators, flags, notes)


def _speculators_to_eagle(raw: Mapping[str, Any], profile: Profile) -> dict[str, Any]:
    """vLLM speculators/algos.py update_eagle3: the layer config plus the fields it copies."""
    layer = raw.get("transformer_layer_config")
    config: dict[str, Any] = dict(layer) if isinstance(layer, dict) else {}
    config["draft_vocab_size"] = raw.get("draft_vocab_size")
    for name in ("target_hidden_size",):
        if name in raw:
            config[name] = raw[name]
    config["norm_before_residual"] = raw.get("norm_before_residual", True)
    if profile.at_least("0.19.0"):
        config["norm_before_fc"] = raw.get("norm_before_fc", False)
    if profile.at_least("0.25.0"):
        config["fc_norm"] = raw.get("fc_norm", False)
        config["norm_output"] = raw.get("norm_output", False)
    if profile.at_least("0.11.1") and "eagle_aux_hidden_state_layer_ids" in raw:
        config["eagle_aux_hidden_state_layer_ids"] = raw["eagle_aux_hidden_state_layer_ids"]
    return config


def _flag(config: Mapping[str, Any], *names: str) -> bool:
    for name in names:
        value = lookup(config, name)
        if value is not None:
            return bool(value)
    return False


def _flags(raw: Mapping[str, Any], config: Mapping[str, Any], speculators: bool,
           profile: Profile) -> tuple[dict[str, bool], dict[str, str]]:
    flags: dict[str, bool] = {}
    notes: dict[str, str] = {}
    rule = profile.value("norm_before_residual")
    flags["norm_before_residual"] = bool(config.get("norm_before_residual", False)) if rule == "read" else False
    notes["norm_before_residual"] = (
        "read from the config" + (" (speculators format: default True)" if speculators else " (default False)")
        if rule == "read" else "not read: the residual is always the raw fc output"
    )
    rule = profile.value("norm_before_fc")
    fields = {"read": ("eagle_config.norm_before_fc", "norm_before_fc"), "top-level": ("norm_before_fc",),
              "eagle-format-only": () if speculators else ("norm_before_fc",)}.get(rule, ())
    flags["norm_before_fc"] = bool(fields) and _flag(config, *fields)
    notes["norm_before_fc"] = (f"read from {' or '.join(fields)}" if fields else
                               "not propagated from a speculators config" if rule == "eagle-format-only"
                               else "not read: no input_norm")
    for name in ("fc_norm", "norm_output"):
        rule = profile.value(name)
        reads = rule == "read" or (rule == "eagle-format-only" and not speculators)
        names = (name, "use_aux_norm") if name == "fc_norm" and profile.engine == SGLANG else (name,)
        flags[name] = reads and _flag(config, *names)
        notes[name] = "read" if reads else (
            "not propagated from a speculators config in this version" if rule == "eagle-format-only" else "not read"
        )
    return flags, notes
