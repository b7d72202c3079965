"""A newcomer's first hour, again (issue "A newcomer's first hour, again"): each case typed the way a user types
it, from a folder outside the clone, asserting what they see."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.releases import RELEASES
from tests.conftest import ContractRun
from tests.reference_cases import EXAMPLES

DEMO = EXAMPLES / "demo-draft"
#: The newest vLLM read (the default a bare "vllm" selects), and a release after it no one has read.
NEWEST_VLLM = RELEASES["vllm"][-1]
BEYOND_VLLM = f"{Version(NEWEST_VLLM).major}.{Version(NEWEST_VLLM).minor + 1}.0"
DEMO_SGLANG = EXAMPLES / "demo-draft-sglang"


# 3. A target of another model: target.consistent fails alone; what needs the target is not run, saying why.
@pytest.fixture
def other_target(tmp_path: Path) -> Path:
    config = json.loads((EXAMPLES / "demo-target" / "config.json").read_text())
    config.update(hidden_size=128, vocab_size=2048)
    folder = tmp_path / "other-target"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_target_of_another_model_fails_target_consistent_alone(
        run_contracts: Callable[..., ContractRun], other_target: Path) -> None:
    run = run_contracts([DEMO, DEMO_SGLANG], "-rs", target=other_target / "config.json")
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    failed = {c["id"] for ckpt in run.report["checkpoints"] for e in ckpt["engines"] for c in e["contracts"]
              if c["outcome"] == "failed"}
    assert failed == {"target.consistent", "engine.architecture"}  # SGLang cannot build the speculators config
    assert run.engine_entry(DEMO_SGLANG, f"vllm=={NEWEST_VLLM}")["failing"] == ["target.consistent"]
    skipped = run.engine_outcomes(DEMO_SGLANG, f"vllm=={NEWEST_VLLM}")
    for contract in ("engine.aux_layers", "engine.embeddings", "engine.runtime", "engine.acceptance"):
        outcome, message = skipped[contract]
        assert outcome == "skipped" and "not run: the target does not match the draft (vocab_size: 1024 vs 2048; " \
            "target hidden size: 64 vs 128)" in message, (contract, message)
    output = run.output
    assert "fix: write" not in output and "max_position_embeddings" not in output and "Traceback" not in output


# 5. Versions as users type them.
@pytest.mark.parametrize(("engine", "message"), [
    ("sglang==0.5", "ERROR: --eagle3-engine: SGLang 0.5 is not a release; it could mean 0.5.1, 0.5.2, 0.5.3, ..., "
                    "0.5.21, 0.5.22, 0.5.23 (42 releases; give one: sglang==0.5.23)"),
    ("sglang==0.5.0", "ERROR: --eagle3-engine: SGLang 0.5.0 is not a release; the releases around it: 0.4.10.post2, "
                      "0.5.1 (give one: sglang==0.4.10.post2)"),
    ("vllm>=0.30", "ERROR: --eagle3-engine: 'vllm>=0.30' is a range, and a range is not accepted: give one version "
                   "per entry, comma-separated (vllm==0.30.0,vllm==0.33.0), or NAME==* for one per profile segment"),
])
def test_a_version_that_is_no_release_is_a_usage_error_naming_what_it_could_mean(
        pytester: pytest.Pytester, engine: str, message: str) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-engine={engine}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_an_engine_newer_than_the_profiles_is_judged_by_the_newest_rules_and_says_so(
        run_contracts: Callable[..., ContractRun]) -> None:
    run = run_contracts([DEMO_SGLANG], f"--eagle3-engine=vllm=={BEYOND_VLLM}", "-m", "not engine",
                        target=EXAMPLES / "demo-target" / "config.json")
    entry = run.engine_entry(DEMO_SGLANG, f"vllm=={BEYOND_VLLM}")
    assert (entry["rules_from"], entry["failing"]) == (NEWEST_VLLM, ["engine.aux_layers"])
    assert run.engine_entry(DEMO_SGLANG, "any")["rules_from"] is None
    run.result.stdout.fnmatch_lines([
        f"engine.aux_layers *vLLM {BEYOND_VLLM} (judged by {NEWEST_VLLM}'s rules) reads aux ids*",
        "*EAGLE-3 verdict*", f"*vllm=={BEYOND_VLLM} ({NEWEST_VLLM} rules)*FAIL*engine.aux_layers"])


# 1. Width: the table, the lines under it and the failures fit the terminal; the matrix prints as text.
def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, check=False,
                          env={**os.environ, "PYTEST_ADDOPTS": "-p no:randomly", **env})


@pytest.mark.parametrize("columns", [80, 100])
def test_the_verdict_and_the_failures_fit_the_terminal(tmp_path: Path, columns: int) -> None:
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={DEMO}", f"--eagle3-ckpt={DEMO_SGLANG}",
                 f"--eagle3-target={EXAMPLES / 'tiny-target' / 'config.json'}"], tmp_path, COLUMNS=str(columns))
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failures = lines[lines.index(next(line for line in lines if "FAILURES" in line)):
                     lines.index(next(line for line in lines if "short test summary info" in line))]
    too_wide = [line for line in failures if len(line) > columns]
    assert not too_wide, too_wide
    verdict = "\n".join(failures[next(i for i, line in enumerate(failures) if "EAGLE-3 verdict" in line):])
    assert f"{DEMO}  speculators" in verdict and re.search(r"\n  sglang==0\.5\.23 +FAIL +- +engine\.architecture\n",
                                                           verdict), verdict
    assert "reference.acceptance: reference acceptance needs the target's weights:" in verdict


def test_a_log_keeps_whole_lines(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--eagle3-ckpt={DEMO}", "-k", "readable or architecture"], capture_output=True, text=True,
                          cwd=tmp_path, check=False, env=env)
    assert re.search(rf"\n{re.escape(str(DEMO))} +speculators +any +PASS", done.stdout), done.stdout[-3000:]


def test_the_matrix_prints_as_text_for_a_terminal(tmp_path: Path) -> None:
    done = _run(["-m", "pytest_eagle3", "matrix"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "<!--" not in done.stdout and "|" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert re.search(r"\n0\.5\.12 +refused +loads", done.stdout) and "matrix --markdown" in done.stdout
    markdown = _run(["-m", "pytest_eagle3", "matrix", "--markdown"], tmp_path).stdout
    assert markdown.startswith("<!-- generated") and "| from | speculators |" in markdown


# 9. Install: the README's first line is a user's install with a CPU-only torch; CI runs it as written.
def test_ci_runs_the_readmes_install_lines_as_written() -> None:
    root = EXAMPLES.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    install, tests = block[0].split("#")[0].strip(), block[2].split("#")[0].strip()
    ci = [line.strip() for line in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert install in ci and "--index-url https://download.pytorch.org/whl/cpu" in install
    developer, _, command = tests.partition(" && ")
    assert developer == 'pip install -e ".[test]"' and command.startswith("pytest -n 2")
    # .ci/run installs the dev extra (the test extra and the linters) and runs the README's test command as written
    assert 'pip install -e ".[dev]"' in ci and any(line.endswith(command.removeprefix("pytest ")) for line in ci)


def test_ci_goes_on_past_its_disk_line_where_pip_has_no_cache(tmp_path: Path) -> None:
    """.ci/run's disk line, under the script's own ``set -euo pipefail``, on a machine where pip's cache dir does
    not exist (a fresh CI machine): it says 'nothing' and the run goes on to the engine envs (du failing inside the
    substitution used to end the run there, silently)."""
    run = (EXAMPLES.parent / ".ci" / "run").read_text(encoding="utf-8")
    function = re.search(r"^du_report\(\) \{\n.*?^\}\n", run, re.S | re.M)
    assert function is not None
    script = f"set -euo pipefail\nwork={tmp_path}\n{function.group(0)}du_report\necho 'on to the engines'\n"
    env = {**os.environ, "PIP_CACHE_DIR": str(tmp_path / "no-cache"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nothing in pip's cache" in done.stdout and "on to the engines" in done.stdout


# 10. A checkpoint in the user's own ini (or environment) belongs to their normal run: their testpaths stay.
@pytest.mark.parametrize("where", ["ini", "env"])
def test_a_checkpoint_from_the_ini_or_the_environment_keeps_the_projects_testpaths(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    ini = "[pytest]\ntestpaths = tests\n" + (f"eagle3_ckpt = {DEMO}\n" if where == "ini" else "")
    pytester.makeini(ini)
    if where == "env":
        monkeypatch.setenv("EAGLE3_CKPT", str(DEMO))
    monkeypatch.setenv("EAGLE3_ENGINES", "vllm")
    (pytester.mkdir("tests") / "test_mine.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["eagle3: contracts for 1 checkpoint (* tests) + 2 of your tests"])
    assert "tests/test_mine.py .." in result.stdout.str() and "EAGLE-3 verdict" in result.stdout.str()
    assert "not collected" not in result.stdout.str()


# 6. Pytest habits: a printed node id re-runs where it was printed; the summary names the repair; check takes
# what the pytest run takes.
def test_a_failed_node_id_pasted_back_re_runs_and_the_summary_names_the_repair(tmp_path: Path) -> None:
    options = [f"--eagle3-ckpt={DEMO_SGLANG}", f"--eagle3-target={EXAMPLES / 'demo-target' / 'config.json'}",
               "--eagle3-engine=vllm"]
    first = _run(["-m", "pytest", "-p", "no:cacheprovider", "-q", *options], tmp_path)
    assert first.returncode == 1, first.stdout[-3000:]
    assert f"repair {DEMO_SGLANG} (vllm=={NEWEST_VLLM}): python -m pytest_eagle3 fix {DEMO_SGLANG} OUT --to vllm=={NEWEST_VLLM}" \
        in first.stdout
    node = next(line.split()[1] for line in first.stdout.splitlines()
                if line.startswith("FAILED") and "test_aux_layers" in line)
    again = _run(["-m", "pytest", "-p", "no:cacheprovider", "-q", node, *options], tmp_path)
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-3000:] + again.stderr
    assert "not found" not in again.stdout + again.stderr and "Traceback" not in again.stdout + again.stderr
    # printed again as it re-runs, file part and all (pytest may add " - reason" where the width allows)
    assert any(line == f"FAILED {node}" or line.startswith(f"FAILED {node} - ") for line in again.stdout.splitlines()), \
        again.stdout[-3000:]


@pytest.mark.slow
def test_the_summary_offers_fix_only_for_the_rows_a_copy_repairs_and_says_the_rest_by_hand(tmp_path: Path) -> None:
    """SGLang 0.4.9 captures the wrong layers under CUDA graphs whatever the config says: no copy repairs that
    row, so it is told what to do by hand; vLLM's aux ids are a config edit, and the offered command writes it."""
    target = EXAMPLES / "demo-target" / "config.json"
    first = _run(["-m", "pytest", "-p", "no:cacheprovider", "-q", f"--eagle3-ckpt={DEMO_SGLANG}", f"--eagle3-target={target}",
                  "--eagle3-engine=sglang==0.4.9,sglang==0.5.23,vllm==0.33.0"], tmp_path)
    assert first.returncode == 1 and "Traceback" not in first.stdout + first.stderr, first.stdout[-3000:]
    repair = [line for line in first.stdout.splitlines() if line.startswith("repair ")]
    assert repair == [
        (f"repair {DEMO_SGLANG} (vllm==0.33.0): python -m pytest_eagle3 fix {DEMO_SGLANG} OUT --to vllm==0.33.0 "
         f"--target {target}"),
        (f"repair {DEMO_SGLANG} (sglang==0.4.9) by hand, python -m pytest_eagle3 fix cannot: serve with SGLang >= "
         "0.5.11 (or --disable-cuda-graph, slow)")], repair
    words = repair[0].split(": ", 1)[1].split()
    fixed = _run([*words[1:]], tmp_path)  # the command as offered, OUT and all
    assert fixed.returncode == 0 and "proof: the contracts pass on OUT for vllm==0.33.0" in fixed.stdout, fixed.stderr


# 7. The fixed copy reads as what its record says it is; no reason under the table is cut.
@pytest.mark.slow
def test_a_fixed_copy_is_read_as_its_record_says_and_no_reason_is_cut(tmp_path: Path) -> None:
    fixed = _run(["-m", "pytest_eagle3", "fix", str(DEMO), "OUT", "--to", "sglang==0.5.23"], tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    check = ["-m", "pytest_eagle3", "check", "OUT", "--engine", "sglang==0.5.23", "-p", "no:cacheprovider",
             "--target", str(EXAMPLES / "demo-target" / "config.json")]
    done = _run(check, tmp_path, COLUMNS="100")
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:]
    assert re.search(r"\nOUT +speculators \(fixed copy\) +any +PASS \(static\)", done.stdout), done.stdout[-3000:]
    assert "unknown" not in done.stdout.split("EAGLE-3 verdict")[1] and "format.detected" not in done.stdout
    record = tmp_path / "OUT" / "eagle3-fix.json"  # a copy an older fix wrote: no producer in its record
    data = json.loads(record.read_text())
    record.write_text(json.dumps({k: v for k, v in data.items() if k != "producer"}))
    older = _run(check, tmp_path, COLUMNS="100").stdout
    under = older.split("EAGLE-3 verdict")[1].split("\n", 1)[1]
    assert "format.detected: a layout several producers share" in under, older[-3000:]
    reason = " ".join(under.split("format.detected: ", 1)[1].split("\n  reference.")[0].split())
    assert reason.endswith("(the reference measurement with --eagle3-target=DIR decides the convention, or state "
                           "it with --eagle3-aux-convention)"), reason
    assert not [line for line in under.splitlines() if line.rstrip().endswith("...") or len(line) > 100], under


# 8. Small leaks: a run that collected nothing says what to give; a pipe that closes early; help without RST.
@pytest.mark.parametrize("args", [["-m", "gpu"], []], ids=["-m gpu", "plain"])
def test_nothing_collected_without_a_checkpoint_says_what_to_give(tmp_path: Path, args: list[str]) -> None:
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", *args], tmp_path, COLUMNS="200")
    assert done.returncode == 5 and "collected 0 items" in done.stdout and "Traceback" not in done.stderr
    assert "eagle3: no checkpoint given, so no EAGLE-3 contract was collected: give the draft with --eagle3-ckpt=PATH " \
           "(or eagle3_ckpt = PATH in the ini file, or $EAGLE3_CKPT)" in done.stdout.splitlines(), done.stdout


def test_a_run_that_collects_tests_is_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text("def test_one():\n    pass\n")
    done = _run(["-m", "pytest", "-p", "no:cacheprovider", "-m", "gpu"], tmp_path)
    assert done.returncode == 5 and "1 deselected" in done.stdout and "no checkpoint given" not in done.stdout, done.stdout


@pytest.mark.parametrize("program", [["-m", "pytest_eagle3"],
                                     ["-c", "import sys; from pytest_eagle3.shell.cli import main; sys.exit(main())"]],
                         ids=["python -m pytest_eagle3", "pytest-eagle3"])
def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path: Path, program: list[str]) -> None:
    """``... | head -1``: the reader is gone before the first line is written (``pytest-eagle3`` is the console
    script, which calls ``main`` as this does)."""
    child = subprocess.Popen([sys.executable, *program, "plan", str(DEMO), "--engine", "sglang==*,vllm"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    error = child.stderr.read()
    assert child.wait(timeout=300) == 0 and "Traceback" not in error and "BrokenPipe" not in error, error


def test_pytest_help_shows_the_eagle3_options_without_rst(tmp_path: Path) -> None:
    text = _run(["-m", "pytest", "--help"], tmp_path, COLUMNS="200").stdout
    ours = [line for line in text.split("EAGLE-3 draft checkpoint contracts:")[1].split("\n\n")[0].splitlines()]
    ours += [line for line in text.splitlines() if line.lstrip().startswith("eagle3_")]
    assert len(ours) > 20 and not [line for line in ours if "`" in line], ours
    markers = _run(["-m", "pytest", "--markers"], tmp_path, COLUMNS="200").stdout
    assert not [line for line in markers.splitlines() if ("eagle3" in line or "gpu" in line) and "`" in line]


def test_check_takes_what_the_pytest_run_takes(tmp_path: Path) -> None:
    done = _run(["-m", "pytest_eagle3", "check", str(DEMO), "-q", "-k", "readable", "--engine", "vllm"], tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr
    assert "--hidden-states DIR" in _run(["-m", "pytest_eagle3", "check", "--help"], tmp_path).stdout


# 8. Help texts: no RST, no developer's remark, every argument explained.
def test_the_help_texts_are_for_users(tmp_path: Path) -> None:
    top = _run(["-m", "pytest_eagle3", "--help"], tmp_path).stdout
    assert "``" not in top and "traceback" not in top.lower() and "COMMAND --help" in top
    for command in ("fix", "plan", "check"):
        text = _run(["-m", "pytest_eagle3", command, "--help"], tmp_path).stdout
        assert "`" not in text, text
        positional = text.split("positional arguments:")[1].split("options:")[0]
        for line in positional.strip().splitlines():
            if line.startswith("  ") and not line.startswith("   "):
                assert len(line.split()) > 1, f"{command}: {line.strip()} has no help text"
