"""A config-only target (how every 70B-1T target is judged): every rule runs, and a row whose rules all pass reads
PASS (static), exit 0; a rule the config decides still fails; ``--eagle3-require=measured`` asks for the measurement.
Run as a user runs it, from outside the clone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DRAFT, CONFIG = EXAMPLES / "demo-draft-sglang", EXAMPLES / "demo-target" / "config.json"


def _run(tmp_path: Path, *options: str, **extra_env: str) -> tuple[int, str, dict[str, dict[str, Any]]]:
    """pytest on the SpecForge demo draft against the demo target's config.json: exit status, output, rows by engine."""
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3_")} | extra_env
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--eagle3-ckpt={DRAFT}", f"--eagle3-target={CONFIG}", f"--eagle3-report={report}",
                           *options], cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=600)
    (checkpoint,) = json.loads(report.read_text(encoding="utf-8"))["checkpoints"]
    rows = {e["engine"]: e for e in checkpoint["engines"]}
    return done.returncode, " ".join(done.stdout.split()), rows


def test_the_config_decides_vllm_and_sglang_passes_statically(tmp_path: Path) -> None:
    code, said, rows = _run(tmp_path)
    assert code == 1
    assert rows["vllm"]["verdict"] == "fail" and rows["vllm"]["failing"] == ["engine.aux_layers"]
    sglang = rows["sglang"]
    assert (sglang["verdict"], sglang["complete"], sglang["not_judged"], sglang["failing"]) == ("pass", False, [], [])
    assert sglang["unmeasured"][-1] == "engine.acceptance" and "--eagle3-target=DIR" in sglang["measure_with"]
    assert sglang["basis"] == "assumed"
    assert "sglang==0.5.23 PASS (static)" in said and "PASS (static) for" in said


def test_without_the_failing_row_it_exits_0(tmp_path: Path) -> None:
    code, said, rows = _run(tmp_path, "--eagle3-engine=sglang", f"--eagle3-summary={tmp_path / 'summary.md'}")
    assert code == 0, said[-2000:]
    assert rows["sglang"]["verdict"] == "pass" and rows["any"]["verdict"] == "pass"
    assert "NOT JUDGED" not in said
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "0 of 1 checkpoint failing, 1 passing statically" in summary and "| PASS (static) |" in summary


def test_a_gate_that_wants_measured_acceptance_says_what_to_give(tmp_path: Path) -> None:
    code, said, rows = _run(tmp_path, "--eagle3-engine=sglang", "--eagle3-require=measured")
    assert code == 1
    sglang = rows["sglang"]
    assert sglang["verdict"] == "fail" and "engine.acceptance" in sglang["failing"]
    acceptance = next(c for c in sglang["contracts"] if c["id"] == "engine.acceptance")
    (finding,) = acceptance["findings"]
    assert finding["code"] == "unmeasured" and "the target's weights" in finding["fix"], finding
    assert "engine.acceptance [unmeasured]: not measured, and --eagle3-require=measured asks for it" in said
    # the same gate from the environment (and so from the ini: eagle3_require), as every option
    code, _, rows = _run(tmp_path, "--eagle3-engine=sglang", EAGLE3_REQUIRE="measured")
    assert code == 1 and rows["sglang"]["verdict"] == "fail"


def test_fix_claims_a_proof_only_where_the_recheck_passes(tmp_path: Path) -> None:
    """``fix`` from outside the clone: without a target its copy's re-check reads NOT JUDGED, and it says 'not proven'
    in those words; with the target's config the re-check passes statically, and the proof says so."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3_")}

    def fix(out: str, *options: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "fix", str(DRAFT), out, "--to", "vllm==0.33.0",
                               *options], cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return " ".join(done.stdout.split())

    bare = fix("bare")
    assert "proof:" not in bare and "not proven: no contract fails on bare, but the re-check reads" in bare
    assert "vllm==0.33.0 NOT JUDGED" in bare
    proven = fix("with-config", "--target", str(CONFIG))
    assert "proof:" not in proven
    assert "the rules pass on with-config for vllm==0.33.0: any PASS (static), vllm==0.33.0 PASS (static)" in proven
    assert "not measured: reference.acceptance, reference.convention, engine.acceptance" in proven
    assert "--target DIR (the model directory, with its weights)" in proven
