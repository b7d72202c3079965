"""Every producer's own fields and habits, read from its released source.

Three tables, each row with its source (file, function, release):

* :data:`TRAINED_FIELDS`: config fields a producer's training reads (so the draft was trained with
  their value) that no engine version reads. The engine hard-wires one behaviour instead; when the
  value differs from it, the draft runs unlike it was trained.
* :data:`ROPE_HABITS`: how a producer builds the draft's rotary embedding from the config it writes.
  Both engines apply the config's ``rope_theta`` / ``rope_scaling`` (profile behaviour ``draft_rope``);
  a producer that trained with another rope serves a draft whose attention positions differ.
* :data:`EXTRA_FILES`: what an export or a trainer leaves beside the weights. Never executed here
  (pickles are not loaded at all); reported so that a user knows what the engine reads.

Where a producer keeps aux layer ids under its own field name, :mod:`pytest_eagle3.producers.formats` reads
them as the training ids (``PRODUCER_AUX_FIELDS``) and ``engine.aux_layers`` judges them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_eagle3.producers.formats import (
    ANGELSLIM,
    DEEPSPEC,
    EAGLE,
    MODELOPT,
    SPECFORGE,
    SPECULATORS,
    TORCHSPEC,
    is_speculators,
    lookup,
)

MODELOPT_SRC = "nvidia-modelopt 0.47.0"
ANGELSLIM_SRC = "angelslim 0.5.0"


@dataclass(frozen=True)
class TrainedField:
    """A config field ``producer`` trains with that no engine version reads.

    ``engine_value`` is the behaviour every engine hard-wires, written as the field's value; a draft
    whose value (or ``default`` when absent) differs runs in the engine unlike it was trained.
    """

    producer: str
    field: str
    default: Any
    engine_value: Any
    trained: str
    engine: str
    source: str

    def value(self, config: Mapping[str, Any]) -> Any:
        """The value the producer trained with: the config's, else the producer's default."""
        found = lookup(config, self.field)
        return self.default if found is None else found


TRAINED_FIELDS: tuple[TrainedField, ...] = (
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
)


def unread_fields(producer: str, config: Mapping[str, Any]) -> list[tuple[TrainedField, Any]]:
    """The trained fields of ``producer`` whose value differs from what every engine hard-wires."""
    rows = [row for row in TRAINED_FIELDS if row.producer == producer and row.engine_value is not None]
    return [(row, row.value(config)) for row in rows if row.value(config) != row.engine_value]


# ---------------------------------------------------------------- rope

@dataclass(frozen=True)
class Rope:
    """A rotary embedding: the base and the scaling dict (None: plain rope)."""

    theta: float
    scaling: dict[str, Any] | None

    @property
    def kind(self) -> str:
        if not self.scaling:
            return "default"
        return str(self.scaling.get("rope_type") or self.scaling.get("type") or "default")

    def describe(self) -> str:
        theta = str(int(self.theta)) if self.theta.is_integer() else f"{self.theta:g}"
        if self.kind == "default":
            return f"rope_theta {theta}, no scaling"
        extra = {k: v for k, v in (self.scaling or {}).items() if k not in ("rope_type", "type", "rope_theta")}
        return f"rope_theta {theta}, {self.kind} {extra}"

    def logit_scale(self) -> float:
        """How much yarn multiplies every attention logit (cos and sin both carry mscale): mscale squared,
        mscale = attention_factor, else 0.1 ln(factor) + 1 (vllm rotary_embedding/yarn_scaling_rope.py
        YaRNScalingRotaryEmbedding, common.py yarn_get_mscale; 0.32.0 read). 1.0 for other kinds."""
        scaling = self.scaling or {}
        if self.kind != "yarn":
            return 1.0
        factor = float(scaling.get("factor") or 1.0)
        if scaling.get("attention_factor") is not None:
            mscale = float(scaling["attention_factor"])
        elif scaling.get("mscale") and scaling.get("mscale_all_dim"):
            mscale = (0.1 * float(scaling["mscale"]) * math.log(factor) + 1) / (
                0.1 * float(scaling["mscale_all_dim"]) * math.log(factor) + 1)
        else:
            mscale = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
        return mscale * mscale

    def key(self) -> RopeKey:
        """A hashable form (theta, sorted scaling items; () for plain rope), as the simulation's feeds hold it."""
        return self.theta, tuple(sorted((k, _frozen(v)) for k, v in (self.scaling or {}).items()))

    def same_as(self, other: Rope) -> bool:
        if not math.isclose(self.theta, other.theta):
            return False
        if self.kind == other.kind == "default":
            return True
        strip = ("rope_theta", "type")
        mine = {k: v for k, v in (self.scaling or {}).items() if k not in strip}
        theirs = {k: v for k, v in (other.scaling or {}).items() if k not in strip}
        return mine == theirs


#: A rope as the simulation's feeds hold it: (rope_theta, sorted rope_scaling items).
RopeKey = tuple[float, tuple[tuple[str, Any], ...]]


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def served_rope(raw: Mapping[str, Any]) -> Rope:
    """The rope both engines build from a draft's config.json (a speculators config: from its
    ``transformer_layer_config``, which vLLM's speculators reader turns into the draft config)."""
    layer = raw.get("transformer_layer_config")
    return config_rope(layer if isinstance(layer, dict) and is_speculators(raw) else raw)


def config_rope(config: Mapping[str, Any]) -> Rope:
    """The rope an engine builds from a draft config: ``rope_parameters`` (transformers 5), else
    ``rope_theta`` and ``rope_scaling``, theta 10000 when absent (both engines' ``getattr`` default)."""
    params = config.get("rope_parameters")
    if isinstance(params, dict):
        scaling = params if (params.get("rope_type") or params.get("type") or "default") != "default" else None
        return Rope(float(params.get("rope_theta") or config.get("rope_theta") or 10000.0), scaling)
    scaling = config.get("rope_scaling")
    theta = config.get("rope_theta")
    if theta is None and isinstance(scaling, dict):
        theta = scaling.get("rope_theta")
    kind = (scaling.get("rope_type") or scaling.get("type")) if isinstance(scaling, dict) else None
    return Rope(float(theta or 10000.0), scaling if isinstance(scaling, dict) and kind not in (None, "default") else None)


@dataclass(frozen=True)
class RopeHabit:
    """How ``producer`` built the draft's rope in training, given the config it wrote."""

    producer: str
    trained: Callable[[Mapping[str, Any]], Rope | None]
    why: str
    certain: bool
    source: str


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


ROPE_HABITS: dict[str, RopeHabit] = {
    ANGELSLIM: RopeHabit(
        ANGELSLIM, _base_10000, "AngelSlim's draft attention never reads rope_theta", True,
        f"{ANGELSLIM_SRC} compressor/speculative/train/models/draft/llama_eagle3.py LlamaAttention._init_rope "
        "(LlamaRotaryEmbedding(head_dim, max_position_embeddings): base=10000)"),
    EAGLE: RopeHabit(
        EAGLE, _base_10000, "the EAGLE trainer's draft attention never reads rope_theta; its own config.json "
        "writes none, so a rope_theta there was added by hand after training", False,
        "SafeAILab/EAGLE cb7e084 eagle/traineagle3/cnets.py LlamaAttention._init_rope (base=10000)"),
    MODELOPT: RopeHabit(
        MODELOPT, _modelopt_export_yarn,
        "ModelOpt writes eagle_export_rope_scaling (default yarn x32 from 2048) over a draft trained with "
        "rope_type default, to extend its training window", False,
        f"{MODELOPT_SRC} torch/export/plugins/hf_spec_export.py EagleExporter._export_config; "
        "torch/speculative/config.py EagleConfig.eagle_export_rope_scaling (default yarn, factor 32, "
        "original_max_position_embeddings 2048; refused unless the training rope_type is default)"),
}


def trained_rope(producer: str, config: Mapping[str, Any]) -> tuple[Rope, RopeHabit] | None:
    """The rope ``producer`` trained with when it differs from the config's, with the habit that says so."""
    habit = ROPE_HABITS.get(producer)
    rope = habit.trained(config) if habit is not None else None
    if habit is None or rope is None or rope.same_as(config_rope(config)):
        return None
    return rope, habit


# ---------------------------------------------------------------- norms no engine applies

@dataclass(frozen=True)
class NormHabit:
    """A norm ``producer``'s forward applies that no engine applies: ``tensor`` (under the first layer's
    prefix) scales the fc output before ``hidden_norm`` in training. Harmless when its weight is uniform
    (an RMSNorm of a uniformly scaled normalised vector is the vector)."""

    producer: str
    tensor: str
    trained: str
    source: str


NORM_HABITS: dict[str, NormHabit] = {
    MODELOPT: NormHabit(
        MODELOPT, "input_layernorm.weight",
        "hidden_norm(input_layernorm(fc output)): the decoder layer's own input_layernorm runs before the "
        "attention pre-hook that applies hidden_norm",
        f"{MODELOPT_SRC} torch/speculative/plugins/modeling_eagle.py EagleModule._eagle3_attention_forward_pre_hook "
        "(transformers LlamaDecoderLayer.forward applies input_layernorm first; confirmed by running it on CPU)"),
}


# ---------------------------------------------------------------- export bugs

@dataclass(frozen=True)
class ExportBug:
    """A producer's export writes a tensor wrongly whenever ``when`` (read from its code) holds."""

    producer: str
    code: str
    when: str
    wrong: str
    fix: str
    source: str


EXPORT_BUGS: dict[str, ExportBug] = {
    TORCHSPEC: ExportBug(
        TORCHSPEC, "lm-head-rows-by-offset",
        "a TorchSpec export with d2t and draft vocab < vocab: only the post-training pruning path writes d2t, and it "
        "trims a full-vocab lm_head",
        "lm_head row i is the full head's row d2t[i] (an offset), not row i + d2t[i] (the target id d2t maps it to)",
        "re-export with lm_head rows full_lm_head[arange(draft_vocab_size) + d2t], or train with the reduced vocab",
        "lightseekorg/TorchSpec 6f21829 tools/convert_to_hf.py _save_with_vocab_pruning: "
        "tensors[lm_head_key] = tensors[lm_head_key][d2t], d2t from data/preprocessing.py "
        "process_token_dict_to_mappings (used_tokens - arange)"),
}


# ---------------------------------------------------------------- files beside the weights

@dataclass(frozen=True)
class ExtraFile:
    """A file a producer leaves beside the draft's weights (``name`` is a prefix or an exact name)."""

    producer: str
    name: str
    what: str
    pickle: bool
    source: str


HF_TRAINER = "transformers Trainer._save_checkpoint (checkpoint-N/)"
EXTRA_FILES: tuple[ExtraFile, ...] = (
    ExtraFile(ANGELSLIM, "training_args.bin", "the TrainingArguments, pickled", True,
              f"{ANGELSLIM_SRC} train/trainer/eagle3_trainer.py Eagle3Trainer._save_zero3_model; {HF_TRAINER}"),
    ExtraFile(ANGELSLIM, "optimizer.pt", "optimizer state", True, HF_TRAINER),
    ExtraFile(ANGELSLIM, "scheduler.pt", "LR scheduler state", True, HF_TRAINER),
    ExtraFile(ANGELSLIM, "rng_state", "RNG state per rank (rng_state*.pth)", True, HF_TRAINER),
    ExtraFile(ANGELSLIM, "trainer_state.json", "trainer log and step", False, HF_TRAINER),
    ExtraFile(ANGELSLIM, "vocab_mapping_cache.pt", "the d2t/t2d cache (in the output dir)", True,
              "AngelSlim tools/train_eagle3_online.py build_vocab_mapping(cache_path=output_dir/...)"),
    ExtraFile(MODELOPT, "adapter_model.safetensors", "the base model's LoRA adapter (eagle_base_lora)", False,
              f"{MODELOPT_SRC} torch/export/plugins/hf_spec_export.py EagleExporter._export_lora"),
    ExtraFile(MODELOPT, "adapter_config.json", "the LoRA adapter's config", False,
              f"{MODELOPT_SRC} hf_spec_export.py EagleExporter._export_lora"),
    ExtraFile(MODELOPT, "hf_quant_config.json", "the quantization config of a quantized draft", False,
              f"{MODELOPT_SRC} hf_spec_export.py EagleExporter.export"),
    ExtraFile(SPECULATORS, "optimizer_state_dict.pt", "optimizer state", True,
              "speculators 0.9.0 train/checkpointer.py SingleGPUCheckpointer.save_checkpoint"),
    ExtraFile(SPECULATORS, "scheduler_state_dict.pt", "scheduler state", True,
              "speculators 0.9.0 train/checkpointer.py SingleGPUCheckpointer.save_checkpoint"),
    ExtraFile(SPECULATORS, "config.py", "a copy of the config class source (auto_map)", False,
              "speculators 0.9.0 save_pretrained with auto_map"),
    ExtraFile(SPECFORGE, "training_state.pt", "the 0.2.0 trainer's state (draft weights and optimizer)", True,
              "specforge 0.2.0 training/controller.py save_checkpoint"),
    ExtraFile(DEEPSPEC, "training_state.rank", "optimizer and RNG state per rank (training_state.rank<R>.pt)",
              True, "deepseek-ai/DeepSpec afdfa7c deepspec/trainer/ckpt_manager.py save_checkpoint"),
    ExtraFile(DEEPSPEC, "train_config.py", "the training config as Python source", False,
              "deepseek-ai/DeepSpec afdfa7c deepspec/trainer/ckpt_manager.py save_train_config"),
)

#: Suffixes of files that hold pickles (never loaded by this plugin unless they are the weights).
PICKLE_SUFFIXES = (".pt", ".pth", ".bin", ".pkl", ".pickle")
#: Files every HF-style draft folder has; not worth naming.
ORDINARY = ("config.json", "generation_config.json", "model.safetensors.index.json", "pytorch_model.bin.index.json",
            "tokenizer", "special_tokens_map.json", "README.md", ".")


def beside_weights(root: Path, weights: tuple[Path, ...], producer: str) -> list[str]:
    """The files next to the weights, each with what it is (the producer's own rows first). Nothing is opened."""
    rows = sorted(EXTRA_FILES, key=lambda r: r.producer != producer)
    found = []
    for path in sorted(p for p in root.iterdir() if p.is_file() and p not in weights):
        if path.name.startswith(ORDINARY):
            continue
        row = next((r for r in rows if path.name.startswith(r.name)), None)
        pickle = row.pickle if row is not None else path.suffix in PICKLE_SUFFIXES
        what = f"{row.what}, {row.producer}" if row is not None else "unknown to the producer tables"
        found.append(f"{path.name} ({what}{'; a pickle, never loaded here' if pickle else ''})")
    return found

__all__ = [
    "EXPORT_BUGS",
    "EXTRA_FILES",
    "NORM_HABITS",
    "PICKLE_SUFFIXES",
    "ROPE_HABITS",
    "TORCHSPEC",
    "TRAINED_FIELDS",
    "ExportBug",
    "ExtraFile",
    "NormHabit",
    "Rope",
    "RopeHabit",
    "RopeKey",
    "TrainedField",
    "beside_weights",
    "config_rope",
    "served_rope",
    "trained_rope",
    "unread_fields",
]
