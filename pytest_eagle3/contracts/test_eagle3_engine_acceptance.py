"""Predicted acceptance per engine version (with --eagle3-target holding weights): the draft run the way each
selected engine version's load plan feeds it, against the draft as trained (``verdict.assess_engine.acceptance``)."""

from __future__ import annotations

from pytest_eagle3.shell.contract import contract_class

TestEagle3EngineAcceptance = contract_class(
    "TestEagle3EngineAcceptance", "The acceptance predicted for one engine version.")
