"""A user's own test (docs/testing.md): imitate an exporter bug with pytest-eagle3's test kit, run the
contract suite on the checkpoint, and assert the verdict and the diagnosis it reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.testing import FAULTS, SynthSpec, write_checkpoint, write_target


def check(draft: Path, report: Path) -> dict:  # type: ignore[type-arg]
    """``python -m pytest_eagle3 check`` on one draft against its target's config; its JSON report's entry."""
    target = write_target(SynthSpec(), report.parent / "target", False) / "config.json"
    subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(draft), "--target", str(target),
                    "--report", str(report)], capture_output=True, check=False, timeout=900)
    entry: dict = json.loads(report.read_text())["checkpoints"][0]  # type: ignore[type-arg]
    return entry


@pytest.mark.parametrize("fault", ["d2t-absolute"])
def test_a_draft_with_the_exporter_bug_fails(fault: str, tmp_path: Path) -> None:
    draft = write_checkpoint(SynthSpec(producer="specforge").with_faults(fault), tmp_path / "draft")
    entry = check(draft, tmp_path / "report.json")
    assert entry["verdict"] == "fail"
    contracts = {c["id"]: c for e in entry["engines"] for c in e["contracts"]}
    caught = contracts[FAULTS[fault].contract]
    assert caught["outcome"] == "failed"
    assert caught["findings"][0]["code"] == FAULTS[fault].diagnosis


def test_the_same_draft_without_the_bug_passes(tmp_path: Path) -> None:
    entry = check(write_checkpoint(SynthSpec(producer="specforge"), tmp_path / "draft"), tmp_path / "report.json")
    # nothing fails; with the target's config only, every rule passes and the acceptance is unmeasured: PASS (static)
    assert [(e["verdict"], e["failing"], e["not_judged"]) for e in entry["engines"]] == [("pass", [], [])] * 3
    assert all("engine.acceptance" in e["unmeasured"] for e in entry["engines"][1:])
