"""No quiet green: a row where no contract ran reads NOT RUN, one whose aux layers or acceptance were not
judged reads NOT JUDGED (table, JSON, summary, ``plan``), ``--eagle3-not-judged=fail`` fails the run, and a draft
that names its target is judged against it."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun
from tests.user_runs import (
    DEMO,
    DEMO_SGLANG,
    EXAMPLES,
    TARGET,
    VLLM,
    read_report,
    report_rows,
    run_python,
)


def test_a_run_where_no_contract_ran_says_not_run_with_the_reasons(
        run_contracts: Callable[..., ContractRun]) -> None:
    run = run_contracts([DEMO], "-m", "engine", "-rs", "--eagle3-engine=vllm", "--eagle3-vllm-python=" + sys.executable,
                        target=EXAMPLES / "demo-target")
    if run.result.parseoutcomes().get("passed"):
        pytest.skip("this interpreter has vllm installed: the live contracts ran")
    run.result.stdout.fnmatch_lines([
        f"*{DEMO}*speculators*any*NOT RUN*",
        "*vllm==*NOT RUN*",
        f"not run for {DEMO} (any, vllm==*): no contract ran:",
        "  [*]: no contract selected (-m, -k or the test ids given left none for this row)",
        "  live.launch: vllm is not installed for *",
    ])
    assert "PASS" not in run.output.split("EAGLE-3 verdict")[1]
    ckpt = run.report["checkpoints"][0]
    assert (ckpt["format"], ckpt["verdict"], ckpt["complete"]) == ("speculators", "not run", False)
    for entry in ckpt["engines"]:
        assert (entry["verdict"], entry["complete"]) == ("not run", False) and entry["not_run"], entry


def test_a_row_with_one_contract_run_is_partial_not_not_run(run_contracts: Callable[..., ContractRun]) -> None:
    run = run_contracts([DEMO], "-k", "readable", "--eagle3-engine=vllm")
    run.result.stdout.fnmatch_lines([f"*{DEMO}*speculators*any*PASS*"])
    entry = run.engine_entry(DEMO, "any")
    assert (entry["verdict"], entry["complete"]) == ("pass", True)


def test_a_draft_judged_without_its_target_reads_not_judged_and_exits_as_documented(tmp_path: Path) -> None:
    report = tmp_path / "verdict.json"
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO_SGLANG}", f"--eagle3-report={report}",
                 f"--eagle3-summary={tmp_path / 'summary.md'}"], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]  # nothing failed: by default not judged is no failure
    table = [line for line in done.stdout.splitlines() if re.match(r"\s+(sglang|vllm)==", line)]
    assert len(table) == 2 and all("NOT JUDGED" in line and "PASS" not in line for line in table), table
    assert "NOT JUDGED for" in done.stdout and "engine.aux_layers" in done.stdout
    rows = report_rows(read_report(report))
    vllm = rows[("demo-draft-sglang", VLLM)]
    assert vllm["verdict"] == "not judged" and vllm["complete"] is False
    assert vllm["not_judged"] == ["engine.aux_layers", "engine.acceptance"]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "0 of 1 checkpoint failing, 1 not judged" in summary and "| NOT JUDGED |" in summary
    strict = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO_SGLANG}", "--eagle3-not-judged=fail",
                   "-q"], tmp_path)
    assert strict.returncode == 1, strict.stdout[-2000:]
    with_target = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO_SGLANG}",
                        f"--eagle3-target={TARGET}", "--eagle3-not-judged=fail", "-q"], tmp_path)
    assert with_target.returncode == 1 and re.search(rf"{re.escape(VLLM)}\s+FAIL", with_target.stdout)


def test_a_draft_that_names_its_target_is_judged_against_it_without_the_flag(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    shutil.copytree(DEMO, draft)
    shutil.copytree(TARGET, tmp_path / "verifier")
    config = json.loads((draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "../verifier"  # as speculators writes a local path
    (draft / "config.json").write_text(json.dumps(config))
    report = tmp_path / "verdict.json"
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm",
                 f"--eagle3-report={report}"], tmp_path)
    assert "named by its config (speculators_config.verifier.name_or_path" in done.stdout, done.stdout[-3000:]
    data = read_report(report)
    named = data["checkpoints"][0]["named_target"]  # type: ignore[index]
    assert named["field"] == "speculators_config.verifier.name_or_path" and named["named"] == "../verifier"
    row = report_rows(data)[("draft", VLLM)]
    outcomes = {c["id"]: c["outcome"] for c in row["contracts"]}  # type: ignore[union-attr]
    assert outcomes["engine.aux_layers"] == "passed" and outcomes["engine.acceptance"] == "passed", row
    assert row["verdict"] == "pass"


def test_a_named_target_that_cannot_be_found_says_so_and_names_the_flag(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    shutil.copytree(DEMO, draft)
    config = json.loads((draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "no/such-model"
    (draft / "config.json").write_text(json.dumps(config))
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm", "-q"],
                tmp_path, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert done.returncode == 0 and "its config names 'no/such-model'" in done.stdout, done.stdout[-3000:]
    assert "--eagle3-target" in done.stdout and "NOT JUDGED" in done.stdout


def test_plan_without_a_target_says_what_it_did_not_judge_and_fits_the_terminal(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest_eagle3", "plan", str(DEMO_SGLANG), "--engine", "vllm"], tmp_path, COLUMNS="100")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert any(line.startswith("outcome:") and "not judged" in line for line in lines)
    assert any(line.startswith("verdict:") and "NOT JUDGED" in line for line in lines)
    with_target = run_python(["-m", "pytest_eagle3", "plan", str(DEMO_SGLANG), "--engine", "vllm", "--target", str(TARGET)],
                       tmp_path)
    assert "outcome:              loads with loss" in with_target.stdout
    assert "verdict:              FAIL: failing engine.acceptance, engine.aux_layers" in with_target.stdout
