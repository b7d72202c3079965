"""Build drafts trained on purpose with non-default conventions and layouts, against the demo target.

``python examples/build_trained_drafts.py`` (after ``build_demo_pair.py``; the target is reused,
never retrained). Deterministic on CPU, one thread. Each draft is trained like the demo drafts
(training-time test over 3 steps on the mode-chain language) with one thing changed:

trained-inputof-sglang      SpecForge's SGLang layout (``eagle_config`` ids, ``midlayer.*``) but
                            trained on the INPUTS of layers [2, 4, 5] (input-of ids [2, 4, 5])
trained-inputof-toplevel    the same training, config with top-level
                            ``eagle_aux_hidden_state_layer_ids``, ``LlamaForCausalLMEagle3`` and
                            ``midlayer.*`` keys: a layout several producers share
trained-outputof-speculators  speculators layout, trained on the OUTPUTS of layers [2, 4, 5]
                            (output-of ids [2, 4, 5] written verbatim)
trained-own-embed           speculators layout, trained with its own ``embed_tokens`` (seeded random
                            init, trained with the rest): it differs from the target's
trained-full-vocab          speculators layout, draft vocab = target vocab (1024), no d2t / t2d
trained-2layer              speculators layout, two draft layers (``layers.0.*``, ``layers.1.*``),
                            input-of ids [1, 4, 6]
trained-norm-default        speculators layout, trained with norm_before_residual False (the
                            speculators default) and a config that omits the norm flags (vLLM's
                            speculators reader then defaults norm_before_residual to True); no
                            embed_tokens copy
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from examples.build_demo_pair import (
    CONTENT_COUNT,
    DRAFT_BATCH,
    DRAFT_LOSS_WEIGHTS,
    DRAFT_STEPS,
    DRAFT_TTT,
    HERE,
    SEED,
    TARGET_CONFIG,
    VOCAB,
    Language,
    load_target_model,
)
from pytest_eagle3.reference.acceptance import capture_states
from pytest_eagle3.reference.draft import DraftSpec, ReferenceDraft
from pytest_eagle3.testing.synth import SPECFORGE, SPECULATORS, SynthSpec, decoder_layer, draft_config

TOP_LEVEL = "top-level"  # LlamaForCausalLMEagle3 + midlayer.* + top-level ids: no producer's own layout


@dataclass(frozen=True)
class Recipe:
    """What is non-default about one trained draft."""

    layout: str  # SPECULATORS, SPECFORGE or TOP_LEVEL
    offset: int  # HF hidden_states index = aux id + offset in training (0: input-of, 1: output-of)
    aux_ids: tuple[int, ...] = (2, 4, 5)
    layers: int = 1
    full_vocab: bool = False
    own_embed: bool = False
    omit_norm_flags: bool = False
    #: ModelOpt's forward: the first layer's input_layernorm before hidden_norm (scripts/price_modelopt_norm.py).
    hidden_prenorm: bool = False


RECIPES: dict[str, Recipe] = {
    "trained-inputof-sglang": Recipe(SPECFORGE, 0),
    "trained-inputof-toplevel": Recipe(TOP_LEVEL, 0),
    "trained-outputof-speculators": Recipe(SPECULATORS, 1),
    "trained-own-embed": Recipe(SPECULATORS, 0, own_embed=True),
    "trained-full-vocab": Recipe(SPECULATORS, 0, full_vocab=True),
    "trained-2layer": Recipe(SPECULATORS, 0, aux_ids=(1, 4, 6), layers=2),
    "trained-norm-default": Recipe(SPECULATORS, 0, omit_norm_flags=True),
}


def _synth_spec(recipe: Recipe) -> SynthSpec:
    producer = SPECULATORS if recipe.layout == SPECULATORS else SPECFORGE
    return SynthSpec(producer=producer, hidden_size=64, intermediate_size=256, num_attention_heads=2,
                     num_key_value_heads=2, head_dim=32, vocab_size=VOCAB,
                     draft_vocab_size=VOCAB if recipe.full_vocab else CONTENT_COUNT,
                     draft_layers=recipe.layers, aux_layer_ids=recipe.aux_ids, dtype="float32")


def init_draft(target: torch.nn.Module, lang: Language, recipe: Recipe, seed: int) -> ReferenceDraft:
    """Seeded initial weights; lm_head starts from the target's rows, d2t maps the content tokens."""
    gen = torch.Generator().manual_seed(seed)
    spec = _synth_spec(recipe)
    h = spec.hidden_size
    weights = {f"layers.0.{k}": v.clone() for k, v in decoder_layer(spec, gen, first=True).items()}
    for layer in range(1, recipe.layers):
        weights.update({f"layers.{layer}.{k}": v.clone() for k, v in decoder_layer(spec, gen, first=False).items()})
    weights["fc.weight"] = torch.randn(h, len(recipe.aux_ids) * h, generator=gen) * 0.02
    weights["norm.weight"] = torch.ones(h)
    head = target.lm_head.weight.detach()
    weights["lm_head.weight"] = (head if recipe.full_vocab else head[lang.content]).clone()
    if recipe.own_embed:
        scale = float(target.get_input_embeddings().weight.std())
        weights["embed_tokens.weight"] = torch.randn(VOCAB, h, generator=gen) * scale
    for tensor in weights.values():
        tensor.requires_grad_(True)
    if not recipe.full_vocab:
        weights["d2t"] = lang.content - torch.arange(CONTENT_COUNT)
    draft_spec = DraftSpec(hidden_size=h, num_heads=2, num_kv_heads=2, head_dim=32, rms_norm_eps=1e-6,
                           rope_theta=10000.0, rope_scaling=(), act="silu", layers=recipe.layers,
                           aux_count=len(recipe.aux_ids), norm_before_residual=False, norm_before_fc=False,
                           fc_norm=False, norm_logits=True, feed_normed=False, hidden_prenorm=recipe.hidden_prenorm)
    return ReferenceDraft(draft_spec, weights)


def _labels(lang: Language, predicted: torch.Tensor, recipe: Recipe) -> torch.Tensor:
    return predicted if recipe.full_vocab else lang.index_of[predicted]


def train(target: torch.nn.Module, recipe: Recipe, seed: int) -> tuple[ReferenceDraft, dict[str, object]]:
    """Training-time test over DRAFT_TTT steps on the target's states at HF indices ids + offset."""
    lang = Language(SEED)
    lang.gen.manual_seed(seed)
    draft = init_draft(target, lang, recipe, seed)
    params = [t for t in draft.weights.values() if t.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.0)
    target_embed = target.get_input_embeddings().weight.detach()
    started, accuracy = time.perf_counter(), 0.0
    for step in range(DRAFT_STEPS):
        ids, _ = lang.batch(DRAFT_BATCH)
        with torch.no_grad():
            states = capture_states(target, ids)
            predicted = target(ids).logits.argmax(-1)
        usable = ids.shape[1] - 1 - DRAFT_TTT
        aux = torch.cat([states[i + recipe.offset][:, :usable] for i in recipe.aux_ids], dim=-1)
        teacher = torch.stack([ids[:, 2 + j: usable + 2 + j] for j in range(DRAFT_TTT - 1)], dim=-1)
        embed = draft.weights["embed_tokens.weight"] if recipe.own_embed else target_embed
        _, logits = draft.propose(aux, ids[:, 1: usable + 1], DRAFT_TTT, embed, teacher=teacher)
        loss = torch.zeros(())
        for j, (weight, step_logits) in enumerate(zip(DRAFT_LOSS_WEIGHTS, logits)):
            labels = _labels(lang, predicted[:, 1 + j: usable + 1 + j], recipe)
            loss = loss + weight * torch.nn.functional.cross_entropy(
                step_logits.reshape(-1, step_logits.shape[-1]), labels.reshape(-1), ignore_index=-1)
            if j == 0:
                keep = labels >= 0
                accuracy = float((step_logits.argmax(-1)[keep] == labels[keep]).float().mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"draft step {step}: loss {float(loss):.4f} step-1 acc {accuracy:.4f}", flush=True)
    for tensor in draft.weights.values():
        tensor.requires_grad_(False)
    return draft, {"seconds": round(time.perf_counter() - started), "step1_accuracy": round(accuracy, 4)}


def write_config(recipe: Recipe) -> dict[str, object]:
    """config.json in the recipe's layout, aux ids written verbatim."""
    spec = _synth_spec(recipe)
    config = draft_config(spec)
    layer_config = config["transformer_layer_config"] if recipe.layout == SPECULATORS else config
    layer_config["max_position_embeddings"] = TARGET_CONFIG["max_position_embeddings"]
    if recipe.omit_norm_flags:
        for name in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"):
            config.pop(name, None)
    if recipe.layout == TOP_LEVEL:
        del config["eagle_config"]
        config["eagle_aux_hidden_state_layer_ids"] = list(recipe.aux_ids)
    return config


def save(draft: ReferenceDraft, recipe: Recipe, lang: Language, target_dir: Path, out: Path) -> None:
    """Write the draft as float32 safetensors with the layout's key names."""
    from safetensors.torch import load_file, save_file

    layer_prefix = "layers.0." if recipe.layout == SPECULATORS else "midlayer."
    tensors = {k.replace("layers.0.", layer_prefix): v.detach().contiguous() for k, v in draft.weights.items()}
    if not recipe.full_vocab:
        t2d = torch.zeros(VOCAB, dtype=torch.bool)
        t2d[lang.content] = True
        tensors["t2d"] = t2d
    if recipe.layout == SPECULATORS and not recipe.own_embed and not recipe.omit_norm_flags:  # a frozen copy
        tensors["embed_tokens.weight"] = load_file(str(target_dir / "model.safetensors"))[
            "model.embed_tokens.weight"].clone()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(write_config(recipe), indent=2, sort_keys=True) + "\n")
    save_file(dict(sorted(tensors.items())), str(out / "model.safetensors"), metadata={"format": "pt"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("names", nargs="*", help="drafts to build (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    target_dir = args.out / "demo-target"
    target = load_target_model(target_dir)
    for param in target.parameters():
        param.requires_grad_(False)
    figures: dict[str, object] = {}
    for number, (name, recipe) in enumerate(RECIPES.items()):
        if args.names and name not in args.names:
            continue
        draft, figures[name] = train(target, replace(recipe), SEED + 20 + number)
        save(draft, recipe, Language(), target_dir, args.out / name)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
