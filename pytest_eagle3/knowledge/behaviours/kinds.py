"""The behaviours of one engine version: a typed, frozen record (one field per behaviour), what each means.

:class:`Behaviours` is the type: a misspelt behaviour or a value outside its field's type fails
``mypy --strict``, and the tables are checked against the same type hints when built
(:func:`value_fits`). :data:`BEHAVIOURS` says what each behaviour means (docs and tests print it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from pytest_eagle3.knowledge.engines.shared import AuxField as AuxField  # written by the engines' rows
from pytest_eagle3.knowledge.engines.shared import FcAuxCount as FcAuxCount
from pytest_eagle3.knowledge.engines.shared import Transform

Names = tuple[str, ...]
Renames = tuple[tuple[str, str], ...]
Read = Literal["not-read", "read", "eagle-format-only", "top-level"]
AuxTransform = Transform
AuxFields = tuple[AuxField, ...]
Sharing = Literal["draft", "target-unless-hidden-differs", "target-if-absent", "target-always-key-raises",
                  "target-if-same-shape", "target-if-absent-or-equal", "target-if-absent-or-equal-unpacked",
                  "target-if-same-shape-required", "draft-else-embed",
                  "target-always"]
Refusal = Literal["refused", "vocab_size", "vocab_size-if-tied", "target-lm_head"]


@dataclass(frozen=True)
class Behaviours:
    """What one engine version does, one field per behaviour (its meaning: :data:`BEHAVIOURS`)."""

    architectures: Names | Literal["*"]
    arch_rewrite: Literal["none", "prefix-unless-starts", "prefix-unless-starts-or-ends", "nextn-unless-eagle"]
    speculators_format: bool
    speculators_model_types: Names
    key_prefix: Literal["add-model", "optional-model", "add-model-except-lm_head", "as-is"]
    first_layer: Literal["midlayer", "layers"]
    renames: Renames
    unknown_key: Literal["warn-or-raise-stacked", "drop", "raise", "raise-except-bias", "raise-strict",
                         "raise-param-path", "raise-can-not-map"]
    multi_layer: Literal["refused", "one-layer", "supported"]
    later_layer_norm: Literal["hidden_norm", "input_layernorm"]
    d2t_present: Literal["offsets", "discarded", "offsets-checked"]
    d2t_absent: Literal["crash", "identity", "zeros"]
    d2t_full_vocab: Literal["offsets", "refused", "ignored"]
    draft_vocab_size_missing: Refusal
    draft_vocab_size_null: Refusal
    aux_id_fields: AuxFields
    aux_id_fields_other_mode: AuxFields | None
    aux_transform_llama: AuxTransform
    aux_transform_deepseek: AuxTransform
    aux_transform_gpt_oss: AuxTransform
    capture_range: Literal["inner", "all", "outputs", "inner-final"]
    graph_mode_default_layers: bool
    fc_applied: Literal["when-width-differs", "always"]
    fc_aux_count: FcAuxCount
    fc_bias: Literal["always", "config.bias", "none"]
    use_aux_hidden_state: Literal["ignored", "honoured"]
    norm_before_residual: Read
    norm_before_fc: Read
    fc_norm: Read
    norm_output: Read
    embed_source: Sharing
    draft_extend_logits_buffer: Literal["none", "draft-vocab", "shape-checked"]
    draft_extend_graph_width: Literal["draft-hidden", "target-hidden", "target-config-x3", "draft-aux-count"]
    embed_width_check: Literal["target-width", "uninitialised"]
    lm_head_source: Sharing
    mtp_model_types: Names
    mla_rope: Literal["as-configured", "yarn-if-set", "forced-yarn"]
    draft_rope: Literal["config"]
    first_layer_hidden_path: Literal["hidden_norm"]
    mlp_width: Literal["intermediate_size", "intermediate_size_mlp-if-llama4_text", "intermediate_size_mlp-if-llama4_text-padded"]
    layer_bias: Literal["o_proj", "o_proj+mlp", "qkv+o_proj+mlp", "qkv+o_proj",
                        "none"]
    unset_bias: Literal["empty", "zeros"]
    unloaded_parameter: Literal["kept", "refused"]
    weight_files: Literal["all-safetensors"]
    draft_positions: Literal["reads-past", "skips-drafting", "raised", "raised-or-limited", "warns-reads-past", "refuses", "refuses-or-raises",
                             "unbounded"]
    target_quantization: Literal["none", "target", "draft", "server-flag", "server-flag-or-draft-flag"]
    draft_sliding_window: Literal["none", "interleaved-only", "layer-types-at-target-index", "layer-types", "server-flag"]
    draft_dtype: Literal["target", "draft-config", "draft-config-unchecked", "cast-to-draft", "gguf-f32", "promoted"]
    aux_default: Literal["target-layers", "draft-layers", "launch-setting"]

    def aux_transform(self, family: str) -> AuxTransform:
        """The aux-id transform for a target family (``llama``, ``deepseek``, ``gpt_oss``)."""
        if family == "deepseek":
            return self.aux_transform_deepseek
        if family == "gpt_oss":
            return self.aux_transform_gpt_oss
        return self.aux_transform_llama

    def read(self, name: ReadBehaviour) -> Read:
        """One of the norm flags' :data:`Read` behaviours, by name."""
        value: Read = getattr(self, name)
        return value


#: A behaviour's name: mypy rejects a misspelt one.
BehaviourName = Literal[
    "architectures",
    "arch_rewrite",
    "speculators_format",
    "speculators_model_types",
    "key_prefix",
    "first_layer",
    "renames",
    "unknown_key",
    "multi_layer",
    "later_layer_norm",
    "d2t_present",
    "d2t_absent",
    "d2t_full_vocab",
    "draft_vocab_size_missing",
    "draft_vocab_size_null",
    "aux_id_fields",
    "aux_id_fields_other_mode",
    "aux_transform_llama",
    "aux_transform_deepseek",
    "aux_transform_gpt_oss",
    "capture_range",
    "graph_mode_default_layers",
    "fc_applied",
    "fc_aux_count",
    "fc_bias",
    "use_aux_hidden_state",
    "norm_before_residual",
    "norm_before_fc",
    "fc_norm",
    "norm_output",
    "embed_source",
    "draft_extend_logits_buffer",
    "draft_extend_graph_width",
    "embed_width_check",
    "lm_head_source",
    "mtp_model_types",
    "mla_rope",
    "draft_rope",
    "first_layer_hidden_path",
    "mlp_width",
    "layer_bias",
    "unset_bias",
    "unloaded_parameter",
    "weight_files",
    "draft_positions",
    "target_quantization",
    "draft_sliding_window",
    "draft_dtype",
    "aux_default",
]
#: The behaviours whose value is a :data:`Read`.
ReadBehaviour = Literal["norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"]

READ_BEHAVIOURS: tuple[ReadBehaviour, ...] = get_args(ReadBehaviour)


def read_behaviour(name: str) -> ReadBehaviour:
    """``name`` as one of the norm flags' behaviour names; KeyError for any other name."""
    for known in READ_BEHAVIOURS:
        if known == name:
            return known
    raise KeyError(f"{name!r} is not a norm-flag behaviour ({', '.join(READ_BEHAVIOURS)})")


#: The behaviours' names, in field order.
NAMES: tuple[BehaviourName, ...] = get_args(BehaviourName)
#: The type each behaviour's value has (from :class:`Behaviours`' annotations).
VALUES: dict[str, Any] = get_type_hints(Behaviours)

#: What each behaviour means and which values it takes.
BEHAVIOURS: dict[str, str] = {
    "architectures": "draft architectures the engine builds an EAGLE-3 draft for ('*' = field ignored)",
    "arch_rewrite": "how the engine rewrites the config's architecture name before lookup",
    "speculators_format": "whether a speculators-format config (speculators_model_type) is understood",
    "speculators_model_types": "transformer_layer_config.model_type values a speculators config may have",
    "key_prefix": "how checkpoint names get the draft module prefix ('model.')",
    "first_layer": "the module the first draft layer lives in: midlayer or layers.0",
    "renames": "substring renames applied to checkpoint names before lookup",
    "unknown_key": ("what happens to a checkpoint tensor with no matching parameter (raise-*: refused, each with the "
                    "engine's own words)"),
    "multi_layer": "whether drafts with num_hidden_layers > 1 are built",
    "later_layer_norm": "the norm layers >= 1 apply to their input",
    "d2t_present": ("how a shipped d2t is used: offsets / discarded / offsets-checked (made absolute at conversion; "
                    "an id outside the target vocab or a repeated one is refused)"),
    "d2t_absent": ("what an absent d2t means: crash / identity (draft ids are target ids) / zeros (the map stays "
                   "all zeros: every draft token becomes target id 0, full vocab or not)"),
    "d2t_full_vocab": ("what a d2t does when draft_vocab_size == vocab_size: offsets / refused / ignored (no d2t "
                       "parameter; the shipped tensor is never read)"),
    "draft_vocab_size_missing": "what a config without draft_vocab_size leads to",
    "draft_vocab_size_null": "what draft_vocab_size: null leads to",
    "aux_id_fields": "draft-config fields the target side reads aux layer ids from, in order",
    "aux_id_fields_other_mode": "the same for the engine's other runtime mode, when it differs",
    "aux_transform_llama": "how Llama/Qwen-family targets turn ids into captured layer inputs",
    "aux_transform_deepseek": "how DeepSeek-family targets turn ids into captured layer inputs",
    "aux_transform_gpt_oss": "how gpt-oss targets turn ids into captured layer inputs",
    "capture_range": ("which captured layer-input indices fire: 'inner' = 1..L-1, 'all' = 0..L; for target classes "
                      "whose loop the reach scan did not read (knowledge/reach.py has the rest, per class); 'outputs' = "
                      "1..L (each layer's output, the last one's too; 0 never fires)"),
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
    "mla_rope": ("how the MLA draft class builds its rope: yarn-if-set (DeepSeek YaRN when rope_scaling is set, "
                 "which needs factor and original_max_position_embeddings) / forced-yarn (the same, and transformers 5 "
                 "always sets it) / as-configured"),
    "draft_rope": "the rope the draft layers apply: config (the draft config's rope_theta and rope_scaling)",
    "first_layer_hidden_path": "what the first draft layer applies to the fc output before attention: hidden_norm",
    "mlp_width": ("the config field the draft's MLP width comes from: intermediate_size / "
                  "intermediate_size_mlp-if-llama4_text (model_type llama4_text: intermediate_size_mlp, whose "
                  "Llama4TextConfig default is 16384; narrower MLP tensors fail the loader's narrow) / "
                  "intermediate_size_mlp-if-llama4_text-padded (the same, narrower tensors zero-padded on GPU)"),
    "layer_bias": ("the bias parameters the draft's decoder layers build from its config: o_proj (o_proj.bias when "
                   "attention_bias or bias is true) / o_proj+mlp (also gate_up_proj / down_proj bias when mlp_bias is "
                   "true) / qkv+o_proj+mlp (also qkv_proj bias when attention_bias is true) / none (no bias, whatever the "
                   "config)"),
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
    "draft_dtype": ("the dtype the draft runs in and what a target of another dtype does to its fc: target (the "
                    "target's, whatever the draft config says) / draft-config (the draft's own config under --dtype "
                    "auto: float32 or absent becomes float16; the fc's matmul raises on the target's other dtype) / "
                    "draft-config-unchecked (the draft's own config's dtype; whether the fc raises on another dtype "
                    "is in a kernel not read) / cast-to-draft (the draft's own dtype; the target's hidden states are "
                    "cast to it before the fc) / gguf-f32 (the converter's --outtype; the fc multiplies F32 "
                    "activations, whatever the weights' type) / promoted (the tensors as stored; a matmul of two "
                    "dtypes promotes, MLX: float16 x bfloat16 -> float32)"),
    "aux_default": ("whose layer count the default aux ids (2, n//2, n-3) come from when the config names none: "
                    "target-layers (the target's) / draft-layers (the draft's own num_hidden_layers: [2, 0, 0] for a "
                    "one-layer draft) / launch-setting (the draft config's ids are not read: a launch setting names "
                    "the layers, TensorRT-LLM's speculative_config.eagle3_layers_to_capture, else the target's)"),
}

if NAMES != tuple(f.name for f in fields(Behaviours)) or set(BEHAVIOURS) != set(NAMES):
    raise TypeError("BehaviourName, BEHAVIOURS and the fields of Behaviours must name the same behaviours")


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
