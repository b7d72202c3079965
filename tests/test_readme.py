"""The README and docs/*.md cannot go stale: each console block is an excerpt of what its command prints
now, the JSON examples name only keys a real report has, under the schema id the plugin writes, and the
figures quoted from recorded measurements are the recorded ones."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the README's commands run the reference (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: The README and the user documentation it links: every console and JSON block in them is checked.
DOCS = {"README.md": README, **{f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}}
#: A console block: a fence, ``$ COMMAND``, then lines the command prints, in order (``...`` elides).
CONSOLE = re.compile(r"^```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)^```", re.DOTALL | re.MULTILINE)
#: A ```json block is a report example; another JSON file (e.g. ```json sidecar) carries a second word.
JSON_BLOCK = re.compile(r"^```json\n(?P<body>.*?)^```", re.DOTALL | re.MULTILINE)
BLOCKS = [(m.group("command"), m.group("output")) for text in DOCS.values() for m in CONSOLE.finditer(text)]


def _normalise(line: str) -> str:
    return " ".join(line.split())


def _run(command: str, *extra: str) -> str:
    words = shlex.split(command)
    assert words[0] in ("pytest", "python"), f"README command {command!r}: only pytest / python commands run here"
    if "--out" in words:  # a command that writes a folder writes it outside the clone (it must not exist yet)
        words[words.index("--out") + 1] = str(Path(tempfile.mkdtemp()) / "out")
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words[1:]] if words[0] == "pytest" else \
        [sys.executable, *words[1:]]
    done = subprocess.run([*argv, *extra], cwd=ROOT, capture_output=True, text=True, check=False, timeout=900)
    return done.stdout + done.stderr


def test_the_readme_shows_console_blocks() -> None:
    assert BLOCKS, "README.md has no ```console block starting with a $ command"


@pytest.mark.slow
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
    from pytest_eagle3.verdict.report import SCHEMA

    known = {"..."}
    # the target with weights (a measured row), and its config alone (a PASS (static) row: unmeasured, not_run)
    for name, target in (("weights", "examples/demo-target"), ("config", "examples/demo-target/config.json")):
        report = tmp_path / f"{name}.json"
        _run(f"pytest --eagle3-ckpt=examples/demo-draft-sglang --eagle3-target={target} --eagle3-engine=vllm",
             f"--eagle3-report={report}")
        known |= _keys(json.loads(report.read_text(encoding="utf-8")))
    for block in (b for text in DOCS.values() for b in JSON_BLOCK.finditer(text)):
        body = block.group("body")
        unknown = sorted(set(re.findall(r'"([A-Za-z_.]+)":', body)) - known)
        assert unknown == [], f"README JSON keys no report has: {unknown}"
        assert set(re.findall(r'"schema": "([^"]+)"', body)) <= {SCHEMA}


def test_the_readme_starts_with_install_main_job_and_tests() -> None:
    """A newcomer's first commands: the install line, the main job on bundled examples, the plugin's tests."""
    first = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert first is not None and README.index(first.group(0)) < README.index("\n## ")
    lines = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    # a user's install: the plugin and what the main job needs, torch from its CPU index; the tests' extra apart
    assert lines[0].startswith("pip install torch") and "download.pytorch.org/whl/cpu" in lines[0]
    assert '-e ".[target]"' in lines[0] and ".[test]" not in lines[0] and ".[dev]" not in lines[0]
    assert lines[1].startswith("pytest --eagle3-ckpt=examples/") and "--eagle3-target=examples/" in lines[1]
    # the tests' line installs what it needs itself ([test]: xdist for -n 2) and runs the fast tier
    install, _, tests = lines[2].partition(" && ")
    assert install == 'pip install -e ".[test]"' and tests.startswith("pytest -n 2") and "--eagle3-ckpt" not in tests


def test_the_readme_is_read_in_ten_minutes() -> None:
    assert len(README.splitlines()) <= 250
    sections = re.findall(r"^## (.+)$", README, re.MULTILINE)
    for wanted in ("Install", "The main job", "Your own draft", "What the verdicts mean", "Options",
                   "Live engines and the GPU", "The bundled examples", "tox", "Layout"):
        assert wanted in sections, wanted
    for link in re.findall(r"\]\((docs/[^)#]+)\)", README):
        assert (ROOT / link).is_file(), link


def test_every_option_is_in_the_readmes_table() -> None:
    from pytest_eagle3.option_table import OPTIONS

    missing = [spec.flag for spec in OPTIONS if f"`{spec.flag}" not in README]
    assert missing == []


def test_every_verdict_word_is_explained() -> None:
    verdicts = README.split("## What the verdicts mean")[1].split("\n## ")[0]
    for word in ("`PASS`", "`PASS (static)`", "`PASS (partial)`", "`NOT JUDGED`", "`FAIL`", "`NOT RUN`", "`any`",
                 "`refused`", "(sim, layers measured)", "(sim, layers assumed)", "as trained", "loads with loss",
                 "`complete`", "`not_run`", "`unmeasured`", "`--eagle3-require=measured`", "plausible readings",
                 "never a FAIL"):
        assert word in verdicts, word


def test_vllms_own_figure_for_the_demo_pair_is_the_recorded_one() -> None:
    """One figure for vLLM's counters on demo-draft-sglang, wherever it is quoted: the recorded one."""
    recorded = json.loads((ROOT / "examples" / "vllm_acceptance.json").read_text(encoding="utf-8"))
    figure = f"{recorded['vllm']['0.32.0']['demo-draft-sglang']['mean_acceptance_length']:.3f}"
    assert f"counters gave {figure}" in " ".join(README.split())
    for name, text in DOCS.items():
        for stale in ("2.615", "reached 2.66"):
            assert stale not in text, (name, stale)


def test_the_readmes_engine_list_is_the_registrys() -> None:
    """The engines the README's opening names are the engines the registry holds: a new engine module fails this
    test until the README names it."""
    from pytest_eagle3.knowledge.engines import REGISTRY

    opening = re.search(r"and served by another \(([^)]+)\)", README)
    assert opening is not None, "the README's opening no longer names the serving engines"
    named = {name.strip() for name in opening.group(1).split(",")}
    assert named == {engine.display for engine in REGISTRY}
