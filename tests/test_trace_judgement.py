"""The judgement trace (benchmarks/trace_judgement.py, issue 48's measure) runs and prints its figure lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("stops", "files", "returns to a file already left", "engines/ -> knowledge/ crossings",
           "knowledge/ -> engines/ crossings")


@pytest.mark.slow
def test_the_trace_prints_its_figures_and_files() -> None:
    """A fresh process (the script's own rule: no warm cache); the figures are a measure, so only their lines are
    checked, and that the file list starts where the judgement is made."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "trace_judgement.py"), "--files"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("judgement(demo-draft-sglang, vllm=="), lines[0]
    for name in FIGURES:
        assert any(re.fullmatch(rf"{re.escape(name)}: \d+", line) for line in lines), (name, done.stdout)
    listed = [line.split()[-1] for line in lines if re.fullmatch(r"\s+\d+\s+\S+\.py", line)]
    assert listed[0] == "verdict/rows.py", listed[:3]
    assert any(f.startswith("engines/") for f in listed) and any(f.startswith("knowledge/") for f in listed)
