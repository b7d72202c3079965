"""Synthetic EAGLE-3 checkpoints in every producer's layout, with injectable faults.

Real safetensors (or ``pytorch_model.bin``) files, laid out as each producer writes them
(reference/producers.md §5.1). Each fault names the contract that must catch it and the
diagnosis code it must report (``FAULTS``), which the test-suite checks one by one.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.producers.formats import (
    ANGELSLIM,
    EAGLE,
    INPUT_OF,
    MODELOPT,
    PRODUCER_AUX_CONVENTION,
    SPECFORGE,
    SPECULATORS,
    default_aux_inputs,
)
from pytest_eagle3.rules.vocab import build_maps

if TYPE_CHECKING:
    import torch

SPECFORGE_HF = "specforge-hf"
PRODUCERS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, EAGLE, MODELOPT, ANGELSLIM)


@dataclass(frozen=True)
class Fault:
    """A corruption: what it imitates, which contract catches it, with which diagnosis."""

    description: str
    contract: str
    diagnosis: str
    producers: tuple[str, ...] = PRODUCERS
    tensors: Callable[[Draft], None] | None = None
    file: Callable[[Path], None] | None = None
    #: The tensor the fault changes; a layout without it is left as it is (the map of a full-vocab draft).
    needs: str | None = None


_WITH_T2D = (SPECULATORS, SPECFORGE, SPECFORGE_HF, EAGLE, ANGELSLIM)
_SAFETENSORS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, MODELOPT, ANGELSLIM)


@dataclass(frozen=True)
class SynthSpec:
    """Shapes and layout of a synthetic draft (and of the target it belongs to)."""

    producer: str = SPECULATORS
    hidden_size: int = 64
    intermediate_size: int = 128
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 32
    vocab_size: int = 1024
    draft_vocab_size: int = 256
    target_layers: int = 8
    draft_layers: int = 1
    aux_layer_ids: tuple[int, ...] | None = None
    write_aux_ids: bool = True
    dtype: str = "bfloat16"
    seed: int = 0
    sharded: bool = False
    faults: frozenset[str] = field(default_factory=frozenset)

    def with_faults(self, *names: str) -> SynthSpec:
        unknown = set(names) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {sorted(FAULTS)}")
        unfit = [n for n in names if self.producer not in FAULTS[n].producers]
        if unfit:
            raise ValueError(f"faults {unfit} do not apply to the {self.producer} layout")
        return replace(self, faults=self.faults | frozenset(names))

    @property
    def convention(self) -> str:
        return PRODUCER_AUX_CONVENTION[SPECFORGE if self.producer == SPECFORGE_HF else self.producer][0]

    @property
    def aux_ids(self) -> tuple[int, ...]:
        """The ids this producer writes by default for the target's layer count (producers.md §1.5, §2.5)."""
        if self.aux_layer_ids is not None:
            return self.aux_layer_ids
        inputs = default_aux_inputs(self.target_layers)
        return inputs if self.convention == INPUT_OF else tuple(i - 1 for i in inputs)


def write_checkpoint(spec: SynthSpec, out: str | Path) -> Path:
    """Write a draft checkpoint in ``spec.producer``'s layout to ``out`` (created) and return it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if "empty-dir" in spec.faults:
        return out
    draft = Draft(spec, draft_tensors(spec), draft_config(spec))
    _apply_tensor_faults(draft)
    tensors, config = draft.tensors, draft.config
    _write_config(spec, config, out)
    if spec.producer == EAGLE:
        _write_bin(spec, tensors, out)
    else:
        _write_safetensors(spec, tensors, out)
    return out


# -- tensors -------------------------------------------------------------------------------
def _generator(seed: int) -> torch.Generator:
    import torch

    return torch.Generator().manual_seed(seed)


def _dtype(spec: SynthSpec) -> torch.dtype:
    import torch

    return torch.float16 if spec.producer == EAGLE else getattr(torch, spec.dtype)


def _matrix(gen: torch.Generator, rows: int, cols: int, dtype: torch.dtype) -> torch.Tensor:
    import torch

    return (torch.randn(rows, cols, generator=gen) * 0.02).to(dtype)


def _norm(gen: torch.Generator, size: int, dtype: torch.dtype) -> torch.Tensor:
    import torch

    return (1.0 + 0.01 * torch.randn(size, generator=gen)).to(dtype)


def decoder_layer(spec: SynthSpec, gen: torch.Generator, first: bool) -> dict[str, torch.Tensor]:
    """One Llama decoder layer; the first EAGLE-3 layer takes 2H and has a hidden_norm."""
    h, dt = spec.hidden_size, _dtype(spec)
    q, kv = spec.num_attention_heads * spec.head_dim, spec.num_key_value_heads * spec.head_dim
    width = 2 * h if first else h
    layer = {
        "self_attn.q_proj.weight": _matrix(gen, q, width, dt),
        "self_attn.k_proj.weight": _matrix(gen, kv, width, dt),
        "self_attn.v_proj.weight": _matrix(gen, kv, width, dt),
        "self_attn.o_proj.weight": _matrix(gen, h, q, dt),
        "mlp.gate_proj.weight": _matrix(gen, spec.intermediate_size, h, dt),
        "mlp.up_proj.weight": _matrix(gen, spec.intermediate_size, h, dt),
        "mlp.down_proj.weight": _matrix(gen, h, spec.intermediate_size, dt),
        "input_layernorm.weight": _norm(gen, h, dt),
        "post_attention_layernorm.weight": _norm(gen, h, dt),
    }
    if first:
        layer["hidden_norm.weight"] = _norm(gen, h, dt)
    return layer


def selected_target_ids(spec: SynthSpec) -> torch.Tensor:
    """A deterministic 'most frequent tokens' selection, never simply the first DV ids."""
    import torch

    gen = _generator(spec.seed + 1)
    ids = torch.randperm(spec.vocab_size, generator=gen)[: spec.draft_vocab_size]
    return torch.sort(ids).values


def vocab_maps(spec: SynthSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """The producer's correct (d2t, t2d); ModelOpt orders draft ids by frequency rank, not by id."""
    import torch

    d2t, t2d = build_maps(selected_target_ids(spec), spec.vocab_size)
    if spec.producer == MODELOPT:
        targets = torch.arange(spec.draft_vocab_size) + d2t
        ranked = targets[torch.randperm(targets.numel(), generator=_generator(spec.seed + 2))]
        d2t = ranked - torch.arange(spec.draft_vocab_size)
    return d2t, t2d


def draft_tensors(spec: SynthSpec) -> dict[str, torch.Tensor]:
    """The state dict this producer saves, with the producer's key names."""
    gen = _generator(spec.seed)
    dt = _dtype(spec)
    h, v, dv = spec.hidden_size, spec.vocab_size, spec.draft_vocab_size
    first_prefix = "midlayer." if spec.producer in (SPECFORGE, SPECFORGE_HF, EAGLE, ANGELSLIM) else "layers.0."
    tensors: dict[str, torch.Tensor] = {"fc.weight": _matrix(gen, h, len(spec.aux_ids) * h, dt)}
    tensors.update({first_prefix + k: t for k, t in decoder_layer(spec, gen, first=True).items()})
    if spec.producer == MODELOPT:  # uniform, as ModelOpt initialises it: its forward also applies it to the hidden
        import torch

        tensors[first_prefix + "input_layernorm.weight"] = torch.ones(h, dtype=dt)  # path (producers.NORM_HABITS)
    for i in range(1, spec.draft_layers):
        tensors.update({f"layers.{i}.{k}": t for k, t in decoder_layer(spec, gen, first=False).items()})
    tensors["norm.weight"] = _norm(gen, h, dt)
    tensors["lm_head.weight"] = _matrix(gen, dv, h, dt)
    if spec.producer in (SPECULATORS, SPECFORGE_HF):
        tensors["embed_tokens.weight"] = target_embedding(spec).to(dt)  # copied from the verifier, frozen
    reduced = dv < v
    if reduced or spec.producer in (SPECFORGE, SPECFORGE_HF, EAGLE, ANGELSLIM):
        d2t, t2d = vocab_maps(spec) if reduced else _identity_maps(spec)
        tensors["d2t"] = d2t
        if spec.producer != MODELOPT:
            tensors["t2d"] = t2d
    return tensors


def _identity_maps(spec: SynthSpec) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    return torch.zeros(spec.draft_vocab_size, dtype=torch.int64), torch.ones(spec.vocab_size, dtype=torch.bool)


# -- config --------------------------------------------------------------------------------
def _llama_fields(spec: SynthSpec) -> dict[str, Any]:
    return {
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads,
        "head_dim": spec.head_dim,
        "num_hidden_layers": spec.draft_layers,
        "vocab_size": spec.vocab_size,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
    }


def draft_config(spec: SynthSpec) -> dict[str, Any]:
    """config.json as this producer writes it (producers.md §1.4, §2.4, §3.3, §4.1, §4.2)."""
    ids = list(spec.aux_ids) if spec.write_aux_ids else None
    if spec.producer == SPECULATORS:
        return {
            "architectures": ["Eagle3DraftModel"],
            "speculators_model_type": "eagle3",
            "speculators_version": "0.9.0",
            "draft_vocab_size": spec.draft_vocab_size,
            "eagle_aux_hidden_state_layer_ids": ids,
            "norm_before_residual": False,
            "norm_before_fc": False,
            "fc_norm": False,
            "norm_output": False,
            "target_hidden_size": None,
            "tie_word_embeddings": False,
            "transformer_layer_config": _llama_fields(spec),
            "speculators_config": {
                "algorithm": "eagle3",
                "default_proposal_method": "greedy",
                "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                "verifier": {"name_or_path": None, "architectures": ["LlamaForCausalLM"]},
            },
        }
    config = _llama_fields(spec) | {"draft_vocab_size": spec.draft_vocab_size, "torch_dtype": spec.dtype}
    if spec.producer in (SPECFORGE, SPECFORGE_HF):
        config["architectures"] = ["LlamaForCausalLMEagle3"]
        if ids is not None:
            config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}
    elif spec.producer == EAGLE:
        config["architectures"] = ["LlamaForCausalLM"]
        config["torch_dtype"] = "float16"
    elif spec.producer == MODELOPT:
        config["architectures"] = ["LlamaForCausalLMEagle3"]
        config["eagle_config"] = {
            "eagle_aux_hidden_state_layer_ids": ids,
            "use_aux_hidden_state": True,
            "use_input_layernorm_in_first_layer": True,
            "use_last_layernorm": True,
            "use_mtp_layernorm": False,
            "next_layer_regular": True,
            "parallel_draft_step": 1,
            "parallel_draft_heads_num_layers": 1,
        }
        if ids is None:
            del config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    elif spec.producer == ANGELSLIM:
        config["architectures"] = ["Eagle3LlamaForCausalLM"]
        config["target_model_type"] = "llama"
    return config


def target_config(spec: SynthSpec) -> dict[str, Any]:
    """A Llama target (verifier) matching the draft."""
    return _llama_fields(spec) | {
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": spec.target_layers,
        "torch_dtype": "float32",
    }


def write_target(spec: SynthSpec, out: str | Path, with_weights: bool = True) -> Path:
    """Write a small Llama target with transformers' key names (random weights)."""
    from safetensors.torch import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(target_config(spec), indent=2) + "\n")
    if with_weights:
        import torch

        gen = _generator(spec.seed + 100)
        target_spec = replace(spec, dtype="float32", producer=SPECULATORS)
        state = {"model.embed_tokens.weight": _matrix(gen, spec.vocab_size, spec.hidden_size, torch.float32)}
        for i in range(spec.target_layers):
            layer = decoder_layer(target_spec, gen, first=False)
            state.update({f"model.layers.{i}.{k}": t for k, t in layer.items()})
        state["model.norm.weight"] = _norm(gen, spec.hidden_size, torch.float32)
        state["lm_head.weight"] = _matrix(gen, spec.vocab_size, spec.hidden_size, torch.float32)
        save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def target_embedding(spec: SynthSpec) -> torch.Tensor:
    """The synthetic target's embed_tokens (fp32): producers copy it into the draft and freeze it."""
    import torch

    return _matrix(_generator(spec.seed + 100), spec.vocab_size, spec.hidden_size, torch.float32)


# -- faults: each a function of the draft's tensors and config ------------------------------
@dataclass
class Draft:
    """A draft being written: its spec, tensors and config, which tensor faults change in place."""

    spec: SynthSpec
    tensors: dict[str, torch.Tensor]
    config: dict[str, Any]

    @property
    def first(self) -> str:
        return "midlayer." if any(k.startswith("midlayer.") for k in self.tensors) else "layers.0."

    @property
    def layer_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = self.config.get("transformer_layer_config", self.config)
        return fields

    def targets(self) -> torch.Tensor:
        import torch

        return torch.arange(self.spec.draft_vocab_size) + self.tensors["d2t"]


def _d2t_absolute(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.sort(d.targets()).values if d.spec.producer != MODELOPT else d.targets()


def _d2t_all_zero(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.zeros_like(d.tensors["d2t"])


def _d2t_t2d_mismatch(d: Draft) -> None:
    import torch

    dv = d.spec.draft_vocab_size
    other = torch.sort(torch.randperm(d.spec.vocab_size, generator=_generator(d.spec.seed + 7))[:dv]).values
    d.tensors["d2t"] = other - torch.arange(dv)


def _t2d_defaults(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.zeros_like(d.tensors["d2t"])
    d.tensors["t2d"] = torch.ones(d.spec.vocab_size, dtype=torch.bool)


def _d2t_out_of_range(d: Draft) -> None:
    bad = d.tensors["d2t"].clone()
    bad[-1] = d.spec.vocab_size  # target = dv - 1 + v >= v
    d.tensors["d2t"] = bad


def _d2t_duplicates(d: Draft) -> None:
    dup = d.tensors["d2t"].clone()
    dup[1] = d.targets()[0] - 1
    d.tensors["d2t"] = dup


def _d2t_missing(d: Draft) -> None:
    d.tensors.pop("d2t")
    d.tensors.pop("t2d", None)


def _d2t_int32(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = d.tensors["d2t"].to(torch.int32)


def _d2t_wrong_length(d: Draft) -> None:
    d.tensors["d2t"] = d.tensors["d2t"][: d.spec.draft_vocab_size // 2].clone()


def _t2d_wrong_count(d: Draft) -> None:
    import torch

    t2d = d.tensors["t2d"].clone()
    t2d[int(torch.nonzero(~t2d)[0])] = True
    d.tensors["t2d"] = t2d


def _nan_lm_head(d: Draft) -> None:
    import torch

    for name in ("lm_head.weight", "embed_tokens.weight"):
        if name in d.tensors:
            d.tensors[name] = torch.full_like(d.tensors[name], float("nan"))


def _inf_weight(d: Draft) -> None:
    fc = d.tensors["fc.weight"].clone()
    fc[0, 0] = float("inf")
    d.tensors["fc.weight"] = fc


def _zero_weight(d: Draft) -> None:
    import torch

    name = d.first + "self_attn.o_proj.weight"
    d.tensors[name] = torch.zeros_like(d.tensors[name])


def _constant_weight(d: Draft) -> None:
    import torch

    name = d.first + "mlp.down_proj.weight"
    d.tensors[name] = torch.full_like(d.tensors[name], 0.5)


def _fc_width(d: Draft) -> None:
    hidden = d.spec.hidden_size
    d.tensors["fc.weight"] = _matrix(_generator(3), hidden, 4 * hidden, d.tensors["fc.weight"].dtype)


def _qkv_width(d: Draft) -> None:
    name = d.first + "self_attn.q_proj.weight"
    d.tensors[name] = d.tensors[name][:, : d.spec.hidden_size].clone()


def _missing_norm(d: Draft) -> None:
    d.tensors.pop(d.first + "hidden_norm.weight")


def _missing_lm_head(d: Draft) -> None:
    d.tensors.pop("lm_head.weight")


def _leftover_prefix(d: Draft) -> None:
    for name in list(d.tensors):
        d.tensors["draft_model." + name] = d.tensors.pop(name)


def _layer_count(d: Draft) -> None:
    d.layer_fields["num_hidden_layers"] = d.spec.draft_layers + 1


def _config_missing_hidden(d: Draft) -> None:
    d.layer_fields.pop("hidden_size")


def _unknown_format(d: Draft) -> None:
    for key in ("architectures", "speculators_model_type", "speculators_config", "transformer_layer_config",
                "eagle_config", "target_model_type", "draft_vocab_size"):
        d.config.pop(key, None)
    d.config.update(_llama_fields(d.spec) | {"architectures": ["MysteryDraft"],
                                              "draft_vocab_size": d.spec.draft_vocab_size})
    for name in list(d.tensors):
        if name.startswith(("midlayer.", "layers.0.")):
            d.tensors["blocks.0." + name.split(".", 1)[1].removeprefix("0.")] = d.tensors.pop(name)
    d.tensors.pop("t2d", None)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    cut = len(data) // 2 if path.suffix == ".bin" else len(data) - max(16, len(data) // 5)
    path.write_bytes(data[:cut])


def _header_length_lie(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(struct.pack("<Q", len(data) * 4) + data[8:])


def _header_offsets_lie(path: Path) -> None:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    name = next(n for n in sorted(header) if n != "__metadata__")
    begin, end = header[name]["data_offsets"]
    header[name]["data_offsets"] = [begin + len(data), end + len(data)]
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + length :])


#: Every fault: what it imitates, the contract and diagnosis that must catch it, and what it does (to the
#: tensors and config before writing, or to a written file). The rest shape how the writer writes.
FAULTS: dict[str, Fault] = {
    "d2t-absolute": Fault("d2t stores absolute target ids (verl-SpeCo#67)", "vocab.map", "absolute-ids", tensors=_d2t_absolute, needs="d2t"),
    "d2t-all-zero": Fault("d2t all zero with a reduced vocab (NeMo Automodel#2447)", "vocab.map", "all-zero", tensors=_d2t_all_zero, needs="d2t"),
    "d2t-t2d-mismatch": Fault("d2t and t2d from different selections (data-prep bug)", "vocab.map",
                              "t2d-mismatch", _WITH_T2D, tensors=_d2t_t2d_mismatch, needs="d2t"),
    "t2d-defaults": Fault("SpecForge default buffers saved: t2d all True, d2t zeros", "vocab.map",
                          "defaults-never-replaced", _WITH_T2D, tensors=_t2d_defaults, needs="d2t"),
    "d2t-out-of-range": Fault("d2t maps past the target vocab", "vocab.map", "out-of-range", tensors=_d2t_out_of_range, needs="d2t"),
    "d2t-duplicates": Fault("two draft tokens map to one target token", "vocab.map", "duplicate-targets",
                            (MODELOPT,), tensors=_d2t_duplicates, needs="d2t"),
    "d2t-missing": Fault("reduced vocab with no d2t in the checkpoint", "vocab.map", "missing-map", tensors=_d2t_missing, needs="d2t"),
    "d2t-int32": Fault("d2t saved as int32", "vocab.map", "d2t-dtype", tensors=_d2t_int32, needs="d2t"),
    "d2t-wrong-length": Fault("d2t cached for another draft vocab size (SpecForge#602)", "vocab.map", "d2t-length", tensors=_d2t_wrong_length, needs="d2t"),
    "t2d-wrong-count": Fault("t2d marks more ids than the draft vocab", "vocab.map", "t2d-count", _WITH_T2D, tensors=_t2d_wrong_count, needs="t2d"),
    "nan-lm-head": Fault("speculators' NaN lm_head/embed saved before load_verifier_weights()", "weights.finite",
                         "speculators-nan-init", (SPECULATORS,), tensors=_nan_lm_head),
    "inf-weight": Fault("an fp16 overflow left Inf in fc", "weights.finite", "non-finite", tensors=_inf_weight),
    "zero-weight": Fault("an all-zero o_proj (never loaded)", "weights.initialised", "all-zero-weights", tensors=_zero_weight),
    "constant-weight": Fault("an uninitialised constant mlp.down_proj", "weights.initialised", "constant-weights", tensors=_constant_weight),
    "fc-width": Fault("fc sized for 4 aux states, config says 3", "config.shapes", "shape-mismatch", tensors=_fc_width),
    "qkv-width": Fault("first-layer q_proj takes H, not 2H", "config.shapes", "shape-mismatch", tensors=_qkv_width),
    "missing-norm": Fault("hidden_norm not exported", "config.shapes", "missing-tensors", tensors=_missing_norm),
    "missing-lm-head": Fault("no lm_head with a reduced vocab", "config.shapes", "missing-lm-head", tensors=_missing_lm_head),
    "leftover-prefix": Fault("draft_model. prefix left on every key", "config.shapes", "leftover-prefix", tensors=_leftover_prefix),
    "layer-count": Fault("config says 2 draft layers, checkpoint holds 1", "config.shapes", "layer-count", tensors=_layer_count),
    "config-missing-hidden": Fault("config.json without hidden_size", "config.parseable", "config-missing-field", tensors=_config_missing_hidden),
    "unknown-format": Fault("architectures and keys of no known producer", "format.detected", "format-unknown", _SAFETENSORS, tensors=_unknown_format),
    "truncated": Fault("weight file cut short", "checkpoint.readable", "unreadable", file=_truncated),
    "header-length-lie": Fault("safetensors length prefix larger than the file", "checkpoint.readable", "unreadable", _SAFETENSORS, file=_header_length_lie),
    "header-offsets-lie": Fault("a tensor's data_offsets run past the file", "checkpoint.readable", "unreadable", _SAFETENSORS, file=_header_offsets_lie),
    "shard-outside": Fault("shard index points outside the checkpoint directory", "checkpoint.readable", "unreadable", _SAFETENSORS),
    "pickle-code": Fault("pytorch_model.bin whose pickle runs code", "checkpoint.readable", "unreadable", (EAGLE,)),
    "config-not-json": Fault("config.json is not JSON", "config.parseable", "config-unreadable"),
    "config-not-object": Fault("config.json is a JSON list", "config.parseable", "config-unreadable"),
    "empty-dir": Fault("an empty directory", "checkpoint.readable", "unreadable"),
}


def _apply_tensor_faults(draft: Draft) -> None:
    for name, fault in FAULTS.items():
        applies = fault.tensors is not None and (fault.needs is None or fault.needs in draft.tensors)
        if name in draft.spec.faults and applies and fault.tensors is not None:
            fault.tensors(draft)


def _damage_file(spec: SynthSpec, path: Path) -> None:
    for name, fault in FAULTS.items():
        if name in spec.faults and fault.file is not None:
            fault.file(path)


def _write_config(spec: SynthSpec, config: dict[str, Any], out: Path) -> None:
    path = out / "config.json"
    if "config-not-json" in spec.faults:
        path.write_text('{"architectures": ["Eagle3DraftModel"], "hidden_size": 64,,')
    elif "config-not-object" in spec.faults:
        path.write_text("[1, 2, 3]\n")
    else:
        path.write_text(json.dumps(config, indent=2) + "\n")


def _write_safetensors(spec: SynthSpec, tensors: dict[str, torch.Tensor], out: Path) -> None:
    from safetensors.torch import save_file

    names = sorted(tensors)
    if spec.sharded or "shard-outside" in spec.faults:
        half = len(names) // 2
        shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
        weight_map = {}
        for filename, part in shards.items():
            save_file({n: tensors[n].contiguous() for n in part}, str(out / filename), metadata={"format": "pt"})
            weight_map.update({n: filename for n in part})
        if "shard-outside" in spec.faults:
            outside = out.parent / f"{out.name}-outside.safetensors"
            (out / "model-00002-of-00002.safetensors").replace(outside)
            weight_map.update({n: f"../{outside.name}" for n in shards["model-00002-of-00002.safetensors"]})
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
                 "weight_map": weight_map}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
        return
    path = out / "model.safetensors"
    save_file({n: tensors[n].contiguous() for n in names}, str(path), metadata={"format": "pt"})
    _damage_file(spec, path)


class _RunsCode:
    """Pickles as a call to ``exec``: what a malicious pytorch_model.bin holds."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pickle code ran')",))


def pickle_marker(out: Path) -> Path:
    """The file a ``pickle-code`` checkpoint's pickle would create if it were ever executed."""
    return out / "PICKLE_CODE_RAN"


def _write_bin(spec: SynthSpec, tensors: dict[str, torch.Tensor], out: Path) -> None:
    import torch

    payload: dict[str, Any] = dict(tensors)
    if "pickle-code" in spec.faults:
        payload["__evil__"] = _RunsCode(pickle_marker(out))
    path = out / "pytorch_model.bin"
    torch.save(payload, path)
    _damage_file(spec, path)
