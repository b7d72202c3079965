"""The target's embedding, lm_head and final norm, read by name through its safetensors index.

Only the headers are parsed (``checkpoint.Checkpoint``), then these three tensors alone are read:
a 1T-parameter target costs what its embedding and lm_head cost, never its layers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError
from pytest_eagle3.reference.targets.source import TargetHead, TargetSourceError

#: Tensor names, first match wins. Source: transformers ``LlamaForCausalLM`` / ``Qwen3ForCausalLM`` /
#: ``DeepseekV3ForCausalLM`` state dicts (``model.embed_tokens``, ``model.norm``, ``lm_head``); multimodal
#: wrappers prefix them (``language_model.`` in Kimi-VL / Llava, ``model.language_model.`` in transformers >= 4.52).
EMBED_NAMES = ("model.embed_tokens.weight", "language_model.model.embed_tokens.weight",
               "model.language_model.embed_tokens.weight")
LM_HEAD_NAMES = ("lm_head.weight", "language_model.lm_head.weight")
NORM_NAMES = ("model.norm.weight", "language_model.model.norm.weight", "model.language_model.norm.weight")
#: RMSNorm epsilon when the config gives none. Source: transformers LlamaConfig default.
DEFAULT_EPS = 1e-6


def read_head(target_dir: str | Path, config: TargetModel | None = None, as_float: bool = True) -> TargetHead:
    """embed / lm_head / final norm of the target at ``target_dir`` (lm_head = embed when tied): float32, or
    in the checkpoint's own dtype (``as_float=False``: what a dump stores, half the bytes for a bf16 target)."""
    weights = Checkpoint.open(target_dir)
    if weights.problems and not weights.tensors:
        raise TargetSourceError(f"target {target_dir}: its weights cannot be indexed: {weights.problems[0]}")
    model = config or TargetModel.open(target_dir)
    embed = _read(weights, EMBED_NAMES, "the embedding", as_float)
    try:
        lm_head = _read(weights, LM_HEAD_NAMES, "lm_head", as_float)
    except TargetSourceError:
        if not model.config.get("tie_word_embeddings", model.text_config.get("tie_word_embeddings", False)):
            raise
        lm_head = embed
    norm = _read(weights, NORM_NAMES, "the final norm", as_float)
    return TargetHead(embed, lm_head, norm, norm_eps(model.text_config))


def norm_eps(config: dict[str, Any]) -> float:
    value = config.get("rms_norm_eps", config.get("layer_norm_eps", DEFAULT_EPS))
    return float(value) if isinstance(value, (int, float)) else DEFAULT_EPS


def _read(weights: Checkpoint, names: tuple[str, ...], what: str, as_float: bool) -> Any:
    name = next((n for n in names if n in weights.tensors), None)
    if name is None:
        raise TargetSourceError(f"target {weights.path}: no tensor for {what} (looked for {', '.join(names)})")
    try:
        tensor = weights.read(name)
        return tensor.float() if as_float else tensor
    except CheckpointReadError as exc:
        raise TargetSourceError(f"target {weights.path}: {what} ({name}) cannot be read: {exc}") from exc
