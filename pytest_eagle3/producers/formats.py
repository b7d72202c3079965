"""Producer formats: which trainer wrote a checkpoint, and its config in one normalised shape.

Every rule below is data with a source line; ``../reference/producers.md`` §5 summarises them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPECULATORS = "speculators"
SPECFORGE = "specforge"
EAGLE = "eagle"
MODELOPT = "modelopt"
ANGELSLIM = "angelslim"
TORCHSPEC = "torchspec"
DEEPSPEC = "deepspec"
UNKNOWN = "unknown"

INPUT_OF = "input-of"
OUTPUT_OF = "output-of"
CONVENTIONS = (INPUT_OF, OUTPUT_OF)

FIRST_LAYER_PREFIXES = ("midlayer.", "layers.0.", "model.midlayer.", "model.layers.0.")
LAYER_KEY = re.compile(r"^(?:model\.)?layers\.(\d+)\.")
LEFTOVER_PREFIXES = ("draft_model.", "eagle_module.", "module.")

Config = Mapping[str, Any]
Signal = Callable[[Config, set[str], tuple[Path, ...]], bool]


@dataclass(frozen=True)
class FormatSignal:
    """One observation that points at a producer, with its weight and where the rule comes from."""

    producer: str
    weight: int
    evidence: str
    test: Signal
    source: str


def _arch(config: Config) -> tuple[str, ...]:
    value = config.get("architectures")
    return tuple(str(a) for a in value) if isinstance(value, list) else ()


def eagle_config(config: Config) -> Mapping[str, Any]:
    """The nested ``eagle_config`` object (SpecForge, ModelOpt, AngelSlim configs), empty when absent."""
    value = config.get("eagle_config")
    return value if isinstance(value, dict) else {}


def lookup(config: Config, field: str) -> Any:
    """A dotted field (``eagle_config.x``, ``dflash_config.x``: a key of a nested object) or a top-level
    one; None when absent."""
    section, _, name = field.rpartition(".")
    if section:
        nested = config.get(section)
        return nested.get(name) if isinstance(nested, dict) else None
    return config.get(field)


#: Top-level keys that mark a speculators config. Source: speculators 0.9.0 config.py SpeculatorModelConfig.
SPECULATORS_MARKERS = ("speculators_model_type", "speculators_config")


def is_speculators(config: Config) -> bool:
    return any(key in config for key in SPECULATORS_MARKERS)


#: The default aux layers when a config names none: inputs of layers 2, L//2 and L-3 (no +1), the same in
#: both engines and in the producers that follow them. Source: sglang models/llama.py
#: set_eagle3_layers_to_capture, vllm model_executor/models/interfaces.py
#: get_eagle3_default_aux_hidden_state_layers, EAGLE traineagle3 modeling_llama_kv.py.
DEFAULT_AUX_RULE = "inputs of layers 2, L//2, L-3"


def default_aux_inputs(layers: int) -> tuple[int, ...]:
    """The default aux layers (see :data:`DEFAULT_AUX_RULE`) as layer-input indices, for ``layers`` layers."""
    return (2, layers // 2, layers - 3)


def _has_prefix(keys: set[str], prefix: str) -> bool:
    return any(k.startswith((prefix, "model." + prefix)) for k in keys)


MODELOPT_EAGLE_CONFIG_KEYS = frozenset(
    {
        "use_input_layernorm_in_first_layer",
        "use_last_layernorm",
        "use_mtp_layernorm",
        "next_layer_regular",
        "parallel_draft_step",
        "parallel_draft_heads_num_layers",
    }
)

FORMAT_SIGNALS: tuple[FormatSignal, ...] = (
    FormatSignal(SPECULATORS, 10, "config has speculators_model_type / speculators_config",
                 lambda c, k, f: is_speculators(c),
                 "speculators 0.9.0 models/eagle3/config.py Eagle3SpeculatorConfig"),
    FormatSignal(SPECULATORS, 5, "config nests the layer config in transformer_layer_config",
                 lambda c, k, f: isinstance(c.get("transformer_layer_config"), dict),
                 "speculators 0.9.0 Eagle3SpeculatorConfig.transformer_layer_config"),
    FormatSignal(MODELOPT, 10, "eagle_config carries ModelOpt's layer-norm switches",
                 lambda c, k, f: bool(MODELOPT_EAGLE_CONFIG_KEYS & set(eagle_config(c))),
                 "ModelOpt export/plugins/hf_spec_configs.py llama_eagle_template_config"),
    FormatSignal(MODELOPT, 3, "layers.0.* keys with d2t and no t2d",
                 lambda c, k, f: _has_prefix(k, "layers.0.") and "d2t" in k and "t2d" not in k,
                 "ModelOpt export/plugins/hf_spec_export.py EagleExporter (no t2d)"),
    FormatSignal(ANGELSLIM, 10, "architectures Eagle3LlamaForCausalLM, or target_model_type / modal_type in config",
                 lambda c, k, f: "Eagle3LlamaForCausalLM" in _arch(c) or "target_model_type" in c or "modal_type" in c,
                 "AngelSlim train/configs/*-eagle3.json (qwen3-vl-4b-eagle3-mrope.json: modal_type)"),
    FormatSignal(EAGLE, 8, "plain LlamaForCausalLM architecture with draft_vocab_size and midlayer.* keys",
                 lambda c, k, f: _arch(c) == ("LlamaForCausalLM",) and "draft_vocab_size" in c
                 and _has_prefix(k, "midlayer."),
                 "SafeAILab/EAGLE eagle/traineagle3/config.json, cnets.py Model"),
    FormatSignal(EAGLE, 2, "weights in pytorch_model.bin",
                 lambda c, k, f: any(p.suffix == ".bin" for p in f),
                 "SafeAILab/EAGLE traineagle3/main.py save_16bit_model"),
    FormatSignal(SPECFORGE, 8, "architectures LlamaForCausalLMEagle3 with midlayer.* keys",
                 lambda c, k, f: "LlamaForCausalLMEagle3" in _arch(c) and _has_prefix(k, "midlayer."),
                 "specforge 0.2.0 modeling/draft/llama3_eagle.py, export/to_sglang.py"),
    FormatSignal(SPECFORGE, 2, "midlayer.* keys with both d2t and t2d",
                 lambda c, k, f: _has_prefix(k, "midlayer.") and {"d2t", "t2d"} <= k,
                 "specforge 0.2.0 export/to_sglang.py required keys"),
    FormatSignal(TORCHSPEC, 12, "config.json has _torchspec_version",
                 lambda c, k, f: "_torchspec_version" in c,
                 "lightseekorg/TorchSpec 6f21829 tools/convert_to_hf.py _save_with_vocab_pruning"),
    FormatSignal(DEEPSPEC, 12, "architectures Qwen3Eagle3Model / Gemma4Eagle3Model with target_layer_ids",
                 lambda c, k, f: bool({"Qwen3Eagle3Model", "Gemma4Eagle3Model"} & set(_arch(c)))
                 and "target_layer_ids" in c,
                 "deepseek-ai/DeepSpec afdfa7c deepspec/modeling/eagle3/qwen3/config.py build_draft_config"),
    FormatSignal(MODELOPT, 4, "architectures LlamaForCausalLMEagle3/Eagle3DeepseekV2ForCausalLM with layers.0.* keys",
                 lambda c, k, f: bool({"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"} & set(_arch(c)))
                 and _has_prefix(k, "layers.0."),
                 "ModelOpt export/plugins/hf_spec_export.py LLAMA_EAGLE_SINGLE_LAYER"),
)

#: The aux-layer id convention each producer writes. Source: reference/producers.md §5.3.
PRODUCER_AUX_CONVENTION: dict[str, tuple[str, str]] = {
    SPECULATORS: (INPUT_OF, "speculators >= 0.5 captures through vLLM: id k = input of decoder layer k"),
    EAGLE: (INPUT_OF, "EAGLE traineagle3 modeling_llama_kv.py appends the state before layers 2, N//2, N-3"),
    SPECFORGE: (OUTPUT_OF, "SpecForge captures through SGLang set_eagle3_layers_to_capture (output of layer id)"),
    MODELOPT: (OUTPUT_OF, "ModelOpt plugins/hf_eagle.py forward hook on layers[id] (output of layer id)"),
    ANGELSLIM: (OUTPUT_OF, "AngelSlim target_model_wrapper.py reads hidden_states[id + 1] (output of layer id)"),
    TORCHSPEC: (OUTPUT_OF, ("TorchSpec captures through SGLang / vLLM as SpecForge does (output of layer id); "
                            "tools/convert_to_hf.py adds +1 to kimi_k2 ids for vLLM")),
    DEEPSPEC: (OUTPUT_OF, "DeepSpec modeling/eagle3/common.py extract_eagle3_context_feature: hidden_states[id + 1]"),
}

#: Aux layer ids a producer keeps under its own field name. They are the training ids; ``engine.aux_layers``
#: compares them with what is fed. No engine reads AngelSlim's name; vLLM's model runner V2 reads DeepSpec's
#: ``target_layer_ids`` (adding 1) from 0.25 (profiles.V2_FIELDS_0_25); elsewhere the engine uses its defaults.
PRODUCER_AUX_FIELDS: dict[str, tuple[str, str]] = {
    ANGELSLIM: ("aux_hidden_states_layer_ids",
                ("angelslim 0.5.0 train/trainer/online_eagle3_trainer.py OnlineEagle3Trainer.__init__ "
                 "(getattr(draft_model_config, 'aux_hidden_states_layer_ids', None))")),
    DEEPSPEC: ("target_layer_ids",
               ("deepseek-ai/DeepSpec afdfa7c deepspec/modeling/eagle3/qwen3/config.py build_draft_config "
                "(5 ids, validate_eagle3_target_layer_ids)")),
}

#: Norm flags and their defaults when a config omits them, per producer (what the producer's
#: own forward does). Source lines name the code that sets each default.
NORM_FLAG_DEFAULTS: dict[str, dict[str, tuple[bool, str]]] = {
    SPECULATORS: {
        "norm_before_residual": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
        "norm_before_fc": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
        "fc_norm": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
        "norm_output": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
    },
    SPECFORGE: {
        "norm_before_residual": (False, "specforge 0.2.0 llama3_eagle.py: residual is the raw hidden"),
        "norm_before_fc": (False, "specforge 0.2.0 llama3_eagle.py: no input_norm"),
        "fc_norm": (False, "specforge 0.2.0 llama3_eagle.py getattr(config, 'fc_norm', False)"),
        "norm_output": (True, "specforge 0.2.0 llama3_eagle.py getattr(config, 'norm_output', True)"),
    },
}


def _plain_forward(residual: str, feedback: str) -> dict[str, tuple[bool, str]]:
    """A producer whose forward has the plain EAGLE-3 shape: raw-hidden residual, no input_norm, no
    per-chunk norm; ``feedback`` says which state it feeds back."""
    return {"norm_before_residual": (False, residual), "norm_before_fc": (False, f"{residual}: no input_norm"),
            "fc_norm": (False, f"{residual}: no per-chunk norm"), "norm_output": (False, feedback)}


NORM_FLAG_DEFAULTS.update({
    MODELOPT: _plain_forward(
        "nvidia-modelopt 0.47.0 plugins/modeling_eagle.py: transformers LlamaDecoderLayer keeps the raw hidden as residual",
        "nvidia-modelopt 0.47.0 plugins/hf_eagle.py HFEagleModel.forward feeds back eagle_prenorm_h"),
    ANGELSLIM: _plain_forward(
        "angelslim 0.5.0 train/models/draft/llama_eagle3.py LlamaDecoderLayeremb.forward: residual = hidden_states",
        "angelslim 0.5.0 llama_eagle3.py forward returns the pre-norm hidden_states"),
    EAGLE: _plain_forward(
        "SafeAILab/EAGLE cb7e084 eagle/traineagle3/cnets.py LlamaDecoderLayeremb.forward: residual = hidden_states",
        "SafeAILab/EAGLE cnets.py Model.forward returns the pre-norm hidden_states"),
    DEEPSPEC: _plain_forward(
        "deepseek-ai/DeepSpec afdfa7c modeling/eagle3/qwen3/modeling.py Qwen3Eagle3DecoderLayer.forward: residual = hidden",
        "deepseek-ai/DeepSpec qwen3/modeling.py: norm only inside compute_logits (self.lm_head(self.norm(h)))"),
})
GENERIC_NORM_DEFAULTS: dict[str, tuple[bool, str]] = {
    "norm_before_residual": (False, "EAGLE-3 reference forward: residual is the raw hidden state"),
    "norm_before_fc": (False, "EAGLE-3 reference forward: fc takes the raw concatenation"),
    "fc_norm": (False, "EAGLE-3 reference forward: no per-chunk norm"),
    "norm_output": (False, "EAGLE-3 reference forward: raw hidden fed back"),
}


#: Config fields a producer never writes: finding one contradicts a detection from a shared layout
#: (then producer and aux-id convention are unknown). Source: reference/producers.md §2.4, §4.1.
NEVER_WRITES: dict[str, tuple[tuple[str, str], ...]] = {
    SPECFORGE: (("eagle_aux_hidden_state_layer_ids",
                 "specforge 0.2.0: ids only in eagle_config.eagle_aux_hidden_state_layer_ids (configs/*.json)"),),
    MODELOPT: (("eagle_aux_hidden_state_layer_ids",
                "ModelOpt export/plugins/hf_spec_configs.py: ids only in eagle_config"),),
}


@dataclass(frozen=True)
class DetectedFormat:
    """The producer that most likely wrote the checkpoint, with the evidence for it."""

    producer: str
    evidence: tuple[str, ...]
    variant: str = ""

    @property
    def label(self) -> str:
        return f"{self.producer} ({self.variant})" if self.variant else self.producer


def detect_format(config: Config, keys: set[str], files: tuple[Path, ...]) -> DetectedFormat:
    """Score every producer by the signals that fire and keep the strongest."""
    scores: dict[str, int] = {}
    evidence: dict[str, list[str]] = {}
    for signal in FORMAT_SIGNALS:
        if signal.test(config, keys, files):
            scores[signal.producer] = scores.get(signal.producer, 0) + signal.weight
            evidence.setdefault(signal.producer, []).append(signal.evidence)
    if not scores:
        return DetectedFormat(UNKNOWN, ())
    producer = max(scores, key=lambda p: scores[p])
    contradictions = [f"but config.json has top-level {name}, which {producer} never writes ({source}): "
                      "producer and aux-id convention unknown"
                      for name, source in NEVER_WRITES.get(producer, ()) if config.get(name) is not None]
    if contradictions:
        return DetectedFormat(UNKNOWN, (*evidence[producer], *contradictions))
    variant = ""
    if producer == SPECFORGE:
        has_embed = any(k.endswith("embed_tokens.weight") for k in keys)
        variant = "export --to hf, embed_tokens included" if has_embed else "SGLang export, no embed_tokens"
    return DetectedFormat(producer, tuple(evidence[producer]), variant)


@dataclass(frozen=True)
class AuxLayers:
    """Aux hidden-state layer ids, the config field they came from, and what they mean."""

    ids: tuple[int, ...] | None
    field: str | None
    convention: str | None
    convention_source: str
    all_fields: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class DraftConfig:
    """The config of any producer format, normalised; ``sources`` says where each value came from."""

    architectures: tuple[str, ...]
    model_type: str | None
    hidden_size: int | None
    target_hidden_size: int | None
    vocab_size: int | None
    draft_vocab_size: int | None
    num_hidden_layers: int | None
    num_attention_heads: int | None
    num_key_value_heads: int | None
    head_dim: int | None
    intermediate_size: int | None
    aux: AuxLayers
    norm_flags: dict[str, bool]
    first_layer_prefix: str | None
    layer_count: int
    sources: dict[str, str]
    problems: tuple[str, ...]


def _layer_config(config: Config) -> tuple[Mapping[str, Any], str]:
    inner = config.get("transformer_layer_config")
    if isinstance(inner, dict):
        return inner, "transformer_layer_config."
    return config, ""


def _int_field(
    scopes: Iterable[tuple[Mapping[str, Any], str]], name: str, sources: dict[str, str],
    problems: list[str], alias: str | None = None,
) -> int | None:
    for scope, prefix in scopes:
        for key in (name, alias) if alias else (name,):
            if key is None or key not in scope or scope[key] is None:
                continue
            value = scope[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems.append(f"config.json {prefix}{key} = {value!r} is not a non-negative integer")
                return None
            sources[name] = f"config.json {prefix}{key}"
            return value
    return None


def _aux_layers(config: Config, producer: str, problems: list[str]) -> AuxLayers:
    candidates = {
        "eagle_aux_hidden_state_layer_ids": config.get("eagle_aux_hidden_state_layer_ids"),
        "eagle_config.eagle_aux_hidden_state_layer_ids": eagle_config(config).get(
            "eagle_aux_hidden_state_layer_ids"
        ),
    }
    own = PRODUCER_AUX_FIELDS.get(producer)
    if own is not None:
        candidates[own[0]] = config.get(own[0])
    present = {k: v for k, v in candidates.items() if v is not None}
    convention, convention_source = PRODUCER_AUX_CONVENTION.get(producer, (None, "producer unknown"))
    for name, value in present.items():
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            problems.append(f"config.json {name} = {value!r} is not a list of integers")
            return AuxLayers(None, name, convention, convention_source, present)
    if not present:
        return AuxLayers(None, None, convention, convention_source, present)
    name, value = next(iter(present.items()))
    return AuxLayers(tuple(value), name, convention, convention_source, present)


def _norm_flags(config: Config, producer: str, sources: dict[str, str]) -> dict[str, bool]:
    defaults = NORM_FLAG_DEFAULTS.get(producer, GENERIC_NORM_DEFAULTS)
    flags = {}
    for name, (default, source) in defaults.items():
        value, field = config.get(name), name
        if not isinstance(value, bool):
            value, field = eagle_config(config).get(name), f"eagle_config.{name}"
        if isinstance(value, bool):
            flags[name] = value
            sources[name] = f"config.json {field}"
        else:
            flags[name] = default
            sources[name] = f"default: {source}"
    return flags


def first_layer_prefix(keys: Iterable[str]) -> str | None:
    """The key prefix of the draft's first decoder layer (``midlayer.`` or ``layers.0.``)."""
    names = set(keys)
    for prefix in FIRST_LAYER_PREFIXES:
        if any(k.startswith(prefix) for k in names):
            return prefix
    return None


def layer_count(keys: Iterable[str]) -> int:
    """How many decoder layers the tensors describe."""
    names = list(keys)
    indices = {int(m.group(1)) for k in names if (m := LAYER_KEY.match(k))}
    has_mid = any(k.startswith(("midlayer.", "model.midlayer.")) for k in names)
    return max(indices, default=-1) + 1 + (1 if has_mid and 0 not in indices else 0)


def normalise_config(config: Config, detected: DetectedFormat, tensor_names: Iterable[str]) -> DraftConfig:
    """Read the fields every contract needs from whichever place this producer puts them."""
    sources: dict[str, str] = {}
    problems: list[str] = []
    layer, prefix = _layer_config(config)
    scopes = [(layer, prefix), (config, "")] if prefix else [(config, "")]
    ints = {
        name: _int_field(scopes, name, sources, problems)
        for name in (
            "hidden_size", "vocab_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "intermediate_size",
        )
    }
    draft_vocab = _int_field([(config, "")], "draft_vocab_size", sources, problems, alias="truncated_vocab_size")
    if draft_vocab is None and ints["vocab_size"] is not None:
        draft_vocab = ints["vocab_size"]
        sources["draft_vocab_size"] = (
            "config.json draft_vocab_size is null: engines use the full vocab"
            if "draft_vocab_size" in config
            else "not in config.json: defaults to vocab_size"
        )
    target_hidden = _int_field([(config, "")], "target_hidden_size", sources, problems)
    if target_hidden is None and ints["hidden_size"] is not None:
        target_hidden = ints["hidden_size"]
        sources["target_hidden_size"] = "not in config.json: defaults to hidden_size"
    model_type = layer.get("model_type", config.get("model_type"))
    keys = set(tensor_names)
    return DraftConfig(
        architectures=_arch(config),
        model_type=str(model_type) if model_type is not None else None,
        hidden_size=ints["hidden_size"],
        target_hidden_size=target_hidden,
        vocab_size=ints["vocab_size"],
        draft_vocab_size=draft_vocab,
        num_hidden_layers=ints["num_hidden_layers"],
        num_attention_heads=ints["num_attention_heads"],
        num_key_value_heads=ints["num_key_value_heads"],
        head_dim=ints["head_dim"],
        intermediate_size=ints["intermediate_size"],
        aux=_aux_layers(config, detected.producer, problems),
        norm_flags=_norm_flags(config, detected.producer, sources),
        first_layer_prefix=first_layer_prefix(keys),
        layer_count=layer_count(keys),
        sources=sources,
        problems=tuple(problems),
    )
