"""The README cannot go stale: each console block is an excerpt of what its command prints now, and
the JSON examples name only keys a real report has, under the schema id the plugin writes."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the README's commands run the reference (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: A console block: a fence, ``$ COMMAND``, then lines the command prints, in order (``...`` elides).
CONSOLE = re.compile(r"^```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)^```", re.DOTALL | re.MULTILINE)
JSON_BLOCK = re.compile(r"^```json\n(?P<body>.*?)^```", re.DOTALL | re.MULTILINE)
BLOCKS = [(m.group("command"), m.group("output")) for m in CONSOLE.finditer(README)]


def _normalise(line: str) -> str:
    return " ".join(line.split())


def _run(command: str, *extra: str) -> str:
    words = shlex.split(command)
    assert words[0] in ("pytest", "python"), f"README command {command!r}: only pytest / python commands run here"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words[1:]] if words[0] == "pytest" else \
        [sys.executable, *words[1:]]
    done = subprocess.run([*argv, *extra], cwd=ROOT, capture_output=True, text=True, check=False, timeout=900)
    return done.stdout + done.stderr


def test_the_readme_shows_console_blocks() -> None:
    assert BLOCKS, "README.md has no ```console block starting with a $ command"


@pytest.mark.parametrize(("command", "shown"), BLOCKS, ids=[command[:70] for command, _ in BLOCKS])
def test_console_block_is_what_the_command_prints(command: str, shown: str) -> None:
    printed = [_normalise(line) for line in _run(command).splitlines()]
    position = 0
    for line in map(_normalise, shown.splitlines()):
        if not line or line == "...":
            continue
        if line not in printed[position:]:
            pytest.fail(f"README shows a line that `{command}` does not print (here, in this order):\n  {line}\n"
                        "it printed:\n" + "\n".join(printed[-40:]))
        position = printed.index(line, position) + 1


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {key for inner in value.values() for key in _keys(inner)}
    if isinstance(value, list):
        return {key for inner in value for key in _keys(inner)}
    return set()


def test_json_examples_name_keys_a_real_report_has(tmp_path: Path) -> None:
    from pytest_eagle3.shell.report import SCHEMA

    report = tmp_path / "report.json"
    _run("pytest --eagle3-ckpt=examples/demo-draft-sglang --eagle3-target=examples/demo-target "
         "--eagle3-engine=vllm", f"--eagle3-report={report}")
    real = json.loads(report.read_text(encoding="utf-8"))
    known = _keys(real) | {"..."}
    for block in JSON_BLOCK.finditer(README):
        body = block.group("body")
        unknown = sorted(set(re.findall(r'"([A-Za-z_.]+)":', body)) - known)
        assert unknown == [], f"README JSON keys no report has: {unknown}"
        assert set(re.findall(r'"schema": "([^"]+)"', body)) <= {SCHEMA}
