"""One judgement, every command: ``check`` (the pytest report), ``plan --json``, ``sweep``, ``fix``'s proof and the
pipeline's own judgement give the same row for the same input, and every command takes the run settings pytest takes
(same names, help, defaults, env variables and ini keys)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.knowledge.releases import ENGINES, newest
from pytest_eagle3.option_table import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TARGET = EXAMPLES / "demo-target"
PAIR = ("demo-draft", "demo-draft-sglang")
SEVEN = ",".join(newest(engine).spec for engine in ENGINES)


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_STEP_SUMMARY", "COLUMNS"))}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, check=False,
                          env={**base, "PYTEST_ADDOPTS": "-p no:randomly", **env}, timeout=1800)


def _row_words(row: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A report row as the table says it: the verdict word and the failing contracts."""
    word = "pass (partial)" if row["verdict"] == "pass" and not row["complete"] else row["verdict"]
    return word, tuple(row["failing"])


@pytest.mark.slow
def test_check_plan_json_sweep_and_the_proof_give_the_same_row(tmp_path: Path) -> None:
    """The demo pair against the demo target's weights, on the newest release of all seven engines."""
    report = tmp_path / "check.json"
    drafts = [str(EXAMPLES / name) for name in PAIR]
    check = _run(["-m", "pytest_eagle3", "check", *drafts, "--target", str(TARGET), "--engine", SEVEN,
                  "--report", str(report), "-q"], tmp_path)
    assert check.returncode == 1, check.stdout[-3000:]
    checked = {(Path(c["path"]).name, f"{e['engine']}=={e['version']}"): e
               for c in json.loads(report.read_text())["checkpoints"] for e in c["engines"] if e["engine"] != "any"}
    sweep = _run(["-m", "pytest_eagle3", "sweep", *drafts, "--target", str(TARGET), "--engine", SEVEN,
                  "--out", str(tmp_path / "sweep")], tmp_path)
    # LMDeploy refuses both drafts, so no checkpoint passes there: --fail-on=best (the default) exits 1 saying so
    assert sweep.returncode == 1 and "sweep fails (--fail-on=best): lmdeploy==0.18.0" in sweep.stdout, \
        sweep.stderr[-3000:]
    swept = {(c["name"], e["engine"]): e for c in json.loads((tmp_path / "sweep" / "sweep.json").read_text())["checkpoints"]
             for e in c["engines"]}
    for name in PAIR:
        plan = _run(["-m", "pytest_eagle3", "plan", str(EXAMPLES / name), "--target", str(TARGET), "--engine", SEVEN,
                     "--json"], tmp_path)
        assert plan.returncode == 0, plan.stderr[-3000:]
        for row in json.loads(plan.stdout):
            spec = f"{row['engine']}=={row['version']}"
            assert row == checked[(name, spec)], (name, spec)
            words = _row_words(row)
            assert (swept[(name, spec)]["verdict"], tuple(swept[(name, spec)]["failing"])) == words, (name, spec)
    best = json.loads((tmp_path / "sweep" / "sweep.json").read_text())["best"]
    for spec, path in best.items():  # a checkpoint named best passes there under check too
        assert path is None or checked[(Path(path).name, spec)]["verdict"] == "pass", (spec, path)


def test_the_proof_of_a_copy_is_its_judgement_as_check_reports_it(tmp_path: Path) -> None:
    """``fix``'s proof reads the pipeline's judgement (no pytest run): a good copy's rows all pass."""
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.repair.fix import prove
    from pytest_eagle3.verdict import RunSettings, TargetSide, pipeline_for

    engines = parse_selection("vllm==0.33.0")
    pipeline = pipeline_for(RunSettings(engines=engines))
    side = TargetSide(str(TARGET / "config.json"))
    proof = prove(EXAMPLES / "demo-draft", engines, pipeline, side)
    assert proof.passed and dict(proof.verdicts)["vllm==0.33.0"] == "pass (static)"  # no weights: acceptance unmeasured
    refused = prove(EXAMPLES / "demo-draft", parse_selection("sglang==0.5.23"), pipeline, side)
    assert not refused.passed and refused.failures[0][:2] == ("engine.architecture", "sglang==0.5.23")
    assert "engine.architecture (sglang==0.5.23): engine.architecture [" in refused.output


# -- one set of run settings ---------------------------------------------------------------------------------
JUDGING = [spec for spec in OPTIONS if spec.judges and spec.dest != "eagle3_engines"]


@pytest.mark.parametrize("command", ["plan", "sweep", "fix", "check"])
def test_every_judging_setting_has_the_same_help_in_every_command_as_under_pytest(command: str, tmp_path: Path) -> None:
    text = " ".join(_run(["-m", "pytest_eagle3", command, "--help"], tmp_path, COLUMNS="400").stdout.split())
    for spec in JUDGING:
        assert f"{spec.cli_flag}" in text and f"{spec.flag}" in text, (command, spec.flag)
        assert " ".join(spec.help.split()).replace("%", "%%")[:60].replace("%%", "%") in text, (command, spec.flag)


def test_plan_honours_k_from_the_option_the_env_and_the_ini(tmp_path: Path) -> None:
    draft = str(EXAMPLES / "demo-draft")

    def positions(*args: str, **env: str) -> int:
        done = _run(["-m", "pytest_eagle3", "plan", draft, "--target", str(TARGET), "--engine", "vllm", "--json",
                     *args], tmp_path, **env)
        assert done.returncode == 0, done.stderr[-2000:]
        return len(json.loads(done.stdout)["predicted_acceptance"]["per_position"])

    assert positions() == 3
    assert positions("--k", "2") == 2
    assert positions(EAGLE3_K="1") == 1
    (tmp_path / "pytest.ini").write_text("[pytest]\neagle3_k = 2\n")
    assert positions() == 2
    bad = _run(["-m", "pytest_eagle3", "plan", draft, "--engine", "vllm", "--k", "0"], tmp_path)
    assert bad.returncode == 2 and "--k: '0' is outside [1, " in bad.stderr
