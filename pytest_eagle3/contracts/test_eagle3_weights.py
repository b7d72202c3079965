"""Weight contracts: no NaN/Inf, no all-zero or constant (never-initialised) tensors.

Weights are scanned in bounded chunks, once per checkpoint, never loaded whole (``Pipeline.weight_health``)."""

from __future__ import annotations

from pytest_eagle3.shell.contract import contract_class

TestEagle3Weights = contract_class(
    "TestEagle3Weights", "The weight contracts: finite, not all zero, the shapes the config implies.")
