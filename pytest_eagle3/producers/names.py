"""Producer names, aux-id conventions, and the small readers of a producer's config.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SPECULATORS = "speculators"
SPECFORGE = "specforge"
EAGLE = "eagle"
MODELOPT = "modelopt"
ANGELSLIM = "angelslim"
TORCHSPEC = "torchspec"
DEEPSPEC = "deepspec"
UNKNOWN = "unknown"

#: Aux-layer id conventions: id k names the input of decoder layer k, or its output.
INPUT_OF = "input-of"
OUTPUT_OF = "output-of"
CONVENTIONS = (INPUT_OF, OUTPUT_OF)

Config = Mapping[str, Any]

#: Top-level keys that mark a speculators config. Source: speculators 0.9.0 config.py SpeculatorModelConfig.
SPECULATORS_MARKERS = ("speculators_model_type", "speculators_config")


def is_speculators(config: Config) -> bool:
    """The config carries speculators' own top-level fields."""
    return any(key in config for key in SPECULATORS_MARKERS)


def architectures(config: Config) -> tuple[str, ...]:
    """config.json ``architectures`` as a tuple (empty when absent or not a list)."""
    value = config.get("architectures")
    return tuple(str(a) for a in value) if isinstance(value, list) else ()


def eagle_config(config: Config) -> Mapping[str, Any]:
    """The nested ``eagle_config`` object (SpecForge, ModelOpt, AngelSlim configs), empty when absent."""
    value = config.get("eagle_config")
    return value if isinstance(value, dict) else {}


def lookup(config: Config, field: str) -> Any:
    """A dotted field (``eagle_config.x``, ``dflash_config.x``: a key of a nested object) or a top-level
    one; None when absent."""
    section, _, name = field.rpartition(".")
    if section:
        nested = config.get(section)
        return nested.get(name) if isinstance(nested, dict) else None
    return config.get(field)


def layer_config(config: Config) -> tuple[Mapping[str, Any], str]:
    """The object holding the decoder fields and its key prefix: speculators' ``transformer_layer_config``,
    else the top level."""
    inner = config.get("transformer_layer_config")
    if isinstance(inner, dict):
        return inner, "transformer_layer_config."
    return config, ""
