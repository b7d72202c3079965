"""ROCm ATOM: the engine object, and its behaviour rows (its own server, ``python -m atom.entrypoints.openai_server
--method eagle3 --draft-model D``, on AMD MI-series GPUs), every behaviour from 0.1.3 on.

ATOM is not on the package index (PyPI's ``atom`` 0.13.0 is an unrelated package, nucleic's ``catom``): it is read
in its repository, ROCm/ATOM, per release tag, as TensorRT-LLM is read per commit (``RELEASE_TAGS``). The tags
v0.1.3, v0.1.4 and v0.1.5 have an EAGLE-3 path (v0.1.2 has none: no ``models/eagle3_llama.py``, no
``--method eagle3``); v0.1.6-rc0 is a pre-release, not read into the rows. v0.1.3 and v0.1.4 have the same draft
path; v0.1.5 adds EAGLE 3.1 (``fc_norm``, ``norm_output``, ``target_hidden_size``, ``num_aux_hidden_states``) and
the MLA draft class (``models/eagle3_deepseek_mla.py``). Every row is read in ATOM's own source at the tag (none
defers to another engine's code: ATOM imports no vLLM or SGLang on this path; its plugin mode, where vLLM or SGLang
drive speculative decoding themselves, is those engines' rows).

Its quirks, each a row below: the draft's own ``eagle_config`` decides whether aux states are used at all (present
without ``use_aux_hidden_state: true``, none are); top-level aux ids are never read; the Llama target class has no
``set_aux_hidden_state_layers``; ``draft_vocab_size`` and ``d2t`` are never read (the lm_head is ``vocab_size``
rows); the weight loader runs in a thread pool whose errors are dropped (``ATOM_LOADER_USE_THREADPOOL=1``, the
default).
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
    Serving,
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines.shared import (
    CAPTURES,
    EAGLE_CONFIG_ONLY,
    LLAMA_COUNT,
    NO,
    REFUSED,
    SEPARATE_POOL,
    FcAuxCount,
    Transform,
)
from pytest_eagle3.knowledge.evidence import Cite

NAME = "atom"

#: The release tags with an EAGLE-3 path, oldest first (the tag without its ``v``).
RELEASES = ("0.1.3", "0.1.4", "0.1.5")

#: release -> (the tag's commit in ROCm/ATOM, its date): the source every row was read in.
RELEASE_TAGS: dict[str, tuple[str, str]] = {
    "0.1.3": ("bdcc62e94daf73c04c2da1724a248030654509d9", "2026-05-30"),
    "0.1.4": ("26f23a0bdbf50b9010c07ee3a71171189723e767", "2026-06-03"),
    "0.1.5": ("b0071c550ba3c99b1e9218debb91a6f81550da9a", "2026-06-22"),
}

DRAFT = "atom/models/eagle3_llama.py"
CONFIG = "atom/config.py"
PROPOSER = "atom/spec_decode/eagle.py"
LOADER = "atom/model_loader/loader.py"
RUNNER = "atom/model_engine/model_runner.py"
D = DRAFT
SPEC = f"{CONFIG} SpeculativeConfig"
PROP = f"{PROPOSER} EagleProposer"
LOAD = f"{LOADER} load_model"
READ = "v0.1.3 bdcc62e9, v0.1.4 26f23a0b, v0.1.5 b0071c55 read"
POOL = ("with ATOM_LOADER_USE_THREADPOOL=1 (the default, atom/utils/envs.py) each weight_loader runs in a "
        "ThreadPoolExecutor and concurrent.futures.wait drops its exception")

#: (behaviour, value, source, cites[, unmodelled]): one row each from 0.1.3 (the same code at the three tags).
_ROWS: tuple[tuple[Any, ...], ...] = (
    ("arch_rewrite", "none",
     (f"{SPEC}.hf_config_override: architectures[0] 'LlamaForCausalLMEagle3' becomes 'Eagle3LlamaModel' (the registry "
      f"rows); every other name is looked up as written in {PROPOSER} support_eagle_model_arch_dict (KeyError)"),
     (Cite(CONFIG, "SpeculativeConfig.hf_config_override"), Cite(PROPOSER, "EagleProposer.__init__"))),
    ("speculators_format", False,
     (f"{CONFIG} get_hf_config: AutoConfig.from_pretrained of the draft folder: ValueError 'Unrecognized model "
      "... Should have a model_type key' for a speculators config (no speculators_model_type read, grep)"),
     (Cite(CONFIG, "get_hf_config"),)),
    ("speculators_model_types", (), "atom: speculators format unsupported (no speculators_model_type read, grep)",
     (Cite(CONFIG, "get_hf_config"),)),
    ("key_prefix", "as-is",
     (f"{LOAD}: model.get_parameter(name) on Eagle3LlamaModel, whose parameters are embed_tokens / fc / midlayer / "
      "norm / lm_head at the top (no 'model.' added)"),
     (Cite(LOADER, "load_model"), Cite(DRAFT, "Eagle3LlamaModel.__init__"))),
    ("first_layer", "midlayer", f"{D} Eagle3LlamaModel.__init__: self.midlayer = Eagle3LlamaDecoderLayer",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("renames", (), f"{LOAD}: no rename for the draft (layers.0.* finds no parameter)",
     (Cite(LOADER, "load_model"),)),
    ("unknown_key", "drop",
     (f"{LOAD}: get_parameter's AttributeError appends the name to dropped_ckpt_keys, logged as a warning after "
      "the load"),
     (Cite(LOADER, "load_model"),)),
    ("multi_layer", "one-layer",
     f"{D} Eagle3LlamaModel.__init__: one midlayer whatever num_hidden_layers says (layers.N names are dropped)",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("later_layer_norm", "hidden_norm", f"{D}: one layer only (no later layers)", (Cite(DRAFT, "Eagle3LlamaModel"),)),
    ("d2t_present", "discarded",
     f"{D} Eagle3LlamaModel: no d2t parameter; {LOAD} drops the tensor (dropped_ckpt_keys); draft ids are target ids",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"), Cite(LOADER, "load_model"))),
    ("d2t_absent", "identity", f"{PROP}.propose: draft_token_ids = logits.argmax(-1), no map",
     (Cite(PROPOSER, "EagleProposer.propose"),)),
    ("d2t_full_vocab", "ignored", f"{D} Eagle3LlamaModel: no d2t parameter at any vocab size",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("draft_vocab_size_missing", "vocab_size",
     f"{D} Eagle3LlamaModel.__init__: lm_head = ParallelLMHead(config.vocab_size, hidden); draft_vocab_size never read",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("draft_vocab_size_null", "vocab_size",
     f"{D} Eagle3LlamaModel.__init__: lm_head sized from vocab_size; draft_vocab_size never read",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("aux_id_fields", (EAGLE_CONFIG_ONLY,),
     (f"{SPEC}.__post_init__: eagle_config.eagle_aux_hidden_state_layer_ids, read only when eagle_config exists and "
      "its use_aux_hidden_state is true; top-level eagle_aux_hidden_state_layer_ids is never read"),
     (Cite(CONFIG, "SpeculativeConfig.__post_init__"),)),
    ("aux_id_fields_other_mode", None, f"{RUNNER}: one aux layer set for eager and CUDA-graph decode",
     (Cite(RUNNER, "ModelRunner.__init__"),)),
    ("aux_transform_llama", Transform.AS_IS,
     ("atom/models/llama.py LlamaModel.forward: hidden_states + residual appended before layer idx runs (the "
      "class has no set_aux_hidden_state_layers: see the capture rows)"),
     (Cite("atom/models/llama.py", "LlamaModel.forward"),)),
    ("aux_transform_deepseek", Transform.AS_IS,
     "atom/models/deepseek_v2.py DeepseekV2Model.forward: the residual stream appended before layer idx runs",
     (Cite("atom/models/deepseek_v2.py", "DeepseekV2Model.forward"),)),
    ("aux_transform_gpt_oss", Transform.AS_IS,
     "atom/models/gpt_oss.py GptOssModel.forward: x + residual appended before layer i runs",
     (Cite("atom/models/gpt_oss.py", "GptOssModel.forward"),)),
    ("capture_range", "inner",
     ("atom/models/deepseek_v2.py / gpt_oss.py forward: inputs of layers 0..L-1 (the final state, L, never "
      "fires)"),
     (Cite("atom/models/deepseek_v2.py", "DeepseekV2Model.forward"), Cite("atom/models/gpt_oss.py", "GptOssModel.forward")),
     "id 0 (the embeddings) fires too in the DeepSeek and gpt-oss loops (residual None there); 'inner' leaves it out"),
    ("graph_mode_default_layers", False,
     f"{RUNNER} ModelRunner.__init__: set_aux_hidden_state_layers once; capture_cudagraph keeps the same outputs",
     (Cite(RUNNER, "ModelRunner.__init__"), Cite(RUNNER, "ModelRunner.capture_cudagraph"))),
    ("fc_applied", "always",
     f"{PROP}.propose: combine_hidden_states (fc) whenever the target sent aux states, whatever their width",
     (Cite(PROPOSER, "EagleProposer.propose"),)),
    ("fc_bias", "none", f"{D} Eagle3LlamaModel.__init__: fc = ReplicatedLinear(..., bias=False)",
     (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("use_aux_hidden_state", "honoured",
     (f"{SPEC}.__post_init__: use_aux_hidden_state = eagle_config.get('use_aux_hidden_state', False) when eagle_config "
      f"exists, else True; {PROP}.propose: without aux states the target's last hidden state goes to the layer, fc "
      "unused"),
     (Cite(CONFIG, "SpeculativeConfig.__post_init__"), Cite(PROPOSER, "EagleProposer.propose"))),
    ("norm_before_residual", "not-read",
     f"{D} Eagle3LlamaDecoderLayer.forward: residual = hidden_states before hidden_norm, no flag",
     (Cite(DRAFT, "Eagle3LlamaDecoderLayer.forward"),)),
    ("norm_before_fc", "not-read", f"{D}: no input_norm (grep)", (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
    ("embed_source", "draft",
     (f"{PROP}.load_model: 'independent embed/lm_head (no sharing)' for eagle3; an absent embed_tokens stays "
      "torch.empty (atom/model_ops/embed_head.py VocabParallelEmbedding)"),
     (Cite(PROPOSER, "EagleProposer.load_model"), Cite("atom/model_ops/embed_head.py", "VocabParallelEmbedding.__init__"))),
    ("draft_extend_logits_buffer", "none", "atom: no draft-extend logits buffer", (Cite(PROPOSER, "EagleProposer"),)),
    ("draft_extend_graph_width", "draft-aux-count",
     (f"{RUNNER} capture_cudagraph: graph_aux_hidden keeps each captured target state; {PROP}.propose "
      "concatenates them for fc (no fixed-width buffer)"),
     (Cite(RUNNER, "ModelRunner.capture_cudagraph"), Cite(PROPOSER, "EagleProposer.propose"))),
    ("embed_width_check", "uninitialised",
     f"{PROP}.load_model: the draft keeps its own embed_tokens whatever its width; nothing fills a missing one",
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("lm_head_source", "draft",
     f"{PROP}.load_model: the eagle3 path returns before the MTP path's lm_head sharing",
     (Cite(PROPOSER, "EagleProposer.load_model"),)),
    ("mla_rope", "yarn-if-set",
     ("atom/models/eagle3_deepseek_mla.py Eagle3DeepseekMLAAttention: deepseek_yarn when rope factor != 1 or the "
      "type is yarn (0.1.5; before, an MLA draft raises NotImplementedError)"), (),
     "the MLA draft class exists from 0.1.5 (models/eagle3_deepseek_mla.py absent at v0.1.3 / v0.1.4)"),
    ("draft_rope", "config",
     f"{D} Eagle3LlamaAttention.__init__: get_rope(base=config.rope_theta, max_position=max_position_embeddings)",
     (Cite(DRAFT, "Eagle3LlamaAttention.__init__"),),
     "rope_scaling is not passed to get_rope: a llama3 / yarn-scaled draft runs with plain rope"),
    ("first_layer_hidden_path", "hidden_norm", f"{D} Eagle3LlamaDecoderLayer.forward: hidden_norm(hidden_states)",
     (Cite(DRAFT, "Eagle3LlamaDecoderLayer.forward"),)),
    ("mlp_width", "intermediate_size", f"{D} Eagle3LlamaDecoderLayer.__init__: config.intermediate_size",
     (Cite(DRAFT, "Eagle3LlamaDecoderLayer.__init__"),)),
    ("layer_bias", "o_proj",
     f"{D} Eagle3LlamaAttention / Eagle3LlamaMLP: qkv_proj, o_proj, gate_up_proj, down_proj all bias=False",
     (Cite(DRAFT, "Eagle3LlamaAttention.__init__"), Cite(DRAFT, "Eagle3LlamaMLP.__init__")),
     "no bias is built whatever attention_bias / bias / mlp_bias say (bias tensors are dropped): 'o_proj' is the "
     "nearest modelled value"),
    ("unset_bias", "zeros", f"{D}: no bias parameter is built (the same as a zero bias)",
     (Cite(DRAFT, "Eagle3LlamaAttention.__init__"),)),
    ("unloaded_parameter", "kept",
     (f"{LOAD}: 'model parameters were NOT loaded from checkpoint and remain at their init values' is a warning; "
      "startup goes on"),
     (Cite(LOADER, "load_model"),)),
    ("weight_files", "all-safetensors",
     f"{LOADER} safetensors_weights_iterator: glob *.safetensors, filtered by the index when present",
     (Cite(LOADER, "safetensors_weights_iterator"),)),
    ("draft_positions", "reads-past",
     (f"{D} Eagle3LlamaAttention.__init__: get_rope(max_position=the draft's max_position_embeddings); the draft is "
      "served at the target's max_model_len, never raised"),
     (Cite(DRAFT, "Eagle3LlamaAttention.__init__"),),
     "the rotary table lookup is in aiter (aiter.rotary_embedding), not read here"),
    ("target_quantization", "none",
     f"{D}: every linear built without quant_config (atom/model_ops/linear.py LinearBase: LayerQuantConfig())",
     (Cite(DRAFT, "Eagle3LlamaAttention.__init__"), Cite("atom/model_ops/linear.py", "LinearBase.__init__"))),
    ("draft_sliding_window", "none",
     (f"{D} Eagle3LlamaAttention.__init__: per_layer_sliding_window = sliding_window only when use_sliding_window is "
      "true"),
     (Cite(DRAFT, "Eagle3LlamaAttention.__init__"),),
     "use_sliding_window: true with sliding_window gives the draft layer a window (Qwen2-style fields)"),
    ("draft_dtype", "target",
     (f"{RUNNER} ModelRunner.__init__: torch.set_default_dtype(config.torch_dtype) (the target's) before the "
      "drafter is built; the loader copies the draft's tensors into those parameters"),
     (Cite(RUNNER, "ModelRunner.__init__"),)),
    ("aux_default", "target-layers",
     ("atom/models/deepseek_v2.py / gpt_oss.py get_eagle3_aux_hidden_state_layers: (2, L // 2, L - 3) of the "
      "target's layers, when eagle_config is absent"),
     (Cite("atom/models/deepseek_v2.py", "DeepseekV2ForCausalLM.get_eagle3_aux_hidden_state_layers"),
      Cite("atom/models/gpt_oss.py", "GptOssForCausalLM.get_eagle3_aux_hidden_state_layers"))),
)

SPANS: list[BehaviourSpan] = [BehaviourSpan(name, "0.1.3", "0.1.5", value, f"{source} ({READ})", *more)
                              for name, value, source, *more in _ROWS]
# ---------------------------------------------------------------- EAGLE 3.1 (v0.1.5): fc width, fc_norm, norm_output
SPANS += spans("fc_aux_count",
               ("0.1.3", "0.1.4", FcAuxCount.FIXED_3,
                f"{D} Eagle3LlamaModel.__init__: fc = ReplicatedLinear(hidden_size * 3, hidden_size) (v0.1.3, v0.1.4 read)",
                (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)),
               ("0.1.5", "0.1.5", FcAuxCount.FROM_CONFIG,
                (f"{D} Eagle3LlamaModel.__init__: fc = target_hidden_size x num_aux_hidden_states, else "
                 "len(eagle_config.eagle_aux_hidden_state_layer_ids), else 3 (v0.1.5 read)"),
                (Cite(DRAFT, "Eagle3LlamaModel.__init__"),)))
SPANS += spans("fc_norm",
               ("0.1.3", "0.1.4", "not-read", f"{D}: no fc_norm (v0.1.3, v0.1.4 read)",
                (Cite(DRAFT, "Eagle3LlamaModel.combine_hidden_states"),)),
               ("0.1.5", "0.1.5", "read",
                f"{D} Eagle3LlamaModel.combine_hidden_states: one RMSNorm per aux chunk when config.fc_norm (v0.1.5 read)",
                (Cite(DRAFT, "Eagle3LlamaModel.combine_hidden_states"),)))
SPANS += spans("norm_output",
               ("0.1.3", "0.1.4", "not-read", f"{D} Eagle3LlamaModel.forward: the pre-norm state (v0.1.3, v0.1.4 read)",
                (Cite(DRAFT, "Eagle3LlamaModel.forward"),)),
               ("0.1.5", "0.1.5", "read",
                f"{D} Eagle3LlamaModel.forward: norm(hidden_states) when config.norm_output (v0.1.5 read)",
                (Cite(DRAFT, "Eagle3LlamaModel.forward"),)))
SPANS += spans("mtp_model_types",
               ("0.1.3", "0.1.4",
                ("deepseek_v3", "deepseek_v32", "deepseek_v4", "glm_moe_dsa", "qwen3_next", "qwen3_5", "qwen3_5_moe",
                 "qwen3_5_text", "qwen3_5_moe_text", "mimo_v2_flash"),
                (f"{SPEC}.hf_config_override (run on the draft's config too): _MTP_TYPE_MAP model types get an MTP "
                 "architecture (v0.1.3, v0.1.4 read)"),
                (Cite(CONFIG, "SpeculativeConfig.hf_config_override"),)),
               ("0.1.5", "0.1.5",
                ("deepseek_v3", "deepseek_v32", "deepseek_v4", "glm_moe_dsa", "qwen3_next", "qwen3_5", "qwen3_5_moe",
                 "qwen3_5_text", "qwen3_5_moe_text", "mimo_v2", "mimo_v2_flash"),
                f"{SPEC}.hf_config_override: _MTP_TYPE_MAP, mimo_v2 added (v0.1.5 read)",
                (Cite(CONFIG, "SpeculativeConfig.hf_config_override"),)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "Eagle3LlamaModel", LLAMA, (), LLAMA_COUNT,
        (f"{DRAFT} Eagle3LlamaModel: one Eagle3LlamaDecoderLayer at midlayer (qkv_proj over 2 x hidden, "
         "gate_up/down, input_layernorm / hidden_norm / post_attention_layernorm), embed_tokens and lm_head of "
         "vocab_size rows, fc hidden x 3 (v0.1.3-v0.1.4) or target_hidden_size x the aux count (v0.1.5)"),
        max_layers=None),
    DraftClass(
        NAME, "Eagle3DeepseekMLAModel", MLA, (), LLAMA_COUNT,
        ("atom/models/eagle3_deepseek_mla.py Eagle3DeepseekMLAModel: one Eagle3DeepseekMLADecoderLayer at "
         "layers.0 (q_a_proj and kv_a_proj_with_mqa over 2 x hidden, kept separate), fc_norm / norm_output read; "
         "a draft model_type in _MTP_TYPE_MAP (deepseek_v3) is turned into an MTP draft first (v0.1.5 read)"),
        attention=("self_attn.q_a_proj.weight", "self_attn.kv_a_proj_with_mqa.weight", *MLA_NORMS_AND_B),
        renames=(), first_layer="layers", max_layers=1, reads=("fc_norm", "norm_output")),
)
HF_OVERRIDE = (Cite(CONFIG, "SpeculativeConfig.hf_config_override"), Cite(PROPOSER, "EagleProposer.__init__"))
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS: tuple[tuple[str, TableRow], ...] = (
    ("LlamaForCausalLMEagle3", TableRow("0.1.3", "Eagle3LlamaModel",
                                        (f"{SPEC}.hf_config_override: 'LlamaForCausalLMEagle3' -> 'Eagle3LlamaModel', "
                                         f"looked up in {PROPOSER} support_eagle_model_arch_dict ({READ})"),
                                        cites=HF_OVERRIDE)),
    ("Eagle3LlamaModel", TableRow("0.1.3", "Eagle3LlamaModel",
                                  f"{PROPOSER} support_eagle_model_arch_dict: its own name, as written ({READ})",
                                  cites=(Cite(PROPOSER, "EagleProposer.__init__"),))),
    ("Eagle3DeepseekV2ForCausalLM", TableRow("0.1.5", "Eagle3DeepseekMLAModel",
                                             (f"{SPEC}.hf_config_override: 'Eagle3DeepseekV2ForCausalLM' -> "
                                              "'Eagle3DeepseekMLAModel' (v0.1.5; v0.1.3 / v0.1.4 raise "
                                              "NotImplementedError for an MLA draft)"),
                                             cites=(*HF_OVERRIDE, Cite("atom/models/eagle3_deepseek_mla.py")))),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("0.1.3", True,
             f"{PROP}.__init__: support_eagle_model_arch_dict[architectures[0]] (KeyError for any other name; {READ})",
             cites=(Cite(PROPOSER, "EagleProposer.__init__"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("0.1.3", SEPARATE_POOL,
             (f"{PROPOSER} Eagle3DraftBuilder: the Llama draft's own non-MLA KV cache (the MLA draft of v0.1.5 "
              f"joins the target's MLA pool: not modelled; {READ})"),
             cites=(Cite(PROPOSER, "Eagle3DraftBuilder"),)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "0.1.3-0.1.5",
                 "every release tag of its repository (ROCm/ATOM; no package on the index); cites checked against "
                 "the tags' trees", f"{NO}: ROCm only (aiter kernels)", f"{NO}: ROCm only", f"{NO}: needs an MI-series GPU",
                 "docs/engines.md (ROCm ATOM)"),
)
SET_AUX = f"{RUNNER} ModelRunner.__init__ calls self.model.set_aux_hidden_state_layers(aux_ids)"
#: Its hand-read target capture rows (knowledge.capture_engines).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "0.1.3", "llama", REFUSED,
     (f"{SET_AUX}; atom/models/llama.py LlamaForCausalLM has no set_aux_hidden_state_layers (nor "
      "get_eagle3_aux_hidden_state_layers): AttributeError at startup when eagle_config names aux ids; without "
      f"eagle_config no ids are found, nothing is captured and the draft is fed the last hidden state ({READ})"),
     ("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
     (Cite(RUNNER, "ModelRunner.__init__"), Cite("atom/models/llama.py", "LlamaForCausalLM"),
      Cite("atom/models/llama.py", "LlamaForCausalLM.set_aux_hidden_state_layers", absent=True),
      Cite("atom/models/qwen3.py", "Qwen3ForCausalLM.set_aux_hidden_state_layers", absent=True))),
    CaptureEntry(NAME, "0.1.3", "deepseek", CAPTURES,
     (f"{SET_AUX}; atom/models/deepseek_v2.py DeepseekV2ForCausalLM.set_aux_hidden_state_layers, the stream entering "
      f"those layers captured in DeepseekV2Model.forward ({READ})"),
     ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"),
     (Cite("atom/models/deepseek_v2.py", "DeepseekV2ForCausalLM.set_aux_hidden_state_layers"),
      Cite("atom/models/deepseek_v2.py", "DeepseekV2Model.forward"))),
    CaptureEntry(NAME, "0.1.3", "deepseek", CAPTURES,
     (f"{SET_AUX}; atom/models/kimi_k25.py KimiK25ForCausalLM.set_aux_hidden_state_layers hands it to its DeepSeek "
      f"language model ({READ})"),
     ("KimiK25ForConditionalGeneration",),
     (Cite("atom/models/kimi_k25.py", "KimiK25ForCausalLM.set_aux_hidden_state_layers"),)),
    CaptureEntry(NAME, "0.1.3", "gpt_oss", CAPTURES,
     f"{SET_AUX}; atom/models/gpt_oss.py GptOssForCausalLM.set_aux_hidden_state_layers ({READ})",
     ("GptOssForCausalLM",),
     (Cite("atom/models/gpt_oss.py", "GptOssForCausalLM.set_aux_hidden_state_layers"),
      Cite("atom/models/gpt_oss.py", "GptOssModel.forward"))),
)

ENGINE = Engine(
    NAME, "ROCm ATOM", RELEASES, lineage=NAME, behaviour_rows=tuple(SPANS), rank=55,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
        matrix_target="GptOssForCausalLM",
    ),
    loading=Loading(
        key_resolver="as-named-or-model-prefixed",
        d2t_is_parameter=False,
        draft_dtype_source=(f"{RUNNER} ModelRunner.__init__: torch.set_default_dtype(the target's torch_dtype) "
                            "before the drafter is built"),
        flat_config_for="ATOM",
        preferred_architectures=(("llama", "LlamaForCausalLMEagle3"),),
        one_layer_error="(none: one midlayer is built and layers.N tensors are dropped)",
        fc_without_aux="bypassed",
        drop_logged="the loader skips it and warns after the load (dropped_ckpt_keys)",
        use_aux_missing_is_false=f"{SPEC}.__post_init__: eagle_cfg.get('use_aux_hidden_state', False)",
        load_assert=(f"atom/model_ops/linear.py / embed_head.py weight_loader: narrow, then assert; {POOL}: the "
                     "parameter keeps its torch.empty memory, silently"),
        lm_head_rows_field="vocab_size",
        load_errors_dropped=(f"{POOL} ({LOADER} load_model), so the parameter keeps its uninitialised torch.empty "
                             "memory (with ATOM_LOADER_USE_THREADPOOL=0 startup fails instead)"),
    ),
    serving=Serving(
        context_length_flag="--max-model-len",
    ),
)
