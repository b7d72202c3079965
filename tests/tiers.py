"""The unit tier, ``pytest -m unit``: the test modules that are pure and fast (no subprocess, no pytester run, no
target forward, no engine), under a minute on 2 cores. ``tests/conftest.py`` marks their tests ``unit`` at
collection (a module's ``slow``, ``engine`` and ``gpu`` tests stay out); ``tests/test_tiers.py`` holds each module to the rule."""

from __future__ import annotations

import pytest

#: Module names (``tests/NAME.py``) of the unit tier. Left out though pure: ``test_incidents`` (``check`` per
#: incident), ``test_profiles_vs_engines`` and ``test_false_alarms`` (10-20 s each), and the probe modules, which
#: start the engines' loaders where the engines are installed.
UNIT_MODULES = frozenset({
    "test_aux_properties", "test_capture_reach", "test_confirmation", "test_corruption_catalogue", "test_docstrings",
    "test_draft_classes", "test_engine_plans", "test_engine_tokenspeed_mlxvlm", "test_family_properties",
    "test_habit_policy", "test_layer_fields", "test_locks", "test_plan_areas", "test_plan_shapes",
    "test_producer_defaults", "test_producer_records", "test_profiles", "test_reader", "test_table",
    "test_table_rows", "test_tiers", "test_upgrade_advice", "test_vocab_properties",
})

#: Markers whose tests stay out of the tier even in a unit module: long runs, and tests that start an engine.
LEFT_OUT_MARKERS = ("slow", "engine", "gpu")


def mark_unit(items: list[pytest.Item]) -> None:
    """Mark ``unit`` each collected test of a unit module that is not ``slow`` and needs no engine or GPU."""
    for item in items:
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
        if module in UNIT_MODULES and not any(item.get_closest_marker(m) for m in LEFT_OUT_MARKERS):
            item.add_marker(pytest.mark.unit)
