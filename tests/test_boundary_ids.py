"""Aux ids whose largest is L under a producer's output-of habit (nvidia/gpt-oss-120b-Eagle3-v3: [24, 30, 36] on
36 layers, lightseekorg/tokenspeed#526): no layer L has an output, so the habit cannot be what the files mean; the ids
settle their own reading, hidden-state boundaries (id k the input of layer k, id L the last layer's output: SGLang
models/gpt_oss.py set_eagle3_layers_to_capture), before any reading is enumerated. An engine that feeds those states
passes, one that feeds others fails; an id past L names no state under any reading and fails target.consistent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.testing.synth import SynthSpec, target_config, write_checkpoint

ROOT = Path(__file__).resolve().parents[1]
LAYERS = 12
GPT_OSS = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss"}


def _check(tmp_path: Path, producer: str, ids: tuple[int, ...], *options: str) -> dict[str, Any]:
    """``check`` on a draft with these ids against a 12-layer gpt-oss target's config.json: the contracts of the
    ``any`` row and the vLLM 0.33.0 and SGLang 0.5.23 rows."""
    spec = SynthSpec(producer=producer, target_layers=LAYERS, aux_layer_ids=ids)
    draft = write_checkpoint(spec, tmp_path / "draft")
    target = tmp_path / "target"
    target.mkdir()
    (target / "config.json").write_text(json.dumps(target_config(spec) | GPT_OSS), encoding="utf-8")
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "check", str(draft), "--target", str(target / "config.json"),
                           "--engine", "vllm==0.33.0,sglang==0.5.23", "--report", str(report), *options],
                          cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    (checkpoint,) = json.loads(report.read_text(encoding="utf-8"))["checkpoints"]
    return {f"{c['id']}@{e['engine']}": c for e in checkpoint["engines"] for c in e["contracts"]}


def _codes(contract: dict[str, Any]) -> list[str]:
    return [f["code"] for f in contract.get("findings") or ()]


def test_an_id_equal_to_l_settles_the_reading_as_boundaries(tmp_path: Path) -> None:
    """"The output of layer L" does not exist: ids [2, 4, L] under ModelOpt's output-of habit can only be block
    boundaries, decided before any reading is enumerated. SGLang 0.5.23 keeps gpt-oss ids that reach L as boundaries:
    PASS, not assumed; vLLM 0.33.0's default runner feeds its defaults [2, L//2, L-3]: FAIL, naming the boundaries."""
    contracts = _check(tmp_path, "modelopt", (2, 4, LAYERS))
    failed = {name: _codes(c) for name, c in contracts.items() if c["outcome"] == "failed"}
    assert failed == {"engine.aux_layers@vllm": ["aux-layers"]}, failed
    vllm = json.dumps(contracts["engine.aux_layers@vllm"]["findings"])
    assert f"the largest id is L = {LAYERS}: no layer has output L, so the ids are hidden-state boundaries" in vllm, vllm
    assert "input-of" in vllm and "assumed" not in vllm.split("draft trained on")[-1].split(";")[0], vllm
    sglang = contracts["engine.aux_layers@sglang"]
    assert sglang["outcome"] == "passed" and sglang.get("status") != "not modelled", sglang
    assert not any(f.get("code") == "aux-route-undecided" for c in contracts.values() for f in c.get("findings") or ())


def test_specforge_with_an_id_equal_to_l_reads_boundaries_without_enumerating_routes(tmp_path: Path) -> None:
    """SpecForge's ids are read through its capture routes elsewhere; an id equal to L settles them first."""
    contracts = _check(tmp_path, "specforge", (2, 4, LAYERS))
    outcomes = {name: c["outcome"] for name, c in contracts.items() if name.startswith("engine.aux_layers")}
    assert outcomes == {"engine.aux_layers@vllm": "failed", "engine.aux_layers@sglang": "passed"}, outcomes


@pytest.mark.parametrize("ids", [(2, 4, LAYERS + 1), (2, 4, LAYERS + 5)])
def test_an_id_past_l_still_fails(tmp_path: Path, ids: tuple[int, ...]) -> None:
    contracts = _check(tmp_path, "modelopt", ids)
    assert "aux-ids-out-of-range" in _codes(contracts["target.consistent@any"]), contracts["target.consistent@any"]


def test_an_output_of_habit_below_l_is_kept(tmp_path: Path) -> None:
    """ids [1, 5, 8] read as ModelOpt's outputs: inputs [2, 6, 9], vLLM's default feed [2, L//2, L-3], judged."""
    contracts = _check(tmp_path, "modelopt", (1, LAYERS // 2 - 1, LAYERS - 4))
    assert contracts["engine.aux_layers@vllm"]["outcome"] == "passed", contracts["engine.aux_layers@vllm"]
