"""Behaviour rows: the draft layers: rope, MLP width, bias, unloaded parameters, files, positions, quantization, sliding window, dtype.

One ``(since, read_to, value, source)`` span per engine range; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.common import SG_EAGLE3, VL_EAGLE3, Span, spans
from pytest_eagle3.knowledge.releases import SGLANG, VLLM

SPANS: list[Span] = []
# ---------------------------------------------------------------- mla_rope
SPANS += spans(SGLANG, "mla_rope",
               ("0.4.4.post2", None, "as-configured",
                ("sglang models/kimi_k25_eagle3.py Eagle3MLADecoderLayer.__init__: rope_scaling = rope_parameters unless "
                 "rope_type is default (0.5.12, 0.5.23 read; CPU run 0.5.23)")))
SPANS += spans(VLLM, "mla_rope",
               ("0.8.5", "0.17.1", "as-configured", "vllm < 0.18: no MLA draft class (deepseek_eagle3.py absent)"),
               ("0.18.0", "0.23.0", "yarn-if-set",
                ("vllm 0.18.0 model_executor/models/deepseek_eagle3.py DeepseekV2Eagle3DecoderLayer.__init__: "
                 "if rope_scaling: rope_type = 'deepseek_yarn', and layers/rotary_embedding/__init__.py get_rope reads "
                 "rope_parameters['factor'] and ['original_max_position_embeddings']; transformers 4 still allowed "
                 "(transformers_utils/config.py patch_rope_parameters has its v4 branch), where an absent rope_scaling "
                 "stays None (0.18.0-0.23.0 read; CPU runs 0.20.0-0.23.0 under transformers 5: KeyError 'factor')")),
               ("0.24.0", "0.27.1", "forced-yarn",
                ("vllm 0.24.0 transformers_utils/config.py: ImportError 'Support for Transformers v4 ... was removed "
                 "in vLLM v0.24.0'; transformers 5.0.0 configuration_utils.py rope_scaling is rope_parameters, "
                 "standardized to {rope_type: default, rope_theta}: deepseek_eagle3.py rewrites it to deepseek_yarn "
                 "and get_rope raises KeyError 'factor' (vllm#51092; 0.24.0-0.27.1 read; CPU runs 0.24.0-0.26.0: KeyError 'factor')")),
               ("0.28.0", None, "as-configured",
                "vllm 0.28.0 deepseek_eagle3.py: the rewrite is gone, the draft config's rope_parameters as they are "
                "(0.28.0-0.33.0 read)"))
# ---------------------------------------------------------------- draft_rope
SPANS += spans(SGLANG, "draft_rope",
               ("0.4.4.post2", None, "config",
                ("sglang models/llama.py LlamaDecoderLayer: rope_theta / rope_scaling (rope_parameters) of the draft "
                 "config; llama_eagle3.py LlamaDecoderLayer subclasses it (0.5.11, 0.5.23 read)")))
SPANS += spans(VLLM, "draft_rope",
               ("0.8.5", None, "config",
               ("vllm model_executor/models/llama.py LlamaAttention: get_rope(rope_theta / rope_scaling, from 0.2x "
               "rope_parameters) of the draft config; llama_eagle3.py layers subclass it (0.11.0, 0.32.0 read)")))
# ---------------------------------------------------------------- first_layer_hidden_path
SPANS += spans(SGLANG, "first_layer_hidden_path",
               ("0.4.4.post2", None, "hidden_norm",
                (f"sglang {SG_EAGLE3} LlamaDecoderLayer.forward, layer 0: hidden_norm(hidden_states), input_layernorm "
                 "on the embeddings only (0.5.11, 0.5.23 read)")))
SPANS += spans(VLLM, "first_layer_hidden_path",
               ("0.8.5", None, "hidden_norm",
                (f"vllm {VL_EAGLE3} LlamaDecoderLayer.forward, layer 0: hidden_norm(hidden_states), input_layernorm on "
                 "the embeddings only (0.11.0, 0.32.0 read)")))
# ---------------------------------------------------------------- mlp_width
SPANS += spans(SGLANG, "mlp_width",
               ("0.4.4.post2", "0.4.8.post1", "intermediate_size",
                ("sglang models/llama.py LlamaDecoderLayer.__init__: LlamaMLP(intermediate_size=config.intermediate_size); "
                 f"{SG_EAGLE3} LlamaDecoderLayer keeps it (0.4.4.post2, 0.4.8.post1 read)")),
               ("0.4.9", "0.5.2", "intermediate_size_mlp-if-llama4_text",
                (f"sglang 0.4.9 {SG_EAGLE3} LlamaDecoderLayer.__init__: if config.model_type == 'llama4_text': "
                 "inter_size = config.intermediate_size_mlp; layers/linear.py MergedColumnParallelLinear / "
                 "RowParallelLinear.weight_loader: loaded_weight.narrow(dim, 0, shard_size) (0.4.9, 0.5.1, 0.5.2 read)")),
               ("0.5.3", None, "intermediate_size_mlp-if-llama4_text-padded",
                ("sglang 0.5.3 layers/linear.py MergedColumnParallelLinear / RowParallelLinear.weight_loader: "
                 "pad_or_narrow_weight zero-pads a narrower tensor to the shard on GPU (the CPU path copies it into "
                 "the first rows only); llama_eagle3.py still sizes the MLP from intermediate_size_mlp (0.5.3, 0.5.12, "
                 "0.5.23 read; CPU probe 0.5.23: gate_up_proj [32768, 64] for a 128-wide draft MLP)")))
SPANS += spans(VLLM, "mlp_width",
               ("0.8.5", None, "intermediate_size",
                (f"vllm model_executor/models/llama.py LlamaDecoderLayer.__init__: LlamaMLP(config.intermediate_size); "
                 f"{VL_EAGLE3} builds every model_type with it (no intermediate_size_mlp read; EagleLlama4ForCausalLM is "
                 "EAGLE-1) (0.8.5, 0.32.0 read)")))
# ---------------------------------------------------------------- layer_bias
SPANS += spans(SGLANG, "layer_bias",
               ("0.4.4.post2", None, "o_proj",
                ("sglang models/llama.py LlamaDecoderLayer.__init__: attention_bias = config.attention_bias or "
                 f"config.bias gives LlamaAttention's o_proj a bias; {SG_EAGLE3} LlamaDecoderLayer overrides qkv_proj "
                 "with bias=False and builds LlamaMLP without bias (0.4.4.post2, 0.4.9, 0.5.1, 0.5.12, 0.5.23 read)")))
SPANS += spans(VLLM, "layer_bias",
               ("0.8.5", "0.15.1", "o_proj+mlp",
                ("vllm model_executor/models/llama.py LlamaDecoderLayer.__init__: bias_o_proj = attention_bias or "
                 "bias, LlamaMLP(bias=mlp_bias); llama_eagle3.py LlamaDecoderLayer overrides qkv_proj with bias=False "
                 "(0.8.5-0.15.1 read)")),
               ("0.16.0", None, "qkv+o_proj+mlp",
                (f"vllm 0.16.0 {VL_EAGLE3} LlamaDecoderLayer.__init__: qkv_proj bias=getattr(config, "
                 "'attention_bias', False) ('Parallel drafting checkpoints may have attention bias enabled'); "
                 "qwen3_eagle3.py the same for qkv_proj, o_proj and MLP without bias (0.16.0-0.33.0 read)")))
# ---------------------------------------------------------------- unset_bias
SPANS += spans(SGLANG, "unset_bias",
               ("0.4.4.post2", "0.5.8", "empty",
                ("sglang layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: self.bias = "
                 "Parameter(torch.empty(...)) (0.4.4.post2-0.5.8 read)")),
               ("0.5.9", None, "zeros",
                ("sglang 0.5.9 layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: "
                 "Parameter(torch.zeros(...)) (0.5.9-0.5.23 read)")))
SPANS += spans(VLLM, "unset_bias",
               ("0.8.5", None, "empty",
                ("vllm model_executor/layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: "
                 "self.bias = Parameter(torch.empty(...)) (0.8.5-0.33.0 read)")))
# ---------------------------------------------------------------- unloaded_parameter
SPANS += spans(SGLANG, "unloaded_parameter",
               ("0.4.4.post2", None, "kept",
                ("sglang model_loader/loader.py DefaultModelLoader.load_model: model.load_weights, no check of the "
                 "parameters left unloaded (0.4.4.post2, 0.5.9, 0.5.23 read)")))
SPANS += spans(VLLM, "unloaded_parameter",
               ("0.8.5", "0.8.5.post1", "kept",
                ("vllm 0.8.5 v1/spec_decode/eagle.py EagleProposer.load_model calls the draft's load_weights itself, "
                 "outside DefaultModelLoader's check")),
               ("0.9.0", "0.9.0.1", "refused",
                (f"vllm 0.9.0 v1/spec_decode/eagle.py load_model: get_model -> model_loader/default_loader.py "
                 f"DefaultModelLoader.load_weights raises 'Following weights were not initialized from checkpoint' "
                 f"(unquantized draft); {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights returns the loaded names "
                 "(0.9.0, 0.9.0.1 read)")),
               ("0.9.1", None, "kept",
                (f"vllm 0.9.1 {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights returns None: the strict check is "
                 "skipped ('loaded_weights is not None') (0.9.1-0.33.0 read)")))
# ---------------------------------------------------------------- weight_files
SPANS += spans(SGLANG, "weight_files",
               ("0.4.4.post2", None, "all-safetensors",
                ("sglang model_loader/loader.py DefaultModelLoader._prepare_weights: the same globbing "
                 "(0.5.11, 0.5.23 read)")))
SPANS += spans(VLLM, "weight_files",
               ("0.8.5", None, "all-safetensors",
                ("vllm model_executor/model_loader/default_loader.py DefaultModelLoader._prepare_weights: glob "
                 "*.safetensors, filtered only by model.safetensors.index.json; *.bin minus "
                 "weight_utils.filter_files_not_needed_for_inference (0.11.0, 0.32.0 read)")))

# ---------------------------------------------------------------- draft_positions
SPANS += spans(SGLANG, "draft_positions",
               ("0.4.4.post2", "0.4.10.post2", "warns-reads-past",
                ("sglang speculative/eagle_worker.py __init__: server_args.context_length = the target's context_len; "
                 "configs/model_config.py ModelConfig.__init__: a longer context than get_context_length(draft) "
                 "only warns (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to 'True'); the draft's rope table "
                 "keeps max_position_embeddings rows (0.4.4.post2, 0.4.5, 0.4.10 read; sgl-project/sglang#6783: worse than no speculation past the draft's 2048)")),
               ("0.5.1", "0.5.2", "refuses",
                ("sglang 0.5.1 configs/model_config.py: ValueError \"Warning: Target model's context_length (C) is "
                 "greater than the derived context_length (N) ... set the env var "
                 "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1\" (get_bool_env_var default false); with it set, the "
                 "draft's rope table stays N rows (0.5.1, 0.5.2 read; the default flipped by sgl-project/sglang#9388: 'illegal memory access' past the draft's context)")),
               ("0.5.3", None, "refuses-or-raises",
                ("sglang 0.5.3 configs/model_config.py _derive_context_length: the same ValueError; with "
                 "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 a draft model's max_position_embeddings is raised to "
                 "the target's context ('Overriding the draft model's max_position_embeddings') (0.5.3-0.5.23 read; "
                 "eagle_worker_v2.py passes context_length=target context_len)")))
SPANS += spans(VLLM, "draft_positions",
               ("0.8.5", "0.10.2", "reads-past",
                ("vllm 0.8.5-0.10.2: the draft's rotary table has max_position_embeddings rows (models/llama.py "
                 "get_rope(max_position)); v1/spec_decode/eagle.py feeds positions up to the target's max_model_len "
                 "and nothing checks the draft's (no draft_model_config.max_model_len in v1/; the out-of-bounds "
                 "gather: vllm 0.27.0 config/speculative.py, vllm#48894)")),
               ("0.11.0", "0.26.0", "skips-drafting",
                ("vllm 0.11.0 v1/worker/gpu_model_runner.py execute_model: input_fits_in_drafter compares the batch's "
                 "longest sequence + k with draft_model_config.max_model_len (the draft's derived length, "
                 "config/speculative.py _maybe_override_draft_max_model_len: min(draft, target)) and proposes nothing "
                 "when it does not fit (vllm#24662: the crash past the draft's length; 0.14.0, 0.20.0, 0.26.0 _input_fits_in_drafter read; the V2 runner, default "
                 "for some targets on GPU from 0.23, has no such check)")),
               ("0.27.0", "0.32.0", "raised",
                ("vllm 0.27.0 config/speculative.py _maybe_override_draft_max_position_embeddings: an eagle/eagle3 "
                 "draft's max_position_embeddings is raised to the target's max_model_len, whatever its rope type "
                 "(0.27.0-0.32.0 read; draft_model_config.max_model_len is derived before, so the V1 runner still "
                 "skips drafting past it)")),
               ("0.33.0", None, "raised-or-limited",
                ("vllm 0.33.0 config/speculative.py _maybe_override_draft_max_position_embeddings: raised only when "
                 "every rope type is in _CACHE_ONLY_ROPE_TYPES (default, linear, llama3, ntk, proportional); "
                 "otherwise config/vllm.py _limit_max_model_len_to_draft cuts the server's max_model_len to the "
                 "draft's on the V2 runner ('reducing max_model_len')")))
# ---------------------------------------------------------------- target_quantization
SPANS += spans(SGLANG, "target_quantization",
               ("0.4.4.post2", "0.5.6", "server-flag",
                ("sglang managers/tp_worker.py TpModelWorker.__init__: the draft's ModelConfig(quantization="
                 "server_args.quantization), otherwise its own config.json quantization_config "
                 "(configs/model_config.py _verify_quantization); the target's quantization_config is never read "
                 "for it (0.4.5, 0.5.4 read)")),
               ("0.5.7", None, "server-flag-or-draft-flag",
                ("sglang 0.5.7 server_args.py: --speculative-draft-model-quantization (default: --quantization; "
                 "'unquant' for none) builds the draft; configs/model_config.py from_server_args (0.5.23 "
                 "arg_groups/serving_hook.py); the target checkpoint's quantization_config never reaches it "
                 "(0.5.7, 0.5.23 read)")))
SPANS += spans(VLLM, "target_quantization",
               ("0.8.5", "0.10.2", "none",
                (f"vllm 0.8.5-0.10.2 {VL_EAGLE3} LlamaModel.__init__: LlamaDecoderLayer(config, prefix) with no "
                 "quant_config: the draft's layers are never quantized, neither by the target's config nor by the "
                 "draft's own")),
               ("0.11.0", "0.11.0", "target",
                (f"vllm 0.11.0 {VL_EAGLE3} LlamaDecoderLayer.__init__: quant_config = vllm_config.quant_config (the "
                 "target's; model_loader/utils.py initialize_model keeps the target's vllm_config): a quantized "
                 "target builds quantized draft layers; an unquantized draft then fails with KeyError: "
                 "'layers.0.mlp.down_proj.weight' (vllm#25882, fixed by vllm#25883 in 0.11.1)")),
               ("0.11.1", None, "draft",
                ("vllm 0.11.1 model_executor/models/utils.py get_draft_quant_config: the draft's own ModelConfig "
                 "(its config.json quantization_config, or the speculative config's quantization) "
                 f"({VL_EAGLE3} get_quant_config; 0.11.1-0.33.0 read)")))
# ---------------------------------------------------------------- draft_sliding_window
SPANS += spans(SGLANG, "draft_sliding_window",
               ("0.4.4.post2", "0.5.11", "none",
                (f"sglang models/llama.py LlamaAttention and {SG_EAGLE3}: no sliding_window / layer_types read "
                 "(grep over 0.4.4.post2-0.5.11)")),
               ("0.5.12", None, "server-flag",
                (f"sglang 0.5.12 {SG_EAGLE3} LlamaForCausalLMEagle3.__init__: only --speculative-draft-window-size "
                 "sets the draft layers' sliding_window_size; the config's fields are not read (0.5.12-0.5.23 read)")))
SPANS += spans(VLLM, "draft_sliding_window",
               ("0.8.5", "0.10.0", "interleaved-only",
                ("vllm 0.8.5 model_executor/models/llama.py LlamaAttention: only interleaved_sliding_window (int: "
                 "every layer; list: indexed by layer id modulo its length); sliding_window, use_sliding_window, "
                 "max_window_layers and layer_types are not read for the draft layer")),
               ("0.10.1", "0.10.1", "layer-types-at-target-index",
                ("vllm 0.10.1 models/llama.py LlamaAttention: layer_types[layer_idx], layer_idx from the prefix "
                 f"model.layers.<target layer count> ({VL_EAGLE3} start_layer_id=target_layer_num): IndexError "
                 "unless layer_types is longer than the target")),
               ("0.10.2", None, "layer-types",
                (f"vllm 0.10.2 {VL_EAGLE3} sets config.target_layer_count; models/llama.py subtracts it: "
                 "layer_types[0] == 'sliding_attention' gives the draft layer config.sliding_window "
                 "(0.10.2-0.33.0 read; the Qwen3 draft class, 0.24.0 on, reads layer_types only from 0.26.0: "
                 "qwen3_eagle3.py Qwen3Eagle3DecoderLayer per_layer_sliding_window)")))
# ---------------------------------------------------------------- draft_dtype
SPANS += spans(SGLANG, "draft_dtype",
               ("0.4.4.post2", None, "draft-config",
                ("sglang configs/model_config.py _get_and_verify_dtype(draft hf_config, server_args.dtype): under "
                 "--dtype auto (the default) the draft's own dtype/torch_dtype, float32 or absent -> float16; no "
                 "cast of the target's hidden states (0.5.23 eagle_draft_extend_cuda_graph_runner.py: 'the draft "
                 "dtype matches the target dtype'; SpecForge#348: the draft worker fails with 'expected mat1 and "
                 "mat2 to have the same dtype') (0.4.4.post2, 0.5.1, 0.5.10, 0.5.23 read)")))
SPANS += spans(VLLM, "draft_dtype",
               ("0.8.5", None, "target",
                ("vllm config/speculative.py SpeculativeConfig: draft ModelConfig(dtype=self.target_model_config.dtype)"
                 "; the loader casts the draft's tensors (0.8.5, 0.11.0, 0.20.0, 0.27.0, 0.33.0 read)")))
