"""Engine profiles (data), load plans computed from them, and probes of the real engines."""

from pytest_eagle3.engines.versions import EngineSelectionError, EngineVersion, parse_selection

__all__ = ["EngineSelectionError", "EngineVersion", "parse_selection"]
