"""Tensor contents an engine area may need (d2t, a norm weight, a tensor compared with the target's).

They are read from disk on an area's first question and kept for the next, never before: a plan that
does not reach the area reads nothing, and the large tensors (embeddings) are read only where an
engine's rule compares them. The fact sheet holds the readers, never the checkpoint or the target.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from pytest_eagle3.checkpoint import Checkpoint, CheckpointReadError, TargetModel
from pytest_eagle3.checkpoint.tensorfiles import WeightsNotDownloaded

__all__ = ["TensorContents", "tensor_contents"]

#: The most d2t entries read (a larger or not 1-D d2t is not a vocab map the areas can follow).
D2T_LIMIT = 1 << 20


@dataclass(frozen=True, eq=False)
class TensorContents:
    """Typed readers of tensor values, each answer read once."""

    #: The offsets of the named d2t tensor; None where it cannot be read or is not one small 1-D tensor.
    d2t: Callable[[str], tuple[int, ...] | None]
    #: The smallest and largest magnitude of the named (norm) weight.
    magnitude_range: Callable[[str], tuple[float, float]]
    #: Whether the named draft tensor equals the target's (the first of the target names it holds);
    #: None when either side is unavailable.
    same_as_target: Callable[[str, tuple[str, ...]], bool | None]
    #: Whether the target stores the module of the named weights (the first it holds) only packed
    #: (``.weight_packed`` / ``.qweight``, no ``.weight``): a quantized layer with no weight tensor to compare;
    #: None without the target's weights.
    target_packed: Callable[[tuple[str, ...]], bool | None]


def tensor_contents(ckpt: Checkpoint, target: TargetModel | None) -> TensorContents:
    """Readers of ``ckpt``'s tensor values (and ``target``'s weights, where given), each cached."""
    return TensorContents(
        d2t=functools.cache(functools.partial(_d2t, ckpt)),
        magnitude_range=functools.cache(functools.partial(_magnitude_range, ckpt)),
        same_as_target=functools.cache(functools.partial(_same_as_target, ckpt, target)),
        target_packed=functools.cache(functools.partial(_target_packed, target)),
    )


#: The tensors a quantized layer stores in place of ``.weight`` (compressed-tensors, GPTQ / AWQ).
PACKED_WEIGHTS = (".weight_packed", ".qweight")


def _target_packed(target: TargetModel | None, weight_names: tuple[str, ...]) -> bool | None:
    weights = target.weights if target is not None else None
    if weights is None:
        return None
    if any(name in weights.tensors for name in weight_names):
        return False
    stems = [name.removesuffix(".weight") for name in weight_names]
    return any(stem + packed in weights.tensors for stem in stems for packed in PACKED_WEIGHTS)


def _d2t(ckpt: Checkpoint, name: str) -> tuple[int, ...] | None:
    try:
        tensor = ckpt.read(name)
    except CheckpointReadError:
        return None
    if tensor.ndim != 1 or tensor.numel() > D2T_LIMIT:
        return None
    import torch

    return tuple(int(v) for v in tensor.to(dtype=torch.int64).tolist())


def _magnitude_range(ckpt: Checkpoint, name: str) -> tuple[float, float]:
    weight = ckpt.read(name).float().abs()
    return float(weight.min()), float(weight.max())


def _same_as_target(ckpt: Checkpoint, target: TargetModel | None, draft_name: str,
                    target_names: tuple[str, ...]) -> bool | None:
    weights = target.weights if target is not None else None
    if weights is None:
        return None
    name = next((n for n in target_names if n in weights.tensors), None)
    if name is None or weights.shape(name) != ckpt.shape(draft_name):
        return None if name is None else False
    import torch

    try:
        for mine, theirs in zip(ckpt.chunks(draft_name), weights.chunks(name)):
            # Engines compare after loading both into the served dtype: compare in the draft's dtype.
            if mine.shape != theirs.shape or not torch.equal(mine, theirs.to(mine.dtype)):
                return False
    except WeightsNotDownloaded:  # a Hub id read by its headers: every byte of both is needed to decide
        return None
    return True
