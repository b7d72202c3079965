"""TokenSpeed (derived from SGLang): the engine object, and its behaviour rows, every behaviour from its first
release on.

Read in the wheels 0.1.0 and 0.1.1 (the only releases on the index; both have the EAGLE-3 path and the
same loader). Every row is read in TokenSpeed's own code: a rule borrowed from SGLang (its parent) would be a
reading, not evidence (``BehaviourSpan.origin``), and none is left.
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.draft_class import LLAMA, DraftClass
from pytest_eagle3.knowledge.engine import (
    BehaviourSpan,
    CaptureEntry,
    Confirmation,
    Engine,
    Loading,
    Scans,
    Serving,
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines.shared import (
    CAPTURES,
    EAGLE_CONFIG_ONLY,
    NO,
    SEPARATE_POOL,
    SILENT,
    TOP_FIELD,
    FcAuxCount,
    Transform,
)
from pytest_eagle3.knowledge.evidence import Cite

NAME = "tokenspeed"

#: Every release on the index (0.1.0 first, with runtime/models/llama_eagle3.py), both wheels read.
RELEASES = ("0.1.0", "0.1.1")

TS = "tokenspeed runtime/models/llama_eagle3.py"
FACTORY = ("tokenspeed 0.1.0 runtime/execution/model_executor.py _eagle_aux_layer_ids (0.1.1 "
           "runtime/execution/factory.py, which also reads text_config and takes --eagle3-layers-to-capture first)")
CAPTURE = "tokenspeed runtime/models/base/causal_lm.py set_eagle3_layers_to_capture: [val + 1 for val in layer_ids]"
LOAD_CONFIG = "tokenspeed runtime/engine/event_loop.py EventLoop._load_model_config"

#: (behaviour, value, source, cites[, unmodelled]): one row each from 0.1.0, read to 0.1.1.
_ROWS: tuple[tuple[Any, ...], ...] = (
    ("arch_rewrite", "nextn-unless-eagle",
     ("tokenspeed runtime/utils/hf_transformers_utils.py get_config: a draft architecture without Eagle, NextN, "
      "MTP, DFlash or DSpark gets 'NextN' appended (LlamaForCausalLM -> LlamaForCausalLMNextN, registered nowhere)"),
     (Cite("tokenspeed/runtime/utils/hf_transformers_utils.py", "get_config"),)),
    ("speculators_format", False, "tokenspeed: no speculators_model_type / transformer_layer_config handling (grep)",
     (Cite("tokenspeed/runtime/utils/hf_transformers_utils.py", "get_config"),)),
    ("speculators_model_types", (), "tokenspeed: speculators format unsupported",
     (Cite("tokenspeed/runtime/utils/hf_transformers_utils.py", "get_config"),)),
    ("key_prefix", "optional-model", f"{TS} load_weights: name as-is if a parameter, else model.+name",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
    ("first_layer", "midlayer", f"{TS} Eagle3LlamaModel.__init__: self.midlayer = self.layers[0]; del self.layers",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("renames", (("layers.0.", "midlayer."),), f"{TS} load_weights: name.startswith('layers.0.') -> 'midlayer.'",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
    ("unknown_key", "drop", f"{TS} load_weights: a name not in params_dict is skipped, no log",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
    ("multi_layer", "refused", f"{TS} LlamaForCausalLMEagle3.__init__: ValueError('EAGLE3 currently only supports 1 layer')",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.__init__"),)),
    ("later_layer_norm", "hidden_norm", f"{TS}: one layer only (no later layers)",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    ("d2t_present", "offsets", f"{TS} load_weights: hot_token_id = d2t + arange (substring 'd2t'); 't2d' skipped",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
    ("d2t_absent", "identity", "tokenspeed runtime/execution/drafter/eagle.py: hot_token_ids None -> draft ids as-is",
     (Cite("tokenspeed/runtime/execution/drafter/eagle.py"),)),
    ("d2t_full_vocab", "offsets", f"{TS} load_weights: d2t always read",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
    ("draft_vocab_size_missing", "target-lm_head",
     f"{TS} __init__: draft_vocab_size None -> load_lm_head_from_target; set_embed_and_head replaces the trained head",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    ("draft_vocab_size_null", "target-lm_head", f"{TS} __init__: getattr(config, 'draft_vocab_size', None) is None",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    ("aux_id_fields", (EAGLE_CONFIG_ONLY, TOP_FIELD),
     (f"{FACTORY}: an eagle_config (dict or object, not None) gives its ids, and the top-level ids beside it are "
      "never read, even when it holds none (the target's defaults then); without eagle_config, the top level"),
     (Cite("tokenspeed/runtime/execution/factory.py"),)),
    ("aux_id_fields_other_mode", None, "tokenspeed: one aux-id resolver",
     (Cite("tokenspeed/runtime/models/base/causal_lm.py", "BaseCausalLM.set_eagle3_layers_to_capture"),)),
    ("aux_transform_llama", Transform.PLUS_1, CAPTURE,
     (Cite("tokenspeed/runtime/models/base/causal_lm.py", "BaseCausalLM.set_eagle3_layers_to_capture"),)),
    ("aux_transform_deepseek", Transform.PLUS_1, "tokenspeed runtime/models/deepseek_v3.py set_eagle3_layers_to_capture: val + 1",
     (Cite("tokenspeed/runtime/models/deepseek_v3.py", "DeepseekV3ForCausalLM.set_eagle3_layers_to_capture"),)),
    ("aux_transform_gpt_oss", Transform.PLUS_1, f"{CAPTURE} (gpt_oss.py GptOssForCausalLM(BaseCausalLM))",
     (Cite("tokenspeed/runtime/models/base/causal_lm.py", "BaseCausalLM.set_eagle3_layers_to_capture"),
      Cite("tokenspeed/runtime/models/gpt_oss.py", "GptOssForCausalLM"),)),
    ("capture_range", "inner-final",
     ("tokenspeed runtime/models/base/transformer_model.py forward: capture before layer i for i in range(L); after "
      "the loop, index L + 1 (an id of L) takes the final norm's residual, the last layer's output; index L (an id "
      "of L - 1) never fires (0.1.0 L230, 0.1.1 L247 read)"),
     (Cite("tokenspeed/runtime/models/base/transformer_model.py", "BaseTransformerModel.forward"),)),
    ("graph_mode_default_layers", False, "tokenspeed: the ids are set once, for every mode",
     (Cite("tokenspeed/runtime/models/base/causal_lm.py", "BaseCausalLM.set_eagle3_layers_to_capture"),)),
    ("fc_applied", "when-width-differs", f"{TS} Eagle3LlamaModel.forward: if hidden_states.size(-1) != embeds.size(-1)",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.forward"),)),
    ("fc_aux_count", FcAuxCount.FROM_CONFIG,
     (f"{TS} Eagle3LlamaModel.__init__: num_fc_input_dim = len(config.eagle_aux_hidden_state_layer_ids) (top level) "
      "else 3; fc = hidden_size (the DRAFT's) x that"),
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("fc_bias", "none", f"{TS} Eagle3LlamaModel.__init__: fc ColumnParallelLinear(bias=False)",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("use_aux_hidden_state", "ignored", "tokenspeed: use_aux_hidden_state not read (grep)",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    ("norm_before_residual", "not-read", f"{TS} Eagle3DecoderLayer.forward: residual = hidden_states (before hidden_norm)",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3DecoderLayer.forward"),)),
    ("norm_before_fc", "top-level", f"{TS} Eagle3LlamaModel.__init__: input_norm if getattr(config, 'norm_before_fc')",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("fc_norm", "top-level", f"{TS} Eagle3LlamaModel.__init__: fc_norm if getattr(config, 'fc_norm')",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("norm_output", "top-level", f"{TS} Eagle3LlamaModel.__init__: getattr(config, 'norm_output', False)",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3LlamaModel.__init__"),)),
    ("embed_source", "target-unless-hidden-differs",
     (f"{TS} set_embed_and_head: returns when target_hidden_size != hidden_size; runtime/execution/factory.py "
      "_share_target_embed_and_head"),
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.set_embed_and_head"),
      Cite("tokenspeed/runtime/execution/factory.py"),)),
    ("draft_extend_logits_buffer", "none", "tokenspeed: no draft-extend logits buffer (grep)",
     (Cite("tokenspeed/runtime/execution/drafter/eagle.py"),)),
    ("draft_extend_graph_width", "draft-aux-count",
     f"{TS} prepare_model_kwargs: the warm-up hidden states are hidden_size x num_fc_input_dim",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.prepare_model_kwargs"),)),
    ("embed_width_check", "uninitialised", f"{TS} set_embed_and_head: skipped when the widths differ",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.set_embed_and_head"),)),
    ("lm_head_source", "draft", f"{TS} __init__: own ParallelLMHead(draft_vocab_size); the target's only without one",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    ("mtp_model_types", (), "tokenspeed: NextN rewrite by architecture name, not by model_type",
     (Cite("tokenspeed/runtime/utils/hf_transformers_utils.py", "get_config"),)),
    ("mla_rope", "as-configured", "tokenspeed: no MLA EAGLE-3 draft class registered (EntryClass grep)",
     (Cite("tokenspeed/runtime/models/registry.py"),)),
    ("draft_rope", "config", "tokenspeed runtime/models/llama.py LlamaAttention: the draft config's rope",
     (Cite("tokenspeed/runtime/models/llama.py", "LlamaAttention"),)),
    ("first_layer_hidden_path", "hidden_norm", f"{TS} Eagle3DecoderLayer.forward: fused input_layernorm / hidden_norm",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3DecoderLayer.forward"),)),
    ("mlp_width", "intermediate_size_mlp-if-llama4_text",
     f"{TS} Eagle3DecoderLayer.resolve_mlp: intermediate_size_mlp if model_type == 'llama4_text'",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "Eagle3DecoderLayer.resolve_mlp"),)),
    ("layer_bias", "qkv+o_proj",
     ("tokenspeed runtime/models/llama.py LlamaAttention.__init__: qkv_proj and o_proj bias=getattr(config, "
      f"'attention_bias', False) (the draft's attention subclasses it); {TS} LlamaMLP: gate_up / down bias=False"),
     (Cite("tokenspeed/runtime/models/llama.py", "LlamaAttention.__init__"),
      Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaMLP.__init__"))),
    ("unset_bias", "empty",
     (f"tokenspeed runtime/layers/linear.py: a bias is Parameter(torch.empty(...)); {TS} load_weights fills only the "
      "names the checkpoint has"),
     (Cite("tokenspeed/runtime/layers/linear.py"),
      Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"))),
    ("unloaded_parameter", "kept", f"{TS} load_weights: no check that every parameter was filled",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py", "LlamaForCausalLMEagle3.load_weights"),)),
    ("weight_files", "all-safetensors",
     "tokenspeed runtime/model_loader/loader.py DefaultModelLoader._prepare_weights: *.safetensors, else *.bin",
     (Cite("tokenspeed/runtime/model_loader/loader.py", "DefaultModelLoader._prepare_weights"),)),
    ("draft_positions", "reads-past",
     (f"{LOAD_CONFIG}: the draft's ModelConfig takes the launch's --max-model-len (unset by default: each model "
      "derives its own context; the draft's is never compared with the target's, no startup refusal); "
      "runtime/layers/rotary_embedding.py RotaryEmbedding: a cos_sin_cache of max_position_embeddings rows, "
      "indexed by position (no raise, no extension)"),
     (Cite("tokenspeed/runtime/engine/event_loop.py", "EventLoop._load_model_config"),
      Cite("tokenspeed/runtime/layers/rotary_embedding.py", "RotaryEmbedding._compute_cos_sin_cache"))),
    ("target_quantization", "draft",
     (f"{LOAD_CONFIG}: the draft's quantization is --speculative-draft-model-quantization (default 'unquant', "
      "None); runtime/configs/model_config.py ModelConfig._verify_quantization then takes the draft checkpoint's "
      "own quantization_config"),
     (Cite("tokenspeed/runtime/engine/event_loop.py", "EventLoop._load_model_config"),
      Cite("tokenspeed/runtime/configs/model_config.py", "ModelConfig._verify_quantization"))),
    ("draft_sliding_window", "none", f"{TS}: no sliding_window read",
     (Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    ("aux_default", "target-layers", "tokenspeed runtime/models/base/causal_lm.py: [2, L // 2, L - 3] of the target",
     (Cite("tokenspeed/runtime/models/base/causal_lm.py"),)),
)

SPANS: list[BehaviourSpan] = [BehaviourSpan(name, "0.1.0", "0.1.1", value, source, *more)
                              for name, value, source, *more in _ROWS]
# ---------------------------------------------------------------- draft_dtype
SPANS += spans("draft_dtype",
               ("0.1.0", None, "draft-config-unchecked",
                (f"tokenspeed 0.1.0 {LOAD_CONFIG}: the draft's ModelConfig gets the launch's --dtype; under auto "
                 "runtime/configs/model_config.py _get_and_verify_dtype gives the draft its own config's dtype "
                 "(absent: bfloat16; float32: float16). Its fc (runtime/layers/dense/unquant.py "
                 "UnquantizedLinearMethod.apply) runs tokenspeed_kernel.mm, whose check of mixed dtypes is not in "
                 "the wheel read"),
                (Cite("tokenspeed/runtime/engine/event_loop.py", "EventLoop._load_model_config"),
                 Cite("tokenspeed/runtime/configs/model_config.py", "_get_and_verify_dtype"),
                 Cite("tokenspeed/runtime/layers/dense/unquant.py", "UnquantizedLinearMethod.apply"))),
               ("0.1.1", None, "target",
                (f"tokenspeed 0.1.1 {LOAD_CONFIG}: under --dtype auto the draft gets the target's dtype ('A draft "
                 "is fed the target's hidden states and borrows its embedding and LM head, so the two dtypes have "
                 "to agree'); another --dtype is both models'"),
                (Cite("tokenspeed/runtime/engine/event_loop.py", "EventLoop._load_model_config"),)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
#: Its draft class (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES = (
    DraftClass(NAME, "LlamaForCausalLMEagle3", LLAMA, (), ("eagle_aux_hidden_state_layer_ids",),
               "tokenspeed runtime/models/llama_eagle3.py LlamaForCausalLMEagle3 (SGLang's Llama class: qkv/o, gate_up/down)",
               max_layers=1),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS = (
    ("LlamaForCausalLMEagle3", TableRow("0.1.0", "LlamaForCausalLMEagle3",
                                        "tokenspeed runtime/models/llama_eagle3.py EntryClass (0.1.0, 0.1.1 read)",
                                        cites=(Cite("tokenspeed/runtime/models/llama_eagle3.py"),))),
)
#: It reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ = (
    TableRow("0.1.0", True, "tokenspeed runtime/models/registry.py: the architecture selects the EntryClass",
             cites=(Cite("tokenspeed/runtime/models/registry.py"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS = (
    TableRow("0.1.0", SEPARATE_POOL,
             "tokenspeed runtime/execution/factory.py create_model_runner: the draft gets its own ModelRunner and "
             "KV pool (0.1.0, 0.1.1 read)",
             cites=(Cite("tokenspeed/runtime/execution/factory.py", "create_model_runner"),)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION = (
    Confirmation(NAME, "0.1.0-0.1.1", "both wheels",
                 f"{NO}: its model files import tokenspeed_kernel (CUDA)", f"{NO}: CUDA only",
                 f"{NO}: no GPU fixture", "docs/engines.md (Engines beyond vLLM and SGLang)"),
)
TS_BASE = ("tokenspeed runtime/models/base/causal_lm.py BaseCausalLM.set_eagle3_layers_to_capture, inherited; "
           "runtime/execution/model_executor.py (0.1.0; factory.py 0.1.1) calls it when the target has it")
#: Its hand-read target capture rows (knowledge.capture_engines; the scan, pytest_eagle3/scanners/capture.py, agrees).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "0.1.0", "llama", CAPTURES, f"{TS_BASE} (llama.py LlamaModel(BaseTransformerModel))",
     ("LlamaForCausalLM",),
     (Cite("tokenspeed/runtime/models/base/causal_lm.py", "BaseCausalLM.set_eagle3_layers_to_capture"),
      Cite("tokenspeed/runtime/execution/model_executor.py"),
      Cite("tokenspeed/runtime/pd/factory.py"),
      Cite("tokenspeed/runtime/models/llama.py", "LlamaModel"),)),
    CaptureEntry(NAME, "0.1.0", "llama", SILENT,
     ("tokenspeed runtime/models/qwen2.py / qwen3.py: Qwen2Model / Qwen3Model (nn.Module, not BaseTransformerModel) "
      "never read the layers_to_capture BaseCausalLM.set_eagle3_layers_to_capture sets; forward returns "
      "(hidden_states, None), layers/logits_processor.py stores the final hidden state, and llama_eagle3.py skips fc "
      "when its width is the draft's (0.1.0, 0.1.1 read; pytest_eagle3/scanners/capture.py)"),
     ("Qwen2ForCausalLM", "Qwen3ForCausalLM"),
     (Cite("tokenspeed/runtime/models/qwen2.py"),
      Cite("tokenspeed/runtime/models/qwen3.py"),
      Cite("tokenspeed/runtime/layers/logits_processor.py"),
      Cite("tokenspeed/runtime/models/llama_eagle3.py"),)),
    CaptureEntry(NAME, "0.1.0", "gpt_oss", CAPTURES, f"{TS_BASE} (gpt_oss.py)", ("GptOssForCausalLM",),
     (Cite("tokenspeed/runtime/models/base/causal_lm.py", "BaseCausalLM.set_eagle3_layers_to_capture"),
      Cite("tokenspeed/runtime/execution/model_executor.py"),
      Cite("tokenspeed/runtime/pd/factory.py"),
      Cite("tokenspeed/runtime/models/gpt_oss.py"),)),
    CaptureEntry(NAME, "0.1.0", "deepseek", CAPTURES,
     "tokenspeed runtime/models/deepseek_v3.py set_eagle3_layers_to_capture (val + 1)",
     ("DeepseekV3ForCausalLM",),
     (Cite("tokenspeed/runtime/models/deepseek_v3.py", "DeepseekV3ForCausalLM.set_eagle3_layers_to_capture"),)),
)

ENGINE = Engine(
    NAME, "TokenSpeed", RELEASES, lineage="sglang", behaviour_rows=tuple(SPANS), rank=30,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        draft_dtype_source=("tokenspeed runtime/engine/event_loop.py EventLoop._load_model_config: the launch's --dtype; "
                            "under auto the draft's own config (0.1.0) or the target's dtype (0.1.1)"),
        dtype_when_absent="bfloat16",
        key_resolver="as-named-or-model-prefixed",
        d2t_is_parameter=False,
        missing_d2t_error="startup fails (hot_token_id is None)",
        fc_without_aux="bypassed",
        ties_lm_head_to_embed=True,
        load_assert="tokenspeed runtime/layers/linear.py weight_loader: narrow to the shard, then assert",
    ),
    serving=Serving(
        context_rule="first-key-scaled",
        context_length_flag="--max-model-len",
    ),
    scans=Scans(
        scan_of="tokenspeed",
        capture_scan="wheels",
        draft_class_scan=True,
    ),
)
