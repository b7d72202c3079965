"""Turn a load plan's issues into a contract verdict: fail with the plan, or skip with a reason."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_eagle3.engines.plan import LoadPlan
from pytest_eagle3.findings import check


def check_area(plan: LoadPlan, area: str, contract_id: str, *, with_plan: bool = True,
               needs_class: bool = False) -> None:
    """Fail ``contract_id`` with the plan's findings for ``area``; skip when the area cannot be judged."""
    __tracebackhide__ = True
    if area != "architecture" and plan.draft_class is None:
        pytest.skip(f"{plan.engine.label} does not build a draft from this config: see engine.architecture")
    if needs_class and plan.draft_class and plan.draft_class.startswith("Eagle3Deepseek"):
        pytest.skip(f"the key map of {plan.draft_class} (MLA draft) is not simulated")
    findings = plan.issues_for(area)
    if findings and with_plan:
        first = findings[0]
        findings = [dataclasses.replace(first, details=(*first.details, *plan.describe())), *findings[1:]]
    check(contract_id, findings)
