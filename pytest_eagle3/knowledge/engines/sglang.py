"""SGLang: the engine object, and its behaviour rows (areas as sections: keys, vocab, aux, fc and norms, sharing,
layers). One ``(since, read_to, value, source)`` span per range of releases; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.draft_class import LLAMA, MLA, MLA_NORMS_AND_B, DraftClass
from pytest_eagle3.knowledge.engine import (
    BehaviourSpan,
    Confirmation,
    Engine,
    Interpreter,
    Live,
    Loading,
    Probe,
    Scans,
    Serving,
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines.shared import (
    EAGLE_CONFIG_FIELD,
    GPU_READY,
    NO,
    SEPARATE_POOL,
    SG_EAGLE3,
    SGLANG_LEGACY_RENAMES,
    FcAuxCount,
    Transform,
)
from pytest_eagle3.knowledge.evidence import Cite

NAME = "sglang"
#: Every final release read (v0.4.4.post2 the first with EAGLE-3; reference/sglang.md; wheels read to 0.5.23).
RELEASES = ("0.4.4.post2", "0.4.4.post3", "0.4.4.post4", "0.4.5", "0.4.5.post1", "0.4.5.post2", "0.4.5.post3",
            "0.4.6", "0.4.6.post1", "0.4.6.post2", "0.4.6.post3", "0.4.6.post4", "0.4.6.post5", "0.4.7",
            "0.4.7.post1", "0.4.8", "0.4.8.post1", "0.4.9", "0.4.9.post1", "0.4.9.post2", "0.4.9.post3",
            "0.4.9.post4", "0.4.9.post5", "0.4.9.post6", "0.4.10", "0.4.10.post1", "0.4.10.post2", "0.5.1",
            "0.5.1.post1", "0.5.1.post2", "0.5.1.post3", "0.5.2", "0.5.3", "0.5.3.post1", "0.5.3.post2",
            "0.5.3.post3", "0.5.4", "0.5.4.post1", "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.5.5.post1",
            "0.5.5.post2", "0.5.5.post3", "0.5.6", "0.5.6.post1", "0.5.6.post2", "0.5.7", "0.5.8", "0.5.8.post1",
            "0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1",
            "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21",
            "0.5.22", "0.5.23")

SPANS: list[BehaviourSpan] = []
# ======================== keys: architecture names, speculators configs, key names, unknown keys, layer count
# ---------------------------------------------------------------- arch_rewrite
SPANS += spans("arch_rewrite",
               ("0.4.4.post2", None, "none", "sglang configs/model_config.py rewrites only MTP/NextN architectures",
                (Cite("sglang/srt/configs/model_config.py"),)))
# ---------------------------------------------------------------- speculators_format
SPANS += spans("speculators_format",
               ("0.4.4.post2", None, False,
                ("sglang: no speculators_model_type handling in any release; config loading raises "
                 "'Unrecognized model' (CPU run 0.5.11, 0.5.23)"),
                (Cite("sglang/srt/configs/model_config.py", "ModelConfig.__init__"),)))
# ---------------------------------------------------------------- speculators_model_types
SPANS += spans("speculators_model_types", ("0.4.4.post2", None, (), "sglang: speculators format unsupported",
                                                   (Cite("sglang/srt/configs/model_config.py", "ModelConfig.__init__"),)))
# ---------------------------------------------------------------- key_prefix
SPANS += spans("key_prefix",
               ("0.4.4.post2", "0.4.8", "add-model",
                "sglang v0.4.5 llama_eagle3.py load_weights prefixes model. and delegates to LlamaForCausalLM",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
               ("0.4.9", None, "optional-model",
                f"sglang {SG_EAGLE3} load_weights: name as-is if a parameter, else model.+name (v0.4.9 886d344964)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)))
# ---------------------------------------------------------------- first_layer
SPANS += spans("first_layer",
               ("0.4.4.post2", "0.5.11", "midlayer", f"sglang {SG_EAGLE3} module attribute self.midlayer",
                (Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.12", None, "layers", f"sglang {SG_EAGLE3} self.layers ModuleList (v0.5.12 a75b79e03b)",
                (Cite("sglang/srt/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- renames
SPANS += spans("renames",
               ("0.4.4.post2", "0.5.11", (), f"sglang {SG_EAGLE3} load_weights: no rename before v0.5.12",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
               ("0.5.12", None, SGLANG_LEGACY_RENAMES,
                f"sglang {SG_EAGLE3} load_weights legacy_name_map (str.replace anywhere in the name)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)))
# ---------------------------------------------------------------- unknown_key
SPANS += spans("unknown_key",
               ("0.4.4.post2", "0.4.8", "warn-or-raise-stacked",
                "sglang v0.4.5 models/llama.py load_weights: warning for unknown names, KeyError for stacked ones",
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.load_weights"),)),
               ("0.4.9", None, "drop",
                f"sglang {SG_EAGLE3} load_weights: a name not in params_dict is skipped, no log (L352-367)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)))
# ---------------------------------------------------------------- multi_layer
SPANS += spans("multi_layer",
               ("0.4.4.post2", "0.5.11", "refused",
                f"sglang {SG_EAGLE3} __init__: ValueError('EAGLE3 currently only supports 1 layer') (CPU run 0.5.11)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)),
               ("0.5.12", None, "supported", f"sglang {SG_EAGLE3} num_hidden_layers layers (v0.5.12 a75b79e03b)",
                (Cite("sglang/srt/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- later_layer_norm
SPANS += spans("later_layer_norm",
               ("0.4.4.post2", None, "hidden_norm",
                f"sglang {SG_EAGLE3} LlamaDecoderLayer: layers >= 1 use hidden_norm (CPU run 0.5.23)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer"),)))
# ======================== vocab: d2t and draft_vocab_size
# ---------------------------------------------------------------- d2t_present
SPANS += spans("d2t_present",
               ("0.4.4.post2", None, "offsets",
                f"sglang {SG_EAGLE3} load_weights: hot_token_id = d2t + arange (substring 'd2t')",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)))
# ---------------------------------------------------------------- d2t_absent
SPANS += spans("d2t_absent",
               ("0.4.4.post2", "0.4.8", "crash",
                f"sglang 0.4.8 {SG_EAGLE3} never sets hot_token_id without d2t: AttributeError in eagle_worker.py",
                (Cite("sglang/srt/models/llama_eagle3.py"), Cite("sglang/srt/speculative/eagle_worker.py"),)),
               ("0.4.9", None, "identity",
                f"sglang 0.4.9 {SG_EAGLE3} hot_token_id = None; speculative/eagle_worker.py checks 'is not None'",
                (Cite("sglang/srt/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- d2t_full_vocab
SPANS += spans("d2t_full_vocab",
               ("0.4.4.post2", None, "offsets", f"sglang {SG_EAGLE3} load_weights: d2t always read",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)))
# ---------------------------------------------------------------- draft_vocab_size_missing
SPANS += spans("draft_vocab_size_missing",
               ("0.4.4.post2", "0.5.4.post1", "vocab_size-if-tied",
                (f"sglang {SG_EAGLE3} LlamaForCausalLMEagle3.__init__ reads config.draft_vocab_size only when "
                 "tie_word_embeddings is false (tied: lm_head = embed_tokens, LogitsProcessor(config) over "
                 "vocab_size); the transformers config raises AttributeError for the absent key "
                 "(0.4.4.post2, 0.4.9, 0.5.2, 0.5.4.post1 read)"),
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)),
               ("0.5.4.post2", None, "refused",
                (f"sglang 0.5.4.post2 {SG_EAGLE3} __init__: config_.vocab_size = config_.draft_vocab_size whatever "
                 "tie_word_embeddings: AttributeError (0.5.4.post2, 0.5.11, 0.5.12, 0.5.23 read)"),
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)))
# ---------------------------------------------------------------- draft_vocab_size_null
SPANS += spans("draft_vocab_size_null",
               ("0.4.4.post2", "0.5.1", "refused", f"sglang {SG_EAGLE3} __init__: lm_head rows = None",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)),
               ("0.5.2", None, "target-lm_head",
                f"sglang {SG_EAGLE3} __init__: load_lm_head_from_target (v0.5.2 aee094e430)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)))
# ======================== aux: aux layer ids: the fields read, the transforms, the capture range
# ---------------------------------------------------------------- aux_id_fields
SPANS += spans("aux_id_fields",
               ("0.4.4.post2", "0.4.8", (), "sglang v0.4.5 set_eagle3_layers_to_capture() takes no ids",
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.set_eagle3_layers_to_capture"),)),
               ("0.4.9", None, (EAGLE_CONFIG_FIELD,),
                ("sglang 0.4.9 model_executor/model_runner.py ModelRunner.initialize (from 0.5.16 "
                 "model_runner_components/spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state)"),
                (Cite("sglang/srt/model_executor/model_runner.py", "ModelRunner.initialize"),)))
# ---------------------------------------------------------------- aux_id_fields_other_mode
SPANS += spans("aux_id_fields_other_mode", ("0.4.4.post2", None, None, "sglang spec_aux_hidden_state.py: one aux-id resolver for every runtime mode", (),
                "model_executor/model_runner_components/spec_aux_hidden_state.py is recent (0.5.23 read); the "
                "resolver of older releases in model_runner.py was not re-read per release"))
# ---------------------------------------------------------------- aux_transform_llama
SPANS += spans("aux_transform_llama",
               ("0.4.4.post2", None, Transform.PLUS_1, "sglang models/llama.py LlamaForCausalLM.set_eagle3_layers_to_capture",
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.set_eagle3_layers_to_capture"),)))
# ---------------------------------------------------------------- aux_transform_deepseek
SPANS += spans("aux_transform_deepseek",
               ("0.4.4.post2", "0.5.12", Transform.PLUS_1, "sglang models/deepseek_v2.py set_eagle3_layers_to_capture",
                (Cite("sglang/srt/models/deepseek_v2.py"),)),
               ("0.5.13", None, Transform.PLUS_1_IF_FIRST_IS_1,
                "sglang models/deepseek_v2.py set_eagle3_layers_to_capture (v0.5.13 f5049709b3, #25454)",
                (Cite("sglang/srt/models/deepseek_v2.py", "DeepseekV2ForCausalLM.set_eagle3_layers_to_capture"),)))
# ---------------------------------------------------------------- aux_transform_gpt_oss
SPANS += spans("aux_transform_gpt_oss",
               ("0.4.4.post2", "0.5.16", Transform.PLUS_1, "sglang models/gpt_oss.py set_eagle3_layers_to_capture", (),
                "models/gpt_oss.py exists from 0.5.1: before, no gpt-oss target at all"),
               ("0.5.17", None, Transform.PLUS_1_UNLESS_MAX_IS_L,
                "sglang models/gpt_oss.py set_eagle3_layers_to_capture boundary rule (v0.5.17 5df193b4ac, #32334)",
                (Cite("sglang/srt/models/gpt_oss.py", "GptOssForCausalLM.set_eagle3_layers_to_capture"),)))
# ---------------------------------------------------------------- capture_range
SPANS += spans("capture_range",
               ("0.4.4.post2", None, "inner",
                "sglang models/llama.py LlamaModel.forward: captures before layer i for i in range(L)",
                (Cite("sglang/srt/models/llama.py", "LlamaModel.forward"),)))
# ---------------------------------------------------------------- graph_mode_default_layers
SPANS += spans("graph_mode_default_layers",
               ("0.4.4.post2", "0.4.8", False, "sglang v0.4.5: configured ids not read at all",
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.set_eagle3_layers_to_capture"),)),
               ("0.4.9", "0.5.10", True,
                ("sglang model_executor/cuda_graph_runner.py set_eagle3_layers_to_capture() before the configured ids "
                 "(fixed v0.5.11 43925d179d, #22836)"),
                (Cite("sglang/srt/model_executor/cuda_graph_runner.py"),)),
               ("0.5.11", None, False, "sglang v0.5.11 43925d179d (#22836)",
                (Cite("sglang/srt/model_executor/model_runner.py"),)))
# ---------------------------------------------------------------- aux_default
SPANS += spans("aux_default",
               ("0.4.4.post2", None, "target-layers",
                "sglang models/llama.py set_eagle3_layers_to_capture(None): [2, L // 2, L - 3] of the target",
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.set_eagle3_layers_to_capture"),)))
# ======================== fc_norms: fc and the norm flags
# ---------------------------------------------------------------- fc_applied
SPANS += spans("fc_applied",
               ("0.4.4.post2", None, "when-width-differs",
                f"sglang {SG_EAGLE3} LlamaModel.forward: if hidden_states.shape[-1] != embeds.shape[-1]",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaModel.forward"),)))
# ---------------------------------------------------------------- fc_aux_count
SPANS += spans("fc_aux_count",
               ("0.4.4.post2", "0.5.11", FcAuxCount.FIXED_3, f"sglang {SG_EAGLE3} LlamaModel.__init__ fc = Linear(target_hidden * 3)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaModel.__init__"),)),
               ("0.5.12", None, FcAuxCount.FROM_CONFIG, f"sglang {SG_EAGLE3} LlamaModel.__init__ num_aux_hidden_states (v0.5.12)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaModel.__init__"),)))
# ---------------------------------------------------------------- fc_bias
SPANS += spans("fc_bias",
               ("0.4.4.post2", "0.4.8", "always", f"sglang v0.4.4.post2 {SG_EAGLE3} fc = nn.Linear(...) (bias=True default)",
                (Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.4.9", None, "config.bias", f"sglang v0.4.9 {SG_EAGLE3} fc bias=getattr(config, 'bias', False)",
                (Cite("sglang/srt/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- use_aux_hidden_state
SPANS += spans("use_aux_hidden_state",
               ("0.4.4.post2", "0.5.7", "ignored", "sglang: eagle_config.use_aux_hidden_state read from v0.5.8",
                (Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.8", None, "honoured",
                "sglang 0.5.8 model_executor/model_runner.py eagle_use_aux_hidden_state (3dfff6ae3c)",
                (Cite("sglang/srt/model_executor/model_runner.py"),)))
# ---------------------------------------------------------------- norm_before_residual
SPANS += spans("norm_before_residual",
               ("0.4.4.post2", None, "not-read", f"sglang {SG_EAGLE3} LlamaDecoderLayer.forward: residual = hidden_states",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer.forward"),)))
# ---------------------------------------------------------------- norm_before_fc
SPANS += spans("norm_before_fc",
               ("0.4.4.post2", "0.5.16", "not-read", f"sglang {SG_EAGLE3}: no input_norm before v0.5.17",
                (Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.17", None, "read", f"sglang {SG_EAGLE3} LlamaModel.__init__ input_norm (v0.5.17)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaModel.__init__"),)))
# ---------------------------------------------------------------- fc_norm
SPANS += spans("fc_norm",
               ("0.4.4.post2", "0.5.11", "not-read", f"sglang {SG_EAGLE3}: no fc_norm before v0.5.12",
                (Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.12", None, "read", f"sglang {SG_EAGLE3} LlamaModel.__init__ fc_norm / use_aux_norm (v0.5.12)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaModel.__init__"),)))
# ---------------------------------------------------------------- norm_output
SPANS += spans("norm_output",
               ("0.4.4.post2", "0.5.11", "not-read", f"sglang {SG_EAGLE3}: pre-norm state fed back before v0.5.12",
                (Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.12", None, "read", f"sglang {SG_EAGLE3} LlamaModel.forward norm_output (v0.5.12)",
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaModel.forward"),)))
# ======================== sharing: embed_tokens / lm_head sharing, CUDA-graph buffers, MTP model types
# ---------------------------------------------------------------- embed_source
SPANS += spans("embed_source",
               ("0.4.4.post2", None, "target-unless-hidden-differs",
                ("sglang speculative/eagle_worker.py __init__ (eagle_worker_v2.py init_lm_head from 0.5.8) set_embed; "
                 "models/llama.py set_embed skips when target_hidden_size != hidden_size"),
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.set_embed"),)))
# ---------------------------------------------------------------- draft_extend_logits_buffer
SPANS += spans("draft_extend_logits_buffer",
               ("0.4.4.post2", "0.4.10", "none",
                "sglang speculative/eagle_draft_extend_cuda_graph_runner.py: no logits buffer (0.4.8, 0.4.10 read)", (),
                "speculative/eagle_draft_extend_cuda_graph_runner.py exists from 0.4.7: before, no draft-extend "
                "CUDA graph at all (the same 'none', for another reason)"),
               ("0.5.1", "0.5.14", "draft-vocab",
                ("sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__: "
                 "next_token_logits_buffer = zeros(max_bs, draft_vocab_size); layers/logits_processor.py "
                 "_copy_logits_to_buffer copies the ParallelLMHead output (draft_vocab_size padded to 64) into it "
                 "(0.5.1, 0.5.2, 0.5.7, 0.5.11, 0.5.14 read; sgl-project/sglang#10106)"),
                (Cite("sglang/srt/speculative/eagle_draft_extend_cuda_graph_runner.py", "EAGLEDraftExtendCudaGraphRunner.__init__"),
                 Cite("sglang/srt/layers/logits_processor.py"),)),
               ("0.5.15", None, "shape-checked",
                ("sglang 0.5.15 layers/logits_processor.py _copy_logits_to_buffer: the buffer is skipped when its shape "
                 "differs (0.5.15-0.5.23 read)"),
                (Cite("sglang/srt/layers/logits_processor.py", "LogitsProcessor._copy_logits_to_buffer"),)))
# ---------------------------------------------------------------- draft_extend_graph_width
SPANS += spans("draft_extend_graph_width",
               ("0.4.4.post2", "0.4.9", "draft-hidden",
                ("sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__: "
                 "hidden_states = zeros(max_num_token, hidden_size * 3) (0.4.7, 0.4.8, 0.4.9 read)"), (),
                "speculative/eagle_draft_extend_cuda_graph_runner.py exists from 0.4.7: before, no draft-extend "
                "CUDA graph at all"),
               ("0.4.10", "0.5.11", "target-hidden",
                ("sglang 0.4.10 eagle_draft_extend_cuda_graph_runner.py: target_hidden_size * 3 when the config has it "
                 "(sgl-project/sglang#8163, fixes #7011; 0.5.11 read)"),
                (Cite("sglang/srt/speculative/eagle_draft_extend_cuda_graph_runner.py"),)),
               ("0.5.12", "0.5.14", "target-config-x3",
                ("sglang 0.5.12 speculative/eagle_info.py EagleDraftExtendInput.hidden_size_for: num_aux and "
                 "target_hidden_size read from worker.target_worker.model_runner.model_config.hf_config (the TARGET's "
                 "config, which has neither: 3 x its hidden_size); eagle_draft_extend_cuda_graph_runner.py __init__ "
                 "sizes hidden_states with it, while llama_eagle3.py fc takes num_aux_hidden_states states "
                 "(0.5.12, 0.5.13, 0.5.13.post1, 0.5.14 read)"),
                (Cite("sglang/srt/speculative/eagle_info.py", "EagleDraftExtendInput.hidden_size_for"),
                 Cite("sglang/srt/speculative/eagle_draft_extend_cuda_graph_runner.py", "EAGLEDraftExtendCudaGraphRunner.__init__"),
                 Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.15", None, "draft-aux-count",
                ("sglang 0.5.15 speculative/eagle_utils.py get_draft_input_from_target_hidden_dim: target_hidden_size x "
                 "num_aux_hidden_states (else len(eagle_config ids), else 3) of the draft model_runner's config "
                 "(0.5.15, 0.5.23 read)"),
                (Cite("sglang/srt/speculative/eagle_utils.py", "get_draft_input_from_target_hidden_dim"),)))
# ---------------------------------------------------------------- embed_width_check
SPANS += spans("embed_width_check",
               ("0.4.4.post2", None, "uninitialised",
                "sglang models/llama.py LlamaForCausalLM.set_embed returns when target_hidden_size != hidden_size",
                (Cite("sglang/srt/models/llama.py", "LlamaForCausalLM.set_embed"),)))
# ---------------------------------------------------------------- lm_head_source
SPANS += spans("lm_head_source",
               ("0.4.4.post2", None, "draft", f"sglang {SG_EAGLE3}: own lm_head [draft_vocab_size, hidden]",
                (Cite("sglang/srt/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- mtp_model_types
SPANS += spans("mtp_model_types",
               ("0.4.4.post2", None, (),
                "sglang configs/model_config.py rewrites MTP/NextN draft architectures by name, never by model_type",
                (Cite("sglang/srt/configs/model_config.py"),)))
# ======================== layers: the draft layers: rope, MLP width, bias, unloaded parameters, files, positions, quantization, sliding window, dtype
# ---------------------------------------------------------------- mla_rope
SPANS += spans("mla_rope",
               ("0.4.4.post2", None, "as-configured",
                ("sglang models/kimi_k25_eagle3.py Eagle3MLADecoderLayer.__init__: rope_scaling = rope_parameters unless "
                 "rope_type is default (0.5.12, 0.5.23 read; CPU run 0.5.23)"), (),
                "models/kimi_k25_eagle3.py exists from 0.5.12: before, no MLA draft class"))
# ---------------------------------------------------------------- draft_rope
SPANS += spans("draft_rope",
               ("0.4.4.post2", None, "config",
                ("sglang models/llama.py LlamaDecoderLayer: rope_theta / rope_scaling (rope_parameters) of the draft "
                 "config; llama_eagle3.py LlamaDecoderLayer subclasses it (0.5.11, 0.5.23 read)"),
                (Cite("sglang/srt/models/llama.py", "LlamaDecoderLayer"),
                 Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer"),)))
# ---------------------------------------------------------------- first_layer_hidden_path
SPANS += spans("first_layer_hidden_path",
               ("0.4.4.post2", None, "hidden_norm",
                (f"sglang {SG_EAGLE3} LlamaDecoderLayer.forward, layer 0: hidden_norm(hidden_states), input_layernorm "
                 "on the embeddings only (0.5.11, 0.5.23 read)"),
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer.forward"),)))
# ---------------------------------------------------------------- mlp_width
SPANS += spans("mlp_width",
               ("0.4.4.post2", "0.4.8.post1", "intermediate_size",
                ("sglang models/llama.py LlamaDecoderLayer.__init__: LlamaMLP(intermediate_size=config.intermediate_size); "
                 f"{SG_EAGLE3} LlamaDecoderLayer keeps it (0.4.4.post2, 0.4.8.post1 read)"),
                (Cite("sglang/srt/models/llama.py", "LlamaDecoderLayer.__init__"),
                 Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer"),)),
               ("0.4.9", "0.5.2", "intermediate_size_mlp-if-llama4_text",
                (f"sglang 0.4.9 {SG_EAGLE3} LlamaDecoderLayer.__init__: if config.model_type == 'llama4_text': "
                 "inter_size = config.intermediate_size_mlp; layers/linear.py MergedColumnParallelLinear / "
                 "RowParallelLinear.weight_loader: loaded_weight.narrow(dim, 0, shard_size) (0.4.9, 0.5.1, 0.5.2 read)"),
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer.__init__"),
                 Cite("sglang/srt/layers/linear.py", "MergedColumnParallelLinear"),
                 Cite("sglang/srt/layers/linear.py", "RowParallelLinear.weight_loader"),)),
               ("0.5.3", None, "intermediate_size_mlp-if-llama4_text-padded",
                ("sglang 0.5.3 layers/linear.py MergedColumnParallelLinear / RowParallelLinear.weight_loader: "
                 "pad_or_narrow_weight zero-pads a narrower tensor to the shard on GPU (the CPU path copies it into "
                 "the first rows only); llama_eagle3.py still sizes the MLP from intermediate_size_mlp (0.5.3, 0.5.12, "
                 "0.5.23 read; CPU probe 0.5.23: gate_up_proj [32768, 64] for a 128-wide draft MLP)"),
                (Cite("sglang/srt/layers/linear.py", "MergedColumnParallelLinear"),
                 Cite("sglang/srt/layers/linear.py", "RowParallelLinear.weight_loader"),
                 Cite("sglang/srt/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- layer_bias
SPANS += spans("layer_bias",
               ("0.4.4.post2", None, "o_proj",
                ("sglang models/llama.py LlamaDecoderLayer.__init__: attention_bias = config.attention_bias or "
                 f"config.bias gives LlamaAttention's o_proj a bias; {SG_EAGLE3} LlamaDecoderLayer overrides qkv_proj "
                 "with bias=False and builds LlamaMLP without bias (0.4.4.post2, 0.4.9, 0.5.1, 0.5.12, 0.5.23 read)"),
                (Cite("sglang/srt/models/llama.py", "LlamaDecoderLayer.__init__"),
                 Cite("sglang/srt/models/llama_eagle3.py", "LlamaDecoderLayer"),)))
# ---------------------------------------------------------------- unset_bias
SPANS += spans("unset_bias",
               ("0.4.4.post2", "0.5.8", "empty",
                ("sglang layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: self.bias = "
                 "Parameter(torch.empty(...)) (0.4.4.post2-0.5.8 read)"),
                (Cite("sglang/srt/layers/linear.py", "ColumnParallelLinear"),
                 Cite("sglang/srt/layers/linear.py", "RowParallelLinear.__init__"),)),
               ("0.5.9", None, "zeros",
                ("sglang 0.5.9 layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: "
                 "Parameter(torch.zeros(...)) (0.5.9-0.5.23 read)"),
                (Cite("sglang/srt/layers/linear.py", "ColumnParallelLinear"),
                 Cite("sglang/srt/layers/linear.py", "RowParallelLinear.__init__"),)))
# ---------------------------------------------------------------- unloaded_parameter
SPANS += spans("unloaded_parameter",
               ("0.4.4.post2", None, "kept",
                ("sglang model_loader/loader.py DefaultModelLoader.load_model: model.load_weights, no check of the "
                 "parameters left unloaded (0.4.4.post2, 0.5.9, 0.5.23 read)"),
                (Cite("sglang/srt/model_loader/loader.py", "DefaultModelLoader.load_model"),)))
# ---------------------------------------------------------------- weight_files
SPANS += spans("weight_files",
               ("0.4.4.post2", None, "all-safetensors",
                ("sglang model_loader/loader.py DefaultModelLoader._prepare_weights: the same globbing "
                 "(0.5.11, 0.5.23 read)"),
                (Cite("sglang/srt/model_loader/loader.py", "DefaultModelLoader._prepare_weights"),)))
# ---------------------------------------------------------------- draft_positions
SPANS += spans("draft_positions",
               ("0.4.4.post2", "0.4.10.post2", "warns-reads-past",
                ("sglang speculative/eagle_worker.py __init__: server_args.context_length = the target's context_len; "
                 "configs/model_config.py ModelConfig.__init__: a longer context than get_context_length(draft) "
                 "only warns (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to 'True'); the draft's rope table "
                 "keeps max_position_embeddings rows (0.4.4.post2, 0.4.5, 0.4.10 read; sgl-project/sglang#6783: worse than no speculation past the draft's 2048)"),
                (Cite("sglang/srt/speculative/eagle_worker.py", "EAGLEWorker.__init__"),
                 Cite("sglang/srt/configs/model_config.py", "ModelConfig.__init__"),)),
               ("0.5.1", "0.5.2", "refuses",
                ("sglang 0.5.1 configs/model_config.py: ValueError \"Warning: Target model's context_length (C) is "
                 "greater than the derived context_length (N) ... set the env var "
                 "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1\" (get_bool_env_var default false); with it set, the "
                 "draft's rope table stays N rows (0.5.1, 0.5.2 read; the default flipped by sgl-project/sglang#9388: 'illegal memory access' past the draft's context)"),
                (Cite("sglang/srt/configs/model_config.py"),)),
               ("0.5.3", None, "refuses-or-raises",
                ("sglang 0.5.3 configs/model_config.py _derive_context_length: the same ValueError; with "
                 "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 a draft model's max_position_embeddings is raised to "
                 "the target's context ('Overriding the draft model's max_position_embeddings') (0.5.3-0.5.23 read; "
                 "eagle_worker_v2.py passes context_length=target context_len)"),
                (Cite("sglang/srt/configs/model_config.py", "ModelConfig._derive_context_length"),)))
# ---------------------------------------------------------------- target_quantization
SPANS += spans("target_quantization",
               ("0.4.4.post2", "0.5.6", "server-flag",
                ("sglang managers/tp_worker.py TpModelWorker.__init__: the draft's ModelConfig(quantization="
                 "server_args.quantization), otherwise its own config.json quantization_config "
                 "(configs/model_config.py _verify_quantization); the target's quantization_config is never read "
                 "for it (0.4.5, 0.5.4 read)"),
                (Cite("sglang/srt/managers/tp_worker.py", "TpModelWorker.__init__"),
                 Cite("sglang/srt/configs/model_config.py", "ModelConfig._verify_quantization"),)),
               ("0.5.7", None, "server-flag-or-draft-flag",
                ("sglang 0.5.7 server_args.py: --speculative-draft-model-quantization (default: --quantization; "
                 "'unquant' for none) builds the draft; configs/model_config.py from_server_args (0.5.23 "
                 "arg_groups/serving_hook.py); the target checkpoint's quantization_config never reaches it "
                 "(0.5.7, 0.5.23 read)"),
                (Cite("sglang/srt/server_args.py"),
                 Cite("sglang/srt/configs/model_config.py", "ModelConfig.from_server_args"),)))
# ---------------------------------------------------------------- draft_sliding_window
SPANS += spans("draft_sliding_window",
               ("0.4.4.post2", "0.5.11", "none",
                (f"sglang models/llama.py LlamaAttention and {SG_EAGLE3}: no sliding_window / layer_types read "
                 "(grep over 0.4.4.post2-0.5.11)"),
                (Cite("sglang/srt/models/llama.py", "LlamaAttention"), Cite("sglang/srt/models/llama_eagle3.py"),)),
               ("0.5.12", None, "server-flag",
                (f"sglang 0.5.12 {SG_EAGLE3} LlamaForCausalLMEagle3.__init__: only --speculative-draft-window-size "
                 "sets the draft layers' sliding_window_size; the config's fields are not read (0.5.12-0.5.23 read)"),
                (Cite("sglang/srt/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)))
# ---------------------------------------------------------------- draft_dtype
SPANS += spans("draft_dtype",
               ("0.4.4.post2", None, "draft-config",
                ("sglang configs/model_config.py _get_and_verify_dtype(draft hf_config, server_args.dtype): under "
                 "--dtype auto (the default) the draft's own dtype/torch_dtype, float32 or absent -> float16; no "
                 "cast of the target's hidden states (0.5.23 eagle_draft_extend_cuda_graph_runner.py: 'the draft "
                 "dtype matches the target dtype'; SpecForge#348: the draft worker fails with 'expected mat1 and "
                 "mat2 to have the same dtype') (0.4.4.post2, 0.5.1, 0.5.10, 0.5.23 read)"),
                (Cite("sglang/srt/configs/model_config.py", "_get_and_verify_dtype"),)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "LlamaForCausalLMEagle3", LLAMA, (), ("num_aux_hidden_states",
                                                         "eagle_config.eagle_aux_hidden_state_layer_ids"),
        "sglang models/llama_eagle3.py LlamaForCausalLMEagle3 (no q_norm/k_norm whatever the model_type)",
        plain_fc=("sglang models/llama_eagle3.py LlamaModel.__init__: self.fc = torch.nn.Linear (no quant_config, "
                  "unlike the decoder layer's projections); load_weights skips names without a parameter and copies "
                  "fc.weight with default_weight_loader (0.5.23 read; CPU run 0.5.23)")),
    DraftClass(
        NAME, "Eagle3DeepseekV2ForCausalLM", MLA, (), ("eagle_config.eagle_aux_hidden_state_layer_ids",
                                                            "eagle_aux_hidden_state_layer_ids"),
        ("sglang models/kimi_k25_eagle3.py Eagle3DeepseekV2ForCausalLM: one Eagle3MLADecoderLayer at self.midlayer "
         "(ValueError unless num_hidden_layers == 1), load_weights re.sub('^layers.0.', 'midlayer.'), q_a_proj + "
         "kv_a_proj_with_mqa concatenated into fused_qkv_a_proj_with_mqa, unknown names skipped with a warning "
         "(0.5.23; CPU run 0.5.23)"),
        attention=("self_attn.fused_qkv_a_proj_with_mqa.weight", *MLA_NORMS_AND_B),
        stacked=((".q_a_proj", ".fused_qkv_a_proj_with_mqa", "q_a"),
                 (".kv_a_proj_with_mqa", ".fused_qkv_a_proj_with_mqa", "kv_a")),
        renames=(("layers.0.", "midlayer."),), first_layer="midlayer", max_layers=1),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS: tuple[tuple[str, TableRow], ...] = (
    ("LlamaForCausalLMEagle3", TableRow("0.4.4.post2", "LlamaForCausalLMEagle3",
                                   "sglang models/llama_eagle3.py EntryClass (v0.4.4.post2 9e0186f352)",
                                   cites=(Cite("sglang/srt/models/llama_eagle3.py"),))),
    ("Eagle3DeepseekV2ForCausalLM", TableRow("0.5.12", "Eagle3DeepseekV2ForCausalLM",
                                    "sglang models/kimi_k25_eagle3.py EntryClass (v0.5.12 a87fb399de)",
                                    cites=(Cite("sglang/srt/models/kimi_k25_eagle3.py"),))),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("0.4.4.post2", True, "sglang model_loader: the architecture selects the EntryClass",
        cites=(Cite("sglang/srt/model_loader/utils.py", "get_model_architecture"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("0.4.4.post2", SEPARATE_POOL,
        "sglang speculative/eagle_worker_v2.py shares req_to_token_pool and token_to_kv_pool_allocator only; "
        "model_executor/pool_configurator.py sizes the draft worker's KV pool from its own model config "
        "(0.5.23 read; static reading)",
        unmodelled=("read in 0.5.23 only (eagle_worker_v2.py, pool_configurator.py); older releases' workers were "
                    "not re-read")),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "0.4.4.post2-0.5.23", "69 releases", "0.5.11, 0.5.23 (minimal CPU install, probe.load); 0.5.23: the draft forward up to its "
                 "first layer, the logits and `hot_token_id` against the reference (behaviour probe)",
                 f"{NO}: 0.5.23 drafts on CPU only with the intel_amx backend (AMX CPU and a CPU sgl-kernel, which "
                 "PyPI lacks): srt/speculative/draft_utils.py L63, L118", GPU_READY,
                 "tox -e sglang0511,sglang0523; tests/test_behaviour_probes.py; docs/live.md (SGLang on CPU)"),
)

ENGINE = Engine(
    NAME, "SGLang", RELEASES, lineage=NAME, default=True, release_list_rank=1, behaviour_rows=tuple(SPANS), rank=10,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
    ),
    loading=Loading(
        draft_dtype_source="sglang configs/model_config.py ModelConfig.from_server_args(is_draft_model=True): the server's "
                           "--dtype",
        key_resolver="as-named-or-model-prefixed",
        d2t_is_parameter=False,
        missing_d2t_error="startup fails (hot_token_id is None)",
        key_fix_renames_first_layer=True,
        plain_target_classes=("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen2ForCausalLM"),
        fc_without_aux="bypassed",
        ties_lm_head_to_embed=True,
        fc_norm_aliases=("use_aux_norm",),
        load_assert="sglang layers/linear.py QKVParallelLinear.weight_loader / RowParallelLinear.weight_loader: "
                     "narrow to the shard, then assert param_data.shape == loaded_weight.shape (0.5.11, 0.5.23)",
    ),
    serving=Serving(
        context_rule="first-key-scaled",
        context_length_flag="--context-length",
        alternative="vllm",
        reach_peer="vllm",
        aux_fix_names_own_release=False,
    ),
    live=Live(
        speculative_flags="--speculative-algorithm",
        runtime_mode_switch="cuda-graph",
        live_client="generate-endpoint",
        live_acceptance="request-meta",
    ),
    interpreter=Interpreter(
        python_option="eagle3_sglang_python",
        probe=Probe("sglang_loader.py", "sglang", ("sglang",), behaviour_script="sglang_behaviour.py",
                    behaviour_cases=("specforge", "specforge-norm-flags", "specforge-full-vocab-d2t")),
    ),
    scans=Scans(
        capture_scan="wheels",
        draft_class_scan=True,
        reach_scan=True,
    ),
)
