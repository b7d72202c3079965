"""Every profile boundary, exercised by a synthetic checkpoint on both sides of it.

Each case names the behaviour, a checkpoint that makes it visible, the last version before the
boundary and the first after it, and the issue codes the load plan must file on each side.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, REFUSED, load_plan
from pytest_eagle3.knowledge.behaviours import BEHAVIOURS, RULES
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import EAGLE, MODELOPT, SPECFORGE, SPECULATORS, SynthSpec


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        for key, value in values.items():
            if key.startswith("eagle_config."):
                config.setdefault("eagle_config", {})[key.removeprefix("eagle_config.")] = value
            else:
                config[key] = value
    return edit


@dataclass(frozen=True)
class Case:
    behaviour: str
    engine: str
    before: str
    after: str
    spec: SynthSpec
    expect_before: frozenset[str]
    expect_after: frozenset[str]
    variant: dict[str, Any] = field(default_factory=dict, hash=False)
    target_layers: int = 8
    target_arch: str = "LlamaForCausalLM"
    convention: str | None = None
    target_weights: bool = False
    #: Top-level keys set in the target's config.json.
    target_edit: dict[str, Any] = field(default_factory=dict, hash=False)


def case(behaviour: str, engine: str, before: str, after: str, spec: SynthSpec, before_codes: set[str],
         after_codes: set[str], **extra: Any) -> Case:
    variant = extra.pop("variant", {})
    return Case(behaviour, engine, before, after, spec, frozenset(before_codes), frozenset(after_codes),
                variant, **extra)


SF = SynthSpec(producer=SPECFORGE)
SP = SynthSpec(producer=SPECULATORS)
EA = SynthSpec(producer=EAGLE)
MO = SynthSpec(producer=MODELOPT)
SGL, VLL = "sglang", "vllm"
NO_AUX = SynthSpec(producer=SPECFORGE, aux_hidden_state=False)
NO_AUX_MO = SynthSpec(producer=MODELOPT, aux_hidden_state=False)
#: A 32-wide draft for the 64-wide default target (target_hidden_size set by the variant).
NARROW = SynthSpec(producer=SPECULATORS, hidden_size=32, num_attention_heads=1, head_dim=32, intermediate_size=64)
NARROW_SF = SynthSpec(producer=SPECFORGE, hidden_size=32, num_attention_heads=1, head_dim=32, intermediate_size=64)
#: A target served with 8192 positions (the synthetic drafts have 2048); an fp8-quantized target; a draft
#: layer with a sliding window; an fp8-quantized draft.
LONG_TARGET = {"max_position_embeddings": 8192}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
SLIDING = {"config": _set(layer_types=["sliding_attention"], sliding_window=64)}
YARN = {"config": _set(rope_scaling={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 1024})}
#: The same in the original EAGLE format (vLLM 0.8.5-0.10.0 read no speculators or SpecForge architecture name).
NARROW_EA = SynthSpec(producer=EAGLE, hidden_size=32, num_attention_heads=1, head_dim=32, intermediate_size=64)
NARROW_FC = {"config": _set(target_hidden_size=64), "replace": {"fc.weight": torch.zeros(32, 192, dtype=torch.bfloat16)}}
QK_NORMS = {f"layers.0.self_attn.{n}_norm.weight": torch.ones(32, dtype=torch.bfloat16) for n in ("q", "k")}


def _peagle_config(config: dict[str, Any]) -> None:
    config.update(speculators_model_type="peagle", architectures=["PEagleDraftModel"], mask_token_id=1000)


#: A speculators P-EAGLE draft: its config, and the parallel-drafting mask beside the EAGLE-3 tensors.
PEAGLE = {"config": _peagle_config,
          "replace": {"mask_hidden": torch.randn(192, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)}}


def _tied_without_draft_vocab(config: dict[str, Any]) -> None:
    config.pop("draft_vocab_size", None)
    config["tie_word_embeddings"] = True


def _layer_type(model_type: str) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config["transformer_layer_config"]["model_type"] = model_type
    return edit


CASES = [
    case("first_layer", SGL, "0.5.11", "0.5.12", MO, {"dropped", "uninitialised"}, set()),
    case("multi_layer", SGL, "0.5.11", "0.5.12", SynthSpec(producer=SPECFORGE, draft_layers=2),
         {"multi-layer", "dropped"}, {"uninitialised"}),
    case("key_prefix", SGL, "0.4.8", "0.4.9", SF, {"key-refused", "dropped", "uninitialised"}, set(),
         variant={"rename": lambda k: k if k in ("lm_head.weight", "d2t", "t2d") else "model." + k}),
    case("d2t_absent", SGL, "0.4.8", "0.4.9", SF.with_faults("d2t-missing"), {"d2t-missing-crash", "uninitialised"},
         {"d2t-missing"}),
    case("draft_vocab_size_null", SGL, "0.5.1", "0.5.2", SF, {"draft-vocab-size", "lm-head-missing"}, set(),
         variant={"config": _set(draft_vocab_size=None), "drop": ("lm_head.weight", "d2t", "t2d")}),
    case("use_aux_hidden_state", SGL, "0.5.7", "0.5.8", SF, set(), {"fc-unused"},
         variant={"config": _set(**{"eagle_config.use_aux_hidden_state": False})}),
    # a draft trained without aux states (no fc.weight, no aux ids; gpt-oss Eagle3-v2): a release that ignores the
    # flag captures aux states into a random fc; one that honours it sends one state (SGLang: fc built, bypassed)
    case("use_aux_hidden_state", SGL, "0.5.7", "0.5.8", NO_AUX, {"uninitialised", "aux-flag-ignored"}, set()),
    case("graph_mode_default_layers", SGL, "0.5.10", "0.5.11", SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 3, 4)),
         {"aux-layers"}, set()),
    case("aux_transform_deepseek", SGL, "0.5.12", "0.5.13", SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 4, 5)),
         {"aux-layers"}, set(), target_arch="DeepseekV3ForCausalLM", convention="input-of"),
    case("aux_transform_gpt_oss", SGL, "0.5.16", "0.5.17", SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 4, 8)),
         {"fc-width", "aux-layers"}, set(), target_arch="GptOssForCausalLM", convention="input-of"),
    case("norm_before_fc", SGL, "0.5.16", "0.5.17", SF, {"norm-flag", "dropped"}, set(),
         variant={"config": _set(norm_before_fc=True), "replace": {"input_norm.weight": torch.ones(192)}}),
    case("norm_output", SGL, "0.5.11", "0.5.12", SF, {"norm-flag"}, set(), variant={"config": _set(norm_output=True)}),
    # 0.5.12 builds fc for 4 aux states, but its draft-extend CUDA-graph buffer holds 3 (draft_extend_graph_width)
    case("fc_aux_count", SGL, "0.5.11", "0.5.12", SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 2, 3, 4)),
         {"fc-shape", "fc-width"}, {"graph-aux-count"}),
    case("draft_extend_graph_width", SGL, "0.5.14", "0.5.15", SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 2, 3, 4)),
         {"graph-aux-count"}, set()),
    case("draft_extend_graph_width", SGL, "0.5.11", "0.5.12", SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 4)),
         {"fc-shape", "fc-width"}, {"graph-aux-count"}),
    case("fc_bias", SGL, "0.4.8", "0.4.9", SF, {"uninitialised"}, set()),
    case("architectures", VLL, "0.10.1", "0.10.2", SF, {"architecture"}, set()),
    case("speculators_format", VLL, "0.10.0", "0.10.1", SP, {"speculators-format"}, set()),
    case("d2t_present", VLL, "0.9.0", "0.9.1", EA, {"d2t-discarded"}, set()),
    case("d2t_full_vocab", VLL, "0.29.0", "0.30.0", SynthSpec(producer=SPECFORGE, draft_vocab_size=1024,
                                                                 write_aux_ids=False),
         set(), {"d2t-full-vocab"}),
    case("aux_id_fields", VLL, "0.11.0", "0.11.1", SynthSpec(producer=SPECULATORS, aux_layer_ids=(1, 3, 4)),
         {"aux-layers"}, set()),
    case("aux_id_fields_eagle_config", VLL, "0.21.0", "0.22.0",
         SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 3, 4)), {"aux-layers"}, set(), convention="input-of"),
    case("aux_id_fields_runner_v2", VLL, "0.22.0", "0.23.0",
         SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 3, 4)), set(), {"aux-layers"}, convention="input-of"),
    case("multi_layer", VLL, "0.11.0", "0.11.1", SynthSpec(producer=SPECULATORS, draft_layers=2),
         {"multi-layer", "key-refused"}, set()),
    case("use_aux_hidden_state", VLL, "0.11.2", "0.12.0", SF, set(), {"fc-unused"},
         variant={"config": _set(**{"eagle_config.use_aux_hidden_state": False})}),
    case("use_aux_hidden_state", VLL, "0.11.2", "0.12.0", NO_AUX, {"uninitialised", "aux-flag-ignored"}, set()),
    case("use_aux_hidden_state", VLL, "0.11.2", "0.12.0", NO_AUX_MO, {"uninitialised", "aux-flag-ignored"}, set()),
    case("norm_before_residual", VLL, "0.10.0", "0.10.1", EA, {"norm-flag"}, set(),
         variant={"config": _set(norm_before_residual=True)}),
    case("norm_before_fc", VLL, "0.17.0", "0.18.0", SF, {"norm-flag", "key-refused"}, set(),
         variant={"config": _set(norm_before_fc=True), "replace": {"input_norm.weight": torch.ones(192)}}),
    case("norm_before_fc_speculators", VLL, "0.18.0", "0.19.0", SP, {"norm-flag", "dropped"}, set(),
         variant={"config": _set(norm_before_fc=True), "replace": {"input_norm.weight": torch.ones(192)}}),
    case("norm_before_fc_eagle_config", VLL, "0.21.0", "0.22.0", SynthSpec(producer=SPECFORGE, write_aux_ids=False),
         {"norm-flag", "dropped"}, set(),
         variant={"config": _set(**{"eagle_config.norm_before_fc": True}),
                  "replace": {"input_norm.weight": torch.ones(192)}}),
    case("norm_output", VLL, "0.24.0", "0.25.0", SP, {"norm-flag"}, set(), variant={"config": _set(norm_output=True)}),
    case("fc_aux_count", VLL, "0.21.0", "0.22.0", SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 2, 3, 4)),
         {"fc-shape", "aux-layers"}, set(), convention="input-of"),
    case("embed_source", VLL, "0.11.0", "0.11.1", SP, set(), {"embed-kept"}, target_weights=True,
         variant={"replace": {"embed_tokens.weight": torch.full((1024, 64), 0.5, dtype=torch.bfloat16)}}),
    case("lm_head_source", VLL, "0.10.1", "0.11.0", SynthSpec(producer=SPECULATORS, draft_vocab_size=1024),
         set(), {"lm-head-replaced"}, target_weights=True),
    case("unknown_key", VLL, "0.24.0", "0.25.0", SP, {"key-refused"}, {"dropped"},
         variant={"replace": {"fc.bias": torch.zeros(64)}}),
    case("embed_width_check", VLL, "0.24.0", "0.25.0", NARROW, {"embed-width"}, {"embed-missing"},
         variant={"config": _set(target_hidden_size=64), "drop": ("embed_tokens.weight",),
                  "replace": {"fc.weight": torch.zeros(32, 192, dtype=torch.bfloat16)}}),
    # 0.34.0: V2's maybe_share_target_embed has no width check (V1's _maybe_share_embeddings is gone)
    case("embed_width_check", VLL, "0.33.0", "0.34.0", NARROW, {"embed-missing"}, {"embed-width"},
         variant={"config": _set(target_hidden_size=64), "drop": ("embed_tokens.weight",),
                  "replace": {"fc.weight": torch.zeros(32, 192, dtype=torch.bfloat16)}}),
    case("draft_extend_graph_width", SGL, "0.4.9", "0.4.10", NARROW_SF, {"graph-width", "embed-missing"},
         {"embed-missing"}, variant={"config": _set(target_hidden_size=64),
                                     "replace": {"fc.weight": torch.zeros(32, 192, dtype=torch.bfloat16)}}),
    case("draft_extend_logits_buffer", SGL, "0.4.10", "0.5.1", SynthSpec(producer=SPECFORGE, draft_vocab_size=250),
         set(), {"graph-logits"}),
    case("draft_extend_logits_buffer", SGL, "0.5.14", "0.5.15", SynthSpec(producer=SPECFORGE, draft_vocab_size=250),
         {"graph-logits"}, set()),
    case("architectures_qwen3_class", VLL, "0.23.0", "0.24.0", SP, {"key-refused"}, set(),
         variant={"config": _layer_type("qwen3"), "replace": QK_NORMS}),
    case("kv_cache_page", VLL, "0.10.2", "0.11.0", SynthSpec(producer=SPECFORGE, num_key_value_heads=2),
         {"kv-page"}, set()),
    # attention_bias: true without bias tensors: o_proj.bias (and qkv_proj.bias from vLLM 0.16) built, never filled
    case("unset_bias", SGL, "0.5.8", "0.5.9", SF, {"bias-unset"}, set(), variant={"config": _set(attention_bias=True)}),
    case("unloaded_parameter", VLL, "0.8.5.post1", "0.9.0", EA, {"bias-unset"}, {"not-initialised", "d2t-discarded"},
         variant={"config": _set(attention_bias=True)}),
    case("unloaded_parameter", VLL, "0.9.0.1", "0.9.1", EA, {"not-initialised", "d2t-discarded"}, {"bias-unset"},
         variant={"config": _set(attention_bias=True)}),
    case("layer_bias", VLL, "0.15.1", "0.16.0", SF, {"key-refused"}, set(),
         variant={"config": _set(attention_bias=True), "replace": {
             f"midlayer.self_attn.{n}_proj.bias": torch.zeros(64, dtype=torch.bfloat16) for n in "qkvo"}}),
    # model_type llama4_text: SGLang 0.4.9+ sizes the MLP from intermediate_size_mlp (absent: 16384)
    case("mlp_width", SGL, "0.4.8.post1", "0.4.9", SF, {"uninitialised"}, {"mlp-width"},
         variant={"config": _set(model_type="llama4_text")}),
    case("mlp_width", SGL, "0.5.2", "0.5.3", SF, {"mlp-width"}, set(), variant={"config": _set(model_type="llama4_text")}),
    case("draft_vocab_size_missing", SGL, "0.5.4.post1", "0.5.4.post2", SynthSpec(producer=SPECFORGE, draft_vocab_size=1024),
         {"dropped"}, {"draft-vocab-size", "dropped"},
         variant={"config": _tied_without_draft_vocab, "drop": ("d2t", "t2d")}),
    # 0.9.0-0.9.0.1: the loader's strict check also refuses the unfilled draft_id_to_target_id (unloaded_parameter)
    case("d2t_absent", VLL, "0.8.5.post1", "0.9.0", EA.with_faults("d2t-missing"), {"d2t-missing"},
         {"d2t-missing-crash", "not-initialised"}),
    case("d2t_absent", VLL, "0.9.0.1", "0.9.1", EA.with_faults("d2t-missing"), {"d2t-missing-crash", "not-initialised"},
         {"d2t-missing"}),
    case("embed_width_check", VLL, "0.9.0.1", "0.9.1", NARROW_EA, {"embed-width", "d2t-discarded"},
         {"embed-missing"}, variant=NARROW_FC),
    case("embed_width_check", VLL, "0.11.0", "0.11.1", NARROW_EA, {"embed-missing"}, {"embed-width"},
         variant=NARROW_FC),
    case("capture_range", VLL, "0.17.0", "0.18.0", SynthSpec(producer=SPECULATORS, aux_layer_ids=(2, 4, 8)),
         {"fc-width", "aux-layers"}, set()),
    case("draft_positions", SGL, "0.4.10.post2", "0.5.1", SF, {"draft-positions"}, {"draft-positions-refused"},
         target_edit=LONG_TARGET),
    case("draft_positions", VLL, "0.10.2", "0.11.0", SF, {"draft-positions"}, {"draft-positions-no-draft"},
         target_edit=LONG_TARGET),
    # 0.27: the raise sizes a default rope's table and the default V2 runner drafts on (a note: the V1 runner still
    # stops drafting past it) but not a yarn one
    case("draft_positions_default_rope", VLL, "0.26.0", "0.27.0", SF, {"draft-positions-no-draft"}, set(),
         target_edit=LONG_TARGET),
    case("draft_positions", VLL, "0.26.0", "0.27.0", SF, {"draft-positions-no-draft"}, {"draft-positions"},
         variant=YARN, target_edit=LONG_TARGET),
    case("draft_positions_yarn", VLL, "0.32.0", "0.33.0", SF, {"draft-positions"}, {"draft-positions-context-cut"},
         variant=YARN, target_edit=LONG_TARGET),
    case("target_quantization", VLL, "0.10.2", "0.11.0", SF, set(), {"draft-quantization"},
         target_edit={"quantization_config": FP8}),
    case("target_quantization", VLL, "0.11.0", "0.11.1", SF, {"draft-quantization"}, set(),
         target_edit={"quantization_config": FP8}),
    case("target_quantization_draft", VLL, "0.11.0", "0.11.1", SF, {"draft-quantization"}, set(),
         variant={"config": _set(quantization_config=FP8)}),
    case("draft_sliding_window", VLL, "0.10.0", "0.10.1", EA, set(), {"draft-sliding-window-index"}, variant=SLIDING),
    case("draft_sliding_window", VLL, "0.10.1", "0.10.2", EA, {"draft-sliding-window-index"},
         {"draft-sliding-window"}, variant=SLIDING),
    # a speculators P-EAGLE draft (knowledge.speculators PEAGLE): parallel drafting through 0.33.0, refused by 0.34.0
    case("speculators_peagle", VLL, "0.33.0", "0.34.0", SP, set(), {"peagle"}, variant=PEAGLE),
]


@pytest.fixture(scope="module")
def plan_codes(make_variant: Callable[..., Path], make_checkpoint: Callable[..., Path],
               make_target: Callable[..., Path]) -> Callable[[Case, str], tuple[str, set[str]]]:
    def run(c: Case, version: str) -> tuple[str, set[str]]:
        path = make_variant(c.spec, name=c.behaviour, **c.variant) if c.variant else make_checkpoint(c.spec)
        target_dir = make_target(c.target_layers, c.target_arch, c.target_weights)
        if c.target_edit:
            data = json.loads((target_dir / "config.json").read_text())
            (target_dir / "config.json").write_text(json.dumps({**data, **c.target_edit}))
        target = TargetModel.open(target_dir)
        engine = parse_selection(f"{c.engine}=={version}")[0]
        plan = load_plan(Checkpoint.open(path), engine, target, c.convention)
        # producer habits (engine.producer) hold across every release: not part of a version boundary
        plan = dataclasses.replace(plan, issues=tuple(i for i in plan.issues if i.area != "producer"))
        return plan.outcome, {i.finding.code for i in plan.issues}

    return run


@pytest.mark.parametrize("c", CASES, ids=[f"{c.engine}-{c.behaviour}-{c.after}" for c in CASES])
def test_boundary(c: Case, plan_codes: Callable[[Case, str], tuple[str, set[str]]]) -> None:
    before_outcome, before = plan_codes(c, c.before)
    after_outcome, after = plan_codes(c, c.after)
    assert before == c.expect_before, f"{c.engine} {c.before}: {before}"
    assert after == c.expect_after, f"{c.engine} {c.after}: {after}"
    assert before != after, "a boundary case must change the verdict"
    for outcome, codes in ((before_outcome, before), (after_outcome, after)):
        assert (outcome == LOADS) == (not codes)


def test_every_versioned_behaviour_has_a_boundary_case() -> None:
    """Each behaviour whose value changes between versions is exercised on both sides."""
    changing = {(r.engine, behaviour) for behaviour, r in RULES if r.since not in ("0.4.4.post2", "0.8.5")
                and r.engine in ("sglang", "vllm")}  # tokenspeed / mlx-vlm: tests/test_engine_tokenspeed_mlxvlm.py
    covered = {(c.engine, c.behaviour.removesuffix("_eagle_config").removesuffix("_runner_v2")
                .removesuffix("_speculators").removesuffix("_qwen3_class")) for c in CASES}
    untestable = {
        ("vllm", "fc_applied"): "0.8.5 ignores configured ids and allows only Llama targets: one state never arrives",
        ("vllm", "embed_source"): "covered by the 0.11.1 case; 0.9.0/0.9.1 reject speculators configs",
        ("vllm", "lm_head_source"): "covered by the 0.11.0 case; 0.34.0 (a packed target head) changes a note: "
                                    "tests/test_vllm_0340.py",
        ("vllm", "architectures"): "MLA class: tests/test_plan_shapes.py (0.17.0 / 0.18.0); Qwen3: the qwen3_class case",
        ("vllm", "mla_rope"): "covered in tests/test_plan_shapes.py (0.27.0 / 0.28.0, an MLA draft)",
        ("vllm", "speculators_model_types"): "covered in tests/test_engine_contracts.py (qwen2 layer config)",
        ("vllm", "arch_rewrite"): "covered by the architectures case",
        ("vllm", "d2t_present"): "", ("vllm", "draft_vocab_size_missing"): "covered in tests/test_engine_contracts.py",
        ("vllm", "draft_vocab_size_null"): "covered in tests/test_engine_contracts.py",
        ("vllm", "aux_id_fields_other_mode"): "covered by aux_id_fields_runner_v2; 0.34.0 (one runner): "
                                              "tests/test_vllm_0340.py",
        ("vllm", "fc_norm"): "same rule as norm_output",
        ("vllm", "unknown_key"): "",
        ("vllm", "draft_extend_graph_width"): "0.34.0 keeps the value; the code moved to the V2 speculator (a cite)",
        ("vllm", "draft_extend_logits_buffer"): "0.34.0 keeps the value; the code moved to the V2 speculator (a cite)",
        ("vllm", "aux_default"): "same value; the code moved (a cite)",
        ("vllm", "draft_dtype"): "same value; the code moved (a cite)",
        ("vllm", "mtp_model_types"): "0.10.1: same value, the code moved (a cite); 0.11.0 and 0.16.0: "
                                     "tests/test_mtp_model_types.py",
        ("vllm", "weight_files"): "same value; the code moved (a cite)",
        ("sglang", "architectures"): "covered in tests/test_plan_shapes.py (0.5.11 / 0.5.12, an MLA draft)",
        ("sglang", "renames"): "covered by first_layer",
        ("sglang", "unknown_key"): "covered by key_prefix",
        ("sglang", "aux_id_fields"): "covered by key_prefix's version pair (0.4.8 captures defaults only)",
        ("sglang", "fc_norm"): "same rule as norm_output",
        ("sglang", "graph_mode_default_layers"): "",
        ("sglang", "target_quantization"): "a note changes, no verdict: tests/test_engine_serving.py",
        ("sglang", "draft_sliding_window"): "a note changes, no verdict: tests/test_engine_serving.py",
    }
    missing = sorted(changing - covered - set(untestable))
    assert not missing, f"behaviours with a version boundary and no case: {missing}"
    assert set(BEHAVIOURS) >= {b for _, b in changing}


@pytest.mark.parametrize(("spec", "engines", "speculators_layer"), [
    (SynthSpec(producer=SPECFORGE), ("sglang==0.5.23", "vllm==0.32.0"), False),
    (SynthSpec(producer=SPECULATORS), ("vllm==0.32.0",), True),
])
def test_qwen3_type_draft_without_head_dim(spec: SynthSpec, engines: tuple[str, ...], speculators_layer: bool,
                                           make_variant: Callable[..., Path], synth_target: Path) -> None:
    """AutoConfig gives a qwen3-type draft Qwen3Config's head_dim 128: refused against 32-wide heads; vLLM reads a
    speculators layer config as written (hidden // heads = 32) and builds its Qwen3 class."""
    def edit(config: dict[str, Any]) -> None:
        layer = config["transformer_layer_config"] if speculators_layer else config
        layer["model_type"] = "qwen3"
        del layer["head_dim"]

    path = make_variant(spec, config=edit, name="qwen3-no-head-dim", replace=QK_NORMS if speculators_layer else {
        f"midlayer.self_attn.{n}_norm.weight": torch.ones(32, dtype=torch.bfloat16) for n in ("q", "k")})
    for engine in engines:
        plan = load_plan(Checkpoint.open(path), parse_selection(engine)[0], TargetModel.open(synth_target))
        codes = {i.finding.code for i in plan.issues}
        if speculators_layer:
            assert plan.draft_class == "Eagle3Qwen3ForCausalLM" and not codes, (engine, codes)
        else:
            assert "attention-geometry" in codes, (engine, codes)
            finding = plan.issues_for("geometry")[0]
            assert "head_dim: 32" in finding.fix and "Qwen3Config" in " ".join(finding.details)


def test_qk_norms_on_a_llama_class_are_dropped_by_sglang_and_refused_by_vllm(
        make_variant: Callable[..., Path], synth_target: Path) -> None:
    path = make_variant(SF, name="qk-norm-llama", replace={
        f"midlayer.self_attn.{n}_norm.weight": torch.ones(32, dtype=torch.bfloat16) for n in ("q", "k")})
    ckpt, target = Checkpoint.open(path), TargetModel.open(synth_target)
    sglang = load_plan(ckpt, parse_selection("sglang==0.5.23")[0], target)
    assert [i.finding.code for i in sglang.issues] == ["dropped"]
    assert "per-head q/k norm" in sglang.issues[0].finding.summary
    vllm = load_plan(ckpt, parse_selection("vllm==0.32.0")[0], target)
    assert {i.finding.code for i in vllm.issues} == {"key-refused"}


def test_plan_is_reported_in_probe_shape(make_checkpoint: Callable[..., Path], synth_target: Path) -> None:
    plan = load_plan(Checkpoint.open(make_checkpoint(SP)), parse_selection("vllm")[0], TargetModel.open(synth_target))
    data = plan.as_probe_dict()
    assert data["outcome"] == "loaded" and data["captured_inputs_of"] == [2, 4, 5]
    assert data["parameters"]["model.layers.0.self_attn.qkv_proj.weight"]["sources"] == [
        "layers.0.self_attn.k_proj.weight", "layers.0.self_attn.q_proj.weight", "layers.0.self_attn.v_proj.weight"]
    assert data["draft_to_target"] is not None and len(data["draft_to_target"]) == 256
    assert plan.outcome != REFUSED
