"""The seam: what a measurement needs from the target, whoever computed it.

Layer convention (one for every source, stated once): state ``k`` for ``k < L`` is the INPUT of
decoder layer ``k`` (HF ``hidden_states[k]``, vLLM aux id ``k``); state ``L`` is the OUTPUT of the last
decoder layer before the final norm. So the output of layer ``k`` is state ``k + 1``.
Source: reference/acceptance.py ``capture_states``; reference/producers.md §5.3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from pytest_eagle3.reference.acceptance import TargetRun

#: The convention every source yields (see the module docstring).
STATE_CONVENTION = ("input-of: state k is the input of decoder layer k (HF hidden_states[k]); "
                    "state L is the output of the last decoder layer, before the final norm")


class TargetSourceError(Exception):
    """A target source cannot give what was asked; the message names what is missing."""


class MissingLayerState(IndexError):
    """A reading asks for a layer state the source did not capture."""


@dataclass(frozen=True)
class PromptStates:
    """One prompt: its token ids (prompt + greedy continuation) and the captured states, ``[T, H]`` each."""

    token_ids: torch.Tensor  # [T] int64
    prompt_length: int
    states: dict[int, torch.Tensor]


@dataclass(frozen=True)
class TargetHead:
    """The target tensors a draft may borrow: embedding, lm_head, final norm (float32).

    With a dump only what the prediction needs is read (``whole`` is then set): ``embed`` holds the rows of the
    dump's tokens, the others zero (a draft's later steps embed other tokens only after a rejection, which ends
    the count), and ``lm_head`` is its shape alone (a meta tensor) until a draft borrows it."""

    embed: torch.Tensor
    lm_head: torch.Tensor
    final_norm: torch.Tensor
    final_norm_eps: float
    whole: WholeHead | None = None


@dataclass
class WholeHead:
    """The whole embedding or lm_head behind a head read in part: each read on first use (float32), once."""

    read: Callable[[str], torch.Tensor]  # "embed" or "lm_head" -> the whole matrix
    embed_equals: Callable[[torch.Tensor], bool]  # whether a tensor equals the whole embedding (read in blocks)
    cache: dict[str, torch.Tensor] = field(default_factory=dict)

    def matrix(self, name: str) -> torch.Tensor:
        """The head matrix ``name``, read once."""
        if name not in self.cache:
            self.cache[name] = self.read(name)
        return self.cache[name]


@dataclass(frozen=True)
class TargetSide:
    """Everything a measurement needs from the target, grouped the way the draft pass batches it."""

    runs: tuple[TargetRun, ...]
    head: TargetHead
    layers: int
    hidden_size: int
    vocab_size: int
    prompts: str  # where the prompts came from, for messages
    origin: str  # "transformers in-process" or "dump DIR (engine VERSION)"

    @property
    def available(self) -> frozenset[int] | None:
        """The layer states present (None: every state 0..L)."""
        return available_layers(self.runs)


class LayerStates(Sequence["torch.Tensor"]):
    """States ``0..L`` of one group of prompts, of which only ``available`` were captured.

    Indexing a missing state raises :class:`MissingLayerState` naming it; ``loader(k)`` gives the
    ``[B, T, H]`` state ``k`` (read on demand, so only the states a reading uses are in memory)."""

    def __init__(self, count: int, available: frozenset[int], loader: object, where: str) -> None:
        self._count, self.available, self._loader, self._where = count, available, loader, where

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> torch.Tensor:  # type: ignore[override]
        if not isinstance(index, int):
            raise TypeError("LayerStates takes one layer index")
        k = index + self._count if index < 0 else index
        if k not in self.available:
            raise MissingLayerState(
                f"{self._where} has no state {k} ({_state_words(k, self._count - 1)}); captured: "
                f"{sorted(self.available)}: capture again with --layers including {k}")
        loaded: torch.Tensor = self._loader(k)  # type: ignore[operator]
        return loaded


def _state_words(k: int, layers: int) -> str:
    if k == layers:
        return f"the output of the last layer {layers - 1}, before the final norm"
    return f"the input of layer {k}, output of layer {k - 1}" if k > 0 else "the input of layer 0 (the embeddings)"


def available_layers(runs: Sequence[TargetRun]) -> frozenset[int] | None:
    """The states every run holds; None when every run holds them all (an in-process target)."""
    sets = [getattr(run.states, "available", None) for run in runs]
    if not sets or all(s is None for s in sets):
        return None
    found = [s for s in sets if s is not None]
    return frozenset.intersection(*found)
