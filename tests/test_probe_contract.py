"""``probe.load``: the installed engine's own loader on the user's checkpoint, judged against the static plan.

The verdicts are checked on the recorded engine results (every run of ``probes/results.json``) and, in an
engine env (marker ``engine``: ``tox -e vllm0320``, ``tox -e sglang0523``), as a user runs it: pytest with
``--eagle3-vllm-python`` / ``--eagle3-sglang-python`` on a good draft, one the engine refuses, and one on
which one of our own profile rules has been made wrong (in this process) so that the real engine's
result must be shown as the truth.
"""

from __future__ import annotations

import json
import re
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import load_plan
from pytest_eagle3.knowledge import behaviours, draft_class_rows, snapshot
from pytest_eagle3.knowledge.releases import DISPLAY, KNOWN_RANGES, EngineVersion
from pytest_eagle3.knowledge.table import Table, rows
from pytest_eagle3.probes.cases import CASES_BY_NAME, write_all
from pytest_eagle3.probes.probe_verdict import (
    AGREES,
    LOSSY,
    PROBE_ERROR,
    REFUSED_BY_ENGINE,
    UNPLANNED,
    judge_probe,
)
from pytest_eagle3.probes.record import DEFAULT_OUT, NOT_ON_CPU, outcome_word
from pytest_eagle3.probes.run import engine_version, env_variable, find_engine_python
from tests.conftest import HOW_TO, ContractRun

RECORDED = json.loads(DEFAULT_OUT.read_text(encoding="utf-8"))
#: The recorded verdict of a case -> the probe.load status when the plan agrees with the engine.
STATUS = {"loads": AGREES, "loads with loss": LOSSY, "refused": REFUSED_BY_ENGINE, NOT_ON_CPU: PROBE_ERROR}
#: Per engine: a draft it loads, one it refuses (as the plan predicts), and one on which a profile rule made
#: wrong here must be disagreed on. The altered draft loads on every release probed (results.json).
LIVE_CASES = {"vllm": ("specforge", "speculators-4-aux", "specforge-no-aux"),
              "sglang": ("specforge", "speculators", "specforge-norm-flags")}
#: Per engine: the rule made wrong for the altered draft, and its two values (set to the one the release lacks).
ALTERED_RULE = {"vllm": ("use_aux_hidden_state", ("ignored", "honoured")),
                "sglang": ("norm_output", ("not-read", "read"))}


def _no_engine_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner run of an engine test sees only the interpreters it names."""
    for engine in ("vllm", "sglang"):
        monkeypatch.delenv(env_variable(engine), raising=False)


def _script(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# -- the verdicts on what the engines really did (recorded) -------------------------------------
@pytest.mark.parametrize("run", sorted(RECORDED["runs"]))
def test_recorded_engine_results_get_the_verdict_their_outcome_calls_for(
        run: str, probe_cases: tuple[Path, dict[str, Path]]) -> None:
    record = RECORDED["runs"][run]
    engine = EngineVersion(record["engine"], Version(record["version"]))
    target, drafts = probe_cases
    model = TargetModel.open(target)
    wrong = []
    for name, result in record["results"].items():
        if name not in drafts:
            continue
        ckpt = Checkpoint.open(drafts[name])
        spec = CASES_BY_NAME[name].spec
        judged = judge_probe(result, engine, load_plan(ckpt, engine, model),
                             reduced_vocab=spec.draft_vocab_size < spec.vocab_size, python="PYTHON")
        expected = STATUS[outcome_word(engine.engine, result, spec.draft_vocab_size < spec.vocab_size)]
        if judged.status != expected or (expected in (LOSSY, REFUSED_BY_ENGINE)) != judged.failed:
            wrong.append(f"{name}: {judged.status} (expected {expected}): {judged.message}")
    assert not wrong, f"{run}:\n  " + "\n  ".join(wrong)


def test_a_version_outside_the_known_range_is_reported_not_guessed(probe_cases: tuple[Path, dict[str, Path]]) -> None:
    beyond = EngineVersion("vllm", Version("99.0.0"))
    runs = RECORDED["runs"]
    loaded = runs["vllm==0.32.0"]["results"]["specforge"]
    judged = judge_probe(loaded, beyond, None, reduced_vocab=True, python="PYTHON")
    assert judged.status == UNPLANNED and not judged.failed
    (finding,) = judged.findings
    first, last = KNOWN_RANGES["vllm"]
    assert f"outside the profiles' known range {first} to {last}" in finding.summary
    refused = runs["vllm==0.32.0"]["results"]["speculators-4-aux"]
    judged = judge_probe(refused, beyond, None, reduced_vocab=True, python="PYTHON")
    assert judged.status == REFUSED_BY_ENGINE and judged.failed
    assert refused["error"] in judged.message and "no static plan for this version" in judged.message


# -- what a user sees without an engine -----------------------------------------------------------
def test_without_an_interpreter_it_is_not_collected_and_starts_nothing(
        run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_eagle3.probes import run as probe_run

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no interpreter was given: nothing may be started")

    monkeypatch.setattr(probe_run, "engine_version", never)
    monkeypatch.setattr(probe_run, "run_probes", never)
    draft = make_checkpoint(producer="specforge")
    run = run_contracts([draft], "--eagle3-engine=vllm==0.32.0")
    assert "probe.load" not in run.engine_outcomes(draft, "vllm==0.32.0")
    # the user did not ask for the real loader: the verdict is not partial on its account
    (vllm,) = [e for e in run.report["checkpoints"][0]["engines"] if e["engine"] == "vllm"]
    assert "probe.load" not in {c["id"] for c in vllm["not_run"]}
    assert [e["engine"] for e in run.report["checkpoints"][0]["engines"]] == ["any", "vllm"], "sglang not selected"


def test_an_interpreter_without_the_engine_is_named(run_contracts: Callable[..., ContractRun],
                                                    make_checkpoint: Callable[..., Path], tmp_path: Path) -> None:
    bare = _script(tmp_path, "bare-python", f'exec "{sys.executable}" -I -S "$@"\n')
    draft = make_checkpoint(producer="specforge")
    run = run_contracts([draft], f"--eagle3-sglang-python={bare}", "--eagle3-engine=sglang", "-k", "probe_load")
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.23")["probe.load"]
    assert outcome == "skipped"
    assert f"sglang is not installed for {bare}" in message and "--eagle3-sglang-python" in message


def test_a_probe_that_dies_is_no_verdict_and_quotes_its_stderr(
        run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path], synth_target: Path,
        tmp_path: Path) -> None:
    """An interpreter whose engine reports 0.32.0 and whose loader process dies: a skip quoting the stderr
    tail, a failure only with --eagle3-unknown=fail."""
    dying = _script(tmp_path, "dying-python", 'case "$1" in -c) echo 0.32.0 ;; *) echo "Traceback (most recent '
                    'call last):" >&2; echo "RuntimeError: engine import blew up" >&2; exit 3 ;; esac\n')
    draft = make_checkpoint(producer="specforge")
    args = (f"--eagle3-vllm-python={dying}", "--eagle3-engine=vllm", "-k", "probe_load")
    run = run_contracts([draft], *args, target=synth_target)
    outcome, message = run.engine_outcomes(draft, "vllm==0.32.0")["probe.load"]
    assert outcome == "skipped", message
    assert "probe exited with status 3" in message and "RuntimeError: engine import blew up" in message
    assert run.engine_entry(draft, "vllm==0.32.0")["probe"]["status"] == "probe-error"
    run = run_contracts([draft], *args, "--eagle3-unknown=fail", target=synth_target)
    outcome, message = run.engine_outcomes(draft, "vllm==0.32.0")["probe.load"]
    assert outcome == "failed" and message.startswith("probe.load [probe-error]:")


# -- the real engines ---------------------------------------------------------------------------
@contextmanager
def _profile_rule(engine: str, behaviour: str, value: Any) -> Iterator[None]:
    """Make one of our own rules say ``value`` over the engine's whole known range, in this process only."""
    saved = behaviours.TABLES[behaviour]
    kept = tuple(r for r in saved.rows if r.engine != engine)
    (wrong,) = rows(engine, (KNOWN_RANGES[engine][0], None, value, "made wrong by the test"))
    behaviours.TABLES[behaviour] = Table(saved.name, (*kept, wrong), description=saved.description)
    scanned = draft_class_rows.class_row

    def class_row(engine_: str, version: Version, klass: str | None, behaviour_: str) -> Any:
        """A scanned class row would decide the behaviour before the table: the made-wrong rule decides."""
        if (engine_, behaviour_) == (engine, behaviour):
            return None
        return scanned(engine_, version, klass, behaviour_)

    draft_class_rows.class_row = class_row  # type: ignore[assignment]
    snapshot.snapshot_of.cache_clear()
    try:
        yield
    finally:
        behaviours.TABLES[behaviour] = saved
        draft_class_rows.class_row = scanned  # type: ignore[assignment]
        snapshot.snapshot_of.cache_clear()


@pytest.fixture(scope="module")
def live_cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    names = tuple(dict.fromkeys(n for cases in LIVE_CASES.values() for n in cases))
    return write_all(tmp_path_factory.mktemp("probe-load"), names)


@pytest.mark.engine
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_installed_engine_is_the_ground_truth(engine: str, run_contracts: Callable[..., ContractRun],
                                                  live_cases: tuple[Path, dict[str, Path]],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    python = find_engine_python(engine)
    if python is None:
        pytest.skip(f"no {engine} interpreter: set {env_variable(engine)} or run {HOW_TO[engine]}")
    _no_engine_env(monkeypatch)
    version = engine_version(engine, python)
    target, drafts = live_cases
    good, refused, altered = (drafts[name] for name in LIVE_CASES[engine])
    # our rule for what the altered draft sets is made to say the opposite of what this release does
    rule, (off, on) = ALTERED_RULE[engine]
    now = getattr(snapshot.snapshot_of(EngineVersion(engine, Version(str(version)))).behaviours, rule)
    with _profile_rule(engine, rule, off if now != off else on):
        run = run_contracts([good, refused, altered], f"--eagle3-{engine}-python={python}", f"--eagle3-engine={engine}",
                            "-k", "probe_load", target=target)
    spec, label = f"{engine}=={version}", f"{DISPLAY[engine]} {version}"
    outcome, message = run.engine_outcomes(good, spec)["probe.load"]
    assert outcome == "passed" and "the static plan agrees on every fact compared" in message, message

    entry = run.engine_entry(refused, spec)
    outcome, message = run.engine_outcomes(refused, spec)["probe.load"]
    error = entry["probe"]["error"]
    assert outcome == "failed" and error and error[:80] in message, message
    assert message.startswith(f"probe.load [engine-refused]: {label}'s own loader refused the draft")
    assert "(our static plan predicted it)" in message

    entry = run.engine_entry(altered, spec)
    outcome, message = run.engine_outcomes(altered, spec)["probe.load"]
    text = run.output
    # headed by the engine's own loss where this release drops a tensor of it (SGLang < 0.5.12: fc_norm)
    assert outcome == "failed" and message.startswith(("probe.load [profile-wrong]", "probe.load [engine-loss]"))
    assert re.search(rf"\[profile-wrong\]:? our profile is wrong for {re.escape(label)}:", text), text[-3000:]
    differences = entry["probe"]["differences"]
    assert differences and all(d["plan"] != d["engine"] for d in differences), differences
    assert f"test_probe_load[{altered.name}@{spec}]" in text and f"test_probe_load[{refused.name}@{spec}]" in text
    first = differences[0]
    assert f"{first['engine']} (what {label}'s loader did)" in text and f"{first['plan']} (our static plan)" in text
    line = f"real loader {altered}@{spec} ({python}): loaded*; the static plan differs on {first['fact']}*"
    run.result.stdout.fnmatch_lines([line])
