"""The plugin as users meet it: options and their sources, collection, ids, report, cost when idle."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.releases import RELEASES
from tests.conftest import ContractRun

#: The newest vLLM read (the default a bare "vllm" selects).
NEWEST_VLLM = RELEASES["vllm"][-1]

CONTRACTS = {"checkpoint.readable", "config.parseable", "format.detected", "config.shapes",
             "target.consistent", "vocab.map", "weights.finite", "weights.initialised"}
ENGINE_CONTRACTS = {"engine.architecture", "engine.keys", "engine.vocab", "engine.aux_layers", "engine.fc",
                    "engine.norms", "engine.embeddings", "engine.layers", "engine.geometry", "engine.runtime",
                    "engine.producer"}
REFERENCE_CONTRACTS = {"reference.acceptance", "reference.convention"}
#: What a config-only target leaves unmeasured on an engine row (the ``any`` row's reference, then its own).
UNMEASURED = ["reference.acceptance", "reference.convention", "engine.acceptance"]


def test_report_has_the_documented_shape(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path], synth_target: Path
) -> None:
    good = make_checkpoint(producer="speculators")
    run = run_contracts([good], "--eagle3-engine=vllm==0.12.0,vllm", target=synth_target / "config.json")
    # engine.acceptance skips on both engines: the target is given as a config only (no weights); probe.load
    # is not collected: no engine interpreter is given
    run.result.assert_outcomes(passed=len(CONTRACTS) + 2 * len(ENGINE_CONTRACTS), skipped=len(REFERENCE_CONTRACTS) + 2)
    report = run.report
    assert report["schema"] == "pytest-eagle3/report/3"
    (ckpt,) = report["checkpoints"]
    assert ckpt["path"] == str(good) and ckpt["format"] == "speculators"
    independent, *engines = ckpt["engines"]
    assert independent["engine"] == "any" and independent["verdict"] == "pass" and independent["failing"] == []
    assert {c["id"] for c in independent["contracts"]} == CONTRACTS | REFERENCE_CONTRACTS
    # every static contract passes; the acceptance is unmeasured (the target's config only): PASS (static)
    assert [(e["engine"], e["version"], e["verdict"], e["not_judged"], e["unmeasured"]) for e in engines] == [
        ("vllm", "0.12.0", "pass", [], UNMEASURED), ("vllm", f"{NEWEST_VLLM}", "pass", [], UNMEASURED)]
    assert all(e["basis"] == "assumed" and "--eagle3-target=DIR" in e["measure_with"] for e in engines)
    for entry in (independent, *engines):
        assert all(c["outcome"] == "passed" and c["message"] for c in entry["contracts"] if c["id"] in CONTRACTS
                   or c["id"] in ENGINE_CONTRACTS)
    assert {c["id"] for c in engines[0]["contracts"]} == ENGINE_CONTRACTS | {"engine.acceptance"}
    assert all(c["basis"] == "assumed" for c in engines[0]["contracts"])
    assert engines[0]["predicted_acceptance"] is None and engines[0]["probe"] is None
    assert {c["id"] for c in engines[1]["contracts"]} == ENGINE_CONTRACTS | {"engine.acceptance"}


def test_failure_counts_against_the_checkpoint_and_prints_the_table(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path]
) -> None:
    good = make_checkpoint(producer="specforge")
    bad = make_checkpoint(producer="specforge", faults=frozenset({"d2t-all-zero"}))
    run = run_contracts([good, bad])
    assert run.result.ret == pytest.ExitCode.TESTS_FAILED
    assert run.verdict(good) == "pass" and run.verdict(bad) == "fail"
    outcome, message = run.outcomes(bad)["vocab.map"]
    assert outcome == "failed" and message.startswith("vocab.map [all-zero]: d2t is all zero")
    run.result.stdout.fnmatch_lines(["*EAGLE-3 verdict*", f"*{good}*PASS*", f"*{bad}*FAIL*vocab.map*"])
    assert "Traceback" not in run.output


def test_without_target_the_target_contract_skips_naming_the_option(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path]
) -> None:
    run = run_contracts([make_checkpoint(producer="eagle")])
    outcome, message = run.outcomes(make_checkpoint(producer="eagle"))["target.consistent"]
    assert outcome == "skipped" and "--eagle3-target" in message


def test_target_mismatch_is_reported(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path], synth_dir: Path
) -> None:
    from pytest_eagle3.testing.synth import SynthSpec, write_target

    other = write_target(SynthSpec(vocab_size=2048, target_layers=4), synth_dir / "other-target", with_weights=False)
    ckpt = make_checkpoint(producer="specforge")
    outcome, message = run_contracts([ckpt], target=other).outcomes(ckpt)["target.consistent"]
    assert outcome == "failed" and message.startswith("target.consistent [target-mismatch]")
    target_only_config = other / "config.json"
    outcome, _ = run_contracts([ckpt], target=target_only_config).outcomes(ckpt)["target.consistent"]
    assert outcome == "failed"


def test_same_folder_names_get_distinct_readable_ids(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint

    a = write_checkpoint(SynthSpec(), tmp_path / "run-a" / "epoch0")
    b = write_checkpoint(SynthSpec(seed=1), tmp_path / "run-b" / "epoch0")
    result = pytester.runpytest(f"--eagle3-ckpt={a}", f"--eagle3-ckpt={b}", "--collect-only", "-q")
    collected = result.stdout.str()
    assert "test_vocab_map[run-a/epoch0]" in collected and "test_vocab_map[run-b/epoch0]" in collected
    assert f"test_keys[run-a/epoch0@vllm=={NEWEST_VLLM}]" in collected


def test_env_variable_and_ini_supply_checkpoints_with_their_source(
    pytester: pytest.Pytester, make_checkpoint: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
    synth_target: Path,
) -> None:
    one, two = make_checkpoint(producer="speculators"), make_checkpoint(producer="specforge")
    monkeypatch.setenv("EAGLE3_CKPT", f"{one}{os.pathsep}{two}")
    monkeypatch.setenv("EAGLE3_ENGINES", "vllm")
    result = pytester.runpytest("-p", "no:cacheprovider")
    # target.consistent and the two reference contracts skip for both (no target); vLLM reads the
    # speculators draft's top-level ids, so its aux layers are decidable without the target, while
    # SpecForge's ids sit where vLLM 0.33's GPU runner does not look: the defaults need the target's
    # layer count (engine.aux_layers, engine.fc, engine.runtime skip); engine.acceptance skips for both (no target);
    # probe.load is not collected (no interpreter)
    result.assert_outcomes(passed=32, skipped=12)
    result.stdout.fnmatch_lines([f"eagle3: ckpt={one}, {two} (from env EAGLE3_CKPT)"])
    monkeypatch.delenv("EAGLE3_CKPT")
    pytester.makeini(f"[pytest]\neagle3_ckpt =\n    {one}\neagle3_target = {synth_target / 'config.json'}\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"eagle3: ckpt={one} (from ini eagle3_ckpt)", "eagle3: target=* (from ini eagle3_target)"])
    monkeypatch.setenv("EAGLE3_CKPT", str(two))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--eagle3-ckpt={one}")
    result.stdout.fnmatch_lines([f"eagle3: ckpt={one} (from option)"])


def test_pyargs_runs_contracts_next_to_the_users_own_tests(
    pytester: pytest.Pytester, make_checkpoint: Callable[..., Path]
) -> None:
    pytester.makepyfile(test_mine="""
        def test_my_draft_has_a_d2t(eagle3_checkpoint):
            assert "d2t" in eagle3_checkpoint.tensors
    """)
    ckpt = make_checkpoint(producer="speculators")
    result = pytester.runpytest(f"--eagle3-ckpt={ckpt}", "--eagle3-engine=vllm", "--pyargs", "pytest_eagle3.contracts",
                                "test_mine.py")
    result.assert_outcomes(passed=18, skipped=5)
    result.stdout.fnmatch_lines(["*test_mine.py*", "*EAGLE-3 verdict*"])


def test_fixture_skips_with_a_reason_when_no_checkpoint_is_given(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="""
        def test_uses_checkpoint(eagle3_checkpoint):
            pass
    """)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*pass --eagle3-ckpt=PATH*"])


def test_markers_are_registered_even_when_inactive(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked="""
        import pytest
        @pytest.mark.gpu
        @pytest.mark.engine("vllm")
        @pytest.mark.eagle3_contract("x")
        def test_x():
            pass
    """)
    outcomes = pytester.runpytest("--strict-markers").parseoutcomes()
    # gpu / engine auto-skip where no CUDA device or no vllm is visible: either outcome, never an error
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == 1 and not outcomes.get("errors")


def test_idle_plugin_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import sys
        def test_plain():
            heavy = [m for m in ("torch", "safetensors", "hypothesis", "pytest_eagle3.checkpoint",
                                 "pytest_eagle3.knowledge") if m in sys.modules]
            assert heavy == []
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_junit_xml_carries_measured_values(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path], pytester: pytest.Pytester
) -> None:
    xml = pytester.path / "junit.xml"
    run = run_contracts([make_checkpoint(producer="modelopt")], f"--junitxml={xml}")
    text = xml.read_text()
    assert 'name="draft_vocab_size" value="256"' in text
    assert 'name="format" value="modelopt"' in text
    assert 'name="eagle3.message" value="d2t: 256 offsets into vocab' in text, "the pass message, as before"
    assert "record_property is incompatible" not in run.result.stdout.str()


@pytest.mark.slow
def test_xdist_report_is_the_serial_report(
    pytester: pytest.Pytester, make_checkpoint: Callable[..., Path], synth_target: Path
) -> None:
    """What contracts record on the workers (messages, measured values, basis) reaches the controller whole (a
    test of the user's own keeps the workers: the contracts alone run in process)."""
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e '.[test]')")
    good, bad = make_checkpoint(producer="specforge"), make_checkpoint(producer="specforge",
                                                                       faults=frozenset({"d2t-all-zero"}))
    own = pytester.makepyfile(test_own="def test_own():\n    pass\n")
    texts = {}
    for name, extra in (("serial", ()), ("xdist", ("-n", "2"))):
        report, xml = pytester.path / f"{name}.json", pytester.path / f"{name}.xml"
        result = pytester.runpytest_subprocess(
            f"--eagle3-ckpt={good}", f"--eagle3-ckpt={bad}", "--eagle3-engine=vllm", str(own),
            f"--eagle3-target={synth_target / 'config.json'}",
            f"--eagle3-report={report}", f"--junitxml={xml}", "-p", "no:cacheprovider", "-p", "no:randomly", *extra)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        texts[name] = (report.read_text(), xml.read_text(), result.stdout.str())
    # the same report; only the order of a checkpoint's properties follows the order results arrive in
    assert json.loads(texts["xdist"][0]) == json.loads(texts["serial"][0])
    data = json.loads(texts["xdist"][0])
    vocab = next(c for c in data["checkpoints"][0]["engines"][0]["contracts"] if c["id"] == "vocab.map")
    assert vocab["message"].startswith("d2t: 256 offsets") and vocab["properties"] == {
        "vocab_size": 1024, "draft_vocab_size": 256}
    assert 'name="tensor_count"' in texts["xdist"][1] and 'name="eagle3.message"' in texts["xdist"][1]
    table = [line for line in texts["serial"][2].splitlines() if f"vllm=={NEWEST_VLLM}" in line]
    assert table and all(line in texts["xdist"][2].splitlines() for line in table)


def test_a_contract_record_survives_its_codec() -> None:
    """The record a worker serialises with its TestReport is the record the controller rebuilds."""
    from pytest_eagle3.findings import Evidence, Finding
    from pytest_eagle3.shell.plugin import junit_properties
    from pytest_eagle3.verdict.judgement import ContractOutcome
    from pytest_eagle3.verdict.report import ContractReport, properties_of

    finding = Finding("x", "y", (Evidence("d2t", "absolute", "offsets"),), "fix it", ("a detail",),
                      (("offsets", "passes"), ("absolute", "fails")))
    outcome = ContractOutcome("vocab.map", "pass", "ok here", (finding,), "measured",
                              (("vocab_size", 1024), ("aux_layer_ids", [1, 2, 3]), ("vocab_size", 2048)),
                              {"mean_acceptance_length": 3.5}, {"mean_acceptance_length": 2.5, "basis": "measured"},
                              "loads", "engine.fc [x]", "engine.fc [x]: y", "--eagle3-unknown=fail", {"status": "ok"})
    entry = ContractReport("ckpt", "vllm==0.33.0", ("test_eagle3_vocab.py", 17), "speculators", outcome)
    assert ContractReport.from_json(json.loads(json.dumps(entry.to_json()))) == entry
    assert properties_of(outcome) == {"vocab_size": 2048, "aux_layer_ids": [1, 2, 3]}
    assert [name for name, _ in junit_properties(outcome)] == [
        "vocab_size", "aux_layer_ids", "vocab_size", "eagle3.reference", "eagle3.predicted", "eagle3.probe",
        "eagle3.basis", "eagle3.message"]


def test_eagle3_hypothesis_profiles_are_selectable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_prop="""
        from hypothesis import given, settings
        from pytest_eagle3.testing.strategies import vocab_maps
        from pytest_eagle3.rules.vocab_map import diagnose_vocab_map

        @given(vocab_maps())
        def test_maps(m):
            assert settings().max_examples == 200 and settings().derandomize
            assert diagnose_vocab_map(m.d2t, m.t2d, m.vocab_size, m.draft_vocab_size) == []
    """)
    pytester.runpytest("--hypothesis-profile=eagle3-ci").assert_outcomes(passed=1)


def test_xdist_workers_report_to_the_controller(
    pytester: pytest.Pytester, make_checkpoint: Callable[..., Path]
) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e '.[test]')")
    good, bad = make_checkpoint(producer="angelslim"), make_checkpoint(producer="angelslim", faults=frozenset({"inf-weight"}))
    report = pytester.path / "r.json"
    own = pytester.makepyfile(test_own="def test_own():\n    pass\n")  # keeps the workers (see test_install_table)
    result = pytester.runpytest_subprocess(f"--eagle3-ckpt={good}", f"--eagle3-ckpt={bad}", "-n", "2", str(own),
                                           "--eagle3-engine=vllm", f"--eagle3-report={report}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=30, failed=1, skipped=14)
    result.stdout.fnmatch_lines(["created: 2/2 workers"])
    data = json.loads(report.read_text())
    verdicts = {c["path"]: c["engines"][0]["verdict"] for c in data["checkpoints"]}
    assert verdicts == {str(good): "pass", str(bad): "fail"}
    result.stdout.fnmatch_lines(["*EAGLE-3 verdict*"])


def test_command_line_entry_point(make_checkpoint: Callable[..., Path], tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pytest_eagle3", "synth", "--list-faults"],
                         capture_output=True, text=True, check=True).stdout
    assert "d2t-absolute" in out and "vocab.map" in out
    report = tmp_path / "verdict.json"
    command = [sys.executable, "-m", "pytest_eagle3", "check", str(make_checkpoint(producer="eagle")),
               "--report", str(report), "--engine", "vllm"]
    done = subprocess.run(command, check=False, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert json.loads(report.read_text())["checkpoints"][0]["format"] == "eagle"


def test_contract_run_skips_the_projects_testpaths_conftest(pytester: pytest.Pytester,
                                                            make_checkpoint: Callable[..., Path]) -> None:
    """Inside a repository whose testpaths hold a heavy conftest, a contract run does not import it."""
    pytester.makeini("[pytest]\ntestpaths = devtests\n")
    dev = pytester.mkdir("devtests")
    (dev / "conftest.py").write_text("raise RuntimeError('the dev suite conftest was imported')\n")
    result = pytester.runpytest_subprocess(f"--eagle3-ckpt={make_checkpoint(producer='speculators')}",
                                           "-p", "no:cacheprovider")
    assert "the dev suite conftest was imported" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*EAGLE-3 verdict*", "*speculators-*-good*speculators*any*PASS*"])


@pytest.mark.parametrize(("args", "message"), [
    (["synth", "OUT", "--fault", "nosuch"], "argument --fault: invalid choice: 'nosuch'"),
    (["synth", "OUT", "--producer", "nosuch"], "argument --producer: invalid choice: 'nosuch'"),
    (["synth", "EXISTING"], "already exists; synth never overwrites"),
    (["synth", "OUT", "--producer", "modelopt", "--fault", "pickle-code"], "do not apply to the modelopt layout"),
    (["matrix", "--readme", "nope.md"], "--readme: nope.md is not a file"),
    (["matrix", "--readme", "EXISTING/config.json"], "no generated block to replace"),
])
def test_command_line_mistakes_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "config.json").write_text("{}\n")
    argv = [a.replace("OUT", str(tmp_path / "out")).replace("EXISTING", str(existing)) for a in args]
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", *argv], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in existing.iterdir()) == ["config.json"]


def test_without_target_the_verdict_is_not_judged_and_says_what_did_not_run(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path]
) -> None:
    draft = make_checkpoint(producer="specforge")
    run = run_contracts([draft], "--eagle3-engine=vllm")
    run.result.stdout.fnmatch_lines([
        f"*{draft}*any*PASS (partial)*",
        f"*vllm=={NEWEST_VLLM}*NOT JUDGED*",
        f"NOT JUDGED for {draft} (vllm=={NEWEST_VLLM}): engine.aux_layers, engine.acceptance could not be judged, so no PASS*",
        "  target.consistent: needs the target model: pass --eagle3-target=DIR*",
    ])
    (ckpt,) = run.report["checkpoints"]
    assert ckpt["verdict"] == "not judged" and ckpt["complete"] is False
    independent = ckpt["engines"][0]
    assert independent["complete"] is False
    assert {"target.consistent", "reference.acceptance", "reference.convention"} <= {
        n["id"] for n in independent["not_run"]}
    assert all("--eagle3-target" in n["reason"] for n in independent["not_run"])


def test_report_keeps_the_whole_failure_and_the_run_context(
    run_contracts: Callable[..., ContractRun], make_checkpoint: Callable[..., Path], synth_target: Path
) -> None:
    bad = make_checkpoint(producer="specforge", faults=frozenset({"d2t-all-zero"}))
    run = run_contracts([bad], "--eagle3-engine=sglang==0.5.11,vllm", target=synth_target / "config.json")
    report = run.report
    assert report["target"] == str(synth_target / "config.json")
    assert report["engines"] == ["sglang==0.5.11", f"vllm=={NEWEST_VLLM}"]
    (ckpt,) = report["checkpoints"]
    assert ckpt["verdict"] == "fail"
    vocab = next(c for c in ckpt["engines"][0]["contracts"] if c["id"] == "vocab.map")
    (finding,) = vocab["findings"]
    assert finding["code"] == "all-zero" and finding["fix"] and finding["evidence"][0]["obtained"]
    assert vocab["properties"]["draft_vocab_size"] == 256, "measured values of a failing contract are kept"
    assert vocab["message"].startswith("vocab.map [all-zero]:") and vocab["message"].endswith(f"[{bad}]")
    assert all(e["verdict"] == "fail" and "vocab.map" in e["failing"] for e in ckpt["engines"])


def test_a_plausible_mistake_gives_a_bounded_failure(pytester: pytest.Pytester,
                                                     make_variant: Callable[..., Path]) -> None:
    """Every key saved with a model. prefix (vLLM adds its own): each repeated diagnosis is shown three times,
    then counted in one line. (A target passed as a draft is named in one line: tests/test_draft_kind.py.)"""
    from pytest_eagle3.findings import MAX_LINES, SHOWN_PER_CODE
    from pytest_eagle3.testing.synth import SynthSpec

    prefixed = make_variant(SynthSpec(producer="specforge", draft_layers=2), name="all-model-prefixed",
                            rename=lambda k: k if k in ("lm_head.weight", "d2t", "t2d") else "model." + k)
    result = pytester.runpytest(f"--eagle3-ckpt={prefixed}", "--eagle3-engine=vllm==0.32.0",
                                "-p", "no:cacheprovider")
    text = result.stdout.str()
    keys = text[text.index("test_keys["):]
    keys = re.split(r"\n(?:_{3}|={3})", keys)[0]  # this failure's block only (CI=true adds full summaries)
    assert keys.count("refuses tensor") <= SHOWN_PER_CODE + 1
    assert "[key-refused]" in keys and "more like these" in keys
    assert max(len(block.splitlines()) for block in text.split("\n___")) <= MAX_LINES + 20


def test_contract_run_does_not_import_hypothesis(tmp_path: Path, make_checkpoint: Callable[..., Path]) -> None:
    """Hypothesis' own plugin would import its engine (~1 s) for a run that uses no Hypothesis test."""
    draft = make_checkpoint(producer="speculators")
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "pytest", f"--eagle3-ckpt={draft}",
                           "--eagle3-engine=vllm", "-p", "no:cacheprovider", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "EAGLE-3 verdict" in done.stdout
    assert "hypothesis.internal" not in done.stderr


@pytest.mark.slow
def test_under_xdist_the_verdicts_are_computed_once_and_the_report_is_the_serial_one(tmp_path: Path) -> None:
    """With the target's weights and a test of the user's own (the contracts alone run in process), ``-n 2``
    judges once on the controller (every worker adopts its verdicts, no worker runs the target) and writes the
    report a serial run writes."""
    import subprocess
    import sys

    examples = Path(__file__).resolve().parents[1] / "examples"
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--eagle3-ckpt={examples / 'demo-draft'}", f"--eagle3-ckpt={examples / 'demo-draft-sglang'}",
            f"--eagle3-target={examples / 'demo-target'}", "--eagle3-engine=vllm"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_STEP_SUMMARY"))}
    own = tmp_path / "test_own.py"
    own.write_text("def test_own():\n    pass\n")
    runs = {}
    for name, extra in (("serial", []), ("xdist", ["-n", "2"])):
        done = subprocess.run([*base, f"--eagle3-report={tmp_path / name}.json", str(own), *extra], capture_output=True,
                              text=True, cwd=tmp_path, env={**env, "EAGLE3_PROGRESS": "1"}, check=False, timeout=1800)
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
        runs[name] = done
    assert json.loads((tmp_path / "xdist.json").read_text()) == json.loads((tmp_path / "serial.json").read_text())
    said = runs["xdist"].stdout + runs["xdist"].stderr
    assert "the target's pass, once for every worker" not in said  # the verdicts need no dump of it
    assert "eagle3: contracts for 2 checkpoints" in said and "deselected" in said.splitlines()[-1]
    assert "created: 2/2 workers" in said
