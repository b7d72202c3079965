"""TensorRT-LLM: the engine object, and its behaviour rows (its PyTorch backend, ``Eagle3ForCausalLM``), every
behaviour from 0.19.0 on.

No wheel is on PyPI (the index package is a stub that fetches NVIDIA's own wheel), and no stored copy of the
repository at a release tag could be read: the rows come from main-branch versions of the files, read in the
public source index, and from the pull requests that changed them (their merge dates place them against the
releases). Files read: ``_torch/models/modeling_speculative.py`` (main, 2026: ``Eagle3DraftModel``,
``Eagle3ForCausalLM``), ``_torch/speculative/eagle3.py`` (a 2025 main version: ``Eagle3SpecMetadata``,
``Eagle3OneModelSpecMetadata``), ``llmapi/llm_args.py`` (``EagleDecodingConfig``, a 1.2-era main version),
``_torch/models/modeling_auto.py``. Modelled: the default one-model path (``eagle3_one_model``), draft
``eagle3_model_arch: llama3``. EAGLE 3.1's ``fc_norm`` / ``norm_output`` (TensorRT-LLM#14988) and
``eagle_config.norm_before_fc`` (#12561, merged 2026-03-27) landed on main after release/1.2: not in 1.2.1.
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.engine import BehaviourSpan, Engine, spans
from pytest_eagle3.knowledge.engines.shared import MIDLAYER_RENAMES, FcAuxCount

NAME = "trtllm"

#: 0.19.0 first with Eagle3ForCausalLM; tags pinned by tensorrtllm_backend's submodule: 0.19.0 c6f7d42, 0.20.0
#: 7965842, 0.21.0 b4b1185, 1.0.0 ae8270b, 1.1.0 48b7b5d; 1.2.0 / 1.2.1 from release/1.2 (36e34ee). Source read:
#: main-branch versions of the files (the rows say which, per row).
RELEASES = ("0.19.0", "0.20.0", "0.21.0", "1.0.0", "1.1.0", "1.2.0", "1.2.1")

SPEC = "tensorrt_llm _torch/models/modeling_speculative.py"
META = "tensorrt_llm _torch/speculative/eagle3.py"
ARGS = "tensorrt_llm llmapi/llm_args.py EagleDecodingConfig"
LOADER = "tensorrt_llm _torch/models/modeling_utils.py _load_weights_impl (module by module)"
MAIN = "main read; the tags not stored"
AFTER_1_2 = "added on main after release/1.2 (not in 0.19.0-1.2.1)"
CAPTURE = (f"{META} maybe_capture_hidden_states: hidden_states + residual saved after decoder layer "
           "layer_id, i.e. the OUTPUT of layer id = the input of layer id + 1")

#: (behaviour, value, source): one row each from 0.19.0, read to 1.2.1.
_ROWS: tuple[tuple[str, Any, str], ...] = (
    ("arch_rewrite", "none", f"{SPEC} _build_eagle3_one_model_draft: architectures not read ({MAIN})"),
    ("speculators_format", False,
     f"{SPEC} SpecDecOneEngineForCausalLM: ModelConfig.from_pretrained of the draft dir reads a flat HF config; no "
     f"speculators_model_type / transformer_layer_config handling ({MAIN})"),
    ("speculators_model_types", (), "tensorrt_llm: speculators format unsupported"),
    ("key_prefix", "add-model-except-lm_head",
     f"{SPEC} Eagle3ForCausalLM.load_weights: 'model.' + name unless 'lm_head' in name"),
    ("first_layer", "layers",
     (f"{SPEC} Eagle3ForCausalLM.load_weights: re.sub('^layers\\.0\\.', 'midlayer.') for one layer, "
      "'^layers\\.(\\d+)\\.' -> 'midlayer.\\1.' for more: modelled as layers.N with midlayer. -> layers.0.")),
    ("renames", MIDLAYER_RENAMES, f"{SPEC} Eagle3ForCausalLM.load_weights: midlayer.* and layers.N.* both load"),
    ("unknown_key", "drop", f"{LOADER}: parameters are looked up per module; a tensor no module names is never read"),
    ("multi_layer", "supported", f"{SPEC} Eagle3DraftModel.__init__: midlayer = ModuleList(...) when num_layers > 1"),
    ("later_layer_norm", "hidden_norm",
     f"{SPEC} Eagle3DecoderLayer: later layers (next_layer_regular) have no input_layernorm; hidden_norm only"),
    ("d2t_present", "offsets", f"{META} Eagle3OneModelWorker: draft tokens + d2t[draft tokens]"),
    ("d2t_absent", "crash", f"{SPEC} Eagle3DraftModel.__init__: d2t Parameter when draft_vocab_size != vocab_size; "
                            f"{LOADER} copies module_weights['d2t']: KeyError without one"),
    ("d2t_full_vocab", "ignored",
     f"{SPEC} Eagle3DraftModel.__init__: no d2t Parameter when draft_vocab_size == vocab_size: a shipped d2t is unread"),
    ("draft_vocab_size_null", "refused",
     (f"{SPEC} Eagle3ForCausalLM.__init__: vocab_size=config.draft_vocab_size (None): startup fails; "
      "_ensure_draft_vocab_size as merged in TensorRT-LLM#10124 returns when the field exists (main later also "
      "replaces null)")),
    ("aux_id_fields", (),
     (f"{ARGS}.eagle3_layers_to_capture (a launch setting) and {META} Eagle3OneModelSpecMetadata.__post_init__: the "
      "draft config's eagle_aux_hidden_state_layer_ids are never read")),
    ("aux_id_fields_other_mode", None, f"{META} Eagle3SpecMetadata (two-model): the same layers_to_capture"),
    ("aux_transform_llama", "+1", CAPTURE + " (modeling_llama.py)"),
    ("aux_transform_deepseek", "+1", CAPTURE + " (modeling_deepseekv3.py)"),
    ("aux_transform_gpt_oss", "+1", CAPTURE + " (modeling_gpt_oss.py)"),
    ("capture_range", "outputs",
     f"{META}: ids are decoder layer indices 0..L-1 (outputs, inputs 1..L); -1 is the final post-norm state"),
    ("graph_mode_default_layers", False, f"{META}: one layers_to_capture for every mode"),
    ("fc_applied", "when-width-differs",
     f"{SPEC} Eagle3ForCausalLM.apply_eagle3_fc: fc only if hidden_states.shape[-1] != hidden_size"),
    ("fc_aux_count", FcAuxCount.FIXED_3,
     (f"{SPEC} Eagle3DraftModel.__init__: fc = Linear(target_hidden_size x num_capture_layers); "
      f"{ARGS}.num_capture_layers: len(eagle3_layers_to_capture), else 3 (another count: not modelled)")),
    ("fc_bias", "config.bias", f"{SPEC} Eagle3DraftModel.__init__: fc bias=getattr(config, 'bias', False)"),
    ("use_aux_hidden_state", "ignored", "tensorrt_llm: use_aux_hidden_state not read"),
    ("norm_before_residual", "not-read",
     f"{SPEC} Eagle3DecoderLayer.forward: residual = hidden_states before hidden_norm"),
    ("norm_before_fc", "not-read", f"{SPEC}: eagle_config.norm_before_fc (#12561) {AFTER_1_2}"),
    ("fc_norm", "not-read", f"{SPEC}: fc_norm (TensorRT-LLM#14988) {AFTER_1_2}"),
    ("norm_output", "not-read", f"{SPEC}: top-level norm_output (TensorRT-LLM#14988) {AFTER_1_2}"),
    ("embed_source", "target-unless-hidden-differs",
     f"{SPEC} Eagle3DraftModel.__init__: embed_tokens = None (shared with the target) unless target_hidden_size "
     "!= hidden_size; load_weights_from_target_model"),
    ("draft_extend_logits_buffer", "none", "tensorrt_llm: no draft-extend logits buffer"),
    ("draft_extend_graph_width", "draft-aux-count",
     f"{META} Eagle3OneModelSpecMetadata: hidden_states buffer hidden_size x len(layers_to_capture)"),
    ("embed_width_check", "uninitialised",
     f"{SPEC} Eagle3DraftModel.__init__: a draft of another width builds its own embed_tokens (never the target's)"),
    ("lm_head_source", "target-if-absent",
     f"{SPEC} Eagle3ForCausalLM.load_weights: load_lm_head_from_target unless a tensor name has 'lm_head'"),
    ("mtp_model_types", (), "tensorrt_llm: MTP is its own decoding_type"),
    ("mla_rope", "forced-yarn",
     f"{SPEC} Eagle3MLAttention: PositionEmbeddingType.yarn for an MLA draft (kv_lora_rank set; not modelled)"),
    ("draft_rope", "config", f"{SPEC} Eagle3Attention: RopeParams.from_config(draft config)"),
    ("first_layer_hidden_path", "hidden_norm",
     f"{SPEC} Eagle3DecoderLayer.forward: hidden_norm(hidden), input_layernorm(embeds), concatenated"),
    ("mlp_width", "intermediate_size_mlp-if-llama4_text",
     f"{SPEC} Eagle3DecoderLayer.__init__: intermediate_size_mlp if model_type == 'llama4_text'"),
    ("layer_bias", "qkv+o_proj+mlp",
     f"{SPEC} Eagle3Attention: bias=config.attention_bias (qkv and o_proj); GatedMLP bias=mlp_bias"),
    ("unset_bias", "zeros", f"{LOADER}: a bias the checkpoint lacks fails the load before it is used"),
    ("unloaded_parameter", "refused", f"{LOADER}: module_weights[name] for every parameter: KeyError when absent"),
    ("weight_files", "all-safetensors", "tensorrt_llm _torch/models/checkpoints/hf/weight_loader.py: *.safetensors"),
    ("draft_positions", "unbounded",
     f"{SPEC} Eagle3Attention: rope_gpt_neox computed in the attention kernel (not verified on a GPU)"),
    ("target_quantization", "draft",
     f"{SPEC} Eagle3DraftModel: quant_config=model_config.get_quant_config() of the draft's own ModelConfig"),
    ("draft_sliding_window", "none", f"{SPEC} Eagle3Attention: no sliding window"),
    ("draft_dtype", "draft-config", f"{SPEC} Eagle3DraftModel: dtype=config.torch_dtype (the draft's)"),
    ("aux_default", "launch-setting",
     (f"{ARGS}.eagle3_layers_to_capture (Set[int], 'Defaults to {{1, num_layers//2-1, num_layers-4}}'); "
      f"{META} __post_init__: layers_to_capture = (1, L // 2 - 1, L - 4) when unset, ValueError 'Not enough hidden "
      "layers for default EAGLE3 capture' when L <= 5")),
)

SPANS: list[BehaviourSpan] = [span for name, value, source in _ROWS
                     for span in spans(name, ("0.19.0", "1.2.1", value, source))]
# ---------------------------------------------------------------- draft_vocab_size_missing: TensorRT-LLM#10124
SPANS += spans("draft_vocab_size_missing",
               ("0.19.0", "1.1.0", "refused",
                f"{SPEC} Eagle3ForCausalLM.__init__: vocab_size=config.draft_vocab_size: AttributeError without the "
                "field (before TensorRT-LLM#10124)"),
               ("1.2.0", "1.2.1", "vocab_size",
                f"{SPEC} _ensure_draft_vocab_size (TensorRT-LLM#10124, merged 2025-12/2026-01 before 1.2.0): warns "
                "'Missing draft_vocab_size ... defaulting to vocab_size' (the 1.2.0 tag not read)"))

ENGINE = Engine(
    NAME, "TensorRT-LLM", RELEASES, lineage=NAME, behaviour_rows=tuple(SPANS),
    draft_dtype_source=("tensorrt_llm _torch/models/modeling_speculative.py Eagle3DraftModel: dtype=config.torch_dtype (the "
                       "draft's)"),
    mla_unmodelled=("tensorrt_llm _torch/models/modeling_speculative.py Eagle3ForCausalLM: _use_mla when "
                    "kv_lora_rank is set, Eagle3MLAttention, weights through DeepseekV3WeightLoader (main read)"),
    load_assert=("tensorrt_llm _torch/modules/linear.py load_weight_shard, then param.data.copy_: another shape raises "
                 "(one tensor-parallel rank; main read)"),
    exact_shapes=True, launch_settings=("speculative_config.eagle3_layers_to_capture",),
)
