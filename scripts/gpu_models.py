"""Write a Llama-3-8B-shaped target (random bf16 weights, sharded per layer) and a matching EAGLE-3 draft.

Used by ``scripts/gpu-check.sh``; no network, no tokenizer (prompts are token ids). Random weights:
the acceptance it measures is ~1.0 by construction; what it checks is that the pipeline runs on CUDA
at full size, and how long each step takes.

    python scripts/gpu_models.py OUT_DIR [--layers 32]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import torch
from safetensors.torch import save_file

from pytest_eagle3.testing.synth import SynthSpec, decoder_layer, target_config, write_checkpoint

#: meta-llama/Meta-Llama-3-8B config.json shapes; the draft keeps 32000 of the 128256 tokens (as
#: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B does).
LLAMA3_8B = SynthSpec(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                      head_dim=128, vocab_size=128256, draft_vocab_size=32000, target_layers=32, dtype="bfloat16")

TINY = SynthSpec(hidden_size=64, intermediate_size=128, num_attention_heads=2, num_key_value_heads=2, head_dim=32,
                 vocab_size=1024, draft_vocab_size=256, target_layers=32, dtype="bfloat16")


def write_target(spec: SynthSpec, out: Path) -> None:
    """One safetensors shard per decoder layer (bounded memory), plus embeddings/head, and the index."""
    out.mkdir(parents=True, exist_ok=True)
    config = target_config(spec) | {"torch_dtype": "bfloat16", "max_position_embeddings": 8192,
                                     "rope_theta": 500000.0}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    gen = torch.Generator().manual_seed(spec.seed + 100)
    layer_spec = replace(spec, dtype="bfloat16")
    weight_map: dict[str, str] = {}
    total = 0

    def shard(name: str, tensors: dict[str, torch.Tensor]) -> None:
        nonlocal total
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in tensors})
        total += sum(t.numel() * t.element_size() for t in tensors.values())

    def matrix(rows: int, cols: int) -> torch.Tensor:
        return (torch.randn(rows, cols, generator=gen) * 0.02).to(torch.bfloat16)

    shard("embed.safetensors", {"model.embed_tokens.weight": matrix(spec.vocab_size, spec.hidden_size)})
    for i in range(spec.target_layers):
        layer = decoder_layer(layer_spec, gen, first=False)
        shard(f"layer-{i:03d}.safetensors", {f"model.layers.{i}.{k}": t for k, t in layer.items()})
    shard("head.safetensors", {"model.norm.weight": torch.ones(spec.hidden_size, dtype=torch.bfloat16),
                               "lm_head.weight": matrix(spec.vocab_size, spec.hidden_size)})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=LLAMA3_8B.target_layers)
    parser.add_argument("--tiny", action="store_true", help="small shapes, to try the script without a GPU")
    args = parser.parse_args()
    spec = replace(TINY if args.tiny else LLAMA3_8B, target_layers=args.layers)
    began = time.monotonic()
    if not (args.out / "target" / "model.safetensors.index.json").is_file():
        write_target(spec, args.out / "target")
    target_s = time.monotonic() - began
    if not (args.out / "draft" / "config.json").is_file():
        write_checkpoint(spec, args.out / "draft")
    print(json.dumps({"target_s": round(target_s, 1), "draft_s": round(time.monotonic() - began - target_s, 1),
                      "aux_ids": list(spec.aux_ids), "target_layers": spec.target_layers}))


if __name__ == "__main__":
    main()
