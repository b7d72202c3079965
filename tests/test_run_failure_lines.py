"""A run failed by an option says so in its last lines: the option and the rows it failed; the lines under the table
list exactly what their headings name, and a hint to give an option is never shown once it is given.

Run as a user runs pytest, from a folder outside the clone (``tests.user_runs``) or in-process (``run_contracts``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pytest_eagle3.testing.synth import SynthSpec
from tests.conftest import ContractRun
from tests.user_runs import DEMO, DEMO_SGLANG, TARGET, VLLM, read_report, report_rows, run_python

NOT_JUDGED_HINT = "--eagle3-not-judged=fail makes this fail the run"


def _last_lines(stdout: str, count: int = 3) -> list[str]:
    return [" ".join(line.split()) for line in stdout.strip().splitlines()[-count:]]


def test_a_run_failed_by_not_judged_names_the_option_and_the_rows_last(tmp_path: Path) -> None:
    """No target: the vLLM row reads NOT JUDGED. Without the option the run passes and the heading says how to make
    it fail; with it the run exits 1, the heading no longer hints at it, and the last lines name the option, the
    row and the contracts it could not judge, and pytest's count line counts the row."""
    args = ["-m", "pytest", f"--eagle3-ckpt={DEMO_SGLANG}", "--eagle3-engine=vllm", "-p", "no:cacheprovider"]
    passing = run_python(args, tmp_path)
    assert passing.returncode == 0, passing.stdout
    assert NOT_JUDGED_HINT in passing.stdout and "fails the run" not in passing.stdout

    failed = run_python([*args, "--eagle3-not-judged=fail"], tmp_path)
    assert failed.returncode == 1, failed.stdout
    assert NOT_JUDGED_HINT not in failed.stdout
    gate, counts = _last_lines(failed.stdout, 2)
    assert gate == (f"eagle3: --eagle3-not-judged=fail fails the run: NOT JUDGED {DEMO_SGLANG} "
                    f"({VLLM}: engine.aux_layers, engine.acceptance)"), failed.stdout
    assert "1 NOT JUDGED (--eagle3-not-judged=fail)" in counts and "passed" in counts, counts


def test_the_not_judged_heading_lists_exactly_the_contracts_it_names(tmp_path: Path) -> None:
    """The NOT JUDGED heading names the contracts it could not judge and lists those, each with its reason; what
    else did not run follows under its own heading, counted."""
    done = run_python(["-m", "pytest", f"--eagle3-ckpt={DEMO_SGLANG}", "--eagle3-engine=vllm", "-p",
                       "no:cacheprovider"], tmp_path)
    lines = done.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("NOT JUDGED for ")]
    named = lines[at].split("): ", 1)[1].split(" could not be judged")[0].split(", ")
    listed = []
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        listed.append(line.strip().split(":")[0])
    assert named == listed == ["engine.aux_layers", "engine.acceptance"], lines[at:at + 4]
    also = lines[at + 1 + len(listed)]
    assert also.startswith(f"also not run for {DEMO_SGLANG} ({VLLM}): ") and also.endswith(" contracts:"), also
    count = int(also.rsplit(": ", 1)[1].split()[0])
    rest = [line.strip().split(":")[0] for line in lines[at + 2 + len(listed):at + 2 + len(listed) + count + 1]
            if line.startswith("  ")]
    assert len(rest) == count and "target.consistent" in rest and not set(rest) & set(named), rest


def test_require_measured_fails_exactly_what_pass_static_lists_unmeasured(tmp_path: Path) -> None:
    """The target's config alone: PASS (static) lists the contracts not measured; --eagle3-require=measured fails
    exactly those (reference.convention among them), and the last lines say the option made them fail."""
    config_only = tmp_path / "target"
    config_only.mkdir()
    shutil.copy(TARGET / "config.json", config_only / "config.json")
    report = tmp_path / "report.json"
    args = ["-m", "pytest", f"--eagle3-ckpt={DEMO}", f"--eagle3-target={config_only}", "--eagle3-engine=vllm",
            f"--eagle3-report={report}", "-p", "no:cacheprovider"]
    static = run_python(args, tmp_path)
    assert static.returncode == 0, static.stdout
    (heading,) = [line for line in static.stdout.splitlines() if line.startswith("PASS (static) for ")]
    unmeasured = heading.split("passed; ")[1].split(" not measured")[0].split(", ")
    assert "reference.convention" in unmeasured, heading

    required = run_python([*args, "--eagle3-require=measured"], tmp_path)
    assert required.returncode == 1, required.stdout
    rows = report_rows(read_report(report))
    any_row = next(c for c in read_report(report)["checkpoints"])["engines"][0]
    failing = dict.fromkeys([*any_row["failing"], *rows[(DEMO.name, VLLM)]["failing"]])
    assert sorted(failing) == sorted(unmeasured), (failing, unmeasured)
    gate = next(line for line in required.stdout.splitlines() if "--eagle3-require=measured fails the run" in line)
    assert gate == (f"eagle3: --eagle3-require=measured fails the run: not measured {DEMO} "
                    f"(any: reference.acceptance, reference.convention; {VLLM}: engine.acceptance)"), gate


def test_a_run_failed_by_unknown_fail_names_the_option_and_the_rows(
        make_variant: Callable[..., Path], run_contracts: Callable[..., ContractRun]) -> None:
    """A field no engine reads and the simulation cannot price is a skip; --eagle3-unknown=fail makes it a failure,
    and the lines under the table say that option failed those rows, not a rule."""
    draft = make_variant(SynthSpec(producer="modelopt"), name="modelopt-unknown-gate",
                         config=lambda c: c["eagle_config"].update({"parallel_draft_step": 2}))
    engines = "--eagle3-engine=vllm==0.32.0,sglang==0.5.23"
    skipped = run_contracts([draft], engines)
    assert "--eagle3-unknown=fail fails the run" not in skipped.output
    run = run_contracts([draft], engines, "--eagle3-unknown=fail")
    assert run.result.ret == 1
    text = " ".join(run.output.split())
    assert (f"eagle3: --eagle3-unknown=fail fails the run: not modelled {draft} "
            "(vllm==0.32.0: engine.producer; sglang==0.5.23: engine.producer)") in text, run.output


def test_one_reason_for_every_skipped_marked_test_is_not_counted_twice(tmp_path: Path) -> None:
    """``6 tests marked gpu did not run ...: <reason>`` says the count once: a lone reason carries no ``(6)``."""
    (tmp_path / "test_user.py").write_text(
        "import pytest\n\n@pytest.mark.gpu\n@pytest.mark.parametrize('n', range(3))\ndef test_gpu(n):\n    pass\n",
        encoding="utf-8")
    done = run_python(["-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider"], tmp_path, CUDA_VISIBLE_DEVICES="")
    (line,) = [line for line in done.stdout.splitlines() if "marked gpu did not run" in line]
    assert line.startswith("eagle3: 3 tests marked gpu did not run") and not line.endswith("(3)"), line
