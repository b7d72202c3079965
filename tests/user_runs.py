"""Running the commands the way a user types them, from a folder outside the clone, and reading what they wrote.

The engine versions a bare ``--eagle3-engine=vllm`` (or no ``--eagle3-engine``) selects are read from the release
list, so a test of that run names the row the user sees whichever release is the newest read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_eagle3.knowledge.releases import newest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DEMO, DEMO_SGLANG, TARGET = EXAMPLES / "demo-draft", EXAMPLES / "demo-draft-sglang", EXAMPLES / "demo-target"
#: The rows a bare ``vllm`` / ``sglang`` selects, as the table and the JSON name them (``vllm==0.33.0``).
VLLM, SGLANG = newest("vllm").spec, newest("sglang").spec


def run_python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``cwd`` with the user's environment (no ``COLUMNS``: a pipe), ``env`` on top."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, check=False,
                          env={**base, "PYTEST_ADDOPTS": "-p no:randomly", **env}, timeout=900)


def read_report(path: Path) -> dict[str, Any]:
    """The JSON report a run wrote."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def report_rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The report's rows by (checkpoint folder name, ``engine==version``)."""
    return {(Path(c["path"]).name, f"{e['engine']}=={e['version']}"): e
            for c in report["checkpoints"] for e in c["engines"]}
