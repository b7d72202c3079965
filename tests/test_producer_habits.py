"""Producers' own fields and habits (``pytest_eagle3/producers/habits.py``) as users meet them: ``engine.producer``,
``engine.aux_layers`` on a producer's own aux-id field, ``vocab.map`` on an export bug, and the files
beside the weights in ``format.detected``. Synthetic drafts in each producer's layout; the same rules
on real ModelOpt exports are in ``tests/test_producer_roundtrips.py`` (``tox -e producers``)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.testing.synth import SynthSpec
from tests.conftest import ContractRun

ENGINES = "--eagle3-engine=vllm==0.32.0,sglang==0.5.23"
BOTH = ("vllm==0.32.0", "sglang==0.5.23")


def _producer(run: ContractRun, draft: Path, engine: str) -> tuple[str, str]:
    return run.engine_outcomes(draft, engine)["engine.producer"]


@pytest.mark.parametrize(("theta", "differs"), [(1000000, True), (10000, False)])
def test_angelslim_rope_theta_it_never_trained_with(theta: int, differs: bool, make_variant: Callable[..., Path],
                                                    run_contracts: Callable[..., ContractRun]) -> None:
    """AngelSlim's qwen3 configs write rope_theta 1e6; its draft attention always uses base 10000 (read from its
    code, so certain). Without the target's weights nobody priced what the difference costs: engine.producer
    passes with a note naming it and how to price it (issue 45: no FAIL from an unpriced cost; it used to fail);
    a target with weights prices it (tests/test_priced_deviations.py)."""
    draft = make_variant(SynthSpec(producer="angelslim"), name=f"angelslim-theta-{theta}",
                         config=lambda c: c.update(rope_theta=theta))
    run = run_contracts([draft], "--eagle3-engine=vllm==0.32.0")  # SGLang builds no Eagle3LlamaForCausalLM
    outcome, message = _producer(run, draft, "vllm==0.32.0")
    assert outcome == "passed", message
    if differs:
        assert "note [rope-trained], not priced (not priced without the target's weights)" in message, message
        assert "vLLM 0.32.0 applies the config's rope" in message
        assert "(rope_theta 1000000, no scaling)" in message and "with rope_theta 10000, no scaling" in message
        assert "to measure it, pass --eagle3-target=DIR with the target's weights" in message
    else:
        assert "note [" not in message, message


YARN = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 2048}


def test_modelopt_export_yarn_is_an_assumption(make_variant: Callable[..., Path],
                                               run_contracts: Callable[..., ContractRun]) -> None:
    """ModelOpt's default export writes yarn over a draft trained with plain rope: said, as assumed."""
    draft = make_variant(SynthSpec(producer="modelopt"), name="modelopt-yarn",
                         config=lambda c: c.update(rope_scaling=YARN, rope_theta=10000))
    outcome, message = _producer(run_contracts([draft], ENGINES), draft, "vllm==0.32.0")
    assert outcome == "skipped" and message.startswith(
        "assumed (not priced without the target's weights): vLLM 0.32.0 applies the config's rope"), message
    run = run_contracts([draft], ENGINES, "--eagle3-unknown=fail")
    outcome, message = _producer(run, draft, "sglang==0.5.23")
    assert outcome == "failed" and "[rope-trained-assumed]" in message, message
    assert "EagleConfig.eagle_export_rope_scaling" in run.output
    assert "yarn also multiplies every attention logit by 1.81, at every position" in run.output


@pytest.mark.parametrize(("edit", "code"), [
    ({"use_last_layernorm": False}, "eagle_config.use_last_layernorm = false"),
    ({"parallel_draft_step": 2}, "eagle_config.parallel_draft_step = 2"),
])
def test_modelopt_fields_no_engine_reads(edit: dict[str, Any], code: str, make_variant: Callable[..., Path],
                                         run_contracts: Callable[..., ContractRun]) -> None:
    """Fields no engine reads, whose effect the simulation cannot model: assumed, never a failure unless asked."""
    draft = make_variant(SynthSpec(producer="modelopt"), name="modelopt-field",
                         config=lambda c: c["eagle_config"].update(edit))
    run = run_contracts([draft], ENGINES)
    for engine in BOTH:
        outcome, message = _producer(run, draft, engine)
        assert outcome == "skipped" and message.startswith(
            "assumed (the simulation cannot price it): modelopt trained with " + code), message
    run = run_contracts([draft], ENGINES, "--eagle3-unknown=fail")
    for engine in BOTH:
        outcome, message = _producer(run, draft, engine)
        assert outcome == "failed" and "[field-not-read]" in message and code in message, message


def test_modelopt_trained_input_layernorm(make_variant: Callable[..., Path],
                                          run_contracts: Callable[..., ContractRun]) -> None:
    """A trained (non-uniform) layers.0.input_layernorm: ModelOpt applied it to the hidden path (read from its
    forward), engines do not. Its spread (0.5..1.5) lies outside the recorded experiment's, and there are no target
    weights: nothing prices it, so engine.producer passes with a note naming the difference, the recorded figure and
    how to price it (issue 45: it used to fail on every engine)."""
    draft = make_variant(SynthSpec(producer="modelopt"), name="modelopt-norm",
                         replace={"layers.0.input_layernorm.weight": torch.linspace(0.5, 1.5, 64)})
    run = run_contracts([draft], ENGINES)
    for engine in BOTH:
        outcome, message = _producer(run, draft, engine)
        assert outcome == "passed", message
        assert "note [norm-not-applied], not priced (not priced without the target's weights)" in message, message
        assert "layers.0.input_layernorm.weight (0.5..1.5) is missing from the hidden path" in message
        assert "by scripts/price_modelopt_norm.py" in message and "(this one: 3, outside that range)" in message
        assert "to measure it, pass --eagle3-target=DIR with the target's weights" in message


#: The first-layer input_layernorm of real ModelOpt heads (issue 45): close to uniform.
NEAR_UNIFORM = torch.linspace(0.98, 1.03, 64)


def test_modelopt_extra_norm_priced_by_the_recorded_experiment(make_variant: Callable[..., Path],
                                                                run_contracts: Callable[..., ContractRun],
                                                                tmp_path: Path) -> None:
    """A ModelOpt head whose input_layernorm weights lie within the recorded experiment's spread, judged with a
    config-only target: priced by the recorded cost (knowledge/costs.py), within --eagle3-max-loss, so
    engine.producer passes naming the price; a max-loss below the recorded cost fails with it."""
    from pytest_eagle3.testing.targets import write_target

    spec = SynthSpec(producer="modelopt")
    draft = make_variant(spec, name="modelopt-near-uniform", replace={"layers.0.input_layernorm.weight": NEAR_UNIFORM})
    target = write_target(spec, tmp_path / "target-config", with_weights=False)
    run = run_contracts([draft], ENGINES, f"--eagle3-target={target}")
    for engine in BOTH:
        outcome, message = _producer(run, draft, engine)
        assert outcome == "passed", message
        assert "norm-not-applied: priced at 0.010 by scripts/price_modelopt_norm.py" in message, message
        assert "within --eagle3-max-loss 0.1" in message
    run = run_contracts([draft], ENGINES, "--eagle3-max-loss=0.001")
    outcome, message = _producer(run, draft, "vllm==0.32.0")
    assert outcome == "failed" and "[norm-not-applied]" in message, message
    assert "is missing from the hidden path; priced at 0.010 by scripts/price_modelopt_norm.py" in run.output


class _Payload:
    """Would create ``marker`` if the pickle were ever executed."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def test_files_beside_the_weights(make_variant: Callable[..., Path], run_contracts: Callable[..., ContractRun],
                                  tmp_path: Path) -> None:
    """Trainer files are named, never executed; a LoRA adapter next to the draft is loaded by both engines:
    vLLM refuses its keys, SGLang drops them."""
    from safetensors.torch import save_file

    draft = make_variant(SynthSpec(producer="modelopt"), name="modelopt-files")
    marker = tmp_path / "executed"
    (draft / "training_args.bin").write_bytes(pickle.dumps(_Payload(marker)))
    (draft / "optimizer.pt").write_bytes(pickle.dumps(_Payload(marker)))
    save_file({"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(4, 64)},
              str(draft / "adapter_model.safetensors"))
    run = run_contracts([draft], ENGINES)
    assert not marker.exists()
    outcome, message = run.outcomes(draft)["format.detected"]
    assert outcome == "passed", message
    assert "training_args.bin (the TrainingArguments, pickled, angelslim; a pickle, never loaded here)" in message
    assert "adapter_model.safetensors (the base model's LoRA adapter (eagle_base_lora), modelopt)" in message
    outcome, message = _producer(run, draft, "vllm==0.32.0")
    assert outcome == "failed" and "[extra-weights-loaded]" in message, message
    assert "fix: move adapter_model.safetensors out of the draft folder" in run.output
    outcome, message = _producer(run, draft, "sglang==0.5.23")
    assert outcome == "passed" and "drops its 1 tensor (no draft parameter)" in message, message


@pytest.mark.parametrize(("ids", "fails"), [([0, 3, 4], True), ([1, 3, 4], False)])
def test_angelslim_own_aux_field(ids: list[int], fails: bool, make_variant: Callable[..., Path],
                                 run_contracts: Callable[..., ContractRun], synth_target: Path) -> None:
    """AngelSlim trains on aux_hidden_states_layer_ids (output-of); no engine reads that name: defaults."""
    draft = make_variant(SynthSpec(producer="angelslim"), name="angelslim-aux",
                         config=lambda c: c.update(aux_hidden_states_layer_ids=ids))
    run = run_contracts([draft], ENGINES, target=synth_target)
    outcome, message = run.engine_outcomes(draft, "vllm==0.32.0")["engine.aux_layers"]
    if fails:
        assert outcome == "failed" and "none there, so it uses its defaults" in message, message
        # read as the route AngelSlim trained through reads them (its HF backend: hidden_states[id + 1])
        assert "aux_hidden_states_layer_ids = [0, 3, 4] = outputs of layers [0, 3, 4], as every route angelslim may " \
               "have trained through reads them: angelslim >= 0.2.0 through its hf backend" in " ".join(run.output.split())
    else:
        assert outcome == "passed", message


def test_torchspec_pruned_lm_head(make_variant: Callable[..., Path], run_contracts: Callable[..., ContractRun]) -> None:
    draft = make_variant(SynthSpec(producer="specforge"), name="torchspec",
                         config=lambda c: c.update(_torchspec_version="0.1.0"))
    run = run_contracts([draft])
    assert run.outcomes(draft)["format.detected"][1].startswith("torchspec")
    outcome, message = run.outcomes(draft)["vocab.map"]
    assert outcome == "failed" and "[lm-head-rows-by-offset]" in message, message
    assert "convert_to_hf.py _save_with_vocab_pruning" in run.output
