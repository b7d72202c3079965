"""An issue: one thing an engine version will do wrong with a draft, filed under the area that judges it.

The plan (``engines.plan_types``) collects them and its root-cause order (``plan_types.root_causes``) ranks them:
every area reads this one type, so it lives below them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.findings import Finding

#: The engine will not start with the draft.
REFUSED = "refused"
#: The engine starts, and acceptance suffers.
LOSS = "loss"


@dataclass(frozen=True)
class Issue:
    """One thing the engine will do wrong, under the contract area that reports it (``kind``: REFUSED or LOSS)."""

    area: str
    kind: str
    finding: Finding
