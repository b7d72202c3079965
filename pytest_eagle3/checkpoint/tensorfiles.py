"""Tensor files read lazily: safetensors headers parsed by hand, ``.bin`` through ``weights_only``.

Nothing here maps a whole weight file into memory: the index comes from headers alone and
tensor bytes are read with plain ``readinto`` calls, in bounded chunks when scanning.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

#: safetensors dtype code -> (torch dtype attribute, bytes per element).
#: Source: safetensors format spec (huggingface/safetensors README, "Format"); the float8 variants, C64 and the
#: sub-byte codes from safetensors 0.8.0 (bindings/python/py_src/safetensors/torch.py _TYPES / _SIZE; the Rust
#: Dtype enum's F4, F6_E2M3, F6_E3M2 and F8_E8M0, whose shapes count elements, not bytes).
SAFETENSORS_DTYPES: dict[str, tuple[str, int]] = {
    "F64": ("float64", 8),
    "F32": ("float32", 4),
    "F16": ("float16", 2),
    "BF16": ("bfloat16", 2),
    "F8_E4M3": ("float8_e4m3fn", 1),
    "F8_E5M2": ("float8_e5m2", 1),
    "I64": ("int64", 8),
    "I32": ("int32", 4),
    "I16": ("int16", 2),
    "I8": ("int8", 1),
    "U8": ("uint8", 1),
    "U16": ("uint16", 2),
    "U32": ("uint32", 4),
    "U64": ("uint64", 8),
    "BOOL": ("bool", 1),
    "F8_E4M3FNUZ": ("float8_e4m3fnuz", 1),
    "F8_E5M2FNUZ": ("float8_e5m2fnuz", 1),
    "F8_E8M0": ("float8_e8m0fnu", 1),
    "C64": ("complex64", 8),
}
#: Codes of fewer bits than a byte an element (MXFP4 / NVFP4 values, MXFP6): bits per element. They have no
#: element view in torch (float4_e2m1fn_x2 holds two a byte), so no rule reads their values.
SUB_BYTE_BITS: dict[str, int] = {"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}
TORCH_TO_CODE: dict[str, str] = {name: code for code, (name, _) in SAFETENSORS_DTYPES.items()}
FLOAT_CODES = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
                         "F8_E8M0"})

#: The safetensors library refuses headers above 100 MB (safetensors/src/tensor.rs, MAX_HEADER_SIZE).
MAX_HEADER_BYTES = 100_000_000


class CheckpointReadError(Exception):
    """A file of the checkpoint cannot be read as it claims to be."""


class WeightsNotDownloaded(CheckpointReadError):
    """A read that needs the weights' bytes, of a checkpoint whose weights stayed on the Hub."""


class TensorSource(Protocol):
    """Where a checkpoint's files are: on disk (:data:`LOCAL`) or on the Hub (``checkpoint.hub.HubFiles``).

    ``local`` is True when every weight byte is on disk (a scan or a forward may read them all)."""

    @property
    def local(self) -> bool:
        """Whether every file is on local disk."""

    def exists(self, path: Path) -> bool:
        """Whether ``path`` is a file of the checkpoint."""
    def glob(self, root: Path, pattern: str) -> list[Path]:
        """The checkpoint's files under ``root`` matching ``pattern``, sorted."""
    def listing(self, root: Path) -> list[Path]:
        """Every file directly under ``root``, sorted."""
    def size(self, path: Path) -> int:
        """The file's size in bytes."""
    def read(self, path: Path, start: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of the file from ``start`` (headers, small tensors)."""
    def read_tensor_bytes(self, path: Path, start: int, nbytes: int) -> bytes:
        """One tensor's ``nbytes`` bytes from ``start``."""


class LocalFiles:
    """Files on disk, read with plain seeks."""

    @property
    def local(self) -> bool:
        """Always True: the files are on disk."""
        return True

    def exists(self, path: Path) -> bool:
        """Whether ``path`` is a file on disk."""
        return path.is_file()

    def glob(self, root: Path, pattern: str) -> list[Path]:
        """The files under ``root`` matching ``pattern``, sorted."""
        return sorted(root.glob(pattern))

    def listing(self, root: Path) -> list[Path]:
        """Every file directly under ``root``, sorted."""
        return sorted(p for p in root.iterdir() if p.is_file())

    def size(self, path: Path) -> int:
        """The file's size in bytes."""
        return path.stat().st_size

    def read(self, path: Path, start: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of the file from ``start``."""
        with path.open("rb") as handle:
            handle.seek(start)
            return handle.read(nbytes)

    def read_tensor_bytes(self, path: Path, start: int, nbytes: int) -> bytes:
        """One tensor's ``nbytes`` bytes from ``start``, read with ``readinto`` (never mapped)."""
        return bytes(_read_bytes(path, start, nbytes))


LOCAL: TensorSource = LocalFiles()


@dataclass(frozen=True)
class TensorEntry:
    """Where one tensor lives: enough to read it without loading anything else."""

    name: str
    dtype: str  # safetensors code, e.g. "BF16"
    shape: tuple[int, ...]
    file: Path
    start: int  # absolute byte offset (safetensors); -1 for .bin entries
    nbytes: int

    @property
    def numel(self) -> int:
        """The number of elements, from the shape."""
        return math.prod(self.shape)

    @property
    def is_float(self) -> bool:
        """Whether the dtype is a floating-point one (the weight scan reads only these)."""
        return self.dtype in FLOAT_CODES


@dataclass(frozen=True)
class FileIndex:
    """The tensors one file declares, plus what is wrong with the file."""

    entries: tuple[TensorEntry, ...]
    problems: tuple[str, ...]
    metadata: dict[str, str]


def index_safetensors(path: Path, files: TensorSource = LOCAL) -> FileIndex:
    """Parse a safetensors header (its 8-byte length, then the header: two reads, ranged on the Hub) and
    validate every entry against the file's real size."""
    problems: list[str] = []
    size = files.size(path)
    prefix = files.read(path, 0, min(8, size))
    if len(prefix) < 8:
        return FileIndex((), (f"{path.name}: {size} bytes, too short for a safetensors header",), {})
    (header_len,) = struct.unpack("<Q", prefix)
    if header_len > MAX_HEADER_BYTES or 8 + header_len > size:
        return FileIndex(
            (),
            (
                (
                    f"{path.name}: header claims {header_len} bytes but the file has {size} bytes "
                    "(truncated file or corrupt length prefix)"
                ),
            ),
            {},
        )
    raw = files.read(path, 8, header_len)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return FileIndex((), (f"{path.name}: header is not valid JSON ({exc})",), {})
    if not isinstance(header, dict):
        return FileIndex((), (f"{path.name}: header is a JSON {type(header).__name__}, not an object",), {})
    metadata_raw = header.pop("__metadata__", {})
    metadata = {str(k): str(v) for k, v in metadata_raw.items()} if isinstance(metadata_raw, dict) else {}
    data_start = 8 + header_len
    data_size = size - data_start
    entries: list[TensorEntry] = []
    for name, info in header.items():
        entry, problem = _parse_entry(path, name, info, data_start, data_size)
        if problem:
            problems.append(problem)
        if entry is not None:
            entries.append(entry)
    problems.extend(_overlaps(path, entries))
    return FileIndex(tuple(entries), tuple(problems), metadata)


def _parse_entry(
    path: Path, name: str, info: Any, data_start: int, data_size: int
) -> tuple[TensorEntry | None, str | None]:
    where = f"{path.name}: tensor {name!r}"
    if not isinstance(info, dict):
        return None, f"{where}: header entry is not an object"
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in SAFETENSORS_DTYPES and dtype not in SUB_BYTE_BITS:
        return None, f"{where}: unknown dtype {dtype!r}"
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        return None, f"{where}: shape {shape!r} is not a list of non-negative integers"
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and o >= 0 for o in offsets)
        or offsets[0] > offsets[1]
    ):
        return None, f"{where}: data_offsets {offsets!r} are not [begin, end] with begin <= end"
    begin, end = offsets
    expected = (-(-math.prod(shape) * SUB_BYTE_BITS[dtype] // 8) if dtype in SUB_BYTE_BITS
                else math.prod(shape) * SAFETENSORS_DTYPES[dtype][1])
    if end - begin != expected:
        return None, (
            f"{where}: data_offsets span {end - begin} bytes but {dtype}{shape} needs {expected}"
        )
    if end > data_size:
        return None, (
            f"{where}: data ends at byte {end} of the data section but the file holds only "
            f"{data_size} bytes there (truncated file or offsets that lie)"
        )
    return TensorEntry(name, dtype, tuple(shape), path, data_start + begin, expected), None


def _overlaps(path: Path, entries: list[TensorEntry]) -> list[str]:
    problems = []
    ordered = sorted((e for e in entries if e.nbytes), key=lambda e: e.start)
    for before, after in pairwise(ordered):
        if after.start < before.start + before.nbytes:
            problems.append(f"{path.name}: tensors {before.name!r} and {after.name!r} overlap")
    return problems


def index_torch_bin(path: Path) -> tuple[FileIndex, dict[str, torch.Tensor]]:
    """Index a ``pytorch_model.bin``; the pickle is loaded with ``weights_only=True`` (never executed)."""
    import torch

    try:
        try:
            loaded = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        refused = "weights_only" in str(exc) or "Unsupported global" in str(exc)
        why = "refused to unpickle it (it holds code or objects, not only tensors)" if refused else "could not read it"
        return FileIndex((), (f"{path.name}: torch.load(weights_only=True) {why}: {message}",), {}), {}
    if not isinstance(loaded, dict):
        return FileIndex((), (f"{path.name}: holds a {type(loaded).__name__}, not a dict of tensors",), {}), {}
    tensors: dict[str, torch.Tensor] = {}
    entries: list[TensorEntry] = []
    problems: list[str] = []
    for name, value in loaded.items():
        if not isinstance(value, torch.Tensor):
            problems.append(f"{path.name}: entry {name!r} is a {type(value).__name__}, not a tensor")
            continue
        code = TORCH_TO_CODE.get(str(value.dtype).removeprefix("torch."))
        if code is None:
            problems.append(f"{path.name}: tensor {name!r} has unsupported dtype {value.dtype}")
            continue
        tensors[str(name)] = value
        nbytes = value.numel() * value.element_size()
        entries.append(TensorEntry(str(name), code, tuple(value.shape), path, -1, nbytes))
    return FileIndex(tuple(entries), tuple(problems), {}), tensors


def torch_dtype(code: str) -> torch.dtype:
    """The torch dtype of a safetensors code; CheckpointReadError where torch has no element view of it."""
    import torch

    if code not in SAFETENSORS_DTYPES or not hasattr(torch, SAFETENSORS_DTYPES[code][0]):
        raise CheckpointReadError(f"dtype {code} has no element view in this torch: its values cannot be read")
    dtype: torch.dtype = getattr(torch, SAFETENSORS_DTYPES[code][0])
    return dtype


def read_safetensors_tensor(entry: TensorEntry, files: TensorSource = LOCAL) -> torch.Tensor:
    """Read one tensor's bytes into fresh memory (no mmap; by range on the Hub)."""
    import torch

    buffer = (_read_bytes(entry.file, entry.start, entry.nbytes) if files is LOCAL
              else bytearray(files.read_tensor_bytes(entry.file, entry.start, entry.nbytes)))
    if entry.nbytes == 0:
        return torch.empty(entry.shape, dtype=torch_dtype(entry.dtype))
    return torch.frombuffer(buffer, dtype=torch_dtype(entry.dtype)).reshape(entry.shape)


def iter_safetensors_chunks(entry: TensorEntry, chunk_bytes: int) -> Iterator[torch.Tensor]:
    """Yield the tensor as flat chunks of at most ``chunk_bytes``, reusing one buffer."""
    import torch

    dtype = torch_dtype(entry.dtype)
    itemsize = SAFETENSORS_DTYPES[entry.dtype][1]
    step = max(itemsize, chunk_bytes - chunk_bytes % itemsize)
    buffer = bytearray(min(step, entry.nbytes))
    view = memoryview(buffer)
    with entry.file.open("rb") as handle:
        handle.seek(entry.start)
        done = 0
        while done < entry.nbytes:
            want = min(step, entry.nbytes - done)
            got = handle.readinto(view[:want])
            if got != want:
                raise CheckpointReadError(
                    f"{entry.file.name}: tensor {entry.name!r} ends early ({done + (got or 0)} of {entry.nbytes} bytes)"
                )
            yield torch.frombuffer(buffer, dtype=dtype, count=want // itemsize)
            done += want


def read_rows(entry: TensorEntry, rows: Iterable[int], files: TensorSource = LOCAL,
              block_bytes: int = 16 * 1024 * 1024) -> Iterator[tuple[int, torch.Tensor]]:
    """Some rows of a 2-D tensor, as ``(first row, [n, columns])`` blocks: each run of consecutive rows in one read
    of at most ``block_bytes`` (a range request on the Hub), nothing else of the tensor."""
    import torch

    if len(entry.shape) != 2 or entry.start < 0:
        raise CheckpointReadError(f"{entry.file.name}: tensor {entry.name!r} is not a 2-D safetensors tensor")
    dtype, columns = torch_dtype(entry.dtype), entry.shape[1]
    row_bytes = columns * SAFETENSORS_DTYPES[entry.dtype][1]
    most = max(1, block_bytes // max(1, row_bytes))
    wanted = sorted({r for r in rows if 0 <= r < entry.shape[0]})
    i = 0
    while i < len(wanted):
        first = wanted[i]
        count = 1
        while i + count < len(wanted) and wanted[i + count] == first + count and count < most:
            count += 1
        raw = bytearray(files.read_tensor_bytes(entry.file, entry.start + first * row_bytes, count * row_bytes))
        yield first, torch.frombuffer(raw, dtype=dtype).reshape(count, columns)
        i += count


def rows_matrix(entry: TensorEntry, rows: Iterable[int], files: TensorSource = LOCAL) -> torch.Tensor:
    """The 2-D tensor as a float32 matrix of its full shape holding only ``rows`` (the others zero): backed by an
    anonymous mapping, so memory is spent on the rows written, not on the matrix (163840 x 7168 is 4.7 GB)."""
    import mmap

    import torch

    count = math.prod(entry.shape)
    matrix = torch.frombuffer(mmap.mmap(-1, max(4, 4 * count)), dtype=torch.float32, count=count).reshape(entry.shape)
    for first, block in read_rows(entry, rows, files):
        matrix[first:first + block.shape[0]] = block.float()
    return matrix


def _read_bytes(path: Path, start: int, nbytes: int) -> bytearray:
    buffer = bytearray(nbytes)
    with path.open("rb") as handle:
        handle.seek(start)
        got = handle.readinto(buffer)
    if got != nbytes:
        raise CheckpointReadError(f"{path.name}: expected {nbytes} bytes at offset {start}, read {got}")
    return buffer
