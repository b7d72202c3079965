"""The target's embedding, lm_head and final norm, read by name through its safetensors index.

Only the headers are parsed (``checkpoint.Checkpoint``), then these three tensors alone are read:
a 1T-parameter target costs what its embedding and lm_head cost, never its layers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.checkpoint.tensorfiles import (
    CheckpointReadError,
    TensorEntry,
    TensorSource,
    read_rows,
    read_safetensors_tensor,
    rows_matrix,
)
from pytest_eagle3.reference.targets.source import TargetHead, TargetSourceError, WholeHead

#: Tensor names, first match wins. Source: transformers ``LlamaForCausalLM`` / ``Qwen3ForCausalLM`` /
#: ``DeepseekV3ForCausalLM`` state dicts (``model.embed_tokens``, ``model.norm``, ``lm_head``); multimodal
#: wrappers prefix them (``language_model.`` in Kimi-VL / Llava, ``model.language_model.`` in transformers >= 4.52).
EMBED_NAMES = ("model.embed_tokens.weight", "language_model.model.embed_tokens.weight",
               "model.language_model.embed_tokens.weight")
LM_HEAD_NAMES = ("lm_head.weight", "language_model.lm_head.weight")
NORM_NAMES = ("model.norm.weight", "language_model.model.norm.weight", "model.language_model.norm.weight")
#: RMSNorm epsilon when the config gives none. Source: transformers LlamaConfig default.
DEFAULT_EPS = 1e-6


def read_head(target_dir: str | Path, config: TargetModel | None = None, as_float: bool = True,
              token_ids: Iterable[int] | None = None) -> TargetHead:
    """embed / lm_head / final norm of the target at ``target_dir`` (a directory or a pinned Hub id; lm_head = embed
    when tied): float32, or in the checkpoint's own dtype (``as_float=False``: what a dump stores, half the bytes
    for a bf16 target). With ``token_ids`` (a dump's), only what the prediction needs: :func:`partial_head`."""
    weights = Checkpoint.open(target_dir)
    if weights.problems and not weights.tensors:
        raise TargetSourceError(f"target {target_dir}: its weights cannot be indexed: {weights.problems[0]}")
    model = config or TargetModel.open(target_dir)
    if token_ids is not None:
        names = [next((n for n in group if n in weights.tensors), None) for group in (EMBED_NAMES, LM_HEAD_NAMES,
                                                                                       NORM_NAMES)]
        tied = model.config.get("tie_word_embeddings", model.text_config.get("tie_word_embeddings", False))
        for name, group, what in ((names[0], EMBED_NAMES, "the embedding"), (names[2], NORM_NAMES, "the final norm"),
                                  (names[1] or ("tied" if tied else None), LM_HEAD_NAMES, "lm_head")):
            if name is None:
                raise TargetSourceError(f"target {weights.path}: no tensor for {what} (looked for {', '.join(group)})")
        return partial_head(weights.tensors, weights.source, (str(names[0]), names[1] or str(names[0]),
                                                               str(names[2])), norm_eps(model.text_config), token_ids)
    embed = _read(weights, EMBED_NAMES, "the embedding", as_float)
    try:
        lm_head = _read(weights, LM_HEAD_NAMES, "lm_head", as_float)
    except TargetSourceError:
        if not model.config.get("tie_word_embeddings", model.text_config.get("tie_word_embeddings", False)):
            raise
        lm_head = embed
    norm = _read(weights, NORM_NAMES, "the final norm", as_float)
    return TargetHead(embed, lm_head, norm, norm_eps(model.text_config))


def partial_head(entries: Mapping[str, TensorEntry], files: TensorSource, names: tuple[str, str, str], eps: float,
                 token_ids: Iterable[int]) -> TargetHead:
    """What a prediction from a dump needs of the head named ``names`` (embedding, lm_head, norm): the embedding
    rows of the dump's ``token_ids`` (float32, the matrix's shape, no memory for the other rows), the norm, and
    the lm_head's shape; the whole lm_head (or embedding) is read only if a draft borrows it
    (``TargetHead.whole``)."""
    import torch

    embed_name, head_name, norm_name = names
    rows = sorted(set(int(t) for t in token_ids))
    try:
        embed = rows_matrix(entries[embed_name], rows, files)
        norm = read_safetensors_tensor(entries[norm_name], files).float()
    except CheckpointReadError as exc:
        raise TargetSourceError(f"target head: {exc}") from exc

    def whole(name: str) -> torch.Tensor:
        entry = entries[embed_name if name == "embed" else head_name]
        return rows_matrix(entry, range(entry.shape[0]), files)

    def equals(other: torch.Tensor) -> bool:
        entry = entries[embed_name]  # every row on disk; on the Hub the rows the measurement reads
        for first, block in read_rows(entry, range(entry.shape[0]) if files.local else rows, files):
            if not torch.equal(other[first:first + block.shape[0]], block.float().to(other.dtype)):
                return False
        return True

    lm_head = torch.empty(entries[head_name].shape, dtype=torch.float32, device="meta")
    return TargetHead(embed, lm_head, norm, eps, WholeHead(whole, equals))


def norm_eps(config: dict[str, Any]) -> float:
    """The config's norm epsilon (``rms_norm_eps`` or ``layer_norm_eps``), else the default."""
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
