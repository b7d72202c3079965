"""Write the copy: safetensors files streamed tensor by tensor in bounded chunks, into a temporary folder
beside OUT that is renamed into place only when complete (an interrupted run leaves no OUT).

One output file per source weight file (tensors stay with the shard they came from; computed maps go
to the first); an index is written when there is more than one. Source bytes are copied as they are:
a renamed tensor is byte-identical to its source.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pytest_eagle3.checkpoint.draft import FIX_RECORD
from pytest_eagle3.repair.virtual import VirtualDraft, dtype_code

if TYPE_CHECKING:
    import torch

CHUNK_BYTES = 8 * 1024 * 1024
RECORD = FIX_RECORD
INDEX = "model.safetensors.index.json"


def _groups(draft: VirtualDraft) -> list[list[str]]:
    """Output files: tensor names grouped by the source file they come from, computed ones in the first."""
    by_file: dict[str, list[str]] = {}
    for name in sorted(draft.entries):
        by_file.setdefault(str(draft.entries[name].file), []).append(name)
    groups = [by_file[k] for k in sorted(by_file)] or [[]]
    groups[0] = sorted(groups[0] + list(draft.computed))
    return groups


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _chunks(draft: VirtualDraft, name: str) -> Iterator[bytes]:
    if name in draft.computed:
        yield _tensor_bytes(draft.computed[name])
        return
    entry = draft.entries[name]
    if entry.start < 0:  # a .bin source: the tensor is in memory already
        yield _tensor_bytes(draft.checkpoint().read(name))
        return
    with open(entry.file, "rb") as handle:
        handle.seek(entry.start)
        left = entry.nbytes
        while left:
            block = handle.read(min(CHUNK_BYTES, left))
            if not block:
                raise OSError(f"{entry.file.name}: ended inside tensor {name}")
            left -= len(block)
            yield block


def _header(draft: VirtualDraft, names: list[str]) -> tuple[bytes, int]:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in names:
        if name in draft.computed:
            tensor = draft.computed[name]
            dtype, shape, nbytes = dtype_code(tensor), list(tensor.shape), tensor.numel() * tensor.element_size()
        else:
            entry = draft.entries[name]
            dtype, shape, nbytes = entry.dtype, list(entry.shape), entry.nbytes
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return raw, offset


def _write_file(draft: VirtualDraft, names: list[str], path: Path) -> None:
    header, _ = _header(draft, names)
    with open(path, "wb") as out:
        out.write(len(header).to_bytes(8, "little"))
        out.write(header)
        for name in names:
            for block in _chunks(draft, name):
                out.write(block)
        _sync(out)


def _sync(handle: BinaryIO) -> None:
    handle.flush()
    os.fsync(handle.fileno())


def write_copy(draft: VirtualDraft, out: Path, record: dict[str, Any], force: bool = False) -> Path:
    """Write ``draft`` to ``out`` atomically (temporary folder beside it, then rename); return ``out``."""
    out = Path(out)
    if out.exists() and not force:
        raise FileExistsError(f"{out} already exists; fix never overwrites (pass --force to replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        groups = _groups(draft)
        files = (["model.safetensors"] if len(groups) == 1
                 else [f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))])
        weight_map = {}
        for names, filename in zip(groups, files):
            _write_file(draft, names, temp / filename)
            weight_map.update({n: filename for n in names})
        if len(groups) > 1:
            total = sum(_header(draft, g)[1] for g in groups)
            (temp / INDEX).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                                                 indent=2) + "\n", encoding="utf-8")
        (temp / "config.json").write_text(json.dumps(draft.config, indent=2) + "\n", encoding="utf-8")
        (temp / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        _swap(temp, out)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return out


def _swap(temp: Path, out: Path) -> None:
    """Rename ``temp`` to ``out``; an existing ``out`` (``--force``) is moved aside first and removed after."""
    if not out.exists():
        os.replace(temp, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    os.rmdir(old)
    os.replace(out, old)
    os.replace(temp, out)
    shutil.rmtree(old, ignore_errors=True)
