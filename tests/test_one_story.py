"""One story per row: the findings of a failing row, their fix lines and the repair line under the table come from
one decision and cannot disagree, on every engine, for the bundled drafts with and without their target.

A row the ``fix`` command repairs gets the command and no finding of it says a config edit cannot help; a row it
cannot repair is told, by hand, its findings' fix lines, then what the repair solver found a copy would still leave
(LMDeploy: set architectures, then no config edit changes the layers fed); no finding speaks for the ``fix``
command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.user_runs import DEMO, DEMO_SGLANG, TARGET, read_report, run_python

BY_HAND = " by hand, python -m pytest_eagle3 fix cannot: "


def _repair_lines(stdout: str) -> dict[tuple[str, str], str]:
    """(checkpoint path, row) -> what its repair line says: the ``fix`` command, or the by-hand text."""
    said: dict[tuple[str, str], str] = {}
    for line in stdout.splitlines():
        if not line.startswith("repair "):
            continue
        head, _, by_hand = line.partition(BY_HAND)
        head = head if by_hand else line.split("): ", 1)[0] + ")"
        path, _, rows = head.removeprefix("repair ").rpartition(" (")
        for row in rows.rstrip(")").split(", "):
            assert (path, row) not in said, f"two repair lines for {path} {row}"
            said[(path, row)] = by_hand if by_hand else "COMMAND " + line.split("): ", 1)[1]
    return said


def _edits(fixes: list[str]) -> str:
    edits = [f for f in fixes if not f.startswith("see ")]
    return "; ".join(edits or fixes)


@pytest.mark.slow
@pytest.mark.parametrize("target", [True, False], ids=["target", "no-target"])
def test_every_engine_row_tells_one_story(tmp_path: Path, target: bool) -> None:
    report = tmp_path / "report.json"
    args = ["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-ckpt={DEMO_SGLANG}",
            "--eagle3-engine=all", f"--eagle3-report={report}"]
    done = run_python([*args, f"--eagle3-target={TARGET}"] if target else args, tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:]
    repair = _repair_lines(done.stdout)
    failing: list[tuple[str, str, dict[str, Any]]] = [
        (ckpt["path"], f"{row['engine']}=={row['version']}", row) for ckpt in read_report(report)["checkpoints"]
        for row in ckpt["engines"] if row["version"] is not None and row["verdict"] == "fail"]
    assert failing, done.stdout[-3000:]
    for path, spec, row in failing:
        assert not any("pytest_eagle3 fix" in fix for fix in row["fix"]), (spec, row["fix"])
        story = repair.get((path, spec))
        assert story is not None, f"no repair line for {path} {spec}: {done.stdout[-3000:]}"
        if story.startswith("COMMAND "):
            assert not any(fix.startswith("no config edit") for fix in row["fix"]), (spec, row["fix"], story)
        else:  # the findings' fix lines, then only what a copy of them would still leave
            told = _edits(row["fix"])
            assert story == told or story.startswith(told + "; then "), (spec, row["fix"], story)
    assert set(repair) == {(path, spec) for path, spec, _ in failing}, repair
