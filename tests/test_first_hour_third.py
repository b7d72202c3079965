"""The first hour, third pass: each trap a new user met, typed as the user types it, from outside the clone.

1. No quiet green: a row whose aux layers or acceptance were not judged reads NOT JUDGED (table, JSON, summary),
   ``--eagle3-not-judged=fail`` fails the run, and a draft that names its target is judged against it.
2. ``plan`` without a target does not read as a clean load, and fits the terminal.
3. A Hub draft read by its headers is never called corrupt by the repair line.
4. A wrong target (a draft given as the target; a same-shape model the draft accepts nothing on) blames no draft.
9. A truncated file's problems are counted ("+N more") and its repair line is one line.
Also: a version newer than every release read is judged with a loud warning, ``--help`` names all seven engines.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.releases import RELEASES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: The newest vLLM read (the default a bare "vllm" selects), and a release after it no one has read.
NEWEST_VLLM = RELEASES["vllm"][-1]
BEYOND_VLLM = f"{Version(NEWEST_VLLM).major}.{Version(NEWEST_VLLM).minor + 1}.0"
DEMO, DEMO_SGLANG, TARGET = EXAMPLES / "demo-draft", EXAMPLES / "demo-draft-sglang", EXAMPLES / "demo-target"


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, check=False,
                          env={**base, "PYTEST_ADDOPTS": "-p no:randomly", **env}, timeout=900)


def _report(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _rows(report: dict[str, object]) -> dict[tuple[str, str], dict[str, object]]:
    checkpoints = report["checkpoints"]
    assert isinstance(checkpoints, list)
    return {(Path(c["path"]).name, f"{e['engine']}=={e['version']}"): e for c in checkpoints for e in c["engines"]}


# 1. No quiet green ------------------------------------------------------------------------------------------
def test_a_draft_judged_without_its_target_reads_not_judged_and_exits_as_documented(tmp_path: Path) -> None:
    report = tmp_path / "verdict.json"
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO_SGLANG}", f"--eagle3-report={report}",
                 f"--eagle3-summary={tmp_path / 'summary.md'}"], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]  # nothing failed: by default not judged is no failure
    table = [line for line in done.stdout.splitlines() if re.match(r"\s+(sglang|vllm)==", line)]
    assert len(table) == 2 and all("NOT JUDGED" in line and "PASS" not in line for line in table), table
    assert "NOT JUDGED for" in done.stdout and "engine.aux_layers" in done.stdout
    rows = _rows(_report(report))
    vllm = rows[("demo-draft-sglang", f"vllm=={NEWEST_VLLM}")]
    assert vllm["verdict"] == "not judged" and vllm["complete"] is False
    assert vllm["not_judged"] == ["engine.aux_layers", "engine.acceptance"]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "0 of 1 checkpoint failing, 1 not judged" in summary and "| NOT JUDGED |" in summary
    strict = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO_SGLANG}", "--eagle3-not-judged=fail",
                   "-q"], tmp_path)
    assert strict.returncode == 1, strict.stdout[-2000:]
    with_target = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO_SGLANG}",
                        f"--eagle3-target={TARGET}", "--eagle3-not-judged=fail", "-q"], tmp_path)
    assert with_target.returncode == 1 and re.search(rf"vllm=={re.escape(NEWEST_VLLM)}\s+FAIL", with_target.stdout)


def test_a_draft_that_names_its_target_is_judged_against_it_without_the_flag(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    shutil.copytree(DEMO, draft)
    shutil.copytree(TARGET, tmp_path / "verifier")
    config = json.loads((draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "../verifier"  # as speculators writes a local path
    (draft / "config.json").write_text(json.dumps(config))
    report = tmp_path / "verdict.json"
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm",
                 f"--eagle3-report={report}"], tmp_path)
    assert "named by its config (speculators_config.verifier.name_or_path" in done.stdout, done.stdout[-3000:]
    data = _report(report)
    named = data["checkpoints"][0]["named_target"]  # type: ignore[index]
    assert named["field"] == "speculators_config.verifier.name_or_path" and named["named"] == "../verifier"
    row = _rows(data)[("draft", f"vllm=={NEWEST_VLLM}")]
    outcomes = {c["id"]: c["outcome"] for c in row["contracts"]}  # type: ignore[union-attr]
    assert outcomes["engine.aux_layers"] == "passed" and outcomes["engine.acceptance"] == "passed", row
    assert row["verdict"] == "pass"


def test_a_named_target_that_cannot_be_found_says_so_and_names_the_flag(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    shutil.copytree(DEMO, draft)
    config = json.loads((draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "no/such-model"
    (draft / "config.json").write_text(json.dumps(config))
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm", "-q"],
                tmp_path, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert done.returncode == 0 and "its config names 'no/such-model'" in done.stdout, done.stdout[-3000:]
    assert "--eagle3-target" in done.stdout and "NOT JUDGED" in done.stdout


# 2. plan without a target -------------------------------------------------------------------------------------
def test_plan_without_a_target_says_what_it_did_not_judge_and_fits_the_terminal(tmp_path: Path) -> None:
    done = _run(["-m", "pytest_eagle3", "plan", str(DEMO_SGLANG), "--engine", "vllm"], tmp_path, COLUMNS="100")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert any(line.startswith("outcome:") and "not judged" in line for line in lines)
    assert any(line.startswith("verdict:") and "NOT JUDGED" in line for line in lines)
    with_target = _run(["-m", "pytest_eagle3", "plan", str(DEMO_SGLANG), "--engine", "vllm", "--target", str(TARGET)],
                       tmp_path)
    assert "outcome:              loads with loss" in with_target.stdout
    assert "verdict:              FAIL: failing engine.acceptance, engine.aux_layers" in with_target.stdout


# 4. wrong targets -------------------------------------------------------------------------------------------
def test_a_draft_given_as_the_target_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-target={DEMO_SGLANG}"],
                tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "is an EAGLE-3 draft" in done.stderr and "not a target model" in done.stderr
    plan = _run(["-m", "pytest_eagle3", "plan", str(DEMO), "--target", str(DEMO_SGLANG)], tmp_path)
    assert plan.returncode == 2 and "--target:" in plan.stderr and "is an EAGLE-3 draft" in plan.stderr


def test_a_same_shape_wrong_target_blames_no_draft_and_advises_no_draft_edit(tmp_path: Path) -> None:
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", "--eagle3-engine=vllm",
                 f"--eagle3-target={EXAMPLES / 'tiny-target'}", f"--eagle3-report={tmp_path / 'v.json'}"], tmp_path)
    assert done.returncode == 1
    rows = _rows(_report(tmp_path / "v.json"))
    failing = rows[("demo-draft", f"vllm=={NEWEST_VLLM}")]["failing"]
    assert failing[0] == "reference.acceptance" and "engine.embeddings" not in failing, failing  # no measured embed
    assert "drop embed_tokens.weight" not in done.stdout, done.stdout[-3000:]
    # the root cause is computed first: the target, so no draft-side fix line (no positions edit, no see-the-others)
    said = " ".join(done.stdout.split())
    assert f"demo-draft (vllm=={NEWEST_VLLM}): reference.acceptance [low-acceptance]: the draft accepts nothing on this " \
           "target under any reading" in said or "root cause" not in said, said[-3000:]
    fixes = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("fix: ")]
    assert fixes and all("--eagle3-target names the model" in line for line in fixes), fixes
    rows_json = _report(tmp_path / "v.json")["checkpoints"][0]["engines"]  # type: ignore[index]
    assert all(not e["fix"] or all("--eagle3-target" in f for f in e["fix"]) for e in rows_json), rows_json
    repair = [line for line in done.stdout.splitlines() if line.startswith("repair ")]
    assert len(repair) == 1 and "first the target" in repair[0] and "--eagle3-target names the model" in repair[0]


# 3 and 9. repair lines -------------------------------------------------------------------------------------------
def test_a_truncated_file_counts_its_problems_and_its_repair_line_is_one_line(tmp_path: Path) -> None:
    from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint

    draft = write_checkpoint(SynthSpec().with_faults("truncated"), tmp_path / "draft")
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm",
                 f"--eagle3-report={tmp_path / 'v.json'}"], tmp_path)
    report = _report(tmp_path / "v.json")
    readable = next(c for c in report["checkpoints"][0]["engines"][0]["contracts"]  # type: ignore[index]
                    if c["id"] == "checkpoint.readable")
    finding = readable["findings"][0]
    count = int(finding["summary"].split()[0])
    if count > 8:
        assert finding["details"][0].startswith(f"+{count - 8} more: "), finding
    repair = [line for line in done.stdout.splitlines() if line.startswith("repair ")]
    assert repair and all("re-export the checkpoint" in line for line in repair), repair
    assert len(" ".join(repair)) < 400, repair


# also ---------------------------------------------------------------------------------------------------
def test_a_version_newer_than_every_release_read_is_judged_with_a_loud_warning(tmp_path: Path) -> None:
    for version in (BEYOND_VLLM, "9.9"):
        done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-engine=vllm=={version}",
                     "-q"], tmp_path)
        said = (f"vllm=={version} is newer than every vLLM release read (newest {NEWEST_VLLM}): it is judged by "
                f"{NEWEST_VLLM}'s rules")
        assert said in " ".join(done.stdout.split()), done.stdout[-2000:]
        plan = _run(["-m", "pytest_eagle3", "plan", str(DEMO), "--engine", f"vllm=={version}"], tmp_path)
        assert said in " ".join(plan.stderr.split()) and plan.returncode == 0


def test_help_names_every_engine(tmp_path: Path) -> None:
    done = _run(["-m", "pytest_eagle3", "--help"], tmp_path, COLUMNS="200")
    for name in ("SGLang", "vLLM", "TensorRT-LLM", "LMDeploy", "llama.cpp", "mlx-vlm", "TokenSpeed"):
        assert name in done.stdout


# 6. sweep never calls a failing checkpoint best ---------------------------------------------------------------
def test_a_checkpoint_that_fails_is_never_named_best() -> None:
    from pytest_eagle3.verdict.sweep import CheckpointRow, EngineRow, Sweep

    failing = EngineRow("tokenspeed==0.1.1", "fail", "loads with loss", ("engine.aux_layers",), 1.43, "measured", "x")
    passing = EngineRow("tokenspeed==0.1.1", "pass", "loads", (), 1.20, "measured", None)
    high = Sweep("t", ("tokenspeed==0.1.1",), (CheckpointRow("run/inputof", 3.7, (failing,)),), 1)
    assert high.best() == {"tokenspeed==0.1.1": None}
    assert "no checkpoint passes" in high.why_no_best("tokenspeed==0.1.1") and "FAIL" in high.why_no_best("tokenspeed==0.1.1")
    both = Sweep("t", ("tokenspeed==0.1.1",), (CheckpointRow("run/a", 3.7, (failing,)), CheckpointRow("run/b", 3.7, (passing,))), 1)
    best = both.best()["tokenspeed==0.1.1"]
    assert best is not None and best.path == "run/b"


# 7. a two-state fc gets one consistent fix --------------------------------------------------------------------
def test_an_fc_trained_on_two_states_gets_one_fix_everywhere(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    draft = tmp_path / "fc2"
    shutil.copytree(DEMO_SGLANG, draft)
    weights = load_file(draft / "model.safetensors")
    weights["fc.weight"] = weights["fc.weight"][:, :128].contiguous()
    save_file(weights, draft / "model.safetensors")
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm",
                 f"--eagle3-target={TARGET / 'config.json'}"], tmp_path)
    said = " ".join(done.stdout.split())
    assert "fc.weight was trained on 2 concatenated states but the config names 3 aux ids [2, 4, 5]" in said
    assert "config.json names 3 aux ids [2, 4, 5] but fc was trained on 2 states" in said  # engine.fc agrees
    assert "num_aux_hidden_states: 2" not in said and "fc expects 192" not in said
    assert "the checkpoint's fc takes 128" in said


# 8. an off-by-one draft gets the fix command, not "fix cannot" --------------------------------------------------
def test_aux_ids_off_by_one_get_the_fix_that_writes_the_measured_layers(tmp_path: Path) -> None:
    draft = tmp_path / "off-by-one"
    shutil.copytree(DEMO_SGLANG, draft)
    config = json.loads((draft / "config.json").read_text())
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [1, 3, 4]  # trained on outputs of [2, 4, 5]
    (draft / "config.json").write_text(json.dumps(config))
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", f"--eagle3-target={TARGET}"],
                tmp_path)
    repair = [line for line in done.stdout.splitlines() if line.startswith("repair ")]
    assert repair == [f"repair {draft} (sglang==0.5.23, vllm=={NEWEST_VLLM}): python -m pytest_eagle3 fix {draft} OUT --to "
                      f"sglang==0.5.23,vllm=={NEWEST_VLLM} --target {TARGET}"], repair
    assert "fix cannot" not in done.stdout and "input-of" in (ROOT / "README.md").read_text()

