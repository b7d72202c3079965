"""A draft as it will be written: a config and, per output tensor, where its bytes come from.

Nothing is copied until the writer runs: a renamed tensor points at its source bytes, a split
projection at a row range of them, a rebuilt map (``d2t``, ``t2d``) is a small tensor in memory.
:meth:`VirtualDraft.checkpoint` gives the same view as a :class:`Checkpoint`, so the load plans
judge the copy before a byte is written.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.checkpoint import Checkpoint, TensorEntry

if TYPE_CHECKING:
    import torch

#: safetensors dtype codes of the tensors repair computes.
DTYPE_CODES = {"torch.int64": "I64", "torch.int32": "I32", "torch.bool": "BOOL", "torch.float32": "F32",
               "torch.float16": "F16", "torch.bfloat16": "BF16"}


def dtype_code(tensor: torch.Tensor) -> str:
    """The safetensors dtype code of ``tensor`` (``BF16``)."""
    return DTYPE_CODES[str(tensor.dtype)]


@dataclass
class VirtualDraft:
    """The copy to be written: config, tensors by output name, and the source they came from."""

    source: Checkpoint
    config: dict[str, Any]
    #: output name -> the entry whose bytes it is (a source entry, renamed or a row slice of one)
    entries: dict[str, TensorEntry] = field(default_factory=dict)
    #: output name -> a tensor computed in memory (a rebuilt map)
    computed: dict[str, torch.Tensor] = field(default_factory=dict)
    #: output name -> the source tensor it came from (the record and the loader proof read this)
    origin: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, ckpt: Checkpoint) -> VirtualDraft:
        """A virtual copy of ``ckpt``: its config and tensors, nothing read yet."""
        entries = dict(ckpt.tensors)
        return cls(ckpt, copy.deepcopy(ckpt.config_raw or {}), entries, {}, {n: n for n in entries})

    def names(self) -> list[str]:
        """Every tensor name of the copy, sorted."""
        return sorted([*self.entries, *self.computed])

    def shape(self, name: str) -> tuple[int, ...] | None:
        """The shape of tensor ``name`` in the copy, or None when it has none."""
        if name in self.entries:
            return self.entries[name].shape
        if name in self.computed:
            return tuple(self.computed[name].shape)
        return None

    def rename(self, mapping: dict[str, str]) -> None:
        """Give tensors new names (``old -> new``); names not in ``mapping`` keep theirs."""
        entries, computed, origin = {}, {}, {}
        for old, entry in self.entries.items():
            new = mapping.get(old, old)
            entries[new] = replace(entry, name=new)
            origin[new] = self.origin.get(old, old)
        for old, tensor in self.computed.items():
            new = mapping.get(old, old)
            computed[new] = tensor
            origin[new] = self.origin.get(old, old)
        self.entries, self.computed, self.origin = entries, computed, origin

    def put(self, name: str, tensor: torch.Tensor, origin: str) -> None:
        """Replace (or add) a tensor by one computed in memory."""
        self.entries.pop(name, None)
        self.computed[name] = tensor.contiguous()
        self.origin[name] = origin

    def drop(self, name: str) -> None:
        """Leave tensor ``name`` out of the copy."""
        self.entries.pop(name, None)
        self.computed.pop(name, None)
        self.origin.pop(name, None)

    def split_rows(self, name: str, parts: list[tuple[str, int]]) -> None:
        """Split a tensor along its first dimension into ``(new name, rows)`` parts (a fused projection)."""
        if name in self.computed or self.entries[name].start < 0:  # in memory already (.bin): slice it
            tensor, origin, first = self.read(name), self.origin.get(name, name), 0
            self.drop(name)
            for new, rows in parts:
                self.put(new, tensor[first:first + rows].clone(), f"{origin}[rows {first}:{first + rows}]")
                first += rows
            return
        entry = self.entries.pop(name)
        origin = self.origin.pop(name, name)
        row_bytes = entry.nbytes // entry.shape[0]
        start = entry.start
        for new, rows in parts:
            shape = (rows, *entry.shape[1:])
            self.entries[new] = replace(entry, name=new, shape=shape, start=start, nbytes=rows * row_bytes)
            self.origin[new] = f"{origin}[rows {(start - entry.start) // row_bytes}:{(start - entry.start) // row_bytes + rows}]"
            start += rows * row_bytes

    def read(self, name: str) -> torch.Tensor:
        """Tensor ``name`` of the copy: computed, or read from the checkpoint."""
        if name in self.computed:
            return self.computed[name]
        return self.checkpoint().read(name)

    def checkpoint(self) -> Checkpoint:
        """The copy as a checkpoint (same source files, new names and config, computed tensors in memory)."""
        ckpt = Checkpoint(path=self.source.path, root=self.source.root, files=self.source.files,
                          config_raw=copy.deepcopy(self.config))
        for name, entry in self.entries.items():
            ckpt.tensors[name] = entry
            if entry.start < 0:  # a .bin source: the tensor is already in memory
                ckpt._bin_tensors[name] = self.source.read(self.origin.get(name, name).split("[")[0])
        for name, tensor in self.computed.items():
            ckpt.tensors[name] = TensorEntry(name, dtype_code(tensor), tuple(tensor.shape), Path(""), -1,
                                             tensor.numel() * tensor.element_size())
            ckpt._bin_tensors[name] = tensor
        return ckpt
