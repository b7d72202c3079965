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
    capture_support,
    registered_runs,
    scanned_releases,
    scanned_table,
)
from pytest_eagle3.knowledge.releases import LLAMACPP, RELEASES, TOKENSPEED
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec, write_checkpoint, write_target


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


@pytest.mark.parametrize("engine", [TOKENSPEED, LLAMACPP])
def test_the_hand_rows_agree_with_the_scan(engine: str) -> None:
    """capture_engines.py's rows for an engine the scan now reads say what the source says, build by build (whether
    the target captures; the hand row says how one that does not fails: refused, or silently without fc)."""
    wrong = []
    for eng, _, _, support, source, archs in capture_engines.ENTRIES:
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
