"""LMDeploy: the engine object, and its behaviour rows (its PyTorch engine; TurboMind has no EAGLE-3), every
behaviour from 0.11.0 on.

Read in the manylinux wheels of every final release 0.11.0-0.18.0 (0.10.2 has no ``pytorch/spec_decode``).
``pytorch/models/llama_eagle3.py`` (Eagle3LlamaForCausalLM), ``pytorch/configurations/llama.py`` and the capture
loop of ``pytorch/models/llama.py`` are the same code in every one of them (0.12.3 only modernises type hints);
``spec_decode/proposers/eagle3.py`` changes at 0.15.0 (guided-decoding bitmask translation) and 0.17.0 (the
Kimi MLA draft's own aux output), neither a load-time behaviour. The rows describe the Llama class; the MLA class
of 0.17.0 on (``models/kimi_k25_eagle3.py``) is a row of ``knowledge/draft_classes.py``.
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.draft_class import LLAMA, MLA, MLA_NORMS_AND_B, DraftClass
from pytest_eagle3.knowledge.engine import (
            BehaviourSpan,
            CaptureEntry,
            Confirmation,
            Engine,
            Loading,
            Scans,
            TableRow,
            Tables,
            spans,
)
from pytest_eagle3.knowledge.engines.shared import CAPTURES, NO, REFUSED, SEPARATE_POOL, SILENT, FcAuxCount, Transform
from pytest_eagle3.knowledge.evidence import Cite

NAME = "lmdeploy"

#: 0.11.0 is the first with pytorch/models/llama_eagle3.py and spec_decode/proposers/eagle3.py (0.10.2 has
#: neither); every final release from there read in its manylinux wheel (0.11.0-0.18.0).
RELEASES = ("0.11.0", "0.11.1", "0.12.0", "0.12.1", "0.12.2", "0.12.3", "0.13.0", "0.14.0", "0.15.0", "0.16.0",
            "0.17.0", "0.18.0")

LM = "lmdeploy pytorch/models/llama_eagle3.py"
CFG = "lmdeploy pytorch/configurations/llama.py LlamaModelConfigBuilder.build"
PROP = "lmdeploy pytorch/spec_decode/proposers/eagle3.py Eagle3"
READ = "0.11.0-0.18.0 read"

#: (behaviour, value, source, cites[, unmodelled]): one row each from 0.11.0 (the Llama draft path never changed up to 0.18.0).
_ROWS: tuple[tuple[Any, ...], ...] = (
    ("arch_rewrite", "none",
     (f"{CFG}: only architectures[0] == 'LlamaForCausalLM' becomes 'Eagle3' + it (the registry row); every other "
      "name is looked up as written in pytorch/models/module_map.py"),
     (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),
      Cite("lmdeploy/pytorch/models/module_map.py"),)),
    ("speculators_model_types", (), "lmdeploy: speculators format unsupported (no speculators_model_type read, grep)",
     (Cite("lmdeploy/pytorch/config.py", "ModelConfig.from_pretrained"),)),
    ("key_prefix", "add-model-except-lm_head",
     f"{LM} Eagle3LlamaForCausalLM.load_weights: name = 'model.' + name unless 'lm_head.weight' in name",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
    ("first_layer", "midlayer", f"{LM} Eagle3LlamaModel.__init__: self.midlayer = Eagle3LlamaDecoderLayer",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("renames", (), f"{LM} load_weights: no rename (layers.0.* becomes model.layers.0.*)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
    ("unknown_key", "raise", f"{LM} load_weights: param = params_dict[name]: KeyError for any other name",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
    ("multi_layer", "refused",
     f"{LM} Eagle3LlamaForCausalLM.__init__: ValueError('eagle3 only supports 1 decode layer')",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.__init__"),)),
    ("later_layer_norm", "hidden_norm", f"{LM}: one layer only (no later layers)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("d2t_present", "offsets",
     f"{LM} load_weights: 'd2t' in name -> draft_id_to_target_id = d2t + arange(draft_vocab_size) (absolute ids)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
    ("d2t_absent", "zeros",
     (f"{LM} __init__: draft_id_to_target_id = zeros(draft_vocab_size); {PROP}.get_outputs maps every draft token "
      "through it, full vocab or not"),
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),
      Cite("lmdeploy/pytorch/spec_decode/proposers/eagle3.py", "Eagle3.get_outputs"),)),
    ("d2t_full_vocab", "offsets", f"{LM} load_weights: d2t read whatever the vocab sizes",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
    ("draft_vocab_size_missing", "refused",
     f"{LM} __init__: config.draft_vocab_size (AttributeError on a config without it)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("draft_vocab_size_null", "refused", f"{LM} __init__: torch.zeros(None): TypeError",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("aux_id_fields", (),
     (f"{CFG}: the TARGET's config gets aux_hidden_state_layers = (2, L // 2, L - 3); no draft field is read "
      "(hard-coded)"),
     (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),)),
    ("aux_id_fields_other_mode", None, "lmdeploy: one capture set for every mode", (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),)),
    ("aux_transform_llama", Transform.AS_IS,
     "lmdeploy pytorch/models/llama.py LlamaModel.forward: hidden_states + residual appended before layer idx runs",
     (Cite("lmdeploy/pytorch/models/llama.py", "LlamaModel.forward"),)),
    ("aux_transform_deepseek", Transform.AS_IS,
     ("lmdeploy pytorch/models/kimi_k2_language.py forward: capture_input_residual before layer idx (0.17.0-0.18.0; "
      "no DeepSeek target captures before)"), (),
     "no DeepSeek target captures before 0.17.0 (models/kimi_k2_language.py, absent from 0.11.0-0.14.0): the value "
     "holds for the Kimi target of 0.17.0-0.18.0 only"),
    ("aux_transform_gpt_oss", Transform.AS_IS, "lmdeploy: no gpt-oss target captures (aux_hidden_state_layers grep)",
     (Cite("lmdeploy/pytorch/models/gpt_oss.py"),)),
    ("capture_range", "inner",
     "lmdeploy pytorch/models/llama.py LlamaModel.forward: inputs of layers 0..L-1 (hidden_states + None at 0 raises)",
     (Cite("lmdeploy/pytorch/models/llama.py", "LlamaModel.forward"),)),
    ("graph_mode_default_layers", False, "lmdeploy: aux_hidden_state_layers is set once on the target config",
     (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),)),
    ("fc_applied", "when-width-differs",
     f"{LM} Eagle3LlamaModel.forward: fc only if previous_hidden_states.shape[-1] != inputs_embeds.shape[-1]",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaModel.forward"),)),
    ("fc_aux_count", FcAuxCount.FIXED_3, f"{LM} Eagle3LlamaModel.__init__: fc = target_hidden_size * 3 -> hidden_size",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("fc_bias", "none", f"{LM} Eagle3LlamaModel.__init__: build_rowwise_linear(bias=False)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("use_aux_hidden_state", "ignored", "lmdeploy: use_aux_hidden_state not read (grep)", (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("norm_before_residual", "not-read",
     f"{LM} Eagle3LlamaDecoderLayer.forward: residual = hidden_states (before hidden_norm), no flag",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaDecoderLayer.forward"),)),
    ("norm_before_fc", "not-read", f"{LM}: no input_norm",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("fc_norm", "not-read", f"{LM}: no fc_norm (the MLA class of 0.17.0 reads it)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("norm_output", "not-read", f"{LM}: no norm_output (the MLA class of 0.17.0 reads it)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("embed_source", "target-if-absent",
     (f"{LM} load_weights: include_embed_tokens when the checkpoint has embed_tokens; {PROP}.build_model swaps in "
      "target_model.get_input_embeddings() otherwise"),
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),
      Cite("lmdeploy/pytorch/spec_decode/proposers/eagle3.py", "Eagle3.build_model"),)),
    ("draft_extend_logits_buffer", "none", "lmdeploy: no draft-extend logits buffer",
     (Cite("lmdeploy/pytorch/spec_decode/proposers/eagle3.py"),)),
    ("draft_extend_graph_width", "target-hidden",
     f"{PROP}.get_target_hidden_size: getattr(hf_config, 'target_hidden_size', hidden_size) * 3 sizes the graph buffer",
     (Cite("lmdeploy/pytorch/spec_decode/proposers/eagle3.py", "Eagle3.get_target_hidden_size"),)),
    ("embed_width_check", "target-width",
     f"{PROP}.build_model: the target's embedding replaces the draft's whatever its width",
     (Cite("lmdeploy/pytorch/spec_decode/proposers/eagle3.py", "Eagle3.build_model"),)),
    ("lm_head_source", "draft", f"{LM} __init__: own lm_head [draft_vocab_size, hidden]; nothing fills a missing one",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py"),)),
    ("mtp_model_types", (), "lmdeploy: an MTP rewrite only under spec method deepseek_mtp",
     (Cite("lmdeploy/pytorch/models/deepseek_mtp.py"),)),
    ("mla_rope", "as-configured", "lmdeploy pytorch/models/kimi_k25_eagle3.py Eagle3MLAModel: build_rotary_params(config)", (),
     "the MLA draft class exists from 0.17.0 (models/kimi_k25_eagle3.py, absent from 0.11.0-0.14.0)"),
    ("draft_rope", "config", f"{LM} Eagle3LlamaModel.__init__: build_rotary_embedding_from_config(config)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("first_layer_hidden_path", "hidden_norm", f"{LM} Eagle3LlamaDecoderLayer.forward: hidden_norm(hidden_states)",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaDecoderLayer.forward"),)),
    ("mlp_width", "intermediate_size", "lmdeploy pytorch/models/llama.py LlamaMLP: config.intermediate_size",
     (Cite("lmdeploy/pytorch/models/llama.py", "LlamaMLP"),)),
    ("layer_bias", "o_proj+mlp",
     (f"{LM} Eagle3LlamaDecoderLayer: qkv_proj rebuilt with bias=False; o_proj bias=attention_bias and "
      "gate_up/down bias=mlp_bias from LlamaDecoderLayer"),
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaDecoderLayer"),)),
    ("unset_bias", "empty", "lmdeploy pytorch/nn/linear: parameters allocated with torch.empty",
     (Cite("lmdeploy/pytorch/nn/linear/__init__.py"),)),
    ("unloaded_parameter", "kept", f"{LM} load_weights: no check that every parameter was filled",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaForCausalLM.load_weights"),)),
    ("weight_files", "all-safetensors",
     ("lmdeploy pytorch/weight_loader/model_weight_loader.py _get_weight_type: model.safetensors, else its index, "
      "else pytorch_model.bin (closest modelled value)"),
     (Cite("lmdeploy/pytorch/weight_loader/model_weight_loader.py", "_get_weight_type"),)),
    ("draft_positions", "unbounded", "lmdeploy pytorch/nn/rotary_embedding.py: cos/sin computed per position (no table)",
     (Cite("lmdeploy/pytorch/nn/rotary_embedding.py"),)),
    ("target_quantization", "draft",
     f"{LM} Eagle3LlamaDecoderLayer: quant_config = the draft config's quantization_config",
     (Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaDecoderLayer"),)),
    ("draft_sliding_window", "none", "lmdeploy pytorch/models/llama.py: no sliding_window read",
     (Cite("lmdeploy/pytorch/models/llama.py"),)),
    ("draft_dtype", "cast-to-draft",
     ("lmdeploy pytorch/config.py _update_torch_dtype: the draft config's dtype under auto; float32 or absent -> "
      f"float16; {LM} Eagle3LlamaModel.forward: previous_hidden_states.to(inputs_embeds) (the draft's dtype) before "
      "self.fc"),
     (Cite("lmdeploy/pytorch/config.py", "_update_torch_dtype"),
      Cite("lmdeploy/pytorch/models/llama_eagle3.py", "Eagle3LlamaModel.forward"))),
    ("aux_default", "target-layers", f"{CFG}: (2, L // 2, L - 3) of the target's num_layers",
     (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),)),
)

SPANS: list[BehaviourSpan] = [BehaviourSpan(name, "0.11.0", "0.18.0", value, f"{source} ({READ})", *more)
                              for name, value, source, *more in _ROWS]
# ---------------------------------------------------------------- speculators_format: how a speculators config fails
SPANS += spans("speculators_format",
               ("0.11.0", "0.14.0", False,
                ("lmdeploy pytorch/config.py ModelConfig.from_pretrained: AutoConfig.from_pretrained (0.12.0-0.14.0 through "
                 "pytorch/transformers config_from_pretrained, which re-raises): ValueError 'Unrecognized model ... "
                 "Should have a model_type key' (0.11.0-0.14.0 read)"),
                (Cite("lmdeploy/pytorch/config.py", "ModelConfig.from_pretrained"),)),
               ("0.15.0", "0.18.0", False,
                ("lmdeploy hf_configs config_from_pretrained: a config without model_type falls back to a bare "
                 "PretrainedConfig; DefaultModelConfigBuilder.build reads hf_config.hidden_size (AttributeError: the "
                 "layer fields sit under transformer_layer_config; 0.15.0-0.18.0 read)"),
                (Cite("lmdeploy/pytorch/configurations/default.py", "DefaultModelConfigBuilder.build"),)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
LMD_LLAMA = ("lmdeploy pytorch/configurations/llama.py LlamaModelConfigBuilder.build (architectures[0] == "
             "'LlamaForCausalLM' under spec method eagle3) sets aux_hidden_state_layers; models/llama.py LlamaModel.forward "
             "captures hidden_states + residual before those layers (0.11.0-0.18.0 read)")
LMD_NONE = ("lmdeploy pytorch/models/{}: no EAGLE-3 aux capture (aux_hidden_state_layers is set only by the Llama and "
            "Kimi-K2 config builders; 0.18.0's spec_model_ctx ids are DFlash's only): the target sends its final hidden "
            "state, as wide as the draft's embeddings, so fc is skipped (eager reading; 0.11.0-0.18.0 read)")
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "Eagle3LlamaForCausalLM", LLAMA, (), (),
        ("lmdeploy pytorch/models/llama_eagle3.py Eagle3LlamaForCausalLM: one Eagle3LlamaDecoderLayer at model.midlayer "
         "(qkv_proj over 2 x hidden, gate_up/down, input_layernorm / hidden_norm / post_attention_layernorm), fc "
         "3 x target_hidden_size (0.11.0-0.18.0 read)"), max_layers=1),
    DraftClass(
        NAME, "Eagle3DeepseekV2ForCausalLM", MLA, (), ("eagle_config.eagle_aux_hidden_state_layer_ids",
                                                           "eagle_aux_hidden_state_layer_ids"),
        ("lmdeploy pytorch/models/kimi_k25_eagle3.py Eagle3DeepseekV2ForCausalLM: one Eagle3MLADecoderLayer at "
         "model.midlayer (ValueError unless num_hidden_layers == 1); load_weights strips 'model.', renames layers.0. -> "
         "midlayer., fuses q_a_proj + kv_a_proj_with_mqa into fused_qkv_a_proj_with_mqa, splits kv_b_proj into kc / "
         "vc, skips embed_tokens (always the target's), KeyError on other names; fc over 3 unique aux ids (else "
         "ValueError); reached only with model_type kimi_k2 (configurations/kimi_k2.py; 0.17.0-0.18.0 read)"),
        attention=("self_attn.fused_qkv_a_proj_with_mqa.weight", *MLA_NORMS_AND_B),
        stacked=((".q_a_proj", ".fused_qkv_a_proj_with_mqa", "q_a"),
                 (".kv_a_proj_with_mqa", ".fused_qkv_a_proj_with_mqa", "kv_a")),
        renames=(("layers.0.", "midlayer."),), first_layer="midlayer", max_layers=1, model_types=("kimi_k2",),
        reads=("fc_norm", "norm_output")),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS: tuple[tuple[str, TableRow], ...] = (
    ("LlamaForCausalLM", TableRow("0.11.0", "Eagle3LlamaForCausalLM",
                             "lmdeploy pytorch/configurations/llama.py LlamaModelConfigBuilder.build: a draft's "
                             "architectures[0] 'LlamaForCausalLM' becomes 'Eagle3LlamaForCausalLM' (0.11.0-0.18.0 read)",
                             cites=(Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),))),
    ("Eagle3LlamaForCausalLM", TableRow("0.11.0", "Eagle3LlamaForCausalLM",
                                   ("lmdeploy pytorch/models/module_map.py 'Eagle3LlamaForCausalLM', reached through "
                                    "DefaultModelConfigBuilder, which leaves the draft's ModelConfig at the target "
                                    "vocab and paradigm 'ar' (what that changes at run time: not modelled; "
                                    "0.11.0-0.18.0 read)"),
                                   cites=(Cite("lmdeploy/pytorch/models/module_map.py"),))),
    ("Eagle3DeepseekV2ForCausalLM", TableRow("0.17.0", "Eagle3DeepseekV2ForCausalLM",
                                        "lmdeploy pytorch/models/module_map.py -> kimi_k25_eagle3.py (0.17.0; absent 0.16.0)",
                                        cites=(Cite("lmdeploy/pytorch/models/module_map.py"),
                                               Cite("lmdeploy/pytorch/models/kimi_k25_eagle3.py")))),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("0.11.0", True, "lmdeploy pytorch/models/patch.py _get_model_class: architectures select the class",
        cites=(Cite("lmdeploy/pytorch/models/patch.py", "_get_model_class"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("0.11.0", SEPARATE_POOL,
        "lmdeploy pytorch/spec_decode/spec_agent.py build_cache_engine: the draft's own CacheEngine from its cache_config (0.11.0-0.18.0 read)",
        cites=(Cite("lmdeploy/pytorch/spec_decode/spec_agent.py", "SpecModelAgent.build_cache_engine"),)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "0.11.0-0.18.0", "every final release's wheel (lmdeploy/pytorch)", f"{NO}: no CPU device type",
                 f"{NO}: no CPU device type", f"{NO}: no GPU fixture", "docs/engines.md (LMDeploy)"),
)
#: Its hand-read target capture rows (knowledge.capture_engines).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "0.11.0", "llama", CAPTURES, LMD_LLAMA, ("LlamaForCausalLM",),
     (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),
      Cite("lmdeploy/pytorch/models/llama.py", "LlamaModel.forward"),)),
    CaptureEntry(NAME, "0.11.0", "llama", SILENT, LMD_NONE.format("qwen2.py / qwen3.py / qwen3_moe.py"),
     ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
     (Cite("lmdeploy/pytorch/models/qwen2.py"),
      Cite("lmdeploy/vl/model/qwen3.py"),
      Cite("lmdeploy/pytorch/models/qwen3_moe.py"),)),
    CaptureEntry(NAME, "0.12.3", "llama", SILENT, LMD_NONE.format("qwen3_5.py / qwen3_5_moe.py") + " (absent 0.12.2)",
     ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"),
     (Cite("lmdeploy/pytorch/models/qwen3_5.py"), Cite("lmdeploy/pytorch/models/qwen3_5_moe.py"),)),
    CaptureEntry(NAME, "0.11.0", "deepseek", REFUSED,
     ("lmdeploy pytorch/configurations/deepseek_v2.py DeepseekV2ModelConfigBuilder.build: assert spec_method == "
      "'deepseek_mtp' for model_type deepseek_v2 / deepseek_v3: AssertionError at startup (0.11.0-0.18.0 read)"),
     ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"),
     (Cite("lmdeploy/pytorch/configurations/deepseek_v2.py", "DeepseekV2ModelConfigBuilder.build"),)),
    CaptureEntry(NAME, "0.17.0", "deepseek", CAPTURES,
     ("lmdeploy pytorch/configurations/kimi_k2.py KimiK2ModelConfigBuilder.build (via kimi_k25.py): "
      "aux_hidden_state_layers = (2, L // 2, L - 3), at least 5 layers; models/kimi_k2_language.py forward captures "
      "the residual entering those layers (0.17.0; absent 0.16.0)"),
     ("KimiK25ForConditionalGeneration", "Kimi_K25ForConditionalGeneration"),
     (Cite("lmdeploy/pytorch/configurations/kimi_k2.py", "KimiK2ModelConfigBuilder.build"),
      Cite("lmdeploy/pytorch/models/kimi_k2_language.py"))),
)

ENGINE = Engine(
    NAME, "LMDeploy", RELEASES, lineage=NAME, behaviour_rows=tuple(SPANS), rank=60,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        draft_dtype_source="lmdeploy pytorch/config.py _update_torch_dtype: the draft config's own dtype (float16 / bfloat16, "
                           "else float16)",
        speculators_error="(no model_type: ValueError 'Unrecognized model', or where the loader falls back to a bare "
                           "PretrainedConfig, AttributeError on hidden_size, which sits under transformer_layer_config)",
        flat_config_for="LMDeploy",
        # it sets its draft vocab only on the LlamaForCausalLM path
        preferred_architectures=(("llama", "LlamaForCausalLM"),),
        one_layer_error="ValueError('eagle3 only supports 1 decode layer')",
    ),
    scans=Scans(
        draft_class_scan=True,
        capture_scan="wheels",
    ),
)
