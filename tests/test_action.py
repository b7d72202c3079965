"""action.yml: a composite GitHub Action that runs the contracts and publishes the summary and the report."""

from __future__ import annotations

import os
import re
import subprocess
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
    assert action["inputs"]["draft"]["required"] is True
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


def _judge(action: dict[str, Any], tmp_path: Path, **inputs: str) -> list[str]:
    """The judge step's script run as GitHub runs it (bash -eo pipefail), pytest replaced by a printer."""
    step = _step(action, "Judge the draft")
    defaults = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    env = {**os.environ, **{key: inputs.get(value[len("${{ inputs."):-3], defaults[value[len("${{ inputs."):-3]])
                            for key, value in step["env"].items()}}
    script = step["run"].replace("python -m pytest", "printf '%s\\n'")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], env=env,
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_judge_step_passes_each_draft_and_drops_an_empty_target(action: dict[str, Any], tmp_path: Path) -> None:
    args = _judge(action, tmp_path, draft="ckpt/step-2\n  hf://org/draft@main \n\n", target="")
    assert [a for a in args if a.startswith("--eagle3-ckpt")] == ["--eagle3-ckpt=ckpt/step-2",
                                                                 "--eagle3-ckpt=hf://org/draft@main"]
    assert not any(a.startswith("--eagle3-target") for a in args)
    assert "--eagle3-summary=eagle3-summary.md" in args and "--eagle3-engine=all" in args
    # the defaults are the strict gate: NOT JUDGED and unmodelled cases fail the step
    assert "--eagle3-not-judged=fail" in args and "--eagle3-unknown=fail" in args
    assert not any(a.startswith("--eagle3-require") for a in args)
    lenient = _judge(action, tmp_path, draft="d", strict="false", require="measured")
    assert "--eagle3-not-judged=fail" not in lenient and "--eagle3-require=measured" in lenient
    args = _judge(action, tmp_path, draft="d", target="t/config.json", **{"extra-args": "--eagle3-k=2 -x"})
    assert args[-3:] == ["--eagle3-target=t/config.json", "--eagle3-k=2", "-x"]


def test_the_readme_workflow_uses_the_action_with_its_inputs(action: dict[str, Any]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# \.github/workflows/.*?)```", readme, re.DOTALL)
    assert block is not None
    workflow = yaml.safe_load(block.group(1))
    steps = next(iter(workflow["jobs"].values()))["steps"]
    used = next(s for s in steps if "pytest-eagle3" in s.get("uses", ""))
    assert set(used["with"]) <= set(action["inputs"]) and "draft" in used["with"]


@pytest.mark.parametrize(("strict", "code"), [("true", 1), ("false", 0)])
def test_on_its_defaults_the_step_fails_the_specforge_demo_draft(action: dict[str, Any], tmp_path: Path, strict: str,
                                                                 code: int) -> None:
    """The README's headline failure (the SpecForge demo draft on vLLM) fails the step on the Action's defaults: no
    target, so vLLM's aux layers cannot be judged, and the strict gate fails a NOT JUDGED row; ``strict: false``
    lets it pass (the vLLM row alone: the other engines' own failures would fail it either way)."""
    import sys

    step = _step(action, "Judge the draft")
    defaults = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs = {"draft": str(ROOT / "examples" / "demo-draft-sglang"), "strict": strict, "engines": "vllm",
              "report": str(tmp_path / "report.json"), "summary": str(tmp_path / "summary.md")}
    env = {**os.environ, **{key: inputs.get(value[len("${{ inputs."):-3], defaults[value[len("${{ inputs."):-3]])
                            for key, value in step["env"].items()}}
    env.pop("GITHUB_STEP_SUMMARY", None)
    script = step["run"].replace("python -m pytest", f"{sys.executable} -m pytest")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], env=env,
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == code, done.stdout[-3000:]
    assert "NOT JUDGED" in done.stdout and "vllm==" in done.stdout
