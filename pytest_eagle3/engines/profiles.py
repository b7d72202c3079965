"""Engine profiles as data: every behaviour that decides whether a draft works, per version range.

Each behaviour is one :class:`~pytest_eagle3.knowledge.table.Table`: rows of what one engine does from
release ``since`` on (until the next row starts), with a one-line source (file, function, release)
and ``read_to``, the last release read with that value. ``profile(engine)`` picks the row covering
the version in every table. The tables are checked when built: each covers the engine's whole known
range exactly once.

Values are small strings (or tuples of names): :data:`BEHAVIOURS` says what each behaviour means,
:data:`VALUES` which values it takes (checked when the tables are built);
:mod:`pytest_eagle3.engines.plan` gives them meaning. The draft architectures come from the
registry table in :mod:`pytest_eagle3.knowledge.draft_classes` (one place).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from packaging.version import Version

from pytest_eagle3.knowledge import draft_classes
from pytest_eagle3.knowledge.table import Row, Table, TableError, table
from pytest_eagle3.knowledge.releases import SGLANG, VLLM, EngineVersion

#: What each behaviour means and which values it takes.
BEHAVIOURS: dict[str, str] = {
    "architectures": "draft architectures the engine builds an EAGLE-3 draft for ('*' = field ignored)",
    "arch_rewrite": "how the engine rewrites the config's architecture name before lookup",
    "speculators_format": "whether a speculators-format config (speculators_model_type) is understood",
    "speculators_model_types": "transformer_layer_config.model_type values a speculators config may have",
    "key_prefix": "how checkpoint names get the draft module prefix ('model.')",
    "first_layer": "the module the first draft layer lives in: midlayer or layers.0",
    "renames": "substring renames applied to checkpoint names before lookup",
    "unknown_key": "what happens to a checkpoint tensor with no matching parameter",
    "multi_layer": "whether drafts with num_hidden_layers > 1 are built",
    "later_layer_norm": "the norm layers >= 1 apply to their input",
    "d2t_present": "how a shipped d2t is used",
    "d2t_absent": "what an absent d2t means",
    "d2t_full_vocab": "what a d2t does when draft_vocab_size == vocab_size",
    "draft_vocab_size_missing": "what a config without draft_vocab_size leads to",
    "draft_vocab_size_null": "what draft_vocab_size: null leads to",
    "aux_id_fields": "draft-config fields the target side reads aux layer ids from, in order",
    "aux_id_fields_other_mode": "the same for the engine's other runtime mode, when it differs",
    "aux_transform_llama": "how Llama/Qwen-family targets turn ids into captured layer inputs",
    "aux_transform_deepseek": "how DeepSeek-family targets turn ids into captured layer inputs",
    "aux_transform_gpt_oss": "how gpt-oss targets turn ids into captured layer inputs",
    "capture_range": ("which captured layer-input indices fire: 'inner' = 1..L-1, 'all' = 0..L; for target classes "
                      "whose loop the reach scan did not read (knowledge/reach.py has the rest, per class)"),
    "graph_mode_default_layers": "whether CUDA-graph decode captures the default layers instead",
    "fc_applied": "when fc runs on what the target sends",
    "fc_aux_count": "how the draft sizes fc: the number of aux states it expects",
    "fc_bias": "whether fc has a bias parameter: always / config.bias / none",
    "use_aux_hidden_state": "whether eagle_config.use_aux_hidden_state: false is honoured",
    "norm_before_residual": "whether the flag is read ('read') or the behaviour fixed at False",
    "norm_before_fc": ("where norm_before_fc (input_norm) is read: read (top level or eagle_config) / top-level / "
                       "eagle-format-only (top level, not from a speculators config) / not-read"),
    "fc_norm": "whether fc_norm (per-chunk norms) is honoured: read / eagle-format-only / not-read",
    "norm_output": "whether norm_output is honoured: read / eagle-format-only / not-read",
    "embed_source": "whose embed_tokens the draft uses",
    "draft_extend_logits_buffer": ("the CUDA-graph draft-extend logits buffer: none / draft-vocab (rows of "
                                   "draft_vocab_size, which the 64-padded lm_head output must fit) / shape-checked"),
    "draft_extend_graph_width": ("the width of the CUDA-graph buffer that holds the target's concatenated aux states: "
                                 "draft-hidden (hidden_size x 3, a bug for drafts of another width) / target-hidden "
                                 "(target_hidden_size x 3) / target-config-x3 (3 x the target's hidden size, from the "
                                 "TARGET's config: a bug for drafts whose fc takes 2 or 4 aux states) / draft-aux-count "
                                 "(target_hidden_size x the draft's aux count, as fc)"),
    "embed_width_check": ("what a draft narrower or wider than its target gets when it ships no embed_tokens: "
                          "target-width (the target's, wrong width) / uninitialised (kept separate, never loaded)"),
    "lm_head_source": "whose lm_head the draft uses",
    "mtp_model_types": "draft model_type values the engine rewrites to its MTP draft (refused for EAGLE-3)",
    "mla_rope": ("how the MLA draft class builds its rope: forced-yarn (DeepSeek YaRN whenever rope_scaling is set, "
                 "which needs factor and original_max_position_embeddings) / as-configured"),
    "draft_rope": "the rope the draft layers apply: config (the draft config's rope_theta and rope_scaling)",
    "first_layer_hidden_path": "what the first draft layer applies to the fc output before attention: hidden_norm",
    "mlp_width": ("the config field the draft's MLP width comes from: intermediate_size / "
                  "intermediate_size_mlp-if-llama4_text (model_type llama4_text: intermediate_size_mlp, whose "
                  "Llama4TextConfig default is 16384; narrower MLP tensors fail the loader's narrow) / "
                  "intermediate_size_mlp-if-llama4_text-padded (the same, narrower tensors zero-padded on GPU)"),
    "layer_bias": ("the bias parameters the draft's decoder layers build from its config: o_proj (o_proj.bias when "
                   "attention_bias or bias is true) / o_proj+mlp (also gate_up_proj / down_proj bias when mlp_bias is "
                   "true) / qkv+o_proj+mlp (also qkv_proj bias when attention_bias is true)"),
    "unset_bias": ("what a bias parameter no checkpoint tensor fills holds: empty (torch.empty, arbitrary memory) / "
                   "zeros (the same as no bias)"),
    "unloaded_parameter": ("a draft parameter no checkpoint tensor fills: kept (left at its initial values) / refused "
                           "(the loader's strict check raises 'Following weights were not initialized from checkpoint')"),
    "weight_files": ("which files of the draft folder the loader reads: every *.safetensors (an index, when "
                     "present, filters them), else *.bin minus the trainer's files"),
    "draft_positions": ("what the engine does when the target's context is longer than the context the draft's "
                        "config gives (its max_position_embeddings, which sizes the draft's rotary table): "
                        "reads-past (positions beyond index past the table) / skips-drafting (no draft for a step "
                        "whose longest sequence does not fit) / raised (the draft's max_position_embeddings is "
                        "raised to the target's context) / raised-or-limited (raised for rope types that only size "
                        "the table, else the server's context is cut to the draft's) / warns-reads-past / refuses "
                        "(start fails unless an environment variable allows it; then reads past) / "
                        "refuses-or-raises (start fails unless the variable is set; then raised)"),
    "target_quantization": ("whose quantization builds the draft's layers: none (never quantized) / target (the "
                            "target's quantization_config) / draft (the draft's own config or the speculative "
                            "config's) / server-flag (the launch's --quantization; the target checkpoint's "
                            "quantization_config never reaches the draft) / server-flag-or-draft-flag"),
    "draft_sliding_window": ("which sliding-window fields of the draft config the draft layer honours: none / "
                             "interleaved-only (interleaved_sliding_window) / layer-types-at-target-index "
                             "(layer_types indexed at the target's layer count: IndexError) / layer-types "
                             "(layer_types[0] == 'sliding_attention' gives the layer sliding_window) / server-flag "
                             "(only --speculative-draft-window-size)"),
    "draft_dtype": ("the dtype the draft runs in: target (the target's, whatever the draft config says) / "
                    "draft-config (the draft's own config under --dtype auto: float32 or absent becomes float16)"),
}


#: One profile row: a behaviour's value for one engine from ``since`` on.
Rule = Row[Any]


class FcAuxCount(StrEnum):
    """How the draft class sizes ``fc``: 3 aux states always, or the count its config fields give
    (the fields and their order: :attr:`~pytest_eagle3.knowledge.draft_classes.DraftClass.fc_count_fields`)."""

    FIXED_3 = "3"
    FROM_CONFIG = "from-config"


Names = tuple[str, ...]
Renames = tuple[tuple[str, str], ...]
Read = Literal["not-read", "read", "eagle-format-only", "top-level"]
AuxTransform = Literal["+1", "+1-if-first-is-1", "+1-unless-max-is-L", "as-is"]
Sharing = Literal["draft", "target-unless-hidden-differs", "target-if-absent", "target-always-key-raises",
                  "target-if-same-shape", "target-if-absent-or-equal"]
Refusal = Literal["refused", "vocab_size", "vocab_size-if-tied", "target-lm_head"]

#: The values each behaviour takes: a Literal (checked when the tables are built) or a type.
VALUES: dict[str, Any] = {
    "architectures": Names | Literal["*"],
    "arch_rewrite": Literal["none", "prefix-unless-starts", "prefix-unless-starts-or-ends"],
    "speculators_format": bool,
    "speculators_model_types": Names,
    "key_prefix": Literal["add-model", "optional-model", "add-model-except-lm_head"],
    "first_layer": Literal["midlayer", "layers"],
    "renames": Renames,
    "unknown_key": Literal["warn-or-raise-stacked", "drop", "raise", "raise-except-bias"],
    "multi_layer": Literal["refused", "one-layer", "supported"],
    "later_layer_norm": Literal["hidden_norm", "input_layernorm"],
    "d2t_present": Literal["offsets", "discarded"],
    "d2t_absent": Literal["crash", "identity"],
    "d2t_full_vocab": Literal["offsets", "refused"],
    "draft_vocab_size_missing": Refusal,
    "draft_vocab_size_null": Refusal,
    "aux_id_fields": Names,
    "aux_id_fields_other_mode": Names | None,
    "aux_transform_llama": AuxTransform,
    "aux_transform_deepseek": AuxTransform,
    "aux_transform_gpt_oss": AuxTransform,
    "capture_range": Literal["inner", "all"],
    "graph_mode_default_layers": bool,
    "fc_applied": Literal["when-width-differs", "always"],
    "fc_aux_count": FcAuxCount,
    "fc_bias": Literal["always", "config.bias", "none"],
    "use_aux_hidden_state": Literal["ignored", "honoured"],
    "norm_before_residual": Read,
    "norm_before_fc": Read,
    "fc_norm": Read,
    "norm_output": Read,
    "embed_source": Sharing,
    "draft_extend_logits_buffer": Literal["none", "draft-vocab", "shape-checked"],
    "draft_extend_graph_width": Literal["draft-hidden", "target-hidden", "target-config-x3", "draft-aux-count"],
    "embed_width_check": Literal["target-width", "uninitialised"],
    "lm_head_source": Sharing,
    "mtp_model_types": Names,
    "mla_rope": Literal["as-configured", "forced-yarn"],
    "draft_rope": Literal["config"],
    "first_layer_hidden_path": Literal["hidden_norm"],
    "mlp_width": Literal["intermediate_size", "intermediate_size_mlp-if-llama4_text",
                         "intermediate_size_mlp-if-llama4_text-padded"],
    "layer_bias": Literal["o_proj", "o_proj+mlp", "qkv+o_proj+mlp"],
    "unset_bias": Literal["empty", "zeros"],
    "unloaded_parameter": Literal["kept", "refused"],
    "weight_files": Literal["all-safetensors"],
    "draft_positions": Literal["reads-past", "skips-drafting", "raised", "raised-or-limited", "warns-reads-past",
                               "refuses", "refuses-or-raises"],
    "target_quantization": Literal["none", "target", "draft", "server-flag", "server-flag-or-draft-flag"],
    "draft_sliding_window": Literal["none", "interleaved-only", "layer-types-at-target-index", "layer-types",
                                    "server-flag"],
    "draft_dtype": Literal["target", "draft-config"],
}


def value_fits(value: Any, kind: Any) -> bool:
    """Whether ``value`` is one of ``kind``: a Literal, a type, a tuple[...] alias, or a union of those."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in (Union, UnionType):
        return any(value_fits(value, a) for a in args)
    if origin is tuple:
        return isinstance(value, tuple) and all(value_fits(v, args[0]) for v in value)
    if kind is None or kind is type(None):
        return value is None
    return isinstance(value, kind)


def _rules(engine: str, behaviour: str, *spans: tuple[str, str | None, Any, str]) -> list[tuple[str, Rule]]:
    """``(since, read_to, value, source)`` spans of one behaviour: each holds until the next starts."""
    return [(behaviour, Row(engine, since, value, source, read_to=read_to)) for since, read_to, value, source in spans]


SG_EAGLE3 = "models/llama_eagle3.py"
VL_EAGLE3 = "model_executor/models/llama_eagle3.py"
MIDLAYER_RENAMES = (("midlayer.", "layers.0."),)
SGLANG_LEGACY_RENAMES = (
    ("midlayer", "layers.0"),
    ("aux_norm_low", "fc_norm.0"),
    ("aux_norm_mid", "fc_norm.1"),
    ("aux_norm_high", "fc_norm.2"),
)
LLAMA_DRAFTS = ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3")
DEEPSEEK_DRAFTS = ("Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM")
VL_DRAFTS = ("Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM")
PEAGLE_DRAFTS = ("PEagleDraftModel", "PeagleLlamaForCausalLM")
#: Aux-id fields an engine reads, in its order; ``FIELD+1``: the engine adds 1 to the ids it reads there
#: (DFlash / DSpark ids name the layer whose *output* is captured).
TOP_FIELD = "eagle_aux_hidden_state_layer_ids"
DFLASH_PLUS_1 = "dflash_config.target_layer_ids+1"
ALL_FIELDS = (TOP_FIELD, "eagle_config.eagle_aux_hidden_state_layer_ids", DFLASH_PLUS_1)
V2_FIELDS_0_24 = (TOP_FIELD, DFLASH_PLUS_1)
V2_FIELDS_0_25 = (*V2_FIELDS_0_24, "dspark_target_layer_ids+1", "target_layer_ids+1")
V2_FIELDS = (*V2_FIELDS_0_25, "dflash_config.layer_ids", "eagle_config.layer_ids")

#: Every behaviour's rows, both engines together, in the order of BEHAVIOURS (architectures: draft_classes).
_SPANS: list[tuple[str, Rule]] = []
# ---------------------------------------------------------------- arch_rewrite
_SPANS += _rules(SGLANG, "arch_rewrite",
                 ("0.4.4.post2", None, "none", "sglang configs/model_config.py rewrites only MTP/NextN architectures"))
_SPANS += _rules(VLLM, "arch_rewrite",
                 ("0.8.5", "0.8.5", "none", "vllm 0.8.5: the architecture field is not read for eagle3"),
                 ("0.9.0", "0.10.0", "prefix-unless-starts",
                  "vllm 0.9.0 transformers_utils/configs/eagle.py: names not starting with Eagle3 become Eagle3X (0.9.0, 0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                 ("0.10.1", None, "prefix-unless-starts-or-ends",
                  "vllm 0.10.1 transformers_utils/configs/eagle.py: keeps names starting or ending with Eagle3"))
# ---------------------------------------------------------------- speculators_format
_SPANS += _rules(SGLANG, "speculators_format",
                 ("0.4.4.post2", None, False,
                  ("sglang: no speculators_model_type handling in any release; config loading raises "
                   "'Unrecognized model' (CPU run 0.5.11, 0.5.23)")))
_SPANS += _rules(VLLM, "speculators_format",
                 ("0.8.5", "0.10.0", False, "vllm 0.10.0: no transformers_utils/configs/speculators"),
                 ("0.10.1", None, True, "vllm 0.10.1 transformers_utils/configs/speculators/algos.py update_eagle3"))
# ---------------------------------------------------------------- speculators_model_types
_SPANS += _rules(SGLANG, "speculators_model_types", ("0.4.4.post2", None, (), "sglang: speculators format unsupported"))
_SPANS += _rules(VLLM, "speculators_model_types",
                 ("0.8.5", "0.10.0", (), "vllm 0.10.0: speculators format unsupported"),
                 ("0.10.1", "0.23.0", ("*",), "vllm 0.10.1 speculators/algos.py: always Eagle3LlamaForCausalLM"),
                 ("0.24.0", None, ("llama", "qwen3"), "vllm 0.24.0 speculators/algos.py update_eagle3: else ValueError"))
# ---------------------------------------------------------------- key_prefix
_SPANS += _rules(SGLANG, "key_prefix",
                 ("0.4.4.post2", "0.4.8", "add-model",
                  "sglang v0.4.5 llama_eagle3.py load_weights prefixes model. and delegates to LlamaForCausalLM"),
                 ("0.4.9", None, "optional-model",
                  f"sglang {SG_EAGLE3} load_weights: name as-is if a parameter, else model.+name (v0.4.9 886d344964)"))
_SPANS += _rules(VLLM, "key_prefix",
                 ("0.8.5", None, "add-model-except-lm_head",
                  f"vllm {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights: 'model.' + name unless 'lm_head' in name"))
# ---------------------------------------------------------------- first_layer
_SPANS += _rules(SGLANG, "first_layer",
                 ("0.4.4.post2", "0.5.11", "midlayer", f"sglang {SG_EAGLE3} module attribute self.midlayer"),
                 ("0.5.12", None, "layers", f"sglang {SG_EAGLE3} self.layers ModuleList (v0.5.12 a75b79e03b)"))
_SPANS += _rules(VLLM, "first_layer", ("0.8.5", None, "layers", f"vllm {VL_EAGLE3} LlamaModel.layers ModuleList"))
# ---------------------------------------------------------------- renames
_SPANS += _rules(SGLANG, "renames",
                 ("0.4.4.post2", "0.5.11", (), f"sglang {SG_EAGLE3} load_weights: no rename before v0.5.12"),
                 ("0.5.12", None, SGLANG_LEGACY_RENAMES,
                  f"sglang {SG_EAGLE3} load_weights legacy_name_map (str.replace anywhere in the name)"))
_SPANS += _rules(VLLM, "renames",
                 ("0.8.5", None, MIDLAYER_RENAMES, f"vllm {VL_EAGLE3} LlamaModel.load_weights: 'midlayer.' -> 'layers.0.'"))
# ---------------------------------------------------------------- unknown_key
_SPANS += _rules(SGLANG, "unknown_key",
                 ("0.4.4.post2", "0.4.8", "warn-or-raise-stacked",
                  "sglang v0.4.5 models/llama.py load_weights: warning for unknown names, KeyError for stacked ones"),
                 ("0.4.9", None, "drop",
                  f"sglang {SG_EAGLE3} load_weights: a name not in params_dict is skipped, no log (L352-367)"))
_SPANS += _rules(VLLM, "unknown_key",
                 ("0.8.5", "0.24.0", "raise", f"vllm {VL_EAGLE3} LlamaModel.load_weights params_dict[name]: KeyError"),
                 ("0.25.0", None, "raise-except-bias",
                  "vllm 0.25.0 model_executor/models/utils.py AutoWeightsLoader: ValueError; *.bias ignored"))
# ---------------------------------------------------------------- multi_layer
_SPANS += _rules(SGLANG, "multi_layer",
                 ("0.4.4.post2", "0.5.11", "refused",
                  f"sglang {SG_EAGLE3} __init__: ValueError('EAGLE3 currently only supports 1 layer') (CPU run 0.5.11)"),
                 ("0.5.12", None, "supported", f"sglang {SG_EAGLE3} num_hidden_layers layers (v0.5.12 a75b79e03b)"))
_SPANS += _rules(VLLM, "multi_layer",
                 ("0.8.5", "0.11.0", "one-layer",
                  f"vllm 0.11.0 {VL_EAGLE3}: one layer built; layers.1.* raises KeyError (CPU run 0.11.0; 0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                 ("0.11.1", None, "supported",
                  f"vllm 0.11.1 {VL_EAGLE3} LlamaModel.__init__: range(config.num_hidden_layers) layers (CPU run 0.11.1)"))
# ---------------------------------------------------------------- later_layer_norm
_SPANS += _rules(SGLANG, "later_layer_norm",
                 ("0.4.4.post2", None, "hidden_norm",
                  f"sglang {SG_EAGLE3} LlamaDecoderLayer: layers >= 1 use hidden_norm (CPU run 0.5.23)"))
_SPANS += _rules(VLLM, "later_layer_norm",
                 ("0.8.5", None, "input_layernorm", f"vllm {VL_EAGLE3}: layers >= 1 are standard decoder layers"))
# ---------------------------------------------------------------- d2t_present
_SPANS += _rules(SGLANG, "d2t_present",
                 ("0.4.4.post2", None, "offsets",
                  f"sglang {SG_EAGLE3} load_weights: hot_token_id = d2t + arange (substring 'd2t')"))
_SPANS += _rules(VLLM, "d2t_present",
                 ("0.8.5", "0.8.5", "offsets", f"vllm 0.8.5 {VL_EAGLE3} compute_logits: arange + draft_id_to_target_id"),
                 ("0.9.0", "0.9.0.1", "discarded",
                  (f"vllm 0.9.0 {VL_EAGLE3} load_weights: 'd2t' not in loaded_weights (renamed) -> map set to None; "
                   "compute_logits then asserts logits.shape[1] == vocab_size (0.9.0, 0.9.0.1 read)")),
                 ("0.9.1", None, "offsets", f"vllm {VL_EAGLE3} compute_logits: arange + draft_id_to_target_id"))
# ---------------------------------------------------------------- d2t_absent
_SPANS += _rules(SGLANG, "d2t_absent",
                 ("0.4.4.post2", "0.4.8", "crash",
                  f"sglang 0.4.8 {SG_EAGLE3} never sets hot_token_id without d2t: AttributeError in eagle_worker.py"),
                 ("0.4.9", None, "identity",
                  f"sglang 0.4.9 {SG_EAGLE3} hot_token_id = None; speculative/eagle_worker.py checks 'is not None'"))
_SPANS += _rules(VLLM, "d2t_absent",
                 ("0.8.5", "0.8.5.post1", "identity",
                  f"vllm 0.8.5 {VL_EAGLE3} compute_logits: draft_id_to_target_id stays zeros (target = draft id)"),
                 ("0.9.0", "0.9.0.1", "crash",
                  (f"vllm 0.9.0 {VL_EAGLE3} load_weights: no d2t -> draft_id_to_target_id = None; compute_logits "
                   "asserts logits.shape[1] == vocab_size (0.9.0, 0.9.0.1 read)")),
                 ("0.9.1", None, "identity",
                  (f"vllm 0.9.1 {VL_EAGLE3} load_weights skip_substrs 'draft_id_to_target_id': the map stays zeros "
                   "(target = draft id) (0.9.1, 0.9.2, 0.10.0 read)")))
# ---------------------------------------------------------------- d2t_full_vocab
_SPANS += _rules(SGLANG, "d2t_full_vocab",
                 ("0.4.4.post2", None, "offsets", f"sglang {SG_EAGLE3} load_weights: d2t always read"))
_SPANS += _rules(VLLM, "d2t_full_vocab",
                 ("0.8.5", "0.29.0", "offsets", f"vllm 0.29.0 {VL_EAGLE3}: map always a parameter"),
                 ("0.30.0", None, "refused",
                  (f"vllm 0.30.0 {VL_EAGLE3} and model_executor/models/deepseek_eagle3.py (the MLA class, an "
                   "unconditional map parameter before 0.30.0): draft_id_to_target_id = None when draft vocab == vocab; "
                   "a shipped d2t raises 'There is no module or parameter named draft_id_to_target_id' (CPU run 0.32.0)")))
# ---------------------------------------------------------------- draft_vocab_size_missing
_SPANS += _rules(SGLANG, "draft_vocab_size_missing",
                 ("0.4.4.post2", "0.5.4.post1", "vocab_size-if-tied",
                  (f"sglang {SG_EAGLE3} LlamaForCausalLMEagle3.__init__ reads config.draft_vocab_size only when "
                   "tie_word_embeddings is false (tied: lm_head = embed_tokens, LogitsProcessor(config) over "
                   "vocab_size); the transformers config raises AttributeError for the absent key "
                   "(0.4.4.post2, 0.4.9, 0.5.2, 0.5.4.post1 read)")),
                 ("0.5.4.post2", None, "refused",
                  (f"sglang 0.5.4.post2 {SG_EAGLE3} __init__: config_.vocab_size = config_.draft_vocab_size whatever "
                   "tie_word_embeddings: AttributeError (0.5.4.post2, 0.5.11, 0.5.12, 0.5.23 read)")))
_SPANS += _rules(VLLM, "draft_vocab_size_missing",
                 ("0.8.5", "0.10.2", "refused", f"vllm 0.10.1 {VL_EAGLE3} __init__: self.config.draft_vocab_size (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                 ("0.11.0", None, "vocab_size",
                  f"vllm 0.11.0 {VL_EAGLE3} __init__: draft_vocab_size defaults to vocab_size"))
# ---------------------------------------------------------------- draft_vocab_size_null
_SPANS += _rules(SGLANG, "draft_vocab_size_null",
                 ("0.4.4.post2", "0.5.1", "refused", f"sglang {SG_EAGLE3} __init__: lm_head rows = None"),
                 ("0.5.2", None, "target-lm_head",
                  f"sglang {SG_EAGLE3} __init__: load_lm_head_from_target (v0.5.2 aee094e430)"))
_SPANS += _rules(VLLM, "draft_vocab_size_null",
                 ("0.8.5", "0.10.2", "refused", f"vllm 0.10.1 {VL_EAGLE3} __init__: ParallelLMHead(None)"),
                 ("0.11.0", None, "vocab_size", f"vllm 0.11.0 {VL_EAGLE3}: getattr(config, 'draft_vocab_size', None) is None"))
# ---------------------------------------------------------------- aux_id_fields
_SPANS += _rules(SGLANG, "aux_id_fields",
                 ("0.4.4.post2", "0.4.8", (), "sglang v0.4.5 set_eagle3_layers_to_capture() takes no ids"),
                 ("0.4.9", None, ("eagle_config.eagle_aux_hidden_state_layer_ids",),
                  ("sglang 0.4.9 model_executor/model_runner.py ModelRunner.initialize (from 0.5.16 "
                   "model_runner_components/spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state)")))
_SPANS += _rules(VLLM, "aux_id_fields",
                 ("0.8.5", "0.11.0", (), ("vllm 0.11.0: no code reads eagle_aux_hidden_state_layer_ids (CPU run 0.11.0); v1/worker/gpu_model_runner.py "
                   "set_aux_hidden_state_layers(get_eagle3_aux_hidden_state_layers()), the target's defaults (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)")),
                 ("0.11.1", "0.19.1", (TOP_FIELD,),
                  "vllm 0.11.1 v1/worker/gpu_model_runner.py _get_eagle3_aux_layers_from_config (CPU run 0.11.1)"),
                 ("0.20.0", "0.21.0", (TOP_FIELD, "dflash_config.target_layer_ids"),
                  "vllm 0.20.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config: dflash_config.target_layer_ids as-is"),
                 ("0.22.0", "0.22.1", ALL_FIELDS,
                  ("vllm 0.22.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1, still the "
                   "default for Llama targets): dflash_config.target_layer_ids + 1, eagle_config fallback")),
                 ("0.23.0", "0.23.0", (TOP_FIELD,),
                  ("vllm 0.23.0 config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES adds LlamaForCausalLM; model runner "
                   "V2 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config reads the top "
                   "level only")),
                 ("0.24.0", "0.24.0", V2_FIELDS_0_24,
                  "vllm 0.24.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py adds dflash_config.target_layer_ids + 1"),
                 ("0.25.0", "0.26.0", V2_FIELDS_0_25,
                  ("vllm 0.25.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py adds top-level dspark_target_layer_ids "
                   "+ 1 and target_layer_ids + 1 (dense DSpark)")),
                 ("0.27.0", None, V2_FIELDS,
                  ("vllm 0.27.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config adds "
                   "dflash_config.layer_ids and eagle_config.layer_ids (model runner V2: the GPU default when Triton is "
                   "present; from 0.30.0 dspark ids are as-is for model_type deepseek_v41)")))
# ---------------------------------------------------------------- aux_id_fields_other_mode
_SPANS += _rules(SGLANG, "aux_id_fields_other_mode", ("0.4.4.post2", None, None, "sglang spec_aux_hidden_state.py: one aux-id resolver for every runtime mode"))
_SPANS += _rules(VLLM, "aux_id_fields_other_mode",
                 ("0.8.5", "0.21.0", None, "vllm < 0.22: one model runner reads aux ids"),
                 ("0.22.0", "0.22.1", (TOP_FIELD,),
                  "vllm 0.22.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py (model runner V2, opt-in): top level only"),
                 ("0.23.0", None, ALL_FIELDS,
                  ("vllm 0.23.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1: the CPU "
                   "backend, no Triton, or VLLM_USE_V2_MODEL_RUNNER=0) (CPU run 0.32.0); an eagle_config without ids "
                   "there voids dflash_config's")))
# ---------------------------------------------------------------- aux_transform_llama
_SPANS += _rules(SGLANG, "aux_transform_llama",
                 ("0.4.4.post2", None, "+1", "sglang models/llama.py LlamaForCausalLM.set_eagle3_layers_to_capture"))
_SPANS += _rules(VLLM, "aux_transform_llama",
                 ("0.8.5", None, "as-is",
                  ("vllm models/llama.py set_aux_hidden_state_layers (interfaces.py SupportsEagle3 from 0.10.1): "
                   "id k = input of layer k")))
# ---------------------------------------------------------------- aux_transform_deepseek
_SPANS += _rules(SGLANG, "aux_transform_deepseek",
                 ("0.4.4.post2", "0.5.12", "+1", "sglang models/deepseek_v2.py set_eagle3_layers_to_capture"),
                 ("0.5.13", None, "+1-if-first-is-1",
                  "sglang models/deepseek_v2.py set_eagle3_layers_to_capture (v0.5.13 f5049709b3, #25454)"))
_SPANS += _rules(VLLM, "aux_transform_deepseek", ("0.8.5", None, "as-is", "vllm: the same rule for every target"))
# ---------------------------------------------------------------- aux_transform_gpt_oss
_SPANS += _rules(SGLANG, "aux_transform_gpt_oss",
                 ("0.4.4.post2", "0.5.16", "+1", "sglang models/gpt_oss.py set_eagle3_layers_to_capture"),
                 ("0.5.17", None, "+1-unless-max-is-L",
                  "sglang models/gpt_oss.py set_eagle3_layers_to_capture boundary rule (v0.5.17 5df193b4ac, #32334)"))
_SPANS += _rules(VLLM, "aux_transform_gpt_oss", ("0.8.5", None, "as-is", "vllm: the same rule for every target"))
# ---------------------------------------------------------------- capture_range
_SPANS += _rules(SGLANG, "capture_range",
                 ("0.4.4.post2", None, "inner",
                  "sglang models/llama.py LlamaModel.forward: captures before layer i for i in range(L)"))
_SPANS += _rules(VLLM, "capture_range",
                 ("0.8.5", "0.17.0", "inner",
                  "vllm 0.17.0 models/llama.py LlamaModel.forward: capture before layer idx in range(L)"),
                 ("0.18.0", None, "all",
                  "vllm 0.18.0 EagleModelMixin._maybe_add_hidden_state: id 0 = embeddings, id L = final pre-norm"))
# ---------------------------------------------------------------- graph_mode_default_layers
_SPANS += _rules(SGLANG, "graph_mode_default_layers",
                 ("0.4.4.post2", "0.4.8", False, "sglang v0.4.5: configured ids not read at all"),
                 ("0.4.9", "0.5.10", True,
                  ("sglang model_executor/cuda_graph_runner.py set_eagle3_layers_to_capture() before the configured ids "
                   "(fixed v0.5.11 43925d179d, #22836)")),
                 ("0.5.11", None, False, "sglang v0.5.11 43925d179d (#22836)"))
_SPANS += _rules(VLLM, "graph_mode_default_layers", ("0.8.5", None, False, "vllm: one capture set for every mode"))
# ---------------------------------------------------------------- fc_applied
_SPANS += _rules(SGLANG, "fc_applied",
                 ("0.4.4.post2", None, "when-width-differs",
                  f"sglang {SG_EAGLE3} LlamaModel.forward: if hidden_states.shape[-1] != embeds.shape[-1]"))
_SPANS += _rules(VLLM, "fc_applied",
                 ("0.8.5", "0.8.5", "when-width-differs",
                  f"vllm 0.8.5 {VL_EAGLE3} LlamaModel.forward: if hidden_states.shape[-1] != input_embeds.shape[-1]"),
                 ("0.9.0", None, "always", f"vllm 0.9.0 {VL_EAGLE3} combine_hidden_states; forward asserts the width (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"))
# ---------------------------------------------------------------- fc_aux_count
_SPANS += _rules(SGLANG, "fc_aux_count",
                 ("0.4.4.post2", "0.5.11", FcAuxCount.FIXED_3, f"sglang {SG_EAGLE3} LlamaModel.__init__ fc = Linear(target_hidden * 3)"),
                 ("0.5.12", None, FcAuxCount.FROM_CONFIG, f"sglang {SG_EAGLE3} LlamaModel.__init__ num_aux_hidden_states (v0.5.12)"))
_SPANS += _rules(VLLM, "fc_aux_count",
                 ("0.8.5", "0.21.0", FcAuxCount.FIXED_3, f"vllm 0.11.0 {VL_EAGLE3} fc = Linear(target_hidden_size * 3) (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                 ("0.22.0", None, FcAuxCount.FROM_CONFIG,
                  f"vllm 0.22.0 {VL_EAGLE3} num_aux_hidden_states, else len(eagle_config ids), else 3 (vllm#54598)"))
# ---------------------------------------------------------------- fc_bias
_SPANS += _rules(SGLANG, "fc_bias",
                 ("0.4.4.post2", "0.4.8", "always", f"sglang v0.4.4.post2 {SG_EAGLE3} fc = nn.Linear(...) (bias=True default)"),
                 ("0.4.9", None, "config.bias", f"sglang v0.4.9 {SG_EAGLE3} fc bias=getattr(config, 'bias', False)"))
_SPANS += _rules(VLLM, "fc_bias",
                 ("0.8.5", None, "none", f"vllm 0.8.5 {VL_EAGLE3} fc = nn.Linear(..., bias=False); ReplicatedLinear later"))
# ---------------------------------------------------------------- use_aux_hidden_state
_SPANS += _rules(SGLANG, "use_aux_hidden_state",
                 ("0.4.4.post2", "0.5.7", "ignored", "sglang: eagle_config.use_aux_hidden_state read from v0.5.8"),
                 ("0.5.8", None, "honoured",
                  "sglang 0.5.8 model_executor/model_runner.py eagle_use_aux_hidden_state (3dfff6ae3c)"))
_SPANS += _rules(VLLM, "use_aux_hidden_state",
                 ("0.8.5", "0.11.2", "ignored", "vllm < 0.12: use_aux_hidden_state not read"),
                 ("0.12.0", None, "honoured",
                  f"vllm 0.12.0 {VL_EAGLE3}: fc dropped at load, combine_hidden_states returns its input (CPU run 0.32.0)"))
# ---------------------------------------------------------------- norm_before_residual
_SPANS += _rules(SGLANG, "norm_before_residual",
                 ("0.4.4.post2", None, "not-read", f"sglang {SG_EAGLE3} LlamaDecoderLayer.forward: residual = hidden_states"))
_SPANS += _rules(VLLM, "norm_before_residual",
                 ("0.8.5", "0.10.0", "not-read", f"vllm 0.8.5 {VL_EAGLE3} LlamaDecoderLayer.forward: residual = hidden_states (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                 ("0.10.1", None, "read", f"vllm 0.10.1 {VL_EAGLE3} getattr(config, 'norm_before_residual', False)"))
# ---------------------------------------------------------------- norm_before_fc
_SPANS += _rules(SGLANG, "norm_before_fc",
                 ("0.4.4.post2", "0.5.16", "not-read", f"sglang {SG_EAGLE3}: no input_norm before v0.5.17"),
                 ("0.5.17", None, "read", f"sglang {SG_EAGLE3} LlamaModel.__init__ input_norm (v0.5.17)"))
_SPANS += _rules(VLLM, "norm_before_fc",
                 ("0.8.5", "0.17.0", "not-read", "vllm < 0.18: no input_norm (vllm#38111)"),
                 ("0.18.0", "0.18.0", "eagle-format-only",
                  f"vllm 0.18.0 {VL_EAGLE3} input_norm (top-level norm_before_fc); speculators/algos.py drops it"),
                 ("0.19.0", "0.21.0", "top-level", "vllm 0.19.0 speculators/algos.py update_eagle3 copies norm_before_fc"),
                 ("0.22.0", None, "read", f"vllm 0.22.0 {VL_EAGLE3} also reads eagle_config.norm_before_fc"))
# ---------------------------------------------------------------- fc_norm
_SPANS += _rules(SGLANG, "fc_norm",
                 ("0.4.4.post2", "0.5.11", "not-read", f"sglang {SG_EAGLE3}: no fc_norm before v0.5.12"),
                 ("0.5.12", None, "read", f"sglang {SG_EAGLE3} LlamaModel.__init__ fc_norm / use_aux_norm (v0.5.12)"))
_SPANS += _rules(VLLM, "fc_norm",
                 ("0.8.5", "0.21.0", "not-read", "vllm < 0.22: no fc_norm"),
                 ("0.22.0", "0.24.0", "eagle-format-only", f"vllm 0.22.0 {VL_EAGLE3} fc_norm; speculators/algos.py drops it"),
                 ("0.25.0", None, "read", "vllm 0.25.0 speculators/algos.py update_eagle3 propagates fc_norm"))
# ---------------------------------------------------------------- norm_output
_SPANS += _rules(SGLANG, "norm_output",
                 ("0.4.4.post2", "0.5.11", "not-read", f"sglang {SG_EAGLE3}: pre-norm state fed back before v0.5.12"),
                 ("0.5.12", None, "read", f"sglang {SG_EAGLE3} LlamaModel.forward norm_output (v0.5.12)"))
_SPANS += _rules(VLLM, "norm_output",
                 ("0.8.5", "0.21.0", "not-read", "vllm < 0.22: pre-norm state fed back"),
                 ("0.22.0", "0.24.0", "eagle-format-only", f"vllm 0.22.0 {VL_EAGLE3} norm_output; speculators/algos.py drops it"),
                 ("0.25.0", None, "read", "vllm 0.25.0 speculators/algos.py update_eagle3 propagates norm_output"))
# ---------------------------------------------------------------- embed_source
_SPANS += _rules(SGLANG, "embed_source",
                 ("0.4.4.post2", None, "target-unless-hidden-differs",
                  ("sglang speculative/eagle_worker.py __init__ (eagle_worker_v2.py init_lm_head from 0.5.8) set_embed; "
                   "models/llama.py set_embed skips when target_hidden_size != hidden_size")))
_SPANS += _rules(VLLM, "embed_source",
                 ("0.8.5", "0.8.5", "target-if-absent", "vllm 0.8.5 v1/spec_decode/eagle.py load_model"),
                 ("0.9.0", "0.9.0.1", "target-always-key-raises",
                  ("vllm 0.9.0 llama_eagle3.py: no embed_tokens module when PP == 1 (vllm#18906 KeyError); 0.9.0.1 "
                   "v1/spec_decode/eagle.py load_model the same (0.9.0, 0.9.0.1 read)")),
                 ("0.9.1", "0.11.0", "target-if-same-shape",
                  "vllm 0.9.1-0.11.0 v1/spec_decode/eagle.py load_model: shared when the shapes match"),
                 ("0.11.1", None, "target-if-absent-or-equal",
                  ("vllm 0.11.1 v1/spec_decode/eagle.py load_model has_own_embed_tokens (vllm#28549; CPU run 0.11.1); "
                   "0.33 _maybe_share_embeddings")))
# ---------------------------------------------------------------- draft_extend_logits_buffer
_SPANS += _rules(SGLANG, "draft_extend_logits_buffer",
                 ("0.4.4.post2", "0.4.10", "none",
                  "sglang speculative/eagle_draft_extend_cuda_graph_runner.py: no logits buffer (0.4.8, 0.4.10 read)"),
                 ("0.5.1", "0.5.14", "draft-vocab",
                  ("sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__: "
                   "next_token_logits_buffer = zeros(max_bs, draft_vocab_size); layers/logits_processor.py "
                   "_copy_logits_to_buffer copies the ParallelLMHead output (draft_vocab_size padded to 64) into it "
                   "(0.5.1, 0.5.2, 0.5.7, 0.5.11, 0.5.14 read; sgl-project/sglang#10106)")),
                 ("0.5.15", None, "shape-checked",
                  ("sglang 0.5.15 layers/logits_processor.py _copy_logits_to_buffer: the buffer is skipped when its shape "
                   "differs (0.5.15-0.5.23 read)")))
_SPANS += _rules(VLLM, "draft_extend_logits_buffer",
                 ("0.8.5", None, "none", "vllm v1/spec_decode/eagle.py: logits are not copied into a CUDA-graph buffer"))
# ---------------------------------------------------------------- draft_extend_graph_width
_SPANS += _rules(SGLANG, "draft_extend_graph_width",
                 ("0.4.4.post2", "0.4.9", "draft-hidden",
                  ("sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__: "
                   "hidden_states = zeros(max_num_token, hidden_size * 3) (0.4.7, 0.4.8, 0.4.9 read)")),
                 ("0.4.10", "0.5.11", "target-hidden",
                  ("sglang 0.4.10 eagle_draft_extend_cuda_graph_runner.py: target_hidden_size * 3 when the config has it "
                   "(sgl-project/sglang#8163, fixes #7011; 0.5.11 read)")),
                 ("0.5.12", "0.5.14", "target-config-x3",
                  ("sglang 0.5.12 speculative/eagle_info.py EagleDraftExtendInput.hidden_size_for: num_aux and "
                   "target_hidden_size read from worker.target_worker.model_runner.model_config.hf_config (the TARGET's "
                   "config, which has neither: 3 x its hidden_size); eagle_draft_extend_cuda_graph_runner.py __init__ "
                   "sizes hidden_states with it, while llama_eagle3.py fc takes num_aux_hidden_states states "
                   "(0.5.12, 0.5.13, 0.5.13.post1, 0.5.14 read)")),
                 ("0.5.15", None, "draft-aux-count",
                  ("sglang 0.5.15 speculative/eagle_utils.py get_draft_input_from_target_hidden_dim: target_hidden_size x "
                   "num_aux_hidden_states (else len(eagle_config ids), else 3) of the draft model_runner's config "
                   "(0.5.15, 0.5.23 read)")))
_SPANS += _rules(VLLM, "draft_extend_graph_width",
                 ("0.8.5", None, "target-hidden",
                  ("vllm v1/spec_decode/eagle.py EagleProposer: fc (combine_hidden_states) runs before the draft-width "
                   "buffers (0.9.2-0.32.0 read)")))
# ---------------------------------------------------------------- embed_width_check
_SPANS += _rules(SGLANG, "embed_width_check",
                 ("0.4.4.post2", None, "uninitialised",
                  "sglang models/llama.py LlamaForCausalLM.set_embed returns when target_hidden_size != hidden_size"))
_SPANS += _rules(VLLM, "embed_width_check",
                 ("0.8.5", "0.9.0.1", "target-width",
                  ("vllm 0.8.5 v1/spec_decode/eagle.py load_model: the target's embed_tokens when the checkpoint has "
                   "none, whatever the width; 0.9.0, 0.9.0.1: the target's always at PP == 1 (vllm#18906: assert "
                   "hidden_states.shape[-1] == input_embeds.shape[-1]) (0.8.5, 0.8.5.post1, 0.9.0, 0.9.0.1 read)")),
                 ("0.9.1", "0.11.0", "uninitialised",
                  ("vllm 0.9.1 v1/spec_decode/eagle.py load_model: shared only when the embed_tokens.weight shapes match; "
                   "llama_eagle3.py load_weights skip_substrs 'embed_tokens' when the checkpoint has none, so a draft of "
                   "another width keeps a random one (0.9.1, 0.9.2, 0.10.0, 0.10.1, 0.10.1.1, 0.10.2, 0.11.0 read)")),
                 ("0.11.1", "0.24.0", "target-width",
                  ("vllm 0.24.0 v1/spec_decode/llm_base_proposer.py _maybe_share_embeddings: shared whenever the checkpoint "
                   "has no embed_tokens, whatever the width (0.11.0 eagle.py load_model: by shape)")),
                 ("0.25.0", None, "uninitialised",
                  ("vllm 0.25.0 llm_base_proposer.py _maybe_share_embeddings: 'Target embedding dim (%d) differs from "
                   "draft embedding dim (%d). Keeping separate embedding weights.' (0.25.0-0.32.0 read)")))
# ---------------------------------------------------------------- lm_head_source
_SPANS += _rules(SGLANG, "lm_head_source",
                 ("0.4.4.post2", None, "draft", f"sglang {SG_EAGLE3}: own lm_head [draft_vocab_size, hidden]"))
_SPANS += _rules(VLLM, "lm_head_source",
                 ("0.8.5", "0.10.2", "draft", "vllm 0.10.1 v1/spec_decode/eagle.py load_model: lm_head not shared for eagle3 (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
                 ("0.11.0", "0.11.0", "target-if-same-shape",
                  "vllm 0.11.0 v1/spec_decode/eagle.py load_model: target lm_head when the shapes match"),
                 ("0.11.1", None, "target-if-absent-or-equal",
                  ("vllm 0.11.1 v1/spec_decode/eagle.py load_model has_own_lm_head (vllm#28549; CPU run 0.11.1); 0.33 "
                   "llm_base_proposer._maybe_share_lm_head")))
# ---------------------------------------------------------------- mtp_model_types
_SPANS += _rules(SGLANG, "mtp_model_types",
                 ("0.4.4.post2", None, (),
                  "sglang configs/model_config.py rewrites MTP/NextN draft architectures by name, never by model_type"))
_SPANS += _rules(VLLM, "mtp_model_types",
                 ("0.8.5", None, ("deepseek_v3", "deepseek_v32", "glm_moe_dsa"),
                  ("vllm config/speculative.py SpeculativeConfig.hf_config_override: model_type deepseek_v3 / deepseek_v32 "
                   "/ glm_moe_dsa -> deepseek_mtp, architectures DeepSeekMTPModel, whatever the method (0.18.0, 0.22.0, "
                   "0.28.0, 0.32.0 read, earlier assumed; CPU run 0.24.0: \"Model architectures ['Eagle3DeepSeekMTPModel'] "
                   "are not supported\")")))
# ---------------------------------------------------------------- mla_rope
_SPANS += _rules(SGLANG, "mla_rope",
                 ("0.4.4.post2", None, "as-configured",
                  ("sglang models/kimi_k25_eagle3.py Eagle3MLADecoderLayer.__init__: rope_scaling = rope_parameters unless "
                   "rope_type is default (0.5.12, 0.5.23 read; CPU run 0.5.23)")))
_SPANS += _rules(VLLM, "mla_rope",
                 ("0.8.5", "0.17.0", "as-configured", "vllm < 0.18: no MLA draft class"),
                 ("0.18.0", "0.27.0", "forced-yarn",
                  ("vllm 0.18.0 model_executor/models/deepseek_eagle3.py DeepseekV2Eagle3DecoderLayer.__init__: "
                   "if rope_scaling: rope_type = 'deepseek_yarn', and get_rope reads factor and "
                   "original_max_position_embeddings; under transformers >= 5 rope_scaling is always set "
                   "(0.18.0-0.27.0 read; CPU runs 0.20.0-0.26.0: KeyError 'factor')")),
                 ("0.28.0", None, "as-configured",
                  "vllm 0.28.0 deepseek_eagle3.py: the draft config's rope_parameters as they are (0.28.0-0.32.0 read)"))
# ---------------------------------------------------------------- draft_rope
_SPANS += _rules(SGLANG, "draft_rope",
                 ("0.4.4.post2", None, "config",
                  ("sglang models/llama.py LlamaDecoderLayer: rope_theta / rope_scaling (rope_parameters) of the draft "
                   "config; llama_eagle3.py LlamaDecoderLayer subclasses it (0.5.11, 0.5.23 read)")))
_SPANS += _rules(VLLM, "draft_rope",
               ("0.8.5", None, "config",
                ("vllm model_executor/models/llama.py LlamaAttention: get_rope(rope_theta / rope_scaling, from 0.2x "
                 "rope_parameters) of the draft config; llama_eagle3.py layers subclass it (0.11.0, 0.32.0 read)")))
# ---------------------------------------------------------------- first_layer_hidden_path
_SPANS += _rules(SGLANG, "first_layer_hidden_path",
                 ("0.4.4.post2", None, "hidden_norm",
                  (f"sglang {SG_EAGLE3} LlamaDecoderLayer.forward, layer 0: hidden_norm(hidden_states), input_layernorm "
                   "on the embeddings only (0.5.11, 0.5.23 read)")))
_SPANS += _rules(VLLM, "first_layer_hidden_path",
                 ("0.8.5", None, "hidden_norm",
                  (f"vllm {VL_EAGLE3} LlamaDecoderLayer.forward, layer 0: hidden_norm(hidden_states), input_layernorm on "
                   "the embeddings only (0.11.0, 0.32.0 read)")))
# ---------------------------------------------------------------- mlp_width
_SPANS += _rules(SGLANG, "mlp_width",
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
_SPANS += _rules(VLLM, "mlp_width",
                 ("0.8.5", None, "intermediate_size",
                  (f"vllm model_executor/models/llama.py LlamaDecoderLayer.__init__: LlamaMLP(config.intermediate_size); "
                   f"{VL_EAGLE3} builds every model_type with it (no intermediate_size_mlp read; EagleLlama4ForCausalLM is "
                   "EAGLE-1) (0.8.5, 0.32.0 read)")))
# ---------------------------------------------------------------- layer_bias
_SPANS += _rules(SGLANG, "layer_bias",
                 ("0.4.4.post2", None, "o_proj",
                  ("sglang models/llama.py LlamaDecoderLayer.__init__: attention_bias = config.attention_bias or "
                   f"config.bias gives LlamaAttention's o_proj a bias; {SG_EAGLE3} LlamaDecoderLayer overrides qkv_proj "
                   "with bias=False and builds LlamaMLP without bias (0.4.4.post2, 0.4.9, 0.5.1, 0.5.12, 0.5.23 read)")))
_SPANS += _rules(VLLM, "layer_bias",
                 ("0.8.5", "0.15.1", "o_proj+mlp",
                  ("vllm model_executor/models/llama.py LlamaDecoderLayer.__init__: bias_o_proj = attention_bias or "
                   "bias, LlamaMLP(bias=mlp_bias); llama_eagle3.py LlamaDecoderLayer overrides qkv_proj with bias=False "
                   "(0.8.5-0.15.1 read)")),
                 ("0.16.0", None, "qkv+o_proj+mlp",
                  (f"vllm 0.16.0 {VL_EAGLE3} LlamaDecoderLayer.__init__: qkv_proj bias=getattr(config, "
                   "'attention_bias', False) ('Parallel drafting checkpoints may have attention bias enabled'); "
                   "qwen3_eagle3.py the same for qkv_proj, o_proj and MLP without bias (0.16.0-0.33.0 read)")))
# ---------------------------------------------------------------- unset_bias
_SPANS += _rules(SGLANG, "unset_bias",
                 ("0.4.4.post2", "0.5.8", "empty",
                  ("sglang layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: self.bias = "
                   "Parameter(torch.empty(...)) (0.4.4.post2-0.5.8 read)")),
                 ("0.5.9", None, "zeros",
                  ("sglang 0.5.9 layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: "
                   "Parameter(torch.zeros(...)) (0.5.9-0.5.23 read)")))
_SPANS += _rules(VLLM, "unset_bias",
                 ("0.8.5", None, "empty",
                  ("vllm model_executor/layers/linear.py ColumnParallelLinear / RowParallelLinear.__init__: "
                   "self.bias = Parameter(torch.empty(...)) (0.8.5-0.33.0 read)")))
# ---------------------------------------------------------------- unloaded_parameter
_SPANS += _rules(SGLANG, "unloaded_parameter",
                 ("0.4.4.post2", None, "kept",
                  ("sglang model_loader/loader.py DefaultModelLoader.load_model: model.load_weights, no check of the "
                   "parameters left unloaded (0.4.4.post2, 0.5.9, 0.5.23 read)")))
_SPANS += _rules(VLLM, "unloaded_parameter",
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
_SPANS += _rules(SGLANG, "weight_files",
                 ("0.4.4.post2", None, "all-safetensors",
                  ("sglang model_loader/loader.py DefaultModelLoader._prepare_weights: the same globbing "
                   "(0.5.11, 0.5.23 read)")))
_SPANS += _rules(VLLM, "weight_files",
                 ("0.8.5", None, "all-safetensors",
                  ("vllm model_executor/model_loader/default_loader.py DefaultModelLoader._prepare_weights: glob "
                   "*.safetensors, filtered only by model.safetensors.index.json; *.bin minus "
                   "weight_utils.filter_files_not_needed_for_inference (0.11.0, 0.32.0 read)")))

# ---------------------------------------------------------------- draft_positions
_SPANS += _rules(SGLANG, "draft_positions",
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
_SPANS += _rules(VLLM, "draft_positions",
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
_SPANS += _rules(SGLANG, "target_quantization",
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
_SPANS += _rules(VLLM, "target_quantization",
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
_SPANS += _rules(SGLANG, "draft_sliding_window",
                 ("0.4.4.post2", "0.5.11", "none",
                  (f"sglang models/llama.py LlamaAttention and {SG_EAGLE3}: no sliding_window / layer_types read "
                   "(grep over 0.4.4.post2-0.5.11)")),
                 ("0.5.12", None, "server-flag",
                  (f"sglang 0.5.12 {SG_EAGLE3} LlamaForCausalLMEagle3.__init__: only --speculative-draft-window-size "
                   "sets the draft layers' sliding_window_size; the config's fields are not read (0.5.12-0.5.23 read)")))
_SPANS += _rules(VLLM, "draft_sliding_window",
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
_SPANS += _rules(SGLANG, "draft_dtype",
                 ("0.4.4.post2", None, "draft-config",
                  ("sglang configs/model_config.py _get_and_verify_dtype(draft hf_config, server_args.dtype): under "
                   "--dtype auto (the default) the draft's own dtype/torch_dtype, float32 or absent -> float16; no "
                   "cast of the target's hidden states (0.5.23 eagle_draft_extend_cuda_graph_runner.py: 'the draft "
                   "dtype matches the target dtype'; SpecForge#348: the draft worker fails with 'expected mat1 and "
                   "mat2 to have the same dtype') (0.4.4.post2, 0.5.1, 0.5.10, 0.5.23 read)")))
_SPANS += _rules(VLLM, "draft_dtype",
                 ("0.8.5", None, "target",
                  ("vllm config/speculative.py SpeculativeConfig: draft ModelConfig(dtype=self.target_model_config.dtype)"
                   "; the loader casts the draft's tensors (0.8.5, 0.11.0, 0.20.0, 0.27.0, 0.33.0 read)")))


def _tables() -> dict[str, Table[Any]]:
    grouped: dict[str, list[Rule]] = {name: [] for name in BEHAVIOURS}
    for behaviour, row in _SPANS:
        if behaviour not in grouped:
            raise TableError(f"a rule for {behaviour!r}, which BEHAVIOURS does not describe")
        grouped[behaviour].append(row)
    grouped["architectures"] = list(draft_classes.accepted_rows())
    for behaviour, rows in grouped.items():
        for row in rows:
            if not value_fits(row.value, VALUES[behaviour]):
                raise TableError(f"{behaviour} {row.engine} {row.since}: {row.value!r} is not one of {VALUES[behaviour]}")
    return {name: table(name, rows, description=BEHAVIOURS[name]) for name, rows in grouped.items()}


#: One table per behaviour, every engine's rows in it.
TABLES: dict[str, Table[Any]] = _tables()
#: Every row of every behaviour, as ``(behaviour, row)``.
RULES: tuple[tuple[str, Rule], ...] = tuple((name, row) for name, t in TABLES.items() for row in t.rows)


@dataclass(frozen=True)
class Profile:
    """One engine version's behaviours, each with the row (and source) it came from."""

    target: EngineVersion
    rules: dict[str, Rule]

    @property
    def engine(self) -> str:
        return self.target.engine

    @property
    def version(self) -> Version:
        return self.target.version

    @property
    def label(self) -> str:
        return self.target.label

    def value(self, behaviour: str) -> Any:
        return self.rules[behaviour].value

    def source(self, behaviour: str) -> str:
        return TABLES[behaviour].label(self.rules[behaviour])

    def at_least(self, version: str) -> bool:
        return self.version >= Version(version)


def rule_for(engine: str, behaviour: str, version: Version) -> Rule:
    """The row in force at ``version``: the one with the latest ``since`` not after it."""
    return TABLES[behaviour].at(EngineVersion(engine, version))


@cache
def profile(target: EngineVersion) -> Profile:
    """The profile of one engine version."""
    return Profile(target, {name: t.at(target) for name, t in TABLES.items()})


def segment_starts(engine: str) -> tuple[Version, ...]:
    """The first version of every range over which all of an engine's behaviours stay constant."""
    return tuple(sorted({v for t in TABLES.values() for v in t.starts(engine)}))
