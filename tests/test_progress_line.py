"""The progress line: the long steps (the reference acceptance, the prediction, ``fix --target``
and its proof, ``capture``) say what they do and how far they are, the way pytest shows "collecting ...": on a
terminal only (``EAGLE3_PROGRESS=1`` stands for one here, and a real pseudo-terminal once), never under ``-q`` or
into a pipe; the line is erased when the step ends, so what pytest printed is left as it was."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.releases import RELEASES
from tests.reference_cases import EXAMPLES

#: The vLLM a bare "vllm" selects: the newest read.
NEWEST_VLLM = RELEASES["vllm"][-1]

pytest.importorskip("transformers", reason="the reference forward runs the target with transformers")

DEMO, TARGET = EXAMPLES / "demo-draft", EXAMPLES / "demo-target"
#: Three prompts of two lengths (two target runs), few tokens each: a short run with every kind of tick.
PROMPTS = "[5]\n[7, 8]\n[9, 10]\n"


def shown(text: str) -> str:
    """What a terminal shows of ``text``: backspaces move the cursor back, later characters overwrite."""
    screen = []
    for line in text.split("\n"):
        cells: list[str] = []
        at = 0
        for char in line:
            if char == "\b":
                at = max(0, at - 1)
                continue
            cells[at:at + 1] = [char]
            at += 1
        screen.append("".join(cells).rstrip())
    return "\n".join(screen)


def _pytest(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prompts.txt").write_text(PROMPTS)
    clean = {k: v for k, v in os.environ.items() if k not in ("EAGLE3_PROGRESS", "COLUMNS")}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", f"--eagle3-ckpt={DEMO}",
               f"--eagle3-target={TARGET}", "--eagle3-engine=vllm==0.33.0", "--eagle3-continuation=8",
               f"--eagle3-prompts={tmp_path / 'prompts.txt'}", "-k", "test_reference_acceptance or test_acceptance",
               *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={**clean, "COLUMNS": "120", **env})


def test_on_a_terminal_the_long_steps_say_what_they_do_and_leave_pytests_lines_as_they_were(tmp_path: Path) -> None:
    done = _pytest(tmp_path, EAGLE3_PROGRESS="1")
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:]
    # One target pass serves both steps: the first to need it (the prediction, collected first) runs it.
    for line in ("predicting vLLM 0.33.0: loading the target demo-target",
                 "predicting vLLM 0.33.0: running the target, prompt 1 of 3: token 1/11",
                 "predicting vLLM 0.33.0: running the target, prompts 2-3 of 3: token 7/11",
                 "predicting vLLM 0.33.0: measuring the draft, reading 1/",
                 "reference acceptance: measuring the draft, reading 1/"):
        assert line in done.stdout, line
    assert done.stdout.count("loading the target") == 1, done.stdout[-3000:]
    screen = shown(done.stdout)
    assert "running the target" not in screen and "predicting" not in screen  # each line erased when its step ends
    assert re.search(r"\ntest_eagle3_engine_acceptance\.py \. +\[ *\d+%\]\n", screen), screen
    assert "2 passed" in screen.splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "env"), [(("-q",), {"EAGLE3_PROGRESS": "1"}), ((), {}), ((), {"EAGLE3_PROGRESS": "0"})],
                         ids=["quiet", "not-a-terminal", "turned-off"])
def test_no_progress_under_q_or_into_a_pipe(tmp_path: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
    done = _pytest(tmp_path, *args, **env)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "\b" not in done.stdout + done.stderr and "running the target" not in done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is a POSIX device")
def test_a_real_terminal_shows_it_unasked(tmp_path: Path) -> None:
    """pytest's own isatty decides, as for its "collecting ..." line: a pseudo-terminal as stdout."""
    import pty

    (tmp_path / "prompts.txt").write_text(PROMPTS)
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "EAGLE3_PROGRESS"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", f"--eagle3-ckpt={DEMO}",
               f"--eagle3-target={TARGET}", "--eagle3-engine=vllm==0.33.0", "--eagle3-continuation=8",
               f"--eagle3-prompts={tmp_path / 'prompts.txt'}", "-k", "test_reference_acceptance"]
    child = subprocess.Popen(command, stdout=follower, stderr=follower, cwd=tmp_path, env={**env, "COLUMNS": "120"})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=600) == 0
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    assert "reference acceptance: running the target" in text and "\b" in text, text[-3000:]


@pytest.mark.slow
def test_capture_and_fix_with_a_target_show_their_steps_on_a_terminals_stderr(tmp_path: Path) -> None:
    """``capture`` (its prompts) and ``fix --target`` (the training layers measured, each engine predicted, the
    proof): on stderr, erased at each step's end, stdout as it always was."""
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "EAGLE3_PROGRESS": "1", "COLUMNS": "120",
           "PYTEST_ADDOPTS": "-p no:randomly"}
    dump = "dump"  # paths as a user types them, relative to where they are
    captured = subprocess.run([sys.executable, "-m", "pytest_eagle3", "capture", str(TARGET), dump],
                              capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert captured.returncode == 0, captured.stderr[-3000:]
    assert f"capture {dump}: running the target on 16 prompts: token 1/67" in captured.stderr
    assert f"capture {dump}: 16/16 prompts written" in captured.stderr and not shown(captured.stderr).strip()
    assert captured.stdout == f"{Path(dump) / 'manifest.json'}\n"
    fixed = subprocess.run([sys.executable, "-m", "pytest_eagle3", "fix", str(EXAMPLES / "demo-draft-sglang"), "fixed",
                            "--to", "vllm==0.33.0", "--target", str(TARGET / "config.json"), "--hidden-states", dump],
                           capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:]
    for line in ("measuring the training layers: measuring the draft, reading 1/",
                 "predicting vLLM 0.33.0", "proof: the contracts on fixed for vllm==0.33.0"):
        assert line in fixed.stderr, line
    assert not shown(fixed.stderr).strip() and "\b" not in fixed.stdout
    assert "proof: the contracts pass on" in fixed.stdout


def test_plan_and_sweep_with_a_target_show_their_steps_on_a_terminals_stderr(tmp_path: Path) -> None:
    """``plan --target`` and ``sweep`` say what they do while the target runs (stderr; stdout keeps whole lines)."""
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "EAGLE3_PROGRESS": "1", "COLUMNS": "120",
           "PYTEST_ADDOPTS": "-p no:randomly"}
    plan = subprocess.run([sys.executable, "-m", "pytest_eagle3", "plan", str(EXAMPLES / "demo-draft-sglang"),
                           "--engine", "vllm", "--target", str(TARGET)], capture_output=True, text=True, cwd=tmp_path,
                          env=env, check=False)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "judging" in plan.stderr and "running the target" in plan.stderr and f"predicting vLLM {NEWEST_VLLM}" in plan.stderr
    assert "\b" not in plan.stdout and "verdict:" in plan.stdout
    sweep = subprocess.run([sys.executable, "-m", "pytest_eagle3", "sweep", str(EXAMPLES / "demo-draft-sglang"),
                            "--target", str(TARGET), "--engine", "vllm", "--out", "out"], capture_output=True, text=True,
                           cwd=tmp_path, env=env, check=False)
    # vLLM feeds this draft the wrong layers and no other checkpoint passes there: --fail-on=best (the default) exits 1
    assert sweep.returncode == 1 and f"sweep fails (--fail-on=best): vllm=={NEWEST_VLLM}" in sweep.stdout, sweep.stderr[-3000:]
    assert "sweep: " in sweep.stderr and "running the target" in sweep.stderr and "1/1 checkpoints" in sweep.stderr
