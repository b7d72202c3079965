"""Capture through the class tree and the graph builders, every release, every engine: each target architecture a
scanned release registers (llama.cpp: each architecture its converter registers) has a capture row, the hand rows
agree with the scans, and a user sees a llama.cpp target whose graph exposes no layer inputs fail with the source
line, one no row covers reported unknown (never a pass)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge import capture_engines
from pytest_eagle3.knowledge.capture import (
    CAPTURE_TABLES,
    CAPTURES,
    REFUSED,
    SCANNED,
    SILENT,
    capture_support,
    registered_runs,
    scanned_releases,
    scanned_table,
)
from pytest_eagle3.knowledge.releases import LLAMACPP, LMDEPLOY, MLX_VLM, RELEASES, TOKENSPEED
from pytest_eagle3.testing.synth import SPECFORGE, SPECULATORS, SynthSpec, write_checkpoint, write_target


@pytest.mark.parametrize("engine", SCANNED)
def test_every_release_was_scanned(engine: str) -> None:
    read = set(scanned_releases(engine))
    missing = [r for r in RELEASES[engine] if r not in read]
    assert len(missing) <= 1, f"{engine}: releases not scanned: {missing}"


@pytest.mark.parametrize("engine", SCANNED)
def test_every_registered_target_class_has_a_row_in_every_release(engine: str) -> None:
    """A release that registers a target architecture (an alias, a subclass without its own forward, a multimodal
    wrapper) that no capture row covers fails here: the plan would call it unknown where the source says."""
    missing = []
    for arch, runs in registered_runs(engine).items():
        for first, last in runs:
            for release in scanned_releases(engine):
                if Version(first) <= Version(release) <= Version(last):
                    support = capture_support(engine, Version(release), arch)
                    if support.support not in (CAPTURES, REFUSED, "silent-no-capture"):
                        missing.append(f"{release} {arch}")
    assert not missing, missing[:20]


@pytest.mark.parametrize("engine", [TOKENSPEED, LLAMACPP, MLX_VLM, LMDEPLOY])
def test_the_hand_rows_agree_with_the_scan(engine: str) -> None:
    """capture_engines.py's rows for an engine the scan now reads say what the source says, build by build (whether
    the target captures; the hand row says how one that does not fails: refused, or silently without fc)."""
    wrong = []
    for entry in capture_engines.ENTRIES:
        eng, support, source, archs = entry.engine, entry.support, entry.source, entry.architectures
        if eng != engine:
            continue
        for arch in archs:
            scanned = scanned_table(engine, arch)
            hand = CAPTURE_TABLES[(engine, arch)]
            for release in scanned_releases(engine):
                row = scanned.find(engine, Version(release)) if scanned is not None else None
                held = hand.find(engine, Version(release))
                if row is not None and held is not None and \
                        (row.value.support == CAPTURES) != (held.value.support == CAPTURES):
                    wrong.append(f"{arch} {release}: hand {held.value.support}, scan {row.value.support}")
        del support, source
    assert not wrong, wrong


@pytest.mark.parametrize(("arch", "build", "support"), [
    ("LlamaForCausalLM", "9625", CAPTURES),           # src/models/llama.cpp: res->t_layer_inp[il] = inpL
    ("Qwen2ForCausalLM", "11312", REFUSED),           # src/models/qwen2.cpp: no t_layer_inp
    ("Gemma3ForCausalLM", "11312", REFUSED),
    ("Gemma4ForConditionalGeneration", "9625", CAPTURES),
    ("Qwen3_5ForConditionalGeneration", "9625", REFUSED),   # src/models/qwen35.cpp gains it in b9837
    ("Qwen3_5ForConditionalGeneration", "9837", CAPTURES),
    ("Qwen3NextForCausalLM", "9837", REFUSED),        # src/models/qwen3next.cpp gains it in b9976
    ("Qwen3NextForCausalLM", "9976", CAPTURES),
    ("MistralForCausalLM", "10454", CAPTURES),        # the converter's LlamaModel: gguf arch llama
])
def test_llamacpp_capture_per_build(arch: str, build: str, support: str) -> None:
    found = capture_support(LLAMACPP, Version(build), arch)
    assert found.support == support and "src/models/" in found.source


def _target(tmp_path: Path, architecture: str, model_type: str) -> Path:
    out = write_target(SynthSpec(producer=SPECFORGE), tmp_path / architecture, with_weights=False)
    config = json.loads((out / "config.json").read_text())
    config.update(architectures=[architecture], model_type=model_type)
    (out / "config.json").write_text(json.dumps(config))
    return out / "config.json"


def test_a_llamacpp_target_whose_graph_has_no_layer_inputs_fails_with_the_source(
        run_contracts: Callable[..., Any], tmp_path: Path) -> None:
    """Qwen3.5 on llama.cpp b9625: the graph builder (src/models/qwen35.cpp) sets no t_layer_inp, the first target
    pass aborts; b9837 sets it: engine.aux_layers passes there."""
    draft = write_checkpoint(SynthSpec(producer=SPECFORGE), tmp_path / "draft")
    target = _target(tmp_path, "Qwen3_5ForConditionalGeneration", "qwen3_5")
    run = run_contracts([draft], "--eagle3-engine=llamacpp==b9625,llamacpp==b9837", target=target)
    (aux,) = [c for c in run.engine_entry(draft, "llamacpp==b9625")["contracts"] if c["id"] == "engine.aux_layers"]
    assert aux["outcome"] == "failed" and "Qwen3_5ForConditionalGeneration" in aux["message"]
    rules = " ".join(d for f in aux["findings"] for d in f["details"])
    assert "qwen35.cpp" in rules and "t_layer_inp" in rules
    after = run.engine_outcomes(draft, "llamacpp==b9837")["engine.aux_layers"]
    assert after[0] != "failed" or "cannot capture" not in after[1]


@pytest.mark.parametrize(("mode", "outcome"), [("skip", "skipped"), ("fail", "failed")])
def test_a_llamacpp_target_no_row_covers_is_unknown(run_contracts: Callable[..., Any], tmp_path: Path, mode: str,
                                                    outcome: str) -> None:
    draft = write_checkpoint(SynthSpec(producer=SPECFORGE), tmp_path / "draft")
    target = _target(tmp_path, "BrandNewForCausalLM", "llama")
    run = run_contracts([draft], "--eagle3-engine=llamacpp==b11312", f"--eagle3-unknown={mode}", target=target)
    result, message = run.engine_outcomes(draft, "llamacpp==b11312")["engine.aux_layers"]
    assert result == outcome and "BrandNewForCausalLM" in message and "unknown" in message


@pytest.mark.parametrize(("engine", "arch", "release", "support"), [
    (MLX_VLM, "Qwen3_5ForConditionalGeneration", "0.6.0", CAPTURES),      # models/qwen3_5/language.py reads capture_layer_ids
    (MLX_VLM, "MiniCPMV4_6ForConditionalGeneration", "0.6.0", CAPTURES),  # its LanguageModel subclasses qwen3_5's
    (MLX_VLM, "Lfm2ForCausalLM", "0.6.15", REFUSED),                      # models/lfm2 reads capture_layer_ids from 0.6.16
    (MLX_VLM, "Lfm2ForCausalLM", "0.6.16", CAPTURES),
    (MLX_VLM, "LlamaForCausalLM", "0.6.13", REFUSED),                     # models/text_only.py: mlx_lm's classes
    (MLX_VLM, "LlamaForCausalLM", "0.7.10", REFUSED),                     # models/llama LanguageModel ignores it
    (LMDEPLOY, "LlamaForCausalLM", "0.11.0", CAPTURES),                   # configurations/llama.py sets the layers
    (LMDEPLOY, "MistralForCausalLM", "0.18.0", SILENT),                   # llama.py's class, the default builder
    (LMDEPLOY, "InternVLChatModel", "0.18.0", SILENT),                    # internvl.py: DefaultModelConfigBuilder
    (LMDEPLOY, "Glm4MoeForCausalLM", "0.12.1", SILENT),
    (LMDEPLOY, "Glm4MoeForCausalLM", "0.12.2", REFUSED),                  # glm4.py asserts spec_method == 'deepseek_mtp'
    (LMDEPLOY, "KimiK25ForConditionalGeneration", "0.17.0", CAPTURES),    # kimi_k25.py -> kimi_k2.py, the alias too
])
def test_scanned_capture_per_release(engine: str, arch: str, release: str, support: str) -> None:
    found = capture_support(engine, Version(release), arch)
    assert found.support == support, found


def test_an_mlx_vlm_target_whose_language_model_inherits_capture_is_judged(
        run_contracts: Callable[..., Any], tmp_path: Path) -> None:
    """MiniCPM-V 4.6 on mlx-vlm 0.6.0: no hand row names it; its language model inherits Qwen3.5's capture
    (models/minicpmv4_6/language.py), so the scan gives it a row and the aux layers are judged, not 'unknown';
    LFM2 on 0.6.15 takes no capture_layer_ids and fails with the scan's source."""
    draft = write_checkpoint(SynthSpec(producer=SPECULATORS), tmp_path / "draft")  # mlx-vlm's format
    inherits = _target(tmp_path, "MiniCPMV4_6ForConditionalGeneration", "minicpmv4_6")
    run = run_contracts([draft], "--eagle3-engine=mlx-vlm==0.6.0", "--eagle3-unknown=fail", target=inherits)
    result, message = run.engine_outcomes(draft, "mlx-vlm==0.6.0")["engine.aux_layers"]
    assert "unknown" not in message and "MiniCPMV4_6ForConditionalGeneration" not in message, (result, message)
    refused = _target(tmp_path, "Lfm2ForCausalLM", "lfm2")
    run = run_contracts([draft], "--eagle3-engine=mlx-vlm==0.6.15", target=refused)
    (aux,) = [c for c in run.engine_entry(draft, "mlx-vlm==0.6.15")["contracts"] if c["id"] == "engine.aux_layers"]
    assert aux["outcome"] == "failed" and "Lfm2ForCausalLM" in aux["message"], aux["message"]
    rules = " ".join(d for f in aux["findings"] for d in f["details"])
    assert "source scan of mlx-vlm" in rules and "0.6.16" in rules, rules
