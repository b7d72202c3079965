"""Build a target mlx-vlm's EAGLE-3 drafter can be fed from, and drafts trained on it: ``python -m examples.build_mlx_pair``.

mlx-vlm's Llama model never returns the layer states its EAGLE-3 loop asks for (``mlx_vlm/models/llama/language.py``
``LanguageModel.__call__`` drops ``capture_layer_ids``), so ``demo-target`` cannot feed a draft there. Qwen3.5 can
(``mlx_vlm/models/qwen3_5/language.py`` ``Qwen3_5Model.__call__`` appends the output of each captured layer):

qwen35-target           Qwen3_5ForConditionalGeneration as transformers writes it: text model hidden 64, 8 layers
                        (Gated DeltaNet x3 + full attention, twice: transformers' and mlx-vlm's default interval 4),
                        vocab 1024, partial rotary 0.25 with mrope sections [2, 1, 1]; a one-block vision tower 16
                        wide, never trained (mlx-vlm's qwen3_5 model needs one; the prompts are token ids). Trained on
                        demo-target's mode-chain language with its training and layer-separation penalty
                        (``build_demo_pair.fit``)
qwen35-draft            EAGLE-3 draft in speculators 0.9.0 layout (the one mlx-vlm's drafter loads: ``layers.0.*``,
                        ``embed_tokens`` copied from the target, ``d2t`` offsets), trained on the inputs of layers
                        [2, 4, 5] (input-of ids [2, 4, 5]), as ``build_trained_drafts.py`` trains
qwen35-draft-outputof   the same layout and ids, trained on the OUTPUTS of layers [2, 4, 5]: mlx-vlm feeds it the
                        inputs (``capture_layer_ids = id - 1``, layer outputs), the wrong layers

Deterministic on CPU, one thread (about 25 minutes on 2 shared cores). ``--drafts-only`` reuses the target.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import torch

from examples.build_demo_pair import HERE, SEED, VOCAB, Language, fit, load_target_model, save_target
from examples.build_trained_drafts import Recipe, train, write_config
from pytest_eagle3.reference.draft import ReferenceDraft
from pytest_eagle3.testing.synth import SPECULATORS

ARCHITECTURE = "Qwen3_5ForConditionalGeneration"
TEXT_CONFIG: dict[str, object] = {
    "vocab_size": VOCAB, "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 8,
    "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "hidden_act": "silu",
    "linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                        "mrope_section": [2, 1, 1], "mrope_interleaved": True},
    "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
}
VISION_CONFIG: dict[str, object] = {
    "depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 1, "patch_size": 4,
    "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 64, "num_position_embeddings": 16,
}
TARGET = "qwen35-target"
#: name: what is trained (build_trained_drafts.Recipe: speculators layout, ids [2, 4, 5], HF offset 0 or 1)
DRAFTS = {
    "qwen35-draft": Recipe(SPECULATORS, 0),
    "qwen35-draft-outputof": Recipe(SPECULATORS, 1),
}


def target_model() -> torch.nn.Module:
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    torch.manual_seed(SEED)
    return Qwen3_5ForConditionalGeneration(Qwen3_5Config(text_config=TEXT_CONFIG, vision_config=VISION_CONFIG))


def train_target(out: Path) -> dict[str, object]:
    lang = Language()
    model = target_model()
    figures = fit(model, lang)
    save_target(model, out)
    return figures


def save_draft(draft: ReferenceDraft, recipe: Recipe, lang: Language, target_dir: Path, out: Path) -> None:
    """speculators layout as float32 safetensors: ``layers.0.*``, ``d2t`` offsets and ``t2d``, and a frozen copy
    of the target's ``embed_tokens`` (mlx-vlm's drafter must ship one; it binds the target's in its place)."""
    from safetensors.torch import load_file, save_file

    tensors = {k: v.detach().contiguous() for k, v in draft.weights.items()}
    t2d = torch.zeros(VOCAB, dtype=torch.bool)
    t2d[lang.content] = True
    tensors["t2d"] = t2d
    weights = load_file(str(target_dir / "model.safetensors"))
    tensors["embed_tokens.weight"] = weights["model.language_model.embed_tokens.weight"].clone()
    config = write_config(recipe)
    config["speculators_config"]["verifier"]["architectures"] = [ARCHITECTURE]  # type: ignore[index]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file(dict(sorted(tensors.items())), str(out / "model.safetensors"), metadata={"format": "pt"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drafts-only", action="store_true", help=f"reuse the existing {TARGET}")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    started = time.perf_counter()
    figures: dict[str, object] = {}
    target_dir = args.out / TARGET
    if not args.drafts_only:
        figures[TARGET] = train_target(target_dir)
    target = load_target_model(target_dir)
    for param in target.parameters():
        param.requires_grad_(False)
    for number, (name, recipe) in enumerate(DRAFTS.items()):
        draft, figures[name] = train(target, recipe, SEED + 40 + number)
        save_draft(draft, recipe, Language(), target_dir, args.out / name)
    figures["total_s"] = round(time.perf_counter() - started)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
