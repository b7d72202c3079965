"""Small helpers the contract modules share."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.report import MESSAGE_PROPERTY

RecordProperty = Callable[[str, object], None]


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


def passed(record_property: RecordProperty, message: str) -> None:
    """The one-line message the JSON report shows for a passing contract."""
    record_property(MESSAGE_PROPERTY, message)


def readability_findings(ckpt: Checkpoint) -> list[Finding]:
    """Every file problem met while indexing the checkpoint."""
    if not ckpt.problems:
        return []
    return [Finding(
        "unreadable",
        f"{len(ckpt.problems)} problems reading {ckpt.path}: {ckpt.problems[0]}",
        tuple(Evidence("file", problem, "a readable tensor file") for problem in ckpt.problems[:8]),
        "re-export the checkpoint (files truncated, corrupted, or not what their names claim)",
        tuple(ckpt.notes),
    )]
