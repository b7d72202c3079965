"""One record per producer: how its checkpoints are recognised, what it writes and how, and its habits,
each row with the release and code it was read from (``reference/producers.md`` summarises them).

Record order is the detection tie-break order (the first producer whose signals reach the top score wins).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_eagle3.producers.kinds import (
    ExportBug,
    ExtraFile,
    FlagDefault,
    FormatSignal,
    Layout,
    Mark,
    NormHabit,
    NormOutputReading,
    Producer,
    Provenance,
    RopeHabit,
    TrainedField,
)
from pytest_eagle3.producers.names import (
    ANGELSLIM,
    DEEPSPEC,
    EAGLE,
    INPUT_OF,
    MODELOPT,
    OUTPUT_OF,
    SPECFORGE,
    SPECULATORS,
    SPECULATORS_MARKERS,
    TORCHSPEC,
    UNKNOWN,
    architectures,
    eagle_config,
    is_speculators,
)
from pytest_eagle3.producers.rope import Rope, config_rope

MODELOPT_SRC = "nvidia-modelopt 0.47.0"
ANGELSLIM_SRC = "angelslim 0.5.0"
HF_TRAINER = "transformers Trainer._save_checkpoint (checkpoint-N/)"
#: Why SpecForge's layout signals are shared with the original EAGLE code (FormatSignal.shared_with).
EAGLE_MIDLAYER = ("SafeAILab/EAGLE cb7e084 eagle/traineagle3/cnets.py Model: midlayer.* keys, d2t and t2d buffers "
                  "(the layout SpecForge copied)")
EAGLE_REPACKAGED = ("sgl-project/sglang#33966: EAGLE-trained drafts (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) are "
                    "republished as LlamaForCausalLMEagle3 with their midlayer.* keys "
                    "(lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B)")

#: eagle_config keys only ModelOpt writes. Source: ModelOpt export/plugins/hf_spec_configs.py llama_eagle_template_config.
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


#: Config keys more than one producer writes: none of them recognises a producer (a FormatSignal's or Mark's ``keys``
#: never names one; tests/test_producer_keys.py). key -> (the producers that write it, where each does).
SHARED_CONFIG_KEYS: dict[str, tuple[tuple[str, ...], str]] = {
    "target_model_type": ((ANGELSLIM, SPECFORGE),
                          "angelslim 0.5.0 compressor/speculative/train/models/model_utils.py:175 (the target's type "
                          "\"typically from draft_model_config.target_model_type\"); specforge 0.2.0 modeling/auto.py "
                          "AutoDraftModelConfig.from_file keeps every key of the draft config file, and sgl-project/SpecForge "
                          "cc26bed configs/qwen3-vl-8b-eagle3.json writes \"target_model_type\": \"qwen3_vl\""),
}


def _has_prefix(keys: set[str], prefix: str) -> bool:
    return any(k.startswith((prefix, "model." + prefix)) for k in keys)


def _plain_forward(residual: str, feedback: str) -> dict[str, FlagDefault]:
    """A producer whose forward has the plain EAGLE-3 shape: raw-hidden residual, no input_norm, no
    per-chunk norm; ``feedback`` says which state it feeds back."""
    return {"norm_before_residual": (False, residual), "norm_before_fc": (False, f"{residual}: no input_norm"),
            "fc_norm": (False, f"{residual}: no per-chunk norm"), "norm_output": (False, feedback)}


def _base_10000(config: Mapping[str, Any]) -> Rope | None:
    """EAGLE / AngelSlim ``_init_rope``: ``LlamaRotaryEmbedding(head_dim, max_position_embeddings)``
    without ``base``: theta 10000 whatever the config says (linear / dynamic keep the factor)."""
    served = config_rope(config)
    if served.kind in ("mrope",) or (served.scaling or {}).get("mrope_interleaved"):
        return None
    if served.kind not in ("default", "linear", "dynamic"):
        return None
    return Rope(10000.0, served.scaling)


def _modelopt_export_yarn(config: Mapping[str, Any]) -> Rope | None:
    """ModelOpt trains with the eagle_architecture_config rope (default: rope_type default) and writes
    ``eagle_export_rope_scaling`` (default yarn, factor 32, original 2048) into the export instead."""
    served = config_rope(config)
    scaling = served.scaling or {}
    if served.kind != "yarn" or scaling.get("factor") != 32.0 or scaling.get("original_max_position_embeddings") != 2048:
        return None
    return Rope(served.theta, None)


def _specforge_variant(keys: set[str]) -> str:
    has_embed = any(k.endswith("embed_tokens.weight") for k in keys)
    return "export --to hf, embed_tokens included" if has_embed else "SGLang export, no embed_tokens"


SPECULATORS_RECORD = Producer(
    SPECULATORS,
    signals=(
        FormatSignal(SPECULATORS, 10, "config has speculators_model_type / speculators_config",
                     lambda c, k, f: is_speculators(c),
                     "speculators 0.9.0 models/eagle3/config.py Eagle3SpeculatorConfig", keys=SPECULATORS_MARKERS),
        FormatSignal(SPECULATORS, 5, "config nests the layer config in transformer_layer_config",
                     lambda c, k, f: isinstance(c.get("transformer_layer_config"), dict),
                     "speculators 0.9.0 Eagle3SpeculatorConfig.transformer_layer_config",
                     keys=("transformer_layer_config",)),
    ),
    aux_convention=(INPUT_OF, "speculators >= 0.5 captures through vLLM: id k = input of decoder layer k"),
    marks=(Mark(SPECULATORS, "config.json has speculators_model_type",
                lambda c, k, f: "speculators_model_type" in c,
                "speculators 0.9.0 config.py SpeculatorModelConfig: schema_discriminator 'speculators_model_type' "
                "(L257; from_dict raises without it, L236), written into every saved config.json",
                keys=("speculators_model_type",)),),
    norm_defaults={
        "norm_before_residual": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
        "norm_before_fc": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
        "fc_norm": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
        "norm_output": (False, "speculators 0.9.0 Eagle3SpeculatorConfig default"),
    },
    layout=Layout("layers.0.", saves_t2d=True, d2t_order="by id", maps_at_full_vocab=False, saves_embed=True,
                  omits=("d2t and t2d when the draft keeps the whole vocab",),
                  source="speculators 0.9.0 train/vocab_mapping.py build_vocab_mappings_from_distribution "
                         "(sorted ids, offsets); models/eagle3 save_pretrained (embed_tokens copied from the verifier)"),
    extra_files=(
        ExtraFile(SPECULATORS, "optimizer_state_dict.pt", "optimizer state", True,
                  "speculators 0.9.0 train/checkpointer.py SingleGPUCheckpointer.save_checkpoint"),
        ExtraFile(SPECULATORS, "scheduler_state_dict.pt", "scheduler state", True,
                  "speculators 0.9.0 train/checkpointer.py SingleGPUCheckpointer.save_checkpoint"),
        ExtraFile(SPECULATORS, "config.py", "a copy of the config class source (auto_map)", False,
                  "speculators 0.9.0 save_pretrained with auto_map"),
    ),
    provenance=(
        Provenance(SPECULATORS, None, "0.3.0", False, (EAGLE, SPECFORGE),
                   "no aux ids (0.1.0 has no field; 0.2.0 writes eagle_aux_hidden_state_layer_ids only when the user "
                   "passes them): the original trainer's hard-coded layers stand",
                   "speculators 0.0.1 wheel: __init__.py and version.py only (no writer); so a pre-release between it and "
                   "0.1.0 (0.1.0.devN) had no trainer either. "
                   "speculators 0.1.0 and 0.2.0 wheels: no train/ package, the only writer of an Eagle3SpeculatorConfig "
                   "is convert/eagle/eagle3_converter.py Eagle3Converter (midlayer.* -> layers.0.*, t2d required; "
                   "convert/entrypoints.py: eagle3 from SafeAILab/EAGLE; SpecForge's export has the same midlayer.* + t2d layout), "
                   "speculators_version = the converter's "
                   "release (config.py SpeculatorModelConfig default version('speculators'))"),
        Provenance(SPECULATORS, "0.3.0", None, True, (EAGLE, SPECFORGE),
                   "eagle_aux_hidden_state_layer_ids only when the user passes them (Eagle3Converter.convert "
                   "eagle_aux_hidden_state_layer_ids=None)",
                   "speculators 0.3.0-0.9.0 convert/eagle/eagle3_converter.py beside the trainer (0.3.0 train/, "
                   "0.4.0+ models/eagle3/core.py Eagle3DraftModel.from_training_args): both write the same fields",
                   trained_signs=(Mark(SPECULATORS, "config.json embed_requires_grad: true",
                                       lambda c, k, f: c.get("embed_requires_grad") is True,
                                       "speculators 0.4.0-0.9.0 models/eagle3/core.py from_training_args passes "
                                       "embed_requires_grad (the trainer's option); convert/eagle/eagle3_converter.py "
                                       "never does, so the field keeps its default False (models/eagle3/config.py)",
                                       keys=("embed_requires_grad",)),)),
    ),
)

MODELOPT_RECORD = Producer(
    MODELOPT,
    signals=(
        FormatSignal(MODELOPT, 10, "eagle_config carries ModelOpt's layer-norm switches",
                     lambda c, k, f: bool(MODELOPT_EAGLE_CONFIG_KEYS & set(eagle_config(c))),
                     "ModelOpt export/plugins/hf_spec_configs.py llama_eagle_template_config",
                     keys=tuple(sorted(MODELOPT_EAGLE_CONFIG_KEYS))),
        FormatSignal(MODELOPT, 3, "layers.0.* keys with d2t and no t2d",
                     lambda c, k, f: _has_prefix(k, "layers.0.") and "d2t" in k and "t2d" not in k,
                     "ModelOpt export/plugins/hf_spec_export.py EagleExporter (no t2d)"),
        FormatSignal(MODELOPT, 4, "architectures LlamaForCausalLMEagle3/Eagle3DeepseekV2ForCausalLM with layers.0.* keys",
                     lambda c, k, f: bool({"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"}
                                          & set(architectures(c))) and _has_prefix(k, "layers.0."),
                     "ModelOpt export/plugins/hf_spec_export.py LLAMA_EAGLE_SINGLE_LAYER"),
    ),
    aux_convention=(OUTPUT_OF, "ModelOpt plugins/hf_eagle.py forward hook on layers[id] (output of layer id)"),
    norm_defaults=_plain_forward(
        "nvidia-modelopt 0.47.0 plugins/modeling_eagle.py: transformers LlamaDecoderLayer keeps the raw hidden as residual",
        "nvidia-modelopt 0.47.0 plugins/hf_eagle.py HFEagleModel.forward feeds back eagle_prenorm_h"),
    never_writes=(("eagle_aux_hidden_state_layer_ids", "ModelOpt export/plugins/hf_spec_configs.py: ids only in eagle_config"),),
    layout=Layout("layers.0.", saves_t2d=False, d2t_order="by frequency", maps_at_full_vocab=False, saves_embed=False,
                  omits=("t2d", "embed_tokens.weight", "d2t when the draft keeps the whole vocab"),
                  source=f"{MODELOPT_SRC} torch/export/plugins/hf_spec_export.py LLAMA_EAGLE_SINGLE_LAYER; "
                         "torch/speculative/utils.py calibrate_frequent_vocab (draft id i = i-th most frequent token)"),
    trained_fields=(
        TrainedField(
            MODELOPT, "eagle_config.use_last_layernorm", False, True,
            "with false the draft has no final norm: lm_head reads the last layer's raw output",
            "every engine applies norm.weight before lm_head (an absent norm.weight stays at its init)",
            f"{MODELOPT_SRC} torch/speculative/plugins/modeling_eagle.py EagleModule.__init__ "
            "(self.norm only if config.use_last_layernorm; eagle/default_config.py default False, "
            "config.py eagle3_default_config True)"),
        TrainedField(
            MODELOPT, "eagle_config.parallel_draft_step", 1, 1,
            "above 1 the draft was trained to propose several tokens per step through parallel_draft_heads.*",
            "every engine drafts one token per step and has no parallel draft heads",
            f"{MODELOPT_SRC} torch/speculative/plugins/megatron_eagle.py (parallel draft heads when > 1; the HF flow "
            "leaves it at 1, 'deprecated'), torch/export/plugins/hf_spec_export.py EagleMedusaExporter._extract_state_dict"),
    ),
    rope=RopeHabit(
        MODELOPT, _modelopt_export_yarn,
        "ModelOpt writes eagle_export_rope_scaling (default yarn x32 from 2048) over a draft trained with "
        "rope_type default, to extend its training window", False,
        f"{MODELOPT_SRC} torch/export/plugins/hf_spec_export.py EagleExporter._export_config; "
        "torch/speculative/config.py EagleConfig.eagle_export_rope_scaling (default yarn, factor 32, "
        "original_max_position_embeddings 2048; refused unless the training rope_type is default)"),
    norm_habit=NormHabit(
        MODELOPT, "input_layernorm.weight",
        "hidden_norm(input_layernorm(fc output)): the decoder layer's own input_layernorm runs before the "
        "attention pre-hook that applies hidden_norm",
        f"{MODELOPT_SRC} torch/speculative/plugins/modeling_eagle.py EagleModule._eagle3_attention_forward_pre_hook "
        "(transformers LlamaDecoderLayer.forward applies input_layernorm first; confirmed by running it on CPU)"),
    extra_files=(
        ExtraFile(MODELOPT, "adapter_model.safetensors", "the base model's LoRA adapter (eagle_base_lora)", False,
                  f"{MODELOPT_SRC} torch/export/plugins/hf_spec_export.py EagleExporter._export_lora"),
        ExtraFile(MODELOPT, "adapter_config.json", "the LoRA adapter's config", False,
                  f"{MODELOPT_SRC} hf_spec_export.py EagleExporter._export_lora"),
        ExtraFile(MODELOPT, "hf_quant_config.json", "the quantization config of a quantized draft", False,
                  f"{MODELOPT_SRC} hf_spec_export.py EagleExporter.export"),
    ),
)

ANGELSLIM_RECORD = Producer(
    ANGELSLIM,
    signals=(
        FormatSignal(ANGELSLIM, 10, "architectures Eagle3LlamaForCausalLM, or modal_type in config",
                     lambda c, k, f: "Eagle3LlamaForCausalLM" in architectures(c) or "modal_type" in c,
                     "AngelSlim train/configs/*-eagle3.json (qwen3-vl-4b-eagle3-mrope.json: modal_type)",
                     keys=("modal_type",)),
    ),
    aux_convention=(OUTPUT_OF, "AngelSlim target_model_wrapper.py reads hidden_states[id + 1] (output of layer id)"),
    marks=(Mark(ANGELSLIM, "architectures Eagle3LlamaForCausalLM, or modal_type in config",
                lambda c, k, f: "Eagle3LlamaForCausalLM" in architectures(c) or "modal_type" in c,
                "angelslim 0.2.0 compressor/speculative/train/trainer/eagle3_trainer.py: self.model.save_pretrained "
                "of models/draft/llama_eagle3.py Eagle3LlamaForCausalLM(Eagle3BaseDraftModel(PreTrainedModel)), so "
                "transformers writes architectures [\"Eagle3LlamaForCausalLM\"] (0.5.0: the same class)",
                keys=("modal_type",)),),
    aux_field=("aux_hidden_states_layer_ids",
               ("angelslim 0.5.0 train/trainer/online_eagle3_trainer.py OnlineEagle3Trainer.__init__ "
                "(getattr(draft_model_config, 'aux_hidden_states_layer_ids', None))")),
    norm_defaults=_plain_forward(
        "angelslim 0.5.0 train/models/draft/llama_eagle3.py LlamaDecoderLayeremb.forward: residual = hidden_states",
        "angelslim 0.5.0 llama_eagle3.py forward returns the pre-norm hidden_states"),
    layout=Layout("midlayer.", saves_t2d=True, d2t_order="by id", maps_at_full_vocab=True, saves_embed=False,
                  omits=("embed_tokens.weight",),
                  source=f"{ANGELSLIM_SRC} train/trainer/eagle3_trainer.py (drops keys containing 'embed'); "
                         "train/data/data_utils.py process_token_dict_to_mappings (sorted offsets)"),
    rope=RopeHabit(
        ANGELSLIM, _base_10000, "AngelSlim's draft attention never reads rope_theta", True,
        f"{ANGELSLIM_SRC} compressor/speculative/train/models/draft/llama_eagle3.py LlamaAttention._init_rope "
        "(LlamaRotaryEmbedding(head_dim, max_position_embeddings): base=10000)"),
    extra_files=(
        ExtraFile(ANGELSLIM, "training_args.bin", "the TrainingArguments, pickled", True,
                  f"{ANGELSLIM_SRC} train/trainer/eagle3_trainer.py Eagle3Trainer._save_zero3_model; {HF_TRAINER}"),
        ExtraFile(ANGELSLIM, "optimizer.pt", "optimizer state", True, HF_TRAINER),
        ExtraFile(ANGELSLIM, "scheduler.pt", "LR scheduler state", True, HF_TRAINER),
        ExtraFile(ANGELSLIM, "rng_state", "RNG state per rank (rng_state*.pth)", True, HF_TRAINER),
        ExtraFile(ANGELSLIM, "trainer_state.json", "trainer log and step", False, HF_TRAINER),
        ExtraFile(ANGELSLIM, "vocab_mapping_cache.pt", "the d2t/t2d cache (in the output dir)", True,
                  "AngelSlim tools/train_eagle3_online.py build_vocab_mapping(cache_path=output_dir/...)"),
    ),
)

EAGLE_RECORD = Producer(
    EAGLE,
    signals=(
        FormatSignal(EAGLE, 8, "plain LlamaForCausalLM architecture with draft_vocab_size and midlayer.* keys",
                     lambda c, k, f: architectures(c) == ("LlamaForCausalLM",) and "draft_vocab_size" in c
                     and _has_prefix(k, "midlayer."),
                     "SafeAILab/EAGLE eagle/traineagle3/config.json, cnets.py Model"),
        FormatSignal(EAGLE, 2, "weights in pytorch_model.bin",
                     lambda c, k, f: any(p.suffix == ".bin" for p in f),
                     "SafeAILab/EAGLE traineagle3/main.py save_16bit_model",
                     shared_with=(UNKNOWN,), shared_source="any trainer saving with torch.save writes *.bin "
                     "(transformers save_pretrained(safe_serialization=False))"),
    ),
    aux_convention=(INPUT_OF, "EAGLE traineagle3 modeling_llama_kv.py appends the state before layers 2, N//2, N-3"),
    never_writes=(("eagle_config", "SafeAILab/EAGLE cb7e084 eagle/traineagle3/config.json: a plain Llama config "
                                   "plus draft_vocab_size; the aux layers are hard-coded (modeling_llama_kv.py)"),
                  ("eagle_aux_hidden_state_layer_ids", "SafeAILab/EAGLE cb7e084 traineagle3/config.json: no aux ids")),
    norm_defaults=_plain_forward(
        "SafeAILab/EAGLE cb7e084 eagle/traineagle3/cnets.py LlamaDecoderLayeremb.forward: residual = hidden_states",
        "SafeAILab/EAGLE cnets.py Model.forward returns the pre-norm hidden_states"),
    layout=Layout("midlayer.", saves_t2d=True, d2t_order="by id", maps_at_full_vocab=True, saves_embed=False,
                  omits=("embed_tokens.weight",),
                  source="SafeAILab/EAGLE cb7e084 eagle/traineagle3/cnets.py Model.scandata (sorted offsets); "
                         "main.py save_16bit_model (pytorch_model.bin, fp16)"),
    rope=RopeHabit(
        EAGLE, _base_10000, "the EAGLE trainer's draft attention never reads rope_theta; its own config.json "
        "writes none, so a rope_theta there was added by hand after training", False,
        "SafeAILab/EAGLE cb7e084 eagle/traineagle3/cnets.py LlamaAttention._init_rope (base=10000)"),
)

SPECFORGE_RECORD = Producer(
    SPECFORGE,
    signals=(
        FormatSignal(SPECFORGE, 8, "architectures LlamaForCausalLMEagle3 with midlayer.* keys",
                     lambda c, k, f: "LlamaForCausalLMEagle3" in architectures(c) and _has_prefix(k, "midlayer."),
                     "specforge 0.2.0 modeling/draft/llama3_eagle.py, export/to_sglang.py",
                     shared_with=(EAGLE,), shared_source=EAGLE_REPACKAGED),
        FormatSignal(SPECFORGE, 2, "midlayer.* keys with both d2t and t2d",
                     lambda c, k, f: _has_prefix(k, "midlayer.") and {"d2t", "t2d"} <= k,
                     "specforge 0.2.0 export/to_sglang.py required keys",
                     shared_with=(EAGLE,), shared_source=EAGLE_MIDLAYER),
    ),
    aux_convention=(OUTPUT_OF, "SpecForge captures through SGLang set_eagle3_layers_to_capture (output of layer id)"),
    norm_defaults={
        "norm_before_residual": (False, "specforge 0.2.0 llama3_eagle.py: residual is the raw hidden"),
        "norm_before_fc": (False, "specforge 0.2.0 llama3_eagle.py: no input_norm"),
        "fc_norm": (False, "specforge 0.2.0 llama3_eagle.py getattr(config, 'fc_norm', False)"),
        "norm_output": (True, "specforge 0.2.0 llama3_eagle.py getattr(config, 'norm_output', True)"),
    },
    never_writes=(("eagle_aux_hidden_state_layer_ids",
                   "specforge 0.2.0: ids only in eagle_config.eagle_aux_hidden_state_layer_ids (configs/*.json)"),),
    variant=_specforge_variant,
    layout=Layout("midlayer.", saves_t2d=True, d2t_order="by id", maps_at_full_vocab=True, saves_embed=None,
                  omits=("embed_tokens.weight (SGLang export; export --to hf keeps it)",),
                  source="specforge 0.2.0 data/preprocessing.py process_token_dict_to_mappings (sorted offsets); "
                         "export/to_sglang.py, export/to_hf.py"),
    norm_output=NormOutputReading(
        (False, False), (True, False),
        "specforge 0.2.0 llama3_eagle.py compute_logits: lm_head(norm(h)) only if norm_output; "
        "the pre-norm state is fed back"),
    extra_files=(
        ExtraFile(SPECFORGE, "training_state.pt", "the 0.2.0 trainer's state (draft weights and optimizer)", True,
                  "specforge 0.2.0 training/controller.py save_checkpoint"),
    ),
)

TORCHSPEC_RECORD = Producer(
    TORCHSPEC,
    signals=(
        FormatSignal(TORCHSPEC, 12, "config.json has _torchspec_version",
                     lambda c, k, f: "_torchspec_version" in c,
                     "lightseekorg/TorchSpec 6f21829 tools/convert_to_hf.py _save_with_vocab_pruning",
                     keys=("_torchspec_version",)),
    ),
    aux_convention=(OUTPUT_OF, ("TorchSpec captures through SGLang / vLLM as SpecForge does (output of layer id); "
                                "tools/convert_to_hf.py adds +1 to kimi_k2 ids for vLLM")),
    export_bug=ExportBug(
        TORCHSPEC, "lm-head-rows-by-offset",
        "a TorchSpec export with d2t and draft vocab < vocab: only the post-training pruning path writes d2t, and it "
        "trims a full-vocab lm_head",
        "lm_head row i is the full head's row d2t[i] (an offset), not row i + d2t[i] (the target id d2t maps it to)",
        "re-export with lm_head rows full_lm_head[arange(draft_vocab_size) + d2t], or train with the reduced vocab",
        "lightseekorg/TorchSpec 6f21829 tools/convert_to_hf.py _save_with_vocab_pruning: "
        "tensors[lm_head_key] = tensors[lm_head_key][d2t], d2t from data/preprocessing.py "
        "process_token_dict_to_mappings (used_tokens - arange)"),
)

DEEPSPEC_RECORD = Producer(
    DEEPSPEC,
    signals=(
        FormatSignal(DEEPSPEC, 12, "architectures Qwen3Eagle3Model / Gemma4Eagle3Model with target_layer_ids",
                     lambda c, k, f: bool({"Qwen3Eagle3Model", "Gemma4Eagle3Model"} & set(architectures(c)))
                     and "target_layer_ids" in c,
                     "deepseek-ai/DeepSpec afdfa7c deepspec/modeling/eagle3/qwen3/config.py build_draft_config"),
    ),
    aux_convention=(OUTPUT_OF, "DeepSpec modeling/eagle3/common.py extract_eagle3_context_feature: hidden_states[id + 1]"),
    aux_field=("target_layer_ids",
               ("deepseek-ai/DeepSpec afdfa7c deepspec/modeling/eagle3/qwen3/config.py build_draft_config "
                "(5 ids, validate_eagle3_target_layer_ids)")),
    norm_defaults=_plain_forward(
        "deepseek-ai/DeepSpec afdfa7c modeling/eagle3/qwen3/modeling.py Qwen3Eagle3DecoderLayer.forward: residual = hidden",
        "deepseek-ai/DeepSpec qwen3/modeling.py: norm only inside compute_logits (self.lm_head(self.norm(h)))"),
    extra_files=(
        ExtraFile(DEEPSPEC, "training_state.rank", "optimizer and RNG state per rank (training_state.rank<R>.pt)",
                  True, "deepseek-ai/DeepSpec afdfa7c deepspec/trainer/ckpt_manager.py save_checkpoint"),
        ExtraFile(DEEPSPEC, "train_config.py", "the training config as Python source", False,
                  "deepseek-ai/DeepSpec afdfa7c deepspec/trainer/ckpt_manager.py save_train_config"),
    ),
)

#: Every producer, in detection tie-break order.
RECORDS: dict[str, Producer] = {
    r.name: r for r in (SPECULATORS_RECORD, MODELOPT_RECORD, ANGELSLIM_RECORD, EAGLE_RECORD, SPECFORGE_RECORD,
                        TORCHSPEC_RECORD, DEEPSPEC_RECORD)
}
