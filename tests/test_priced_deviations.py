"""Every deviation the simulation can model is priced (``verdict.settle.price_deviations``): the draft run
with and without ModelOpt's extra first-layer norm and the yarn rope its export writes, and a verdict that
rests on a deviation it cannot price says "assumed". Copies of the demo draft (trained on the demo target)
in ModelOpt's and AngelSlim's config layouts."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.reference.draft import ReferenceDraft
from pytest_eagle3.reference.predict import PredictionSession
from pytest_eagle3.verdict import predict_acceptance
from tests.conftest import ContractRun

pytest.importorskip("transformers")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TARGET = EXAMPLES / "demo-target"
VLLM = "vllm==0.32.0"
YARN = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 2048}
#: A first-layer input_layernorm far from uniform, so that applying it twice on the hidden path shows.
SPREAD = torch.linspace(0.05, 3.0, 64)


def modelopt_copy(folder: Path, *, norm: torch.Tensor | None = None, **config: Any) -> Path:
    """The demo draft (trained on the outputs of layers [1, 3, 4]) exported the way ModelOpt writes it:
    LlamaForCausalLMEagle3 with its eagle_config switches and output-of ids; ``config`` edits the top level."""
    from safetensors.torch import load_file, save_file

    source = EXAMPLES / "demo-draft"
    layer = json.loads((source / "config.json").read_text())["transformer_layer_config"]
    eagle = {"eagle_aux_hidden_state_layer_ids": [1, 3, 4], "use_aux_hidden_state": True,
             "use_input_layernorm_in_first_layer": True, "use_last_layernorm": True, "use_mtp_layernorm": False,
             "next_layer_regular": True, "parallel_draft_step": 1, "parallel_draft_heads_num_layers": 1}
    eagle.update(config.pop("eagle_config", {}))
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(
        {**layer, "architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": 256, "eagle_config": eagle,
         **config}))
    weights = load_file(str(source / "model.safetensors"))
    if norm is not None:
        weights["layers.0.input_layernorm.weight"] = norm
    save_file(weights, str(folder / "model.safetensors"))
    return folder


@pytest.fixture(scope="module")
def session() -> PredictionSession:
    return PredictionSession()


def test_reference_forward_runs_the_extra_norm_both_ways(tmp_path: Path) -> None:
    """ModelOpt's draft runs hidden_norm(input_layernorm(fc output)); the reference forward does it as trained
    and, with the flag off, as every engine does."""
    draft = ReferenceDraft.from_checkpoint(Checkpoint.open(modelopt_copy(tmp_path / "mo", norm=SPREAD)))
    assert draft.spec.hidden_prenorm
    engine_way = ReferenceDraft(dataclasses.replace(draft.spec, hidden_prenorm=False), draft.weights, draft.config_rope)
    gen = torch.Generator().manual_seed(0)
    aux, ids = torch.randn(1, 12, 192, generator=gen), torch.randint(0, 1024, (1, 12), generator=gen)
    embed = torch.randn(1024, 64, generator=gen)
    trained, engine = draft.propose(aux, ids, 3, embed)[1][0], engine_way.propose(aux, ids, 3, embed)[1][0]
    assert not torch.allclose(trained, engine)


def test_extra_norm_is_priced(tmp_path: Path, session: PredictionSession) -> None:
    prediction = predict_acceptance(modelopt_copy(tmp_path / "mo", norm=SPREAD), TARGET, VLLM, session=session)
    costs = {d.field: d.cost for d in prediction.deviations}
    assert abs(costs["hidden_prenorm"]) > 0.05, prediction.deviations
    assert prediction.mean_acceptance_length != prediction.training.acceptance.mean_acceptance_length


def test_yarn_rope_is_priced(tmp_path: Path, session: PredictionSession) -> None:
    """The export's yarn against the plain rope ModelOpt trains with: the same draft predicts another figure."""
    plain = predict_acceptance(modelopt_copy(tmp_path / "plain"), TARGET, VLLM, session=session)
    yarn = predict_acceptance(modelopt_copy(tmp_path / "yarn", rope_scaling=YARN), TARGET, VLLM, session=session)
    assert "rope" not in {d.field for d in plain.deviations}
    rope = next(d for d in yarn.deviations if d.field == "rope")
    assert rope.cost != 0 and yarn.mean_acceptance_length != plain.mean_acceptance_length
    assert yarn.training.acceptance.mean_acceptance_length == plain.training.acceptance.mean_acceptance_length
    assert "rope assumed: modelopt trained with rope_theta 10000, no scaling" in yarn.training.source


def test_verdicts_on_priced_and_unpriced_deviations(tmp_path: Path, run_contracts: Callable[..., ContractRun]) -> None:
    """With the target's weights: the norm and the yarn are priced (each within --eagle3-max-loss here, so
    engine.producer passes, naming the price); a field the simulation cannot model stays assumed."""
    norm = modelopt_copy(tmp_path / "mo-norm", norm=SPREAD)
    yarn = modelopt_copy(tmp_path / "mo-yarn", rope_scaling=YARN)
    steps = modelopt_copy(tmp_path / "mo-steps", eagle_config={"parallel_draft_step": 2})
    run = run_contracts([norm, yarn, steps], f"--eagle3-engine={VLLM}", target=TARGET)
    outcome, message = run.engine_outcomes(norm, VLLM)["engine.producer"]
    assert outcome == "passed" and "norm-not-applied: priced by simulation: it alone costs" in message, message
    outcome, message = run.engine_outcomes(yarn, VLLM)["engine.producer"]
    assert outcome == "passed" and "rope-trained-assumed: priced by simulation: it alone costs" in message, message
    outcome, message = run.engine_outcomes(steps, VLLM)["engine.producer"]
    assert outcome == "skipped" and message.startswith(
        "assumed (the simulation cannot price it): modelopt trained with eagle_config.parallel_draft_step"), message


def test_a_costly_priced_deviation_fails(tmp_path: Path, run_contracts: Callable[..., ContractRun]) -> None:
    """AngelSlim builds rope with base 10000 whatever rope_theta says: a draft trained at 10000 whose config
    says 1e6 loses more than --eagle3-max-loss, priced: engine.producer fails with the figure."""
    source = EXAMPLES / "demo-draft-sglang"
    config = json.loads((source / "config.json").read_text())
    ids = config.pop("eagle_config")["eagle_aux_hidden_state_layer_ids"]
    config.update(architectures=["Eagle3LlamaForCausalLM"], target_model_type="llama", rope_theta=1000000.0,
                  eagle_aux_hidden_state_layer_ids=[i + 1 for i in ids])
    draft = tmp_path / "angelslim"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(config))
    (draft / "model.safetensors").symlink_to(source / "model.safetensors")
    run = run_contracts([draft], f"--eagle3-engine={VLLM}", target=TARGET)
    outcome, message = run.engine_outcomes(draft, VLLM)["engine.producer"]
    assert outcome == "failed" and "[rope-trained]" in message, message
    assert "priced by simulation: it alone costs 0." in run.output
