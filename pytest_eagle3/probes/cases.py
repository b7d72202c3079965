"""The synthetic checkpoint families the probes run on: every producer layout and the variants
whose engine outcome depends on the version (key names, maps, aux-id placement, flags).

Each case is a ``SynthSpec`` plus config edits and extra tensors, written by ``synth`` into a
folder of its own; all cases belong to the one default target (``SynthSpec()``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_eagle3.producers.names import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS, layer_config
from pytest_eagle3.testing.synth import SPECFORGE_HF, SynthSpec, write_checkpoint, write_target

TOP_LEVEL = "top-level"
#: A DeepSeek-V2 (MLA) layer config at the synthetic draft's width: 2 heads, latent ranks 32, no rope scaling
#: (Kimi-K2's YaRN needs an accelerator in SGLang's DeepseekScalingRotaryEmbedding, get_device, on CPU).
#: model_type deepseek_v3 would be rewritten to MTP by vLLM's SpeculativeConfig.hf_config_override.
MLA_CONFIG: dict[str, Any] = {
    "model_type": "deepseek_v2", "q_lora_rank": 32, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 16, "v_head_dim": 16,
}
EAGLE_CONFIG = "eagle_config"
#: The quantization_config AutoFP8 (``quantize_config.py``, static activation scheme) writes beside its float8 weights.
FP8_CONFIG: dict[str, Any] = {"quant_method": "fp8", "activation_scheme": "static", "ignored_layers": ["lm_head"]}


@dataclass(frozen=True)
class ProbeCase:
    """A named synthetic draft: what it varies, and how it is written."""

    name: str
    description: str
    spec: SynthSpec = field(default_factory=SynthSpec)
    #: Merged into config.json (speculators: into the top level, next to the speculators fields).
    config: Mapping[str, Any] = field(default_factory=dict)
    #: Merged into (or creating) config.json's ``eagle_config``.
    eagle_config: Mapping[str, Any] = field(default_factory=dict)
    #: Config keys removed after the edits.
    remove: tuple[str, ...] = ()
    #: Move the aux ids to this place (``TOP_LEVEL`` or ``EAGLE_CONFIG``); None keeps the producer's.
    aux_placement: str | None = None
    #: Extra tensors: "input_norm" ([aux x H], norm_before_fc), "fc_norm" (one [H] per aux state),
    #: "fc_bias" ([H], a key no engine parameter takes), "random_embed" (an embed_tokens unlike the
    #: target's: untrained, TorchSpec#38), "qk_norm" (q_norm/k_norm [head_dim] on every layer, as a
    #: Qwen3-style decoder layer has), "mla" (q/k/v_proj replaced by DeepSeek MLA projections, MLA_CONFIG sizes),
    #: "fp8_fc" (fc.weight float8_e4m3fn with its weight_scale / input_scale, as the decoder projections of an
    #: ``fp8`` spec: a quantizer that takes every Linear but lm_head).
    extra_tensors: tuple[str, ...] = ()
    #: Merged into the layer config (speculators: transformer_layer_config; else the top level).
    layer_config: Mapping[str, Any] = field(default_factory=dict)
    #: Layer-config keys removed after the edits.
    remove_layer: tuple[str, ...] = ()

    @property
    def producer(self) -> str:
        """The producer whose layout the case's draft is written in."""
        return self.spec.producer


CASES: tuple[ProbeCase, ...] = (
    ProbeCase("speculators", "speculators 0.9.0 layout: layers.0.*, top-level aux ids, embed_tokens, d2t+t2d",
              SynthSpec(producer=SPECULATORS)),
    ProbeCase("specforge", "SpecForge SGLang export: midlayer.*, eagle_config aux ids, no embed_tokens",
              SynthSpec(producer=SPECFORGE)),
    ProbeCase("specforge-hf", "SpecForge HF export: midlayer.* with embed_tokens", SynthSpec(producer=SPECFORGE_HF)),
    ProbeCase("eagle", "SafeAILab EAGLE: LlamaForCausalLM arch, pytorch_model.bin, no aux ids",
              SynthSpec(producer=EAGLE)),
    ProbeCase("modelopt", "ModelOpt: layers.0.* under LlamaForCausalLMEagle3, d2t without t2d",
              SynthSpec(producer=MODELOPT)),
    ProbeCase("angelslim", "AngelSlim: Eagle3LlamaForCausalLM arch, no aux ids", SynthSpec(producer=ANGELSLIM)),
    ProbeCase("speculators-2-layers", "speculators multi-layer draft (layers.0, layers.1)",
              SynthSpec(producer=SPECULATORS, draft_layers=2)),
    ProbeCase("specforge-2-layers", "SGLang-arch multi-layer draft (midlayer, layers.1)",
              SynthSpec(producer=SPECFORGE, draft_layers=2)),
    ProbeCase("speculators-full-vocab", "draft vocab = target vocab, no d2t/t2d (speculators)",
              SynthSpec(producer=SPECULATORS, draft_vocab_size=1024)),
    ProbeCase("specforge-full-vocab-d2t", "draft vocab = target vocab with an all-zero d2t (SpecForge)",
              SynthSpec(producer=SPECFORGE, draft_vocab_size=1024)),
    ProbeCase("specforge-d2t-absolute", "d2t holds absolute target ids",
              SynthSpec(producer=SPECFORGE).with_faults("d2t-absolute")),
    ProbeCase("specforge-d2t-missing", "reduced vocab, no d2t/t2d",
              SynthSpec(producer=SPECFORGE).with_faults("d2t-missing")),
    ProbeCase("specforge-no-lm-head", "reduced vocab, no lm_head (and no embed_tokens)",
              SynthSpec(producer=SPECFORGE).with_faults("missing-lm-head")),
    ProbeCase("specforge-ids-top-level", "SGLang-arch draft with aux ids (1, 2, 6) at the top level only",
              SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 2, 6)), aux_placement=TOP_LEVEL),
    ProbeCase("specforge-ids-126", "SGLang-arch draft with aux ids (1, 2, 6) in eagle_config (not the defaults)",
              SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 2, 6))),
    ProbeCase("specforge-no-aux", "eagle_config.use_aux_hidden_state = false",
              SynthSpec(producer=SPECFORGE), eagle_config={"use_aux_hidden_state": False}),
    ProbeCase("specforge-norm-flags", "norm_before_residual, norm_output and fc_norm set, fc_norm.* saved",
              SynthSpec(producer=SPECFORGE),
              config={"norm_before_residual": True, "norm_output": True, "fc_norm": True},
              extra_tensors=("fc_norm",)),
    ProbeCase("speculators-norm-before-fc", "speculators config with norm_before_fc, input_norm saved, "
              "norm_before_residual key absent", SynthSpec(producer=SPECULATORS),
              config={"norm_before_fc": True}, remove=("norm_before_residual",), extra_tensors=("input_norm",)),
    ProbeCase("specforge-extra-bias", "an fc.bias the architecture does not have (config has no bias)",
              SynthSpec(producer=SPECFORGE), extra_tensors=("fc_bias",)),
    ProbeCase("speculators-4-aux", "4 top-level aux ids, fc 4H wide", SynthSpec(producer=SPECULATORS,
              aux_layer_ids=(1, 2, 4, 6))),
    ProbeCase("speculators-qwen3-qk-norm", "speculators draft with a qwen3 layer config and q_norm/k_norm "
              "(vLLM >= 0.24 builds Eagle3Qwen3ForCausalLM)", SynthSpec(producer=SPECULATORS),
              layer_config={"model_type": "qwen3"}, extra_tensors=("qk_norm",)),
    ProbeCase("specforge-qk-norm", "Llama-arch SGLang draft that ships q_norm/k_norm (a Qwen3-style layer)",
              SynthSpec(producer=SPECFORGE), extra_tensors=("qk_norm",)),
    ProbeCase("specforge-qwen3-no-head-dim", "qwen3 model_type without head_dim: AutoConfig's Qwen3Config gives 128, "
              "the tensors have 32", SynthSpec(producer=SPECFORGE), layer_config={"model_type": "qwen3"},
              remove_layer=("head_dim",), extra_tensors=("qk_norm",)),
    ProbeCase("specforge-wide-heads-no-head-dim", "2 heads x 64 on a 64-wide draft, head_dim omitted: engines "
              "derive 64 // 2 = 32", SynthSpec(producer=SPECFORGE, head_dim=64), remove_layer=("head_dim",)),
    ProbeCase("specforge-minimax-arch", "architectures Eagle3MiniMaxM2ForCausalLM (vLLM >= 0.20 maps it to the Llama "
              "class; SGLang has no such class)", SynthSpec(producer=SPECFORGE),
              config={"architectures": ["Eagle3MiniMaxM2ForCausalLM"]}),
    ProbeCase("specforge-qwen3vl-arch", "architectures Eagle3Qwen3vlForCausalLM (vLLM >= 0.12 maps it to the Llama class)",
              SynthSpec(producer=SPECFORGE), config={"architectures": ["Eagle3Qwen3vlForCausalLM"]}),
    ProbeCase("speculators-random-embed", "embed_tokens unlike the target's (untrained; TorchSpec#38)",
              SynthSpec(producer=SPECULATORS), extra_tensors=("random_embed",)),
    ProbeCase("specforge-mla", "Kimi-K2.5-style MLA draft: Eagle3DeepseekV2ForCausalLM, deepseek_v2 layer with "
              "q_a/q_b/kv_a/kv_b projections (vLLM >= 0.18, SGLang >= 0.5.12 have the class)",
              SynthSpec(producer=SPECFORGE), config={"architectures": ["Eagle3DeepseekV2ForCausalLM"], **MLA_CONFIG},
              extra_tensors=("mla",)),
    ProbeCase("specforge-fp8", "FP8 static draft as AutoFP8 writes it: every Linear but lm_head float8_e4m3fn with a "
              "per-tensor weight_scale and input_scale, quantization_config fp8 / static / ignored_layers [lm_head]",
              SynthSpec(producer=SPECFORGE, quantization="fp8"), config={"quantization_config": FP8_CONFIG},
              extra_tensors=("fp8_fc",)),
)
CASES_BY_NAME = {case.name: case for case in CASES}
#: Cases added after the older releases were recorded: probed on the newest release of each engine (and wherever a
#: run records them), not in every recorded run.
NEWEST_ONLY: tuple[str, ...] = ("specforge-fp8",)


def write_case(case: ProbeCase, out: str | Path) -> Path:
    """Write the case's draft into ``out`` (created) and return it."""
    out = write_checkpoint(case.spec, out)
    path = out / "config.json"
    config = json.loads(path.read_text())
    ids = config.get("eagle_aux_hidden_state_layer_ids") or (config.get("eagle_config") or {}).get(
        "eagle_aux_hidden_state_layer_ids"
    )
    config.update(case.config)
    if case.eagle_config:
        config["eagle_config"] = {**(config.get("eagle_config") or {}), **case.eagle_config}
    if case.aux_placement is not None:
        config.pop("eagle_aux_hidden_state_layer_ids", None)
        (config.get("eagle_config") or {}).pop("eagle_aux_hidden_state_layer_ids", None)
        if case.aux_placement == TOP_LEVEL:
            config["eagle_aux_hidden_state_layer_ids"] = ids
        else:
            config.setdefault("eagle_config", {})["eagle_aux_hidden_state_layer_ids"] = ids
    for key in case.remove:
        config.pop(key, None)
    layer = layer_config(config)[0]
    assert isinstance(layer, dict)
    layer.update(case.layer_config)
    for key in case.remove_layer:
        layer.pop(key, None)
    path.write_text(json.dumps(config, indent=2) + "\n")
    if case.extra_tensors:
        _add_tensors(case, out)
    return out


def _add_tensors(case: ProbeCase, out: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    path = out / "model.safetensors"
    tensors = load_file(str(path))
    h, aux = case.spec.hidden_size, len(case.spec.aux_ids)
    dtype = tensors["norm.weight"].dtype
    gen = torch.Generator().manual_seed(case.spec.seed + 11)
    if "input_norm" in case.extra_tensors:
        tensors["input_norm.weight"] = (1.0 + 0.01 * torch.randn(aux * h, generator=gen)).to(dtype)
    if "fc_bias" in case.extra_tensors:
        tensors["fc.bias"] = (0.01 * torch.randn(h, generator=gen)).to(dtype)
    if "random_embed" in case.extra_tensors:
        tensors["embed_tokens.weight"] = (0.02 * torch.randn(tensors["embed_tokens.weight"].shape, generator=gen)).to(dtype)
    if "qk_norm" in case.extra_tensors:
        for prefix in sorted({n.split("self_attn.")[0] for n in tensors if "self_attn.q_proj" in n}):
            for norm in ("q_norm", "k_norm"):
                tensors[f"{prefix}self_attn.{norm}.weight"] = (1.0 + 0.01 * torch.randn(
                    case.spec.head_dim, generator=gen)).to(dtype)
    if "mla" in case.extra_tensors:
        _mla_attention(tensors, case, gen)
    if "fp8_fc" in case.extra_tensors:
        from pytest_eagle3.testing.quantize import quantize

        fc = quantize({"fc_proj.weight": tensors.pop("fc.weight")}, "fp8")
        tensors.update({name.replace("fc_proj.", "fc."): value for name, value in fc.items()})
    if "fc_norm" in case.extra_tensors:
        for i in range(aux):
            tensors[f"fc_norm.{i}.weight"] = (1.0 + 0.01 * torch.randn(h, generator=gen)).to(dtype)
    save_file({n: tensors[n].contiguous() for n in sorted(tensors)}, str(path), metadata={"format": "pt"})


def _mla_attention(tensors: dict[str, Any], case: ProbeCase, gen: Any) -> None:
    """q/k/v/o of every layer replaced by DeepSeek-V3 MLA tensors (layer 0 takes 2 x hidden, as in EAGLE-3)."""
    import torch

    c, h, heads = MLA_CONFIG, case.spec.hidden_size, case.spec.num_attention_heads
    qk = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
    for prefix in sorted({n.split("self_attn.")[0] for n in tensors if "self_attn.q_proj" in n}):
        dtype = tensors[f"{prefix}self_attn.q_proj.weight"].dtype
        width = tensors[f"{prefix}self_attn.q_proj.weight"].shape[1]
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            del tensors[f"{prefix}self_attn.{name}.weight"]
        shapes = {
            "q_a_proj.weight": (c["q_lora_rank"], width), "q_a_layernorm.weight": (c["q_lora_rank"],),
            "q_b_proj.weight": (heads * qk, c["q_lora_rank"]),
            "kv_a_proj_with_mqa.weight": (c["kv_lora_rank"] + c["qk_rope_head_dim"], width),
            "kv_a_layernorm.weight": (c["kv_lora_rank"],),
            "kv_b_proj.weight": (heads * (c["qk_nope_head_dim"] + c["v_head_dim"]), c["kv_lora_rank"]),
            "o_proj.weight": (h, heads * c["v_head_dim"]),
        }
        for name, shape in shapes.items():
            value = 1.0 + 0.01 * torch.randn(shape, generator=gen) if len(shape) == 1 else 0.02 * torch.randn(
                shape, generator=gen)
            tensors[f"{prefix}self_attn.{name}"] = value.to(dtype)


def write_all(root: str | Path, names: tuple[str, ...] | None = None) -> tuple[Path, dict[str, Path]]:
    """The target and every case (or the named ones) under ``root``: (target dir, name -> dir)."""
    root = Path(root)
    target = write_target(SynthSpec(), root / "target")
    chosen = [CASES_BY_NAME[n] for n in names] if names else list(CASES)
    return target, {case.name: write_case(case, root / case.name) for case in chosen}
