"""llama.cpp as an engine: ``llamacpp==bNNNN`` / ``llamacpp==0.3.36`` parsing, the verdicts and fixes a user sees on
the bundled examples on both sides of each boundary (b9976 | b10454: the config's aux ids, norm_before_fc;
b9625 | b9837: Eagle3LlamaForCausalLM), and the recorded converter results against the plans."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, REFUSED, load_plan
from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection
from pytest_eagle3.probes.cases import write_all

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_TARGET = TargetModel.open(EXAMPLES / "demo-target")
RECORD = Path(__file__).resolve().parent.parent / "pytest_eagle3" / "probes" / "llamacpp_results.json"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_eagle3", *args], capture_output=True, text=True, check=False,
                          timeout=600)


def _variant(tmp_path: Path, name: str, **config: Any) -> Path:
    out = tmp_path / name
    shutil.copytree(EXAMPLES / "demo-draft-sglang", out)
    data = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**data, **config}))
    return out


def _codes(path: Path, spec: str) -> tuple[str, set[str]]:
    plan = load_plan(Checkpoint.open(path), parse_selection(spec)[0], DEMO_TARGET)
    return plan.outcome, {i.finding.code for i in plan.issues if i.area != "producer"}


def test_builds_and_llama_cpp_python_releases_parse() -> None:
    specs = [e.spec for e in parse_selection("llamacpp==b11312,llamacpp==0.3.29,llamacpp==9837,llamacpp==b10000")]
    assert specs == ["llamacpp==b11312", "llamacpp==b9625", "llamacpp==b9837", "llamacpp==b10000"]
    assert parse_selection("llamacpp==0.3.36") == parse_selection("llamacpp==b11312") == parse_selection("llamacpp")
    assert parse_selection("llamacpp==0.3.35")[0].label == "llama.cpp b10454"
    with pytest.raises(EngineSelectionError, match="outside the known range b9625 to b11312"):
        parse_selection("llamacpp==0.3.28")  # vendors b9553, before src/models/eagle3.cpp
    with pytest.raises(EngineSelectionError, match="llama-cpp-python release whose vendored build is known"):
        parse_selection("llamacpp==0.3.30")
    assert parse_selection("llamacpp==b12000")[0].label == "llama.cpp b12000 (not read)"  # unless learned
    assert "learn llamacpp==b12000" in (parse_selection("llamacpp==b12000")[0].unread or "")


@pytest.mark.slow
def test_sglang_export_nested_ids_ignored_on_both_sides(tmp_path: Path) -> None:
    """The SpecForge demo export (ids nested in eagle_config, trained on outputs [2, 4, 5]): every build feeds the
    target's default layer inputs [2, 4, 5]. Before b10454 the fix names the first build that reads ids; from
    b10454 on, fix writes them top-level."""
    done = _cli("check", str(EXAMPLES / "demo-draft-sglang"), "--target", str(EXAMPLES / "demo-target"),
                "--engine", "llamacpp==0.3.34,llamacpp==0.3.36")
    assert done.returncode == 1, done.stdout[-3000:]
    rows = [line for line in done.stdout.splitlines() if "llamacpp==b" in line and " FAIL " in line
            and not line.startswith("FAILED")]
    assert len(rows) == 2 and all("engine.aux_layers" in row for row in rows), rows
    assert ("serve with llama.cpp >= b10454, which reads configured aux ids, and write the trained layer inputs "
            "[3, 5, 6] there") in done.stdout
    assert "fix examples/demo-draft-sglang OUT --to llamacpp==b11312" in done.stdout.replace(str(EXAMPLES), "examples")
    # 3.63, not the 3.67 of an engine that drafts k to the end: llama-server cuts a request's last drafts
    # (knowledge/draft_budget.py; its own counters on this draft match the cut walk, tests/test_live_llamacpp.py)
    assert ("fix: write [3, 5, 6] into eagle_aux_hidden_state_layer_ids (for llama.cpp b11312): predicted 3.63; then "
            "convert: python convert_hf_to_gguf.py DRAFT --target-model-dir TARGET") in done.stdout


@pytest.mark.slow
def test_speculators_demo_passes(tmp_path: Path) -> None:
    done = _cli("check", str(EXAMPLES / "demo-draft"), "--target", str(EXAMPLES / "demo-target"),
                "--engine", "llamacpp==b9625,llamacpp==b11312")
    assert done.returncode == 0, done.stdout[-3000:]
    rows = [line for line in done.stdout.splitlines() if "llamacpp==b" in line and " PASS " in line]
    assert len(rows) == 2, done.stdout[-3000:]


def test_top_level_ids_boundary(tmp_path: Path) -> None:
    """Top-level ids naming the trained layer inputs: ignored at b9976, read from b10454 (#25794)."""
    draft = _variant(tmp_path, "top-level", eagle_aux_hidden_state_layer_ids=[3, 5, 6])
    before = load_plan(Checkpoint.open(draft), parse_selection("llamacpp==b9976")[0], DEMO_TARGET)
    after = load_plan(Checkpoint.open(draft), parse_selection("llamacpp==b10454")[0], DEMO_TARGET)
    assert before.aux.captured == (2, 4, 5) and after.aux.captured == (3, 5, 6)


@pytest.mark.parametrize("build", ["llamacpp==b9625", "llamacpp==b11312"])
def test_norm_before_residual_read_from_the_top_level(tmp_path: Path, build: str) -> None:
    """The converter writes config.json's own norm_before_residual (conversion/llama.py, default False) and the graph
    takes the normed state as residual (src/models/eagle3.cpp: inpSA = norm_before_residual ? g_norm : inpL)."""
    out = tmp_path / "nbr"
    shutil.copytree(EXAMPLES / "demo-draft", out)
    data = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**data, "norm_before_residual": True}))
    plan = load_plan(Checkpoint.open(out), parse_selection(build)[0], DEMO_TARGET)
    assert plan.norms["norm_before_residual"] is True and plan.issues_for("norms") == [], plan.issues_for("norms")
    demo = load_plan(Checkpoint.open(EXAMPLES / "demo-draft"), parse_selection(build)[0], DEMO_TARGET)
    assert demo.norms["norm_before_residual"] is False and demo.issues_for("norms") == []


def test_norm_before_fc_boundary(tmp_path: Path) -> None:
    """input_norm.weight (norm_before_fc): the converter cannot map it before b10454; from b10454 it is enc.output_norm."""
    _, drafts = write_all(tmp_path, ("speculators-norm-before-fc",))
    path = drafts["speculators-norm-before-fc"]
    before, after = _codes(path, "llamacpp==b9976"), _codes(path, "llamacpp==b10454")
    assert before[0] == REFUSED and "key-refused" in before[1]
    assert after[0] == LOADS and "key-refused" not in after[1]


def test_vllm_architecture_name_boundary(tmp_path: Path) -> None:
    """Eagle3LlamaForCausalLM is registered with the converter from b9837 (absent b9625); plain LlamaForCausalLM
    is on the list from the first build."""
    vllm_name = _variant(tmp_path, "vllm-name", architectures=["Eagle3LlamaForCausalLM"])
    assert "architecture" in _codes(vllm_name, "llamacpp==b9625")[1]
    assert "architecture" not in _codes(vllm_name, "llamacpp==b9837")[1]
    plain = _variant(tmp_path, "plain", architectures=["LlamaForCausalLM"])
    assert "architecture" not in _codes(plain, "llamacpp==b9625")[1]


def test_multi_layer_and_missing_draft_vocab_size_are_refused(tmp_path: Path) -> None:
    """The converter detects an EAGLE-3 draft only with draft_vocab_size and one layer."""
    _, drafts = write_all(tmp_path, ("specforge-2-layers",))
    assert _codes(drafts["specforge-2-layers"], "llamacpp")[0] == REFUSED
    no_vocab = tmp_path / "no-vocab"
    shutil.copytree(EXAMPLES / "demo-draft-sglang", no_vocab)
    data = json.loads((no_vocab / "config.json").read_text())
    data.pop("draft_vocab_size")
    (no_vocab / "config.json").write_text(json.dumps(data))
    assert _codes(no_vocab, "llamacpp")[0] == REFUSED


@pytest.mark.slow
def test_fix_to_llamacpp_names_the_converter(tmp_path: Path) -> None:
    out = tmp_path / "fixed"
    done = _cli("fix", str(EXAMPLES / "demo-draft-sglang"), str(out), "--to", "llamacpp==0.3.36",
                "--target", str(EXAMPLES / "demo-target"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "eagle_aux_hidden_state_layer_ids: (not set) -> [3, 5, 6]" in done.stdout
    assert (f"python convert_hf_to_gguf.py {out} --target-model-dir {EXAMPLES / 'demo-target'} "
            f"--outfile {out}.gguf") in done.stdout
    assert json.loads((out / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == [3, 5, 6]


def test_recorded_converter_results_agree_with_the_plans(tmp_path: Path) -> None:
    """The recorded runs of llama.cpp's converter (tests/test_llamacpp_probe.py, b9976 and b11312) on the probe
    cases: converted and accepted by the loader's checks exactly when the plan loads the draft."""
    record = json.loads(RECORD.read_text())
    target, drafts = write_all(tmp_path)
    checked = 0
    for run, results in record.items():
        engine = parse_selection("llamacpp==" + run.split("(")[1].rstrip(")"))[0]
        for name, path in drafts.items():
            plan = load_plan(Checkpoint.open(path), engine, TargetModel.open(target))
            refused = {i.finding.code for i in plan.issues if i.kind == REFUSED} - {"target-no-capture"}
            assert (results[name]["outcome"] == "refused") == bool(refused), (run, name, results[name]["error"], refused)
            if results[name]["outcome"] == "loaded":
                assert tuple(results[name]["captured_inputs_of"]) == plan.aux.captured, (run, name)
            checked += 1
    assert checked >= 2 * len(drafts)


def test_an_unknown_tensor_is_refused_in_the_converters_words(tmp_path: Path) -> None:
    """A tensor the converter cannot map fails with convert_hf_to_gguf's ValueError, not another loader's KeyError."""
    from safetensors.torch import load_file, save_file

    draft = tmp_path / "extra-tensor"
    shutil.copytree(EXAMPLES / "demo-draft-sglang", draft)
    weights = next(draft.glob("*.safetensors"))
    tensors = load_file(weights)
    tensors["extra_proj.weight"] = next(iter(tensors.values())).clone()
    save_file(tensors, weights)
    (engine,) = parse_selection("llamacpp")
    plan = load_plan(Checkpoint.open(draft), engine, DEMO_TARGET)
    summaries = [i.finding.summary for i in plan.issues if i.finding.code == "key-refused"]
    assert summaries and "ValueError: Can not map tensor 'extra_proj.weight'" in summaries[0], summaries
