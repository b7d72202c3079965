"""What the contract modules share: skips for unusable inputs, pass messages, and engine-plan verdicts.

The plugin imports this module in every pytest run (for the marker name): the domain modules are
imported inside the functions the contracts call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.shell.report import MESSAGE_PROPERTY

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.findings import Finding
    from pytest_eagle3.engines.loadplan import LoadPlan

RecordProperty = Callable[[str, object], None]
CONTRACT_MARKER = "eagle3_contract"
ENGINE_CONTRACT_PREFIX = "engine."


def contract_id(node: pytest.Item) -> str:
    """The contract id, stated once: the first argument of the test's ``eagle3_contract`` marker."""
    marker = node.get_closest_marker(CONTRACT_MARKER)
    if marker is None or not marker.args:
        raise pytest.UsageError(f"{node.nodeid} has no @pytest.mark.{CONTRACT_MARKER}(id) marker")
    return str(marker.args[0])


def require_tensors(ckpt: Checkpoint) -> None:
    """Skip a contract that needs tensors when the files are damaged (checkpoint.readable fails).

    A damaged file hides tensors; judging what remains would blame the wrong thing (a "missing"
    d2t that is really unreadable).
    """
    if ckpt.problems or not ckpt.tensors:
        pytest.skip("the checkpoint's files are damaged: see checkpoint.readable")


def require_config(ckpt: Checkpoint) -> None:
    """Skip a contract that needs the config when config.json is unusable (config.parseable fails)."""
    if ckpt.config_raw is None:
        pytest.skip("config.json is unusable: see config.parseable")


def require_draft(ckpt: Checkpoint) -> None:
    """Skip a contract that judges a draft when the checkpoint is another kind of model (format.detected says which)."""
    from pytest_eagle3.rules.draft_kind import classify_checkpoint

    kind = classify_checkpoint(ckpt)
    if not kind.is_draft:
        pytest.skip(f"this checkpoint is {kind.summary.split(',')[0]}, not an EAGLE-3 draft: see format.detected")


def passed(record_property: RecordProperty, message: str) -> None:
    """The one-line message the JSON report shows for a passing contract."""
    record_property(MESSAGE_PROPERTY, message)


def readability_findings(ckpt: Checkpoint) -> list[Finding]:
    """Every file problem met while indexing the checkpoint."""
    from pytest_eagle3.findings import Evidence, Finding

    if not ckpt.problems:
        return []
    return [Finding(
        "unreadable",
        f"{len(ckpt.problems)} problems reading {ckpt.path}: {ckpt.problems[0]}",
        tuple(Evidence("file", problem, "a readable tensor file") for problem in ckpt.problems[:8]),
        "re-export the checkpoint (files truncated, corrupted, or not what their names claim)",
        tuple(ckpt.notes),
    )]


def check_plan(request: pytest.FixtureRequest, plan: LoadPlan, *, with_plan: bool = True,
               needs_class: bool = False) -> None:
    """Fail the running engine contract with the plan's findings for its area; skip when it cannot be judged.

    The area is the contract id without ``engine.`` (``engine.aux_layers`` judges the plan's ``aux_layers``).
    """
    from pytest_eagle3.findings import check

    __tracebackhide__ = True
    area = contract_id(request.node).removeprefix(ENGINE_CONTRACT_PREFIX)
    if area != "architecture" and plan.draft_class is None:
        pytest.skip(f"{plan.engine.label} does not build a draft from this config: see engine.architecture")
    if needs_class and plan.draft_class and plan.draft_class.startswith("Eagle3Deepseek"):
        pytest.skip(f"the key map of {plan.draft_class} (MLA draft) is not simulated")
    findings = plan.issues_for(area)
    if findings and with_plan:
        first = findings[0]
        findings = [dataclasses.replace(first, details=(*first.details, *plan.describe())), *findings[1:]]
    check(findings)


def unknown(finding: Finding, fail: bool) -> None:
    """A case the profiles do not know: fail with the reason when ``fail`` (``--eagle3-unknown=fail``), else skip."""
    from pytest_eagle3.findings import check

    __tracebackhide__ = True
    if fail:
        check([finding])
    pytest.skip(f"{finding.summary} (--eagle3-unknown=fail makes this a failure)")
