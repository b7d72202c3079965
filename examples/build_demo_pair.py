"""Build the demo target and drafts deterministically on CPU: ``python examples/build_demo_pair.py``.

demo-target          Llama, 8 layers, hidden 64, vocab 1024, trained on the "mode-chain" language
                     (+ gguf-tokenizer/, for llama.cpp's converter: examples/build_demo_tokenizer.py)
demo-draft           EAGLE-3 draft in speculators 0.9.0 layout, trained on the target's inputs of
                     layers [2, 4, 5] (input-of ids [2, 4, 5])
demo-draft-sglang    EAGLE-3 draft in SpecForge's SGLang layout, trained on the target's outputs of
                     layers [2, 4, 5] (output-of ids [2, 4, 5], i.e. inputs of [3, 5, 6])

The language: the first token selects one of 8 modes (``x0 % 8``); every later token is a fixed
function of the previous one under that mode, over 256 content tokens. The draft never sees
``x0`` as a token, so it can only learn the mode from the target's hidden states, which makes the
choice of aux layers measurable. The target is fine-tuned with a penalty on the mean-removed cosine
between neighbouring layers, so that an off-by-one layer reading is measurably wrong.

``--drafts-only`` reuses an existing demo-target. One thread: several threads on a small shared
machine were measured to be much slower.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import torch

from pytest_eagle3.reference.acceptance import capture_states
from pytest_eagle3.reference.draft import DraftSpec, ReferenceDraft
from pytest_eagle3.testing.synth import SPECFORGE, SPECULATORS, SynthSpec, decoder_layer, draft_config

try:  # run as a script (python examples/build_demo_pair.py): the folder is on the path
    from build_demo_tokenizer import write as write_tokenizer  # type: ignore[import-not-found,unused-ignore]
except ModuleNotFoundError:  # imported as examples.build_demo_pair (build_trained_drafts.py)
    from examples.build_demo_tokenizer import write as write_tokenizer

HERE = Path(__file__).resolve().parent
SEED = 1234
VOCAB = 1024
MODES = 8
CONTENT_COUNT = 256
#: Content ids stay below VOCAB - CONTENT_COUNT, so an absolute-id d2t stays in range in engines.
CONTENT_RANGE = (8, VOCAB - CONTENT_COUNT)
SEQ_LEN = 80  # longer than the checks' sequences (1 prompt token + 64 generated)
BATCH = 12
TARGET_STEPS = 1500
TARGET_FINETUNE_STEPS = 1000
DRAFT_BATCH = 8
DECORRELATE_MARGIN = 0.2
DRAFT_STEPS = 500
DRAFT_TTT = 3
DRAFT_LOSS_WEIGHTS = (1.0, 0.8, 0.6)
AUX_IDS = (2, 4, 5)
TARGET_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB,
    "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 8, "num_attention_heads": 2,
    "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
    "bos_token_id": None, "eos_token_id": None, "pad_token_id": None, "torch_dtype": "float32",
}


class Language:
    """The mode-chain language: ``x[t+1] = f_mode(x[t])`` with ``mode = x[0] % 8``."""

    def __init__(self, seed: int = SEED) -> None:
        gen = torch.Generator().manual_seed(seed)
        low, high = CONTENT_RANGE
        self.content = torch.sort(torch.randperm(high - low, generator=gen)[:CONTENT_COUNT] + low).values
        # next_index[mode, i]: index in ``content`` of the token that follows content[i]
        self.next_index = torch.stack([torch.randperm(CONTENT_COUNT, generator=gen) for _ in range(MODES)])
        self.index_of = torch.full((VOCAB,), -1, dtype=torch.long)
        self.index_of[self.content] = torch.arange(CONTENT_COUNT)
        self.gen = torch.Generator().manual_seed(seed + 1)

    def first_content(self, x0: torch.Tensor) -> torch.Tensor:
        """The content token a sequence starting with ``x0`` continues with."""
        return self.content[(x0 * 37 + 11) % CONTENT_COUNT]

    def batch(self, size: int = BATCH, length: int = SEQ_LEN) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and the positions whose next token is determined (the loss mask)."""
        x0 = torch.randint(0, VOCAB, (size,), generator=self.gen)
        random_start = torch.rand(size, generator=self.gen) < 0.5
        start = torch.where(random_start, torch.randint(0, CONTENT_COUNT, (size,), generator=self.gen),
                            self.index_of[self.first_content(x0)])
        mode = x0 % MODES
        idx = [start]
        for _ in range(length - 2):
            idx.append(self.next_index[mode, idx[-1]])
        ids = torch.cat([x0[:, None], self.content[torch.stack(idx, dim=1)]], dim=1)
        mask = torch.ones(size, length, dtype=torch.bool)
        mask[:, -1] = False
        mask[random_start, 0] = False
        return ids, mask


def _target_model() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(**{k: v for k, v in TARGET_CONFIG.items() if k not in ("architectures", "model_type")})
    return LlamaForCausalLM(config)


def _next_token_loss(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, float]:
    pred, gold = logits[:, :-1], ids[:, 1:]
    keep = mask[:, :-1]
    loss = torch.nn.functional.cross_entropy(pred[keep], gold[keep])
    accuracy = float((pred[keep].argmax(-1) == gold[keep]).float().mean())
    return loss, accuracy


def centred_cosine_penalty(hidden_states: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Mean of relu(|cos| - margin) between neighbouring layers' mean-removed states.

    The raw cosine is cheated (each layer adds a large constant offset); the centred one is not.
    """
    layers = hidden_states[1:-1]  # inputs of decoder layers 1..L-1 (the last entry is post-norm)
    total = torch.zeros(())
    for a, b in itertools.pairwise(layers):
        a = a - a.mean(dim=(0, 1))
        b = b - b.mean(dim=(0, 1))
        cos = torch.nn.functional.cosine_similarity(a, b, dim=-1)
        total = total + torch.relu(cos.abs() - DECORRELATE_MARGIN).mean()
    return total / max(1, len(layers) - 1)


def neighbour_cosines(model: torch.nn.Module, lang: Language) -> list[float]:
    ids, _ = lang.batch()
    with torch.no_grad():
        hs = model(ids, output_hidden_states=True).hidden_states[1:-1]
    out = []
    for a, b in itertools.pairwise(hs):
        a, b = a - a.mean(dim=(0, 1)), b - b.mean(dim=(0, 1))
        out.append(round(float(torch.nn.functional.cosine_similarity(a, b, dim=-1).abs().mean()), 3))
    return out


def fit(model: torch.nn.Module, lang: Language) -> dict[str, object]:
    """Train ``model`` on the language, then fine-tune it with the layer-separation penalty (one thread)."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    started = time.perf_counter()
    accuracy = 0.0
    for step in range(TARGET_STEPS):
        ids, mask = lang.batch()
        loss, accuracy = _next_token_loss(model(ids).logits, ids, mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 250 == 0:
            print(f"target step {step}: loss {float(loss):.4f} acc {accuracy:.4f}", flush=True)
    plain_s = time.perf_counter() - started
    plain_cos = neighbour_cosines(model, lang)
    print(f"plain training {plain_s:.0f} s, acc {accuracy:.4f}, neighbour |cos| {plain_cos}", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    decay = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 - 0.9 * step / TARGET_FINETUNE_STEPS)
    started = time.perf_counter()
    for step in range(TARGET_FINETUNE_STEPS):
        ids, mask = lang.batch()
        output = model(ids, output_hidden_states=True)
        loss, accuracy = _next_token_loss(output.logits, ids, mask)
        penalty = centred_cosine_penalty(output.hidden_states)
        opt.zero_grad()
        (loss + penalty).backward()
        opt.step()
        decay.step()
        if step % 200 == 0:
            print(f"finetune step {step}: loss {float(loss):.4f} acc {accuracy:.4f} penalty {float(penalty):.4f}",
                  flush=True)
    finetune_s = time.perf_counter() - started
    model.eval()
    cos = neighbour_cosines(model, lang)
    print(f"fine-tune {finetune_s:.0f} s, acc {accuracy:.4f}, neighbour |cos| {cos}", flush=True)
    return {"plain_s": round(plain_s), "finetune_s": round(finetune_s), "accuracy": round(accuracy, 4),
            "neighbour_cos_plain": plain_cos, "neighbour_cos": cos}


def save_target(model: torch.nn.Module, out: Path) -> None:
    """``save_pretrained`` as transformers writes it, less its version stamp and generation_config.json."""
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    config = json.loads((out / "config.json").read_text())
    config.pop("transformers_version", None)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (out / "generation_config.json").unlink(missing_ok=True)


def train_target(out: Path, log: Iterator[None] | None = None) -> dict[str, object]:
    lang = Language()
    model = _target_model()
    figures = fit(model, lang)
    save_target(model, out)
    write_tokenizer(out / "gguf-tokenizer")  # for llama.cpp's converter only (examples/build_demo_tokenizer.py)
    return figures


DRAFTS = {
    # name: (producer layout, aux ids written in config, their convention's HF offset)
    "demo-draft": (SPECULATORS, AUX_IDS, 0),
    "demo-draft-sglang": (SPECFORGE, AUX_IDS, 1),
}


def _draft_spec() -> SynthSpec:
    return SynthSpec(hidden_size=64, intermediate_size=256, num_attention_heads=2, num_key_value_heads=2,
                     head_dim=32, vocab_size=VOCAB, draft_vocab_size=CONTENT_COUNT, aux_layer_ids=AUX_IDS,
                     dtype="float32")


def _init_draft(target: torch.nn.Module, lang: Language, seed: int) -> ReferenceDraft:
    gen = torch.Generator().manual_seed(seed)
    spec = _draft_spec()
    weights = {f"layers.0.{k}": v.clone() for k, v in decoder_layer(spec, gen, first=True).items()}
    h = spec.hidden_size
    weights["fc.weight"] = torch.randn(h, len(AUX_IDS) * h, generator=gen) * 0.02
    weights["norm.weight"] = torch.ones(h)
    weights["lm_head.weight"] = target.lm_head.weight.detach()[lang.content].clone()
    for tensor in weights.values():
        tensor.requires_grad_(True)
    weights["d2t"] = lang.content - torch.arange(CONTENT_COUNT)
    draft_spec = DraftSpec(hidden_size=h, num_heads=2, num_kv_heads=2, head_dim=32, rms_norm_eps=1e-6,
                           rope_theta=10000.0, rope_scaling=(), act="silu", layers=1, aux_count=len(AUX_IDS),
                           norm_before_residual=False, norm_before_fc=False, fc_norm=False, norm_logits=True,
                           feed_normed=False)
    return ReferenceDraft(draft_spec, weights)


def train_draft(target: torch.nn.Module, offset: int, seed: int) -> tuple[ReferenceDraft, dict[str, object]]:
    """Training-time test over DRAFT_TTT steps on the target's states at HF indices AUX_IDS + offset."""
    lang = Language(SEED)
    lang.gen.manual_seed(seed)
    draft = _init_draft(target, lang, seed)
    params = [t for t in draft.weights.values() if t.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.0)
    embed = target.get_input_embeddings().weight.detach()
    started = time.perf_counter()
    accuracy = 0.0
    for step in range(DRAFT_STEPS):
        ids, _ = lang.batch(DRAFT_BATCH)
        with torch.no_grad():
            states = capture_states(target, ids)
            predicted = target(ids).logits.argmax(-1)  # the target's greedy token after each position
        usable = ids.shape[1] - 1 - DRAFT_TTT
        aux = torch.cat([states[i + offset][:, :usable] for i in AUX_IDS], dim=-1)
        teacher = torch.stack([ids[:, 2 + j: usable + 2 + j] for j in range(DRAFT_TTT - 1)], dim=-1)
        _, logits = draft.propose(aux, ids[:, 1: usable + 1], DRAFT_TTT, embed, teacher=teacher)
        loss = torch.zeros(())
        for j, (weight, step_logits) in enumerate(zip(DRAFT_LOSS_WEIGHTS, logits)):
            labels = lang.index_of[predicted[:, 1 + j: usable + 1 + j]]
            loss = loss + weight * torch.nn.functional.cross_entropy(
                step_logits.reshape(-1, CONTENT_COUNT), labels.reshape(-1), ignore_index=-1)
            if j == 0:
                keep = labels >= 0
                accuracy = float((step_logits.argmax(-1)[keep] == labels[keep]).float().mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"draft step {step}: loss {float(loss):.4f} step-1 acc {accuracy:.4f}", flush=True)
    seconds = time.perf_counter() - started
    for tensor in draft.weights.values():
        tensor.requires_grad_(False)
    return draft, {"seconds": round(seconds), "step1_accuracy": round(accuracy, 4)}


def save_draft(draft: ReferenceDraft, producer: str, lang: Language, out: Path) -> None:
    """Write the trained draft in the producer's layout (keys, config) as float32 safetensors."""
    from safetensors.torch import save_file

    spec = replace(_draft_spec(), producer=producer)
    layer_prefix = "midlayer." if producer == SPECFORGE else "layers.0."
    tensors = {k.replace("layers.0.", layer_prefix): v.detach().contiguous() for k, v in draft.weights.items()}
    t2d = torch.zeros(VOCAB, dtype=torch.bool)
    t2d[lang.content] = True
    tensors["t2d"] = t2d
    if producer == SPECULATORS:
        tensors["embed_tokens.weight"] = _target_embed(out.parent / "demo-target")  # a frozen copy
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = draft_config(spec)
    layer_config = config["transformer_layer_config"] if producer == SPECULATORS else config
    layer_config["max_position_embeddings"] = TARGET_CONFIG["max_position_embeddings"]
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file(dict(sorted(tensors.items())), str(out / "model.safetensors"), metadata={"format": "pt"})


def _target_embed(target_dir: Path) -> torch.Tensor:
    from safetensors.torch import load_file

    return load_file(str(target_dir / "model.safetensors"))["model.embed_tokens.weight"].clone()


def load_target_model(path: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    model.eval()
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drafts-only", action="store_true", help="reuse the existing demo-target")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    figures: dict[str, object] = {}
    if not args.drafts_only:
        figures["target"] = train_target(args.out / "demo-target")
    target = load_target_model(args.out / "demo-target")
    for param in target.parameters():
        param.requires_grad_(False)
    lang = Language()
    for number, (name, (producer, _ids, offset)) in enumerate(DRAFTS.items()):
        draft, figures[name] = train_draft(target, offset, SEED + 10 + number)
        save_draft(draft, producer, lang, args.out / name)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
