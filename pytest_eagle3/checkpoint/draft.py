"""The checkpoint view: files found, a tensor index from headers, config, read on demand.

``Checkpoint.open`` never raises for a bad checkpoint: every problem is recorded and turned
into a failed contract. Files are only ever opened for reading.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.checkpoint.tensorfiles import (
    LOCAL,
    CheckpointReadError,
    FileIndex,
    TensorEntry,
    TensorSource,
    WeightsNotDownloaded,
    index_safetensors,
    index_torch_bin,
    iter_safetensors_chunks,
    read_safetensors_tensor,
)
from pytest_eagle3.producers.formats import (
    CONVENTIONS,
    Candidates,
    DetectedFormat,
    DraftConfig,
    candidate_producers,
    detect_format,
    normalise_config,
)
from pytest_eagle3.producers.records import RECORDS
from pytest_eagle3.words import plural, verb

if TYPE_CHECKING:
    import torch


SAFETENSORS_INDEX = "model.safetensors.index.json"
#: The record ``python -m pytest_eagle3 fix`` writes into its copy (``repair.fix.record_of``).
FIX_RECORD = "eagle3-fix.json"
BIN_INDEX = "pytorch_model.bin.index.json"
#: Files that hold weights but are not the draft (LoRA adapters, optimizer state, trainer state).
NOT_DRAFT_WEIGHTS = ("adapter_model", "optimizer", "scheduler", "training_state", "rng_state")
DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024


@dataclass
class Checkpoint:
    """One draft checkpoint on disk, as pytest-eagle3 sees it."""

    path: str
    root: Path
    files: tuple[Path, ...] = ()
    tensors: dict[str, TensorEntry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    config_raw: dict[str, Any] | None = None
    config_problem: str | None = None
    notes: list[str] = field(default_factory=list)
    _bin_tensors: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)
    #: Where the files are read from: the disk, or the Hub (headers and small tensors by range).
    source: TensorSource = field(default=LOCAL, repr=False)

    @classmethod
    def open(cls, path: str | Path) -> Checkpoint:
        """Index the checkpoint at ``path`` (a directory, or a file inside one, or a pinned ``hf://ORG/NAME@SHA``)."""
        given = str(path)
        if given.startswith("hf://"):
            return cls._open_hub(given)
        root = Path(path)
        if root.is_file():
            root = root.parent
        ckpt = cls(path=given, root=root)
        if not Path(path).exists():
            ckpt.problems.append(f"{given}: no such file or directory")
            ckpt.config_problem = "no config.json: the checkpoint path does not exist"
            return ckpt
        ckpt._read_config()
        ckpt._index_weights()
        return ckpt

    @classmethod
    def _open_hub(cls, spec: str) -> Checkpoint:
        from pytest_eagle3.checkpoint.hub import HubError, open_repo

        try:
            files = open_repo(spec)
        except HubError as exc:
            ckpt = cls(path=spec, root=Path(spec))
            ckpt.problems.append(str(exc))
            ckpt.config_problem = f"no config.json: {exc}"
            return ckpt
        ckpt = cls(path=spec, root=files.snapshot, source=files)
        ckpt._read_config()
        ckpt._index_weights()
        return ckpt

    @property
    def weights_local(self) -> bool:
        """Whether every weight byte is on disk (False for a Hub id read by its headers)."""
        return self.source.local

    # -- config -------------------------------------------------------------------------
    def _read_config(self) -> None:
        config_path = self.root / "config.json"
        if not config_path.is_file():
            self.config_problem = f"no config.json in {self.path}"
            return
        try:
            data = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            self.config_problem = f"config.json is not valid JSON: {exc}"
            return
        if not isinstance(data, dict):
            self.config_problem = f"config.json holds a JSON {type(data).__name__}, not an object"
            return
        self.config_raw = data

    # -- weights ------------------------------------------------------------------------
    def _index_weights(self) -> None:
        for index_name, kind in ((SAFETENSORS_INDEX, "safetensors"), (BIN_INDEX, "bin")):
            if (self.root / index_name).is_file():
                self._index_sharded(self.root / index_name, kind)
                return
        exists = self.source.exists
        candidates = [p for p in self.source.glob(self.root, "*.safetensors") if _is_draft_file(p)]
        if not candidates:
            candidates = [p for p in self.source.glob(self.root, "pytorch_model*.bin") if _is_draft_file(p)]
        for odd in [p for p in candidates if not exists(p)]:
            self.problems.append(f"{odd.name}: not a readable file (a directory or a broken link)")
        candidates = [p for p in candidates if exists(p)]
        if (self.root / "training_state.pt").is_file() and not candidates:
            self.notes.append(
                "training_state.pt is a SpecForge 0.2.0 training checkpoint, not a servable draft: "
                "run `specforge export --to sglang` (or `--to hf`) on it"
            )
        if not candidates:
            self.problems.append(
                f"{self.path}: no weight files (expected model.safetensors, a sharded "
                f"{SAFETENSORS_INDEX}, or pytorch_model.bin)"
            )
            return
        for file in candidates:
            self._add_file(file)

    def _index_sharded(self, index_path: Path, kind: str) -> None:
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            self.problems.append(f"{index_path.name}: not valid JSON ({exc})")
            return
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            self.problems.append(f"{index_path.name}: no weight_map of tensor name -> file name")
            return
        root = Path(os.path.normpath(self.root.absolute()))
        shards: dict[Path, set[str]] = {}
        for name, filename in weight_map.items():
            # judged on the path as written (hub caches link shards into ../blobs, which is fine)
            shard = Path(os.path.normpath(root / filename))
            if Path(filename).is_absolute() or not shard.is_relative_to(root):
                self.problems.append(
                    f"{index_path.name}: tensor {name!r} points outside the checkpoint "
                    f"directory ({filename!r}); refusing to read it"
                )
                continue
            shards.setdefault(shard, set()).add(name)
        for shard, names in sorted(shards.items()):
            if not self.source.exists(shard):
                self.problems.append(f"{index_path.name}: shard {shard.name} is missing ({plural(len(names), 'tensor')})")
                continue
            found = self._add_file(shard, kind)
            missing = sorted(names - found)
            if missing:
                self.problems.append(
                    f"{index_path.name}: {plural(len(missing), 'tensor')} listed for {shard.name} {verb(len(missing), 'is', 'are')} not in it: "
                    + ", ".join(missing[:5])
                )

    def _add_file(self, file: Path, kind: str | None = None) -> set[str]:
        kind = kind or ("safetensors" if file.suffix == ".safetensors" else "bin")
        try:
            if kind == "safetensors":
                index = index_safetensors(file, self.source)
            else:
                index, tensors = index_torch_bin(file)
                self._bin_tensors.update(tensors)
        except (OSError, CheckpointReadError) as exc:
            self.problems.append(f"{file.name}: cannot read ({exc})")
            return set()
        self.files += (file,)
        return self._merge(index)

    def _merge(self, index: FileIndex) -> set[str]:
        self.problems.extend(index.problems)
        added = set()
        for entry in index.entries:
            if entry.name in self.tensors:
                self.problems.append(
                    f"tensor {entry.name!r} appears twice ({self.tensors[entry.name].file.name}, {entry.file.name})"
                )
                continue
            self.tensors[entry.name] = entry
            added.add(entry.name)
        return added

    # -- tensors ------------------------------------------------------------------------
    def read(self, name: str) -> torch.Tensor:
        """Read one (small) tensor fully. Raises ``CheckpointReadError`` if the bytes are not there."""
        entry = self.tensors[name]
        if entry.start < 0:
            return self._bin_tensors[name]
        return read_safetensors_tensor(entry, self.source)

    def chunks(self, name: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[torch.Tensor]:
        """Iterate over a tensor as flat chunks of bounded size (``WeightsNotDownloaded`` on the Hub)."""
        entry = self.tensors[name]
        if not self.source.local:
            from pytest_eagle3.checkpoint.hub import NOT_DOWNLOADED

            raise WeightsNotDownloaded(f"{entry.file.name}: tensor {name!r}: {NOT_DOWNLOADED}")
        if entry.start >= 0:
            yield from iter_safetensors_chunks(entry, chunk_bytes)
            return
        import torch

        flat = self._bin_tensors[name].reshape(-1)
        step = max(1, chunk_bytes // max(1, flat.element_size()))
        yield from torch.split(flat, step)

    def shape(self, name: str) -> tuple[int, ...] | None:
        """The shape of tensor ``name`` from its header, or None when the draft has no such tensor."""
        entry = self.tensors.get(name)
        return entry.shape if entry else None

    @property
    def readable(self) -> bool:
        """True when every file parsed cleanly and at least one tensor was indexed."""
        return not self.problems and bool(self.tensors)

    @property
    def nbytes(self) -> int:
        """The bytes of every tensor, from the headers."""
        return sum(e.nbytes for e in self.tensors.values())

    # -- interpretation ---------------------------------------------------------------------
    @cached_property
    def format(self) -> DetectedFormat:
        """The producer format detected from the config and the tensor names (or a fixed copy's record)."""
        return self._fixed_copy() or detect_format(self.config_raw or {}, set(self.tensors), self.files)

    def _fixed_copy(self) -> DetectedFormat | None:
        """A copy ``python -m pytest_eagle3 fix`` wrote, as its record says (the source's producer, the copy's
        aux-id convention) while the config is the one it wrote; None for anything else."""
        try:
            record = json.loads((self.root / FIX_RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or self.config_raw is None or record.get("producer") not in RECORDS \
                or record.get("config_sha256") != config_digest(self.config_raw):
            return None
        convention = record.get("aux_convention_of_copy")
        stated = (convention, f"{FIX_RECORD} aux_convention_of_copy") if convention in CONVENTIONS else None
        why = f"{FIX_RECORD}: a copy python -m pytest_eagle3 fix wrote from a {record.get('format_of_source')} draft"
        return DetectedFormat(str(record["producer"]), (why,), "fixed copy", stated)

    @cached_property
    def config(self) -> DraftConfig:
        """The config normalised across formats: aux ids, vocab sizes, layers, norms."""
        return normalise_config(self.config_raw or {}, self.format, self.tensors)

    @cached_property
    def candidates(self) -> Candidates:
        """Who may have written it (``producers.formats.candidate_producers``; a fixed copy: its record's)."""
        if self.format.convention is not None:
            return Candidates((self.format.producer,), True, self.format.evidence[0])
        return candidate_producers(self.config_raw or {}, set(self.tensors), self.files, self.format)

    def as_read_by(self, producer: str) -> ReadAs:
        """The format and config of the same files read as ``producer`` writes them (its habits, defaults
        and aux-id convention): nothing is re-read, the checkpoint is neither copied nor modified."""
        if producer == self.format.producer:
            return ReadAs(self.format, self.config)
        detected = DetectedFormat(producer, (f"read as {producer}: {self.candidates.why}",))
        return ReadAs(detected, normalise_config(self.config_raw or {}, detected, self.tensors))


@dataclass(frozen=True)
class ReadAs:
    """The checkpoint as one producer writes it: the detected format naming that producer, and the config
    normalised by its rules."""

    format: DetectedFormat
    config: DraftConfig


def config_digest(config: dict[str, Any]) -> str:
    """sha256 of a config as canonical JSON (the fix record's ``config_sha256``)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode("utf-8")).hexdigest()


def _is_draft_file(path: Path) -> bool:
    return not path.name.startswith(NOT_DRAFT_WEIGHTS)


__all__ = ["Checkpoint", "CheckpointReadError", "ReadAs", "TensorEntry", "WeightsNotDownloaded"]
