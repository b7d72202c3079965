"""A small random Llama target (verifier) that a synthetic draft belongs to."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_eagle3.producers.formats import SPECULATORS
from pytest_eagle3.testing.configs import target_config
from pytest_eagle3.testing.tensors import decoder_layer, generator, matrix, norm

if TYPE_CHECKING:
    from pytest_eagle3.testing.spec import SynthSpec


def write_target(spec: SynthSpec, out: str | Path, with_weights: bool = True) -> Path:
    """Write a small Llama target with transformers' key names (random weights) to ``out`` and return it."""
    from safetensors.torch import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(target_config(spec), indent=2) + "\n")
    if with_weights:
        import torch

        gen = generator(spec.seed + 100)
        target_spec = replace(spec, dtype="float32", producer=SPECULATORS)
        state = {"model.embed_tokens.weight": matrix(gen, spec.vocab_size, spec.hidden_size, torch.float32)}
        for i in range(spec.target_layers):
            layer = decoder_layer(target_spec, gen, first=False)
            state.update({f"model.layers.{i}.{k}": t for k, t in layer.items()})
        state["model.norm.weight"] = norm(gen, spec.hidden_size, torch.float32)
        state["lm_head.weight"] = matrix(gen, spec.vocab_size, spec.hidden_size, torch.float32)
        save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out
