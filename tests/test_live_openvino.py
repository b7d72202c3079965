"""OpenVINO GenAI live on CPU: the bundled pair converted by optimum-intel's own exporter (``optimum-cli export
openvino``), served by ``openvino_genai.LLMPipeline`` with ``draft_model``, its reported acceptance against the
plugin's prediction for ``openvino==<installed>`` under the same drafting settings (greedy, 3 draft tokens a round,
``hidden_layers_list`` given at launch); and the exporter's and the pipeline's refusals as the contracts the plan
reads (``engine.architecture``, ``engine.aux_layers``).

Runs where OpenVINO GenAI is importable (``EAGLE3_OPENVINO_PYTHON``, or ``tox -e openvino20264``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.reference_cases import EXAMPLES

pytestmark = [pytest.mark.engine("openvino"), pytest.mark.slow]
SCRIPT = Path(__file__).with_name("openvino_generate.py")
TARGET = EXAMPLES / "demo-target"
SPECFORGE = EXAMPLES / "demo-draft-sglang"
SPECULATORS = EXAMPLES / "demo-draft"
STEPS = 3
NEW_TOKENS = 64
#: Two tokens at least: the pipeline refuses a one-token prompt ('input_ids shape is invalid for creating eagle3
#: draft input_ids', continuous_batching/eagle3_strategy.cpp).
PROMPTS = [[(5 + 67 * i) % 1024, (11 + 31 * i) % 1024] for i in range(8)]
#: |live accepted / drafted - predicted| at most this (the pipeline reports totals, not per position).
RATE_BAR = 0.05


@pytest.fixture(scope="module")
def ov_python() -> str:
    configured = os.environ.get("EAGLE3_OPENVINO_PYTHON")
    if configured and Path(configured).is_file():
        return configured
    if importlib.util.find_spec("openvino_genai") is not None:
        return sys.executable
    pytest.skip("openvino_genai is not importable: run tox -e openvino20264 (or set EAGLE3_OPENVINO_PYTHON)")


def _run(python: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([python, str(SCRIPT), *args], capture_output=True, text=True, timeout=900, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


@pytest.fixture(scope="module")
def converted(ov_python: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("openvino")
    for source in (TARGET, SPECFORGE):
        assert _run(ov_python, "export", str(source), str(out / source.name))["returncode"] == 0
    return out


def _plan(draft: Path, launch: str | None = None) -> Any:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.checkpoint.target import TargetModel
    from pytest_eagle3.engines.plan import load_plan
    from pytest_eagle3.knowledge.launch_settings import with_launch
    from pytest_eagle3.knowledge.selection import parse_selection

    engine = with_launch(parse_selection("openvino==2026.4.1.0"), launch)[0]
    return load_plan(Checkpoint.open(draft), engine, TargetModel.open(TARGET))


def test_the_exporter_refuses_the_speculators_format_as_the_plan_does(ov_python: str, tmp_path: Path) -> None:
    """engine.architecture: a speculators config has no model_type for optimum-intel's AutoConfig."""
    result = _run(ov_python, "export", str(SPECULATORS), str(tmp_path / "out"))
    assert result["returncode"] != 0 and "Should have a `model_type` key" in result["error"]
    plan = _plan(SPECULATORS)
    assert plan.outcome == "refused"
    assert any(i.finding.code.startswith("speculators") or "speculators" in i.finding.summary for i in plan.issues)


def test_the_exporter_needs_its_own_draft_class(ov_python: str, tmp_path: Path) -> None:
    """engine.keys: without --trust-remote-code the plain LlamaForCausalLM is built, the draft's names are
    UNEXPECTED and lm_head's shape refused; with it, LlamaEagle3ForCausalLM loads every tensor (the plan's keys)."""
    plain = _run(ov_python, "export", str(SPECFORGE), str(tmp_path / "plain"), "--no-trust-remote-code")
    assert plain["returncode"] != 0 and "ignore_mismatched_sizes" in plain["error"]
    plan = _plan(SPECFORGE, "openvino: hidden_layers_list=[2,4,5]")
    assert plan.outcome == "loads" and not plan.dropped


def test_the_exporter_drops_and_leaves_what_the_plan_says(ov_python: str, tmp_path: Path) -> None:
    """engine.keys: a SpecForge draft saved as layers.0.* exports (exit 0), its layer tensors UNEXPECTED (dropped)
    and midlayer's parameters MISSING (newly initialised): the plan's dropped and uninitialised."""
    from safetensors.torch import load_file, save_file

    renamed = tmp_path / "layers0"
    renamed.mkdir()
    (renamed / "config.json").write_text((SPECFORGE / "config.json").read_text())
    tensors = load_file(SPECFORGE / "model.safetensors")
    save_file({k.replace("midlayer.", "layers.0."): v for k, v in tensors.items()}, renamed / "model.safetensors")
    result = _run(ov_python, "export", str(renamed), str(tmp_path / "out"))
    plan = _plan(renamed, "openvino: hidden_layers_list=[2,4,5]")
    assert result["returncode"] == 0 and plan.outcome == "loads with loss"
    assert result["unexpected"] == sorted(plan.dropped)
    # embed_tokens is MISSING too: a SpecForge export ships none, and the pipeline puts the target's in its place
    # (share_vocabulary), as the plan's embed_tokens source says
    missing = [name for name in result["missing"] if name != "model.embed_tokens.weight"]
    assert len(missing) == len(result["missing"]) - 1 and plan.embed_tokens == "target"
    assert {name.rsplit(".", 2)[0] for name in missing} >= {"model.midlayer.self_attn", "model.midlayer.mlp"}
    assert all(name.startswith("model.midlayer.") for name in [*missing, *plan.uninitialised])
    assert len(missing) == len(plan.dropped)


def test_the_default_layers_refuse_a_shallow_target_as_the_plan_does(ov_python: str, converted: Path) -> None:
    """engine.aux_layers: no hidden_layers_list and a target of 8 layers: the pipeline's assert, and the plan's."""
    result = _run(ov_python, "serve", str(converted / TARGET.name), str(converted / SPECFORGE.name), "-",
                  json.dumps(PROMPTS[:1]), str(STEPS), str(NEW_TOKENS))
    assert "num_decoder_layers must be at least 10" in result["refused"]
    plan = _plan(SPECFORGE)
    codes = {i.finding.code: i.finding.summary for i in plan.issues}
    assert plan.outcome == "refused" and "num_decoder_layers must be at least 10" in codes["aux-no-default"]


@pytest.mark.parametrize("layers", ["2,4,5", "1,3,4"])
def test_live_acceptance_matches_the_prediction(ov_python: str, converted: Path, tmp_path: Path, layers: str) -> None:
    """The pipeline's accepted / drafted tokens within RATE_BAR of engine.acceptance's prediction for the same
    layers: outputs of [2, 4, 5] as the draft was trained, and [1, 3, 4] (the inputs, one layer early)."""
    from pytest_eagle3.knowledge.launch_settings import with_launch
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.verdict import predict_acceptance

    result = _run(ov_python, "serve", str(converted / TARGET.name), str(converted / SPECFORGE.name), layers,
                  json.dumps(PROMPTS), str(STEPS), str(NEW_TOKENS))
    assert result["refused"] is None, result
    accepted = sum(r["accepted"] for r in result["runs"])
    drafted = sum(r["drafted"] for r in result["runs"])
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    engine = with_launch(parse_selection(f"openvino=={result['version'][:10]}"), f"openvino: hidden_layers_list=[{layers}]")[0]
    prediction = predict_acceptance(SPECFORGE, TARGET, engine, steps=STEPS, continuation=NEW_TOKENS,
                                    prompts=str(prompts))
    assert prediction.acceptance is not None
    predicted = sum(prediction.acceptance.per_position) / STEPS
    print(f"\nlayers {layers}: live accepted/drafted {accepted}/{drafted} = {accepted / drafted:.4f}; predicted "
          f"{predicted:.4f} (per position {[round(p, 4) for p in prediction.acceptance.per_position]}, mean "
          f"acceptance length {prediction.acceptance.mean_acceptance_length:.3f})")
    assert accepted / drafted == pytest.approx(predicted, abs=RATE_BAR)
