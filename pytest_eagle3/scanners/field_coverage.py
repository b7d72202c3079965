"""Every config field the engines' EAGLE-3 paths read, classified: modelled by a named rule, or read with
no effect on EAGLE-3 (and why).

The fields come from ``field_scan.json``, written by ``pytest_eagle3/scanners/fields.py`` over every released
engine in :data:`~pytest_eagle3.knowledge.releases.KNOWN_RANGES` (one record per field and side: the
draft's config, the target's, or ``either`` where the code does not tell). :data:`COVERAGE` classifies
them: each entry names fields (exact, or ``fnmatch`` patterns), the sides and engines it covers, and
either the rule that models the field (``behaviour:NAME`` in :data:`~pytest_eagle3.knowledge.behaviours.BEHAVIOURS`,
``fact:NAME`` a :class:`~pytest_eagle3.engines.facts.FactSheet` field, ``area:NAME`` an engine area module,
``producer:NAME`` a :class:`~pytest_eagle3.producers.kinds.Producer` field) or the reason it has no effect,
with the source it was read in. ``tests/test_field_coverage.py`` fails on a scanned field no entry covers.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.knowledge.behaviours import BEHAVIOURS
from pytest_eagle3.knowledge.generated import FIELD_SCAN
from pytest_eagle3.knowledge.releases import RELEASES, SGLANG, VLLM
from pytest_eagle3.producers.kinds import Producer

SCAN_FILE = FIELD_SCAN
DRAFT, TARGET, EITHER = "draft", "target", "either"
SIDES = (DRAFT, TARGET, EITHER)
BOTH = (SGLANG, VLLM)

#: The releases the committed scan read, per engine: every release of the one release list. The test checks the
#: scan's release list equals it.
SCANNED_RELEASES: dict[str, tuple[str, ...]] = RELEASES


class Status(StrEnum):
    """How a scanned field is covered."""

    #: A rule models what the engine does with it (``rule`` names it).
    MODELLED = "modelled"
    #: Read, no effect on whether an EAGLE-3 draft works (``reason`` says why).
    RULED_OUT = "ruled-out"


@dataclass(frozen=True)
class Coverage:
    """One classification: the fields (names or fnmatch patterns), sides and engines it covers."""

    fields: tuple[str, ...]
    sides: tuple[str, ...]
    status: Status
    #: MODELLED: ``behaviour:`` / ``fact:`` / ``area:`` / ``producer:`` + name; otherwise "".
    rule: str
    #: The source it was read in, and for RULED_OUT why.
    reason: str
    engines: tuple[str, ...] = BOTH

    def covers(self, engine: str, field: str, side: str) -> bool:
        """Whether this entry classifies ``field`` as read on ``side`` by ``engine`` (field patterns are globs)."""
        return (engine in self.engines and side in self.sides
                and any(fnmatchcase(field, pattern) for pattern in self.fields))


def _m(fields: tuple[str, ...], sides: tuple[str, ...], rule: str, reason: str,
       engines: tuple[str, ...] = BOTH) -> Coverage:
    return Coverage(fields, sides, Status.MODELLED, rule, reason, engines)


def _out(fields: tuple[str, ...], sides: tuple[str, ...], reason: str, engines: tuple[str, ...] = BOTH) -> Coverage:
    return Coverage(fields, sides, Status.RULED_OUT, "", reason, engines)


D, T, E = (DRAFT,), (TARGET,), (EITHER,)
DE, ALL = (DRAFT, EITHER), SIDES
SV, VL = (SGLANG,), (VLLM,)
MLA_ROPE = ("rope_parameters.factor", "rope_parameters.mscale_all_dim", "rope_parameters.apply_yarn_scaling",
            "rope_parameters.attention_factor", "rope_scaling.factor", "rope_scaling.mscale_all_dim",
            "rope_scaling.apply_yarn_scaling", "rope_interleave", "cli_factor")

#: Every scanned field's classification (first match wins; order: modelled, ruled out).
COVERAGE: tuple[Coverage, ...] = (
    # ---------------------------------------------------------------- modelled: the draft class and its loader
    _m(("architectures",), D, "behaviour:architectures",
       "vllm model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS; sglang models/*eagle3*.py EntryClass "
       "(knowledge/draft_classes.py REGISTRY)"),
    _m(("model_type",), D, "behaviour:mtp_model_types",
       "vllm config/speculative.py SpeculativeConfig.__post_init__: a draft model_type in MTPModelTypes becomes "
       "method mtp", VL),
    _m(("num_hidden_layers",), D, "behaviour:multi_layer",
       "vllm llama_eagle3.py LlamaModel.__init__ range(num_hidden_layers) from 0.11.1; sglang llama_eagle3.py "
       "(ValueError before 0.5.12)"),
    _m(("hidden_size",), D, "fact:hidden_size", "vllm / sglang llama_eagle3.py LlamaModel.__init__: embed, norms, fc out"),
    _m(("target_hidden_size",), D, "fact:target_hidden_size",
       "vllm llama_eagle3.py LlamaModel.__init__ fc input = target_hidden_size x aux count; sglang llama_eagle3.py"),
    _m(("vocab_size",), D, "fact:vocab_size", "vllm / sglang llama_eagle3.py: embed_tokens rows, d2t size"),
    _m(("draft_vocab_size",), D, "behaviour:draft_vocab_size_missing",
       "vllm / sglang llama_eagle3.py lm_head rows (also behaviour draft_vocab_size_null)"),
    _m(("draft_vocab_size", "hot_vocab_size"), DE, "behaviour:draft_extend_logits_buffer",
       "sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__ and "
       "multi_layer_eagle_draft_extend_cuda_graph_runner.py: the logits buffer rows", SV),
    _m(("tie_word_embeddings",), D, "behaviour:lm_head_source", "sglang llama_eagle3.py LlamaForCausalLMEagle3.__init__", SV),
    _m(("num_aux_hidden_states", "num_aux_layers"), D, "behaviour:fc_aux_count",
       "vllm llama_eagle3.py / qwen3_eagle3.py / deepseek_eagle3.py fc input width; sglang llama_eagle3.py (0.5.12+)"),
    # ---------------------------------------------------------------- modelled: aux layers and their flags
    _m(("eagle_aux_hidden_state_layer_ids", "eagle_config", "eagle_config.eagle_aux_hidden_state_layer_ids",
        "dflash_config", "dflash_config.target_layer_ids", "dspark_target_layer_ids", "target_layer_ids"), D,
       "behaviour:aux_id_fields",
       "vllm v1/worker/gpu_model_runner.py _get_eagle3_aux_layers_from_config, v1/worker/gpu/spec_decode/eagle/"
       "eagle3_utils.py; sglang model_runner.py / model_runner_components/spec_aux_hidden_state.py"),
    _m(("eagle_config.use_aux_hidden_state",), DE, "behaviour:use_aux_hidden_state",
       "vllm spec_decode/eagle.py _get_eagle3_use_aux_hidden_state_from_config; sglang eagle_worker*.py"),
    _m(("eagle_config",), E, "behaviour:use_aux_hidden_state",
       "sglang 0.5.12 speculative/multi_layer_eagle_worker.py MultiLayerEagleWorker.__init__: use_aux_hidden_state", SV),
    _m(("norm_before_fc", "eagle_config.norm_before_fc"), D, "behaviour:norm_before_fc",
       "vllm llama_eagle3.py LlamaModel.__init__ input_norm; sglang llama_eagle3.py (0.5.17+)"),
    _m(("fc_norm", "use_aux_norm"), D, "behaviour:fc_norm", "vllm / sglang llama_eagle3.py LlamaModel.__init__"),
    _m(("norm_output",), D, "behaviour:norm_output", "vllm / sglang llama_eagle3.py LlamaModel.__init__"),
    _m(("norm_before_residual",), D, "behaviour:norm_before_residual", "vllm llama_eagle3.py LlamaDecoderLayer.__init__"),
    _m(("num_hidden_layers",), E, "behaviour:capture_range",
       "sglang model_runner_components/spec_aux_hidden_state.py _check_capture_layer_ids_in_range: the target's "
       "layer count bounds the aux ids (model_runner.py ModelRunner.__init__ before 0.5.16)", SV),
    _m(("hidden_size",), E, "area:fc",
       "vllm 0.29+ v1/worker/gpu/spec_decode/eagle/eagle3_utils.py reserve_aux_intermediate_tensor_slots: the "
       "target's hidden size sizes the aux states' pipeline slots (the width fc receives)", VL),
    # ---------------------------------------------------------------- modelled: attention geometry and shapes
    _m(("head_dim", "num_attention_heads", "num_key_value_heads"), D, "area:geometry",
       "vllm model_executor/models/llama.py LlamaAttention.__init__, qwen3.py; sglang models/llama.py LlamaAttention"),
    _m(("intermediate_size",), D, "area:param_shapes",
       "vllm models/llama.py LlamaMLP / deepseek_v2.py DeepseekV2MLP; sglang llama_eagle3.py LlamaDecoderLayer"),
    _m(("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"), D, "area:param_shapes",
       "vllm 0.18+ deepseek_eagle3.py / deepseek_v2.py DeepseekV2MLAAttention; sglang 0.5.12+ kimi_k25_eagle3.py"),
    # ---------------------------------------------------------------- modelled: rope and positions
    _m(("max_position_embeddings",), D, "behaviour:draft_positions",
       "vllm models/llama.py LlamaAttention get_rope(max_position=...), config/speculative.py "
       "_maybe_override_draft_max_position_embeddings (0.27.0+: raised to the target's max_model_len when the rope "
       "only sizes its cache); sglang models/llama.py LlamaAttention"),
    _m(MLA_ROPE, D, "behaviour:mla_rope",
       "vllm 0.18+ deepseek_v2.py DeepseekV2MLAAttention.__init__ (yarn mscale); sglang 0.5.12+ deepseek_v2.py "
       "DeepseekV2AttentionMLA.__init__"),
    _m(("rope_theta", "rope_scaling", "rope_parameters", "rope_parameters.rope_theta", "rope_parameters.rope_type",
        "partial_rotary_factor", "original_max_position_embeddings", "mrope_section", "rope_scaling.mrope_section",
        "rope_parameters.mrope_section"), ALL, "behaviour:draft_rope",
       "vllm models/llama.py LlamaAttention get_rope; sglang models/llama.py LlamaAttention, llama_eagle3.py "
       "LlamaModel.__init__ (mrope for VL drafts), model_runner.py ModelRunner.__init__ (the runner's mrope)"),
    _m(("rope_scaling.*", "rope_parameters.*"), D, "behaviour:draft_rope",
       "vllm model_executor/layers/rotary_embedding get_rope, sglang layers/rotary_embedding get_rope: the keys of "
       "the draft's own rope dict, applied as configured (rope kinds the reference forward knows: producers/rope.py)"),
    # ---------------------------------------------------------------- modelled by the four classes of issue 18
    _m(("sliding_window", "layer_types", "interleaved_sliding_window"), D, "behaviour:draft_sliding_window",
       "vllm models/llama.py LlamaAttention (interleaved_sliding_window to 0.10.0, layer_types / sliding_window "
       "from 0.10.1), qwen3_eagle3.py Qwen3Eagle3DecoderLayer (0.26+)", VL),
    _m(("dtype",), T, "behaviour:draft_dtype",
       "vllm config/speculative.py SpeculativeConfig.__post_init__: draft ModelConfig(dtype=target_model_config.dtype)",
       VL),
    _m(("dtype", "torch_dtype", "model_type"), E, "behaviour:draft_dtype",
       "sglang configs/model_config.py _get_and_verify_dtype: --dtype auto takes each model's config dtype "
       "(the draft's ModelConfig too)", SV),
    _m(("quantization_config",), (DRAFT, TARGET), "behaviour:target_quantization",
       "vllm 0.11.0 llama_eagle3.py quant_config = vllm_config.quant_config (the target's); 0.11.1+ "
       "get_draft_quant_config (the draft's own); 0.10.0 and earlier: none", VL),
    _m(("quantization_config", "quantization_config.*"), T, "behaviour:target_quantization",
       "sglang server_args.py ServerArgs._handle_model_specific_adjustments: server-wide kernels from the target's "
       "quantization (the draft worker runs with them)", SV),
    # ---------------------------------------------------------------- modelled: decoder-layer fields
    _m(("num_aux_hidden_states", "eagle_config", "eagle_config.eagle_aux_hidden_state_layer_ids",
        "target_hidden_size"), T, "behaviour:draft_extend_graph_width",
       "sglang 0.5.12-0.5.14 speculative/eagle_info.py EagleDraftExtendInput.hidden_size_for: the draft-extend "
       "CUDA-graph hidden buffer (eagle_draft_extend_cuda_graph_runner.py __init__) sized from the TARGET's hf_config, "
       "which has no aux count (3 x its hidden size) while fc follows the draft's count (runtime.py graph-aux-count); "
       "0.5.15 eagle_utils.py get_draft_input_from_target_hidden_dim reads the draft's config", SV),
    _m(("bias", "attention_bias", "qkv_bias", "mlp_bias"), D, "behaviour:layer_bias",
       "vllm models/llama.py and sglang models/llama.py LlamaDecoderLayer.__init__: attention_bias or bias gives "
       "o_proj a bias, mlp_bias the vLLM MLP, attention_bias vLLM 0.16+'s qkv_proj (llama_eagle3.py / qwen3_eagle3.py "
       "override; qkv_bias only reaches the base qkv_proj that override replaces); without the tensors: behaviours "
       "unset_bias and unloaded_parameter (keys.py bias-unset / not-initialised); SGLang's bias also sizes fc "
       "(behaviour fc_bias)"),
    _m(("model_type", "intermediate_size_mlp"), D, "behaviour:mlp_width",
       "sglang 0.4.9+ llama_eagle3.py LlamaDecoderLayer.__init__: model_type llama4_text sizes the MLP from "
       "intermediate_size_mlp (engines/keys.py mlp-width; param_shapes.py mlp_width; 0.5.3+ layers/linear.py zero-pads "
       "narrower tensors)", SV),
    # ---------------------------------------------------------------- ruled out: set like the trainer, or by the engine
    _out(("hidden_act", "rms_norm_eps"), D,
         "the draft's MLP activation and norm epsilon, applied from its own config.json as the trainer did (every "
         "producer writes both from the same config); no engine-side default differs (reference/draft.py reads them)"),
    _out(("target_layer_count",), D,
         "vllm 0.10.2+ models/llama.py LlamaAttention: set by the engine itself (llama_eagle3.py "
         "Eagle3LlamaForCausalLM.__init__: self.config.target_layer_count = the target's layer count) before the "
         "layers are built; a config.json value is overwritten", VL),
    _out(("logit_scale",), D,
         "vllm llama_eagle3.py LogitsProcessor(scale=logit_scale, default 1.0): no producer on record writes it "
         "(producers/records.py)", VL),
    _out(("is_causal", "dual_chunk_attention_config", "llama_4_scaling", "rope_is_neox_style"), D,
         "base-model options of other families (Qwen3 embedding non-causal attention, Qwen dual-chunk attention, "
         "Llama-4 attention temperature, non-NeoX rope): defaults are the EAGLE-3 behaviour and "
         "no producer on record writes them (producers/records.py)"),
    _out(("n_predict", "num_lookahead_tokens"), D,
         "vllm config/speculative.py SpeculativeConfig.__post_init__: the default number of speculative tokens "
         "(a speed setting, not whether the draft works)", VL),
    _out(("draft_kv_num_layers",), E,
         "sglang 0.5.22+ spec_aux_hidden_state.py: an attribute of its own SpecAuxHiddenStateConfig dataclass "
         "(derived from num_nextn_predict_layers for MTP), not a config.json field", SV),
    # ---------------------------------------------------------------- ruled out: other draft methods' fields
    _out(("num_nextn_predict_layers", "mtp_*", "num_mtp_*", "num_kv_shared_layers", "hc_count", "hc_mult",
          "compress_ratios", "decoder", "configure_draft_model", "index_share_for_mtp_iteration"), ALL,
         "MTP / DeepSeek-V4 / Gemma-4 draft families: vllm config/speculative.py hf_config_override and "
         "SpeculativeConfig.use_*_mtp, spec_decode/llm_base_proposer.py (hyper-connections, compressed attention); "
         "sglang configs/model_config.py _config_draft_model, eagle_worker_v2.py DSA index sharing; read on the "
         "branches of those model types, which an EAGLE-3 draft never takes"),
    _out(("architectures",), E,
         "sglang 0.4.9.post3-0.5.13 model_runner.py ModelRunner.initialize: MiMoV2MTP / Step3p5MTP draft layer "
         "counts only", SV),
    _out(("dspark_*", "markov_*", "sample_from_anchor", "mask_token_id", "dflash_config.mask_token_id", "pard_token",
          "ptd_token_id", "xpress_topc", "block_size", "no_rope_layers"), D,
         "parallel-drafting methods (DFlash, DSpark, PARD, Xpress): vllm config/speculative.py __post_init__ / "
         "_validate_qwen3_omni_dspark, spec_decode/llm_base_proposer.py _init_parallel_drafting_params; only for "
         "those methods (vllm 0.34.0 hf_config_override reads no_rope_layers only when the architecture is "
         "DFlash2DraftModel)", VL),
    _out(("hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "vocab_size",
          "architectures", "thinker_config", "head_dim"), (TARGET, EITHER),
         "vllm 0.25+ config/speculative.py _validate_qwen3_omni_dspark / _get_attention_head_dim / "
         "_is_qwen3_omni_target: Qwen3-Omni DSpark validation only", VL),
    _out(("model_type",), T,
         "vllm config/speculative.py SpeculativeConfig.__post_init__ / _verify_args: the target's model_type picks "
         "MTP methods (deepseek_v3, deepseek_v41 ...) when the method is mtp; sglang 0.5.19+ "
         "spec_aux_hidden_state.py _map_muse_target_layer_ids: MUSE drafts only"),
    _out(("index_topk", "index_topk_freq", "index_topk_pattern", "index_skip_topk_offset", "indexer_rope_interleave",
          "use_index_cache"), ALL,
         "DeepSeek sparse-attention (DSA) indexer of the MLA layer and the server's DSA set-up: only when the config "
         "has index_topk (DeepSeek-V3.2 family); the MLA EAGLE-3 drafts on record (Kimi K2.5) write none"),
    _out(("image_token_id", "image_token_index", "img_context_token_id", "media_placeholder_token_id",
          "vision_config"), T,
         "vllm spec_decode/eagle.py / llm_base_proposer.py load_model: the target's multimodal placeholders (image "
         "positions kept out of the draft's embeddings); no draft field", VL),
    _out(("interleaved_sliding_window",), T,
         "vllm 0.8.5 v1/worker/gpu_model_runner.py GPUModelRunner.__init__: the target's own attention window", VL),
    _out(("architectures", "dual_chunk_attention_config", "enable_moe_block", "mlp_hidden_act", "layer_types",
          "sliding_window_pattern", "index_topk_freq", "index_topk_pattern"), T,
         "sglang server_args.py ServerArgs._handle_model_specific_adjustments / _handle_attention_backend_compatibility: "
         "attention backend and kernel choices for the target model", SV),
    _out(("loop_num", "num_loops"), E,
         "sglang model_runner.py / spec_aux_hidden_state.py: looped targets (LoopCoder) multiply the layer count; no "
         "EAGLE-3 target family on record loops", SV),
    _out(("max_source_positions", "ngram_embedding_k", "ngram_embedding_n"), E,
         "sglang model_runner.py _dummy_run / cuda_graph_runner.py CudaGraphRunner.__init__: encoder source positions "
         "(Whisper) and n-gram embeddings of the model being run; no EAGLE-3 draft has them", SV),
)


@cache
def scan() -> dict[str, Any]:
    """The committed scan (field_scan.json)."""
    found: dict[str, Any] = json.loads(SCAN_FILE.read_text(encoding="utf-8"))
    return found


def records(engine: str, data: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The scan's field records of one engine."""
    return list((data or scan())["fields"].get(engine, []))


def classify(engine: str, field: str, side: str) -> Coverage | None:
    """The first COVERAGE entry covering the field, None when none does."""
    return next((c for c in COVERAGE if c.covers(engine, field, side)), None)


def unclassified(data: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(engine, record) for every scanned field no entry covers."""
    for engine in sorted((data or scan())["fields"]):
        for record in records(engine, data):
            if classify(engine, record["field"], record["reads"]) is None:
                yield engine, record


def rule_exists(rule: str) -> bool:
    """Whether a MODELLED entry's rule names something that exists."""
    kind, _, name = rule.partition(":")
    if kind == "behaviour":
        return name in BEHAVIOURS
    if kind == "fact":
        return name in {f.name for f in dataclasses.fields(FactSheet)}
    if kind == "producer":
        return name in {f.name for f in dataclasses.fields(Producer)}
    if kind == "area":
        return bool(name) and importlib.util.find_spec(f"pytest_eagle3.engines.{name}") is not None
    return False


def summary(engine: str, data: dict[str, Any] | None = None) -> dict[str, int]:
    """Counts per status for one engine: releases scanned, fields (field x side) read, and each status."""
    data = data or scan()
    counts = {"releases": len(data["releases"].get(engine, [])), "fields": 0, "unclassified": 0,
              **{s.value: 0 for s in Status}}
    for record in records(engine, data):
        counts["fields"] += 1
        found = classify(engine, record["field"], record["reads"])
        counts[found.status.value if found else "unclassified"] += 1
    return counts
