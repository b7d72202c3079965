"""action.yml: a composite GitHub Action that runs the contracts and publishes the summary and the report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.option_table import OPTIONS

ROOT = Path(__file__).resolve().parent.parent
#: yaml comes with the target extra (transformers and huggingface_hub need it).
yaml = pytest.importorskip("yaml", reason="pyyaml is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _step(action: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in action["runs"]["steps"] if s.get("name") == name)


def test_the_action_is_composite_with_the_documented_inputs(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    assert {"draft", "target", "engines", "report", "summary"} <= set(action["inputs"])
    # no default engine set: the user names the engines they serve on (each reads only some formats)
    for name in ("draft", "engines"):
        assert action["inputs"][name]["required"] is True and "default" not in action["inputs"][name], name
    # GitHub does not enforce "required": the first step checks the inputs, before anything is installed
    assert action["runs"]["steps"][0]["name"] == "Check the inputs"
    uses = [s.get("uses", "").split("@")[0] for s in action["runs"]["steps"]]
    assert "actions/setup-python" in uses and "actions/upload-artifact" in uses
    install = _step(action, "Install pytest-eagle3")["run"]
    assert '"$E3_ACTION_PATH[target]"' in install and "--index-url" in install
    assert _step(action, "Install pytest-eagle3")["env"]["E3_ACTION_PATH"] == "${{ github.action_path }}"
    # the summary and the report are published whether the contracts pass or fail
    upload = next(s for s in action["runs"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and "${{ inputs.report }}" in upload["with"]["path"]
    assert _step(action, "Say why there is no verdict table")["if"] == "always()"


def test_every_option_the_action_passes_exists(action: dict[str, Any]) -> None:
    script = _step(action, "Judge the draft")["run"]
    flags = set(re.findall(r"--eagle3-[a-z-]+", script))
    assert flags == {"--eagle3-engine", "--eagle3-report", "--eagle3-summary", "--eagle3-ckpt", "--eagle3-target",
                     "--eagle3-not-judged", "--eagle3-unknown", "--eagle3-require"}
    assert flags <= {spec.flag for spec in OPTIONS}
    # inputs reach the script through the environment, never spliced into the shell text
    assert "${{" not in script


def _run_step(action: dict[str, Any], name: str, tmp_path: Path, inputs: dict[str, str],
              pytest: str = f"{sys.executable} -m pytest") -> subprocess.CompletedProcess[str]:
    """One step's script run as GitHub runs it (bash -eo pipefail), its inputs in the environment as the step's
    ``env`` maps them (an input not given: its default, or empty), ``pytest`` for the runner's pytest."""
    step = _step(action, name)
    defaults = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    given = {**defaults, **inputs}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_"))}
    env.update({key: given.get(value[len("${{ inputs."):-3], "") for key, value in step["env"].items()
                if value.startswith("${{ inputs.")})
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "step-summary.md")
    script = step["run"].replace("python -m pytest", pytest)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], env=env,
                          capture_output=True, text=True, cwd=tmp_path, check=False)


def _judge(action: dict[str, Any], tmp_path: Path, **inputs: str) -> list[str]:
    """The judge step's script, pytest replaced by a printer: the arguments it passes."""
    done = _run_step(action, "Judge the draft", tmp_path, inputs, pytest="printf '%s\\n'")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _run_action(action: dict[str, Any], tmp_path: Path, **inputs: str) -> dict[str, subprocess.CompletedProcess[str]]:
    """The Action's script steps in order as the runner runs them: after a failing step only the ``always()`` ones.
    The test's own interpreter stands in for setup-python and the install step."""
    ran: dict[str, subprocess.CompletedProcess[str]] = {}
    failed = False
    for step in action["runs"]["steps"]:
        if "run" not in step or step["name"] == "Install pytest-eagle3" or (failed and step.get("if") != "always()"):
            continue
        ran[step["name"]] = done = _run_step(action, step["name"], tmp_path, inputs)
        failed = failed or done.returncode != 0
    return ran


def test_the_judge_step_passes_each_draft_and_drops_an_empty_target(action: dict[str, Any], tmp_path: Path) -> None:
    args = _judge(action, tmp_path, draft="ckpt/step-2\n  hf://org/draft@main \n\n", target="", engines="all")
    assert [a for a in args if a.startswith("--eagle3-ckpt")] == ["--eagle3-ckpt=ckpt/step-2",
                                                                 "--eagle3-ckpt=hf://org/draft@main"]
    assert not any(a.startswith("--eagle3-target") for a in args)
    assert "--eagle3-summary=eagle3-summary.md" in args and "--eagle3-engine=all" in args
    # the defaults are the strict gate: NOT JUDGED and unmodelled cases fail the step
    assert "--eagle3-not-judged=fail" in args and "--eagle3-unknown=fail" in args
    assert not any(a.startswith("--eagle3-require") for a in args)
    lenient = _judge(action, tmp_path, draft="d", engines="vllm", strict="false", require="measured")
    assert "--eagle3-not-judged=fail" not in lenient and "--eagle3-require=measured" in lenient
    args = _judge(action, tmp_path, draft="d", engines="vllm", target="t/config.json", **{"extra-args": "--eagle3-k=2 -x"})
    assert args[-3:] == ["--eagle3-target=t/config.json", "--eagle3-k=2", "-x"]


def test_the_readme_workflow_uses_the_action_with_its_inputs(action: dict[str, Any]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# \.github/workflows/.*?)```", readme, re.DOTALL)
    assert block is not None
    workflow = yaml.safe_load(block.group(1))
    steps = next(iter(workflow["jobs"].values()))["steps"]
    used = next(s for s in steps if "pytest-eagle3" in s.get("uses", ""))
    assert set(used["with"]) <= set(action["inputs"]) and {"draft", "engines"} <= set(used["with"])


@pytest.mark.parametrize(("strict", "code"), [("true", 1), ("false", 0)])
def test_with_no_target_the_strict_step_fails_the_specforge_demo_draft_on_vllm(action: dict[str, Any], tmp_path: Path,
                                                                               strict: str, code: int) -> None:
    """The README's headline failure (the SpecForge demo draft on vLLM) fails the step on the strict default: no
    target, so vLLM's aux layers cannot be judged, and the strict gate fails a NOT JUDGED row; ``strict: false``
    lets it pass."""
    done = _run_step(action, "Judge the draft", tmp_path, {
        "draft": str(ROOT / "examples" / "demo-draft-sglang"), "strict": strict, "engines": "vllm",
        "report": str(tmp_path / "report.json"), "summary": str(tmp_path / "summary.md")})
    assert done.returncode == code, done.stdout[-3000:]
    assert "NOT JUDGED" in done.stdout and "vllm==" in done.stdout


def test_with_only_the_draft_set_the_action_stops_before_judging_naming_engines(action: dict[str, Any],
                                                                               tmp_path: Path) -> None:
    """No engines: the first step stops the job with a usage error naming the input and the formats each engine
    reads; nothing is judged, and the job summary says there is no verdict."""
    ran = _run_action(action, tmp_path, draft=str(ROOT / "examples" / "demo-draft"))
    check = ran["Check the inputs"]
    assert check.returncode == 4, check.stdout
    (line,) = check.stdout.splitlines()
    assert line.startswith("::error::engines: not set; name the engines you serve the draft on")
    assert "sglang: specforge, specforge-hf, modelopt; vllm: every one;" in line and "docs/ci.md" in line
    assert "Judge the draft" not in ran and not (tmp_path / "eagle3-report.json").exists()
    assert "No verdict: the run stopped before judging" in (tmp_path / "step-summary.md").read_text(encoding="utf-8")
    # a blank value is no value; a draft left blank and a strict that is neither true nor false are named too
    blank = _run_step(action, "Check the inputs", tmp_path, {"draft": " \n", "engines": " ", "strict": "yes"})
    assert blank.returncode == 4
    assert [line.removeprefix("::error::").split(":")[0] for line in blank.stdout.splitlines()] == [
        "draft", "engines", "strict"]


def test_a_good_draft_passes_the_strict_step_on_the_engines_it_serves_on(action: dict[str, Any],
                                                                          tmp_path: Path) -> None:
    """The speculators demo draft, named for vLLM (which reads its format) with its target's config: every rule runs
    and passes, PASS (static), and the strict gate passes; named for SGLang too (which reads no speculators config),
    the step fails on that engine's refusal, not on a default."""
    inputs = {"draft": str(ROOT / "examples" / "demo-draft"), "target": str(ROOT / "examples" / "demo-target" /
                                                                                 "config.json")}
    ran = _run_action(action, tmp_path, engines="vllm", **inputs)
    assert [done.returncode for done in ran.values()] == [0, 0, 0], ran["Judge the draft"].stdout[-3000:]
    report = json.loads((tmp_path / "eagle3-report.json").read_text(encoding="utf-8"))
    assert [(e["engine"], e["verdict"]) for e in report["checkpoints"][0]["engines"]] == [("any", "pass"),
                                                                                        ("vllm", "pass")]
    (tmp_path / "both").mkdir()
    both = _run_step(action, "Judge the draft", tmp_path / "both", {**inputs, "engines": "sglang,vllm"})
    assert both.returncode == 1 and "engine.architecture" in both.stdout


def test_the_action_installs_torch_as_the_readme_pins_it(action: dict[str, Any]) -> None:
    readme_pin = re.search(r"pip install (torch==[\w.+]+) --index-url (\S+)", (ROOT / "README.md").read_text("utf-8"))
    assert readme_pin is not None
    install = _step(action, "Install pytest-eagle3")["run"]
    assert f'pip install "{readme_pin.group(1)}" --index-url "$E3_TORCH_INDEX"' in install
    assert action["inputs"]["torch-index"]["default"] == readme_pin.group(2)


def test_the_formats_each_engine_reads_are_the_profiles(action: dict[str, Any]) -> None:
    """The Action's message and docs/ci.md's table say what each engine's newest release does with each producer's
    good draft, as the profiles judge it (regenerate the table: python -m pytest_eagle3 matrix --readme docs/ci.md)."""
    from pytest_eagle3.verdict.matrix import (
        FORMATS_END,
        FORMATS_START,
        formats_line,
        newest_rows,
        readme_block,
        render_formats,
    )

    rows = newest_rows()
    assert f"The formats each engine's newest release loads: {formats_line(rows)} (" in _step(action,
                                                                                             "Check the inputs")["run"]
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert readme_block(ci, FORMATS_START, FORMATS_END) == render_formats(rows)
