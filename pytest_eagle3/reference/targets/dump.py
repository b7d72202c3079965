"""Our dump format: a directory written once by ``python -m pytest_eagle3 capture``, read many times.

::

    DIR/manifest.json         written last: a dump without it is incomplete
    DIR/head.safetensors      embed_tokens [V, H], lm_head [V', H], norm [H] (the target's dtype; read by name from it)
    DIR/prompt-0000.safetensors  token_ids [T] (int64: prompt + greedy continuation), layer.K [T, H] per captured K

The manifest names the target (config hash, hidden size, vocab, layer count), the captured states
and their convention (``source.STATE_CONVENTION``), the prompts, the tokens generated per prompt and
the engine (name, version) that computed them. Reading checks all of it against the target given
and never writes into the dump.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pytest_eagle3.checkpoint import TargetModel
from pytest_eagle3.checkpoint.tensorfiles import (
    LOCAL,
    CheckpointReadError,
    TensorEntry,
    index_safetensors,
    read_safetensors_tensor,
)
from pytest_eagle3.reference.acceptance import TargetRun
from pytest_eagle3.reference.targets.source import (
    STATE_CONVENTION,
    LayerStates,
    PromptStates,
    TargetHead,
    TargetSide,
    TargetSourceError,
)
from pytest_eagle3.words import plural

FORMAT = "pytest-eagle3 hidden states"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
HEAD_FILE = "head.safetensors"
#: config.json keys that tools rewrite without changing the model: left out of the hash.
VOLATILE_CONFIG_KEYS = frozenset({"transformers_version", "_name_or_path", "torch_dtype", "dtype", "use_cache"})


def config_hash(config: dict[str, Any]) -> str:
    """sha256 of the target's config.json as canonical JSON, without the keys tools rewrite."""
    kept = {k: v for k, v in config.items() if k not in VOLATILE_CONFIG_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def prompt_file(index: int) -> str:
    """The file name of prompt ``index`` in a dump."""
    return f"prompt-{index:04d}.safetensors"


@dataclass(frozen=True)
class Manifest:
    """The dump's description (``manifest.json``)."""

    config_sha256: str
    hidden_size: int
    vocab_size: int
    num_hidden_layers: int
    layers: tuple[int, ...]
    new_tokens: int
    prompt_lengths: tuple[int, ...]
    prompt_source: str
    engine: str
    engine_version: str
    architectures: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The manifest as ``manifest.json`` holds it."""
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "target": {"config_sha256": self.config_sha256, "hidden_size": self.hidden_size,
                       "vocab_size": self.vocab_size, "num_hidden_layers": self.num_hidden_layers,
                       "architectures": list(self.architectures)},
            "layers": list(self.layers), "convention": STATE_CONVENTION,
            "new_tokens": self.new_tokens,
            "prompts": [{"file": prompt_file(i), "prompt_length": n} for i, n in enumerate(self.prompt_lengths)],
            "prompt_source": self.prompt_source,
            "engine": {"name": self.engine, "version": self.engine_version},
            "head": HEAD_FILE,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        """Read a manifest; a file of another format or version raises TargetSourceError naming ``where``."""
        try:
            if data.get("format") != FORMAT:
                raise TargetSourceError(f"{where}: not a pytest-eagle3 dump (format {data.get('format')!r})")
            if data.get("format_version") != FORMAT_VERSION:
                raise TargetSourceError(f"{where}: dump format version {data.get('format_version')!r}; this "
                                        f"pytest-eagle3 reads version {FORMAT_VERSION}: capture again")
            target, engine = data["target"], data["engine"]
            manifest = cls(str(target["config_sha256"]), _int(target["hidden_size"]), _int(target["vocab_size"]),
                           _int(target["num_hidden_layers"]), tuple(_int(k) for k in data["layers"]),
                           _int(data["new_tokens"]), tuple(_int(p["prompt_length"]) for p in data["prompts"]),
                           str(data.get("prompt_source", "")), str(engine["name"]), str(engine["version"]),
                           tuple(str(a) for a in target.get("architectures", ())))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise TargetSourceError(f"{where}: manifest field missing or of the wrong type ({exc!r})") from None
        if not manifest.prompt_lengths:
            raise TargetSourceError(f"{where}: the manifest lists no prompts")
        return manifest


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    return value


class DumpWriter:
    """Writes a dump into a new directory; the manifest goes last, so a dump cut short has none."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        if self.out.exists():
            raise TargetSourceError(f"{out} already exists; a capture never overwrites (choose a new directory)")
        self.out.mkdir(parents=True)

    def add(self, index: int, prompt: PromptStates) -> None:
        """Write one prompt's token ids and hidden states."""
        from safetensors.torch import save_file

        tensors = {"token_ids": prompt.token_ids.to(torch.int64).contiguous()}
        tensors.update({f"layer.{k}": v.contiguous() for k, v in sorted(prompt.states.items())})
        save_file(tensors, str(self.out / prompt_file(index)))

    def finish(self, head: TargetHead, manifest: Manifest) -> Path:
        """Write the head (embeddings, lm_head) and the manifest; return the dump's folder."""
        from safetensors.torch import save_file

        tied = head.lm_head.data_ptr() == head.embed.data_ptr()  # safetensors refuses shared storage
        lm_head = head.lm_head.clone() if tied else head.lm_head
        save_file({"embed_tokens": head.embed.contiguous(), "lm_head": lm_head.contiguous(),
                   "norm": head.final_norm.contiguous()}, str(self.out / HEAD_FILE),
                  metadata={"norm_eps": repr(head.final_norm_eps)})
        partial = self.out / (MANIFEST + ".partial")
        partial.write_text(json.dumps(manifest.to_json(), indent=1) + "\n", encoding="utf-8")
        os.replace(partial, self.out / MANIFEST)
        return self.out / MANIFEST


def read_manifest(path: str | Path) -> Manifest:
    """The manifest of the dump at ``path``; a usage-level error naming what is wrong."""
    root = Path(path)
    if not root.is_dir():
        raise TargetSourceError(f"hidden states {path}: not a directory (give the directory a capture wrote)")
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        raise TargetSourceError(f"hidden states {path}: no {MANIFEST}: an incomplete dump (a capture cut short?) "
                                "or not a dump: capture again with python -m pytest_eagle3 capture")
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TargetSourceError(f"hidden states {manifest_path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TargetSourceError(f"hidden states {manifest_path}: a JSON {type(data).__name__}, not an object")
    return Manifest.from_json(data, f"hidden states {manifest_path}")


def check_target(manifest: Manifest, target: TargetModel, where: str) -> None:
    """The dump was made from this target: shape fields first (clearer), then the config hash."""
    if target.problem is not None:
        raise TargetSourceError(f"{where}: the target cannot be checked: {target.problem}")
    for name, dumped, given in (("hidden size", manifest.hidden_size, target.hidden_size),
                                ("vocab size", manifest.vocab_size, target.vocab_size),
                                ("layer count", manifest.num_hidden_layers, target.num_hidden_layers)):
        if given is not None and dumped != given:
            raise TargetSourceError(f"{where} was captured from another target: {name} {dumped} in the dump, "
                                    f"{given} in --eagle3-target {target.path}")
    digest = config_hash(target.config)
    if digest != manifest.config_sha256:
        raise TargetSourceError(f"{where} was captured from another target: config hash {manifest.config_sha256[:12]} "
                                f"in the dump, {digest[:12]} for --eagle3-target {target.path} (same shapes, "
                                "another config.json: capture again from this target)")


@dataclass(frozen=True)
class DumpFile:
    """One prompt file, indexed and checked against the manifest."""

    token_ids: torch.Tensor
    entries: dict[int, TensorEntry]


def _prompt_file(root: Path, index: int, manifest: Manifest) -> DumpFile:
    path = root / prompt_file(index)
    where = f"hidden states {root}: {path.name}"
    if not path.is_file():
        raise TargetSourceError(f"{where} is missing (a partial dump: the manifest lists "
                                f"{plural(len(manifest.prompt_lengths), 'prompt')})")
    index_ = index_safetensors(path)
    if index_.problems:
        raise TargetSourceError(f"hidden states {root}: {index_.problems[0]}")
    entries = {e.name: e for e in index_.entries}
    ids = entries.get("token_ids")
    if ids is None or len(ids.shape) != 1 or ids.dtype != "I64":
        raise TargetSourceError(f"{where}: no int64 token_ids [T]")
    length = ids.shape[0]
    expected = manifest.prompt_lengths[index] + manifest.new_tokens
    if length != expected:
        raise TargetSourceError(f"{where}: {length} token ids, the manifest says {expected} "
                                f"(prompt {manifest.prompt_lengths[index]} + {manifest.new_tokens} generated)")
    states = {}
    for k in manifest.layers:
        entry = entries.get(f"layer.{k}")
        if entry is None:
            raise TargetSourceError(f"{where}: no state layer.{k} (the manifest lists layers {list(manifest.layers)})")
        if entry.shape != (length, manifest.hidden_size) or not entry.is_float:
            raise TargetSourceError(f"{where}: layer.{k} is {entry.dtype}{list(entry.shape)}, expected a float "
                                    f"[{length}, {manifest.hidden_size}]")
        states[k] = entry
    try:
        token_ids = read_safetensors_tensor(ids).clone()
    except CheckpointReadError as exc:
        raise TargetSourceError(f"{where}: {exc}") from None
    if bool(((token_ids < 0) | (token_ids >= manifest.vocab_size)).any()):
        raise TargetSourceError(f"{where}: token ids outside the target vocab [0, {manifest.vocab_size})")
    return DumpFile(token_ids, states)


def _head_entries(root: Path, manifest: Manifest) -> tuple[dict[str, TensorEntry], float]:
    path = root / HEAD_FILE
    where = f"hidden states {root}: {HEAD_FILE}"
    if not path.is_file():
        raise TargetSourceError(f"{where} is missing (a partial dump)")
    index = index_safetensors(path)
    if index.problems:
        raise TargetSourceError(f"hidden states {root}: {index.problems[0]}")
    entries = {e.name: e for e in index.entries}
    hidden, vocab = manifest.hidden_size, manifest.vocab_size
    wanted: dict[str, tuple[int | str, ...]] = {"embed_tokens": (vocab, hidden), "lm_head": ("V", hidden),
                                                "norm": (hidden,)}
    for name, shape in wanted.items():
        entry = entries.get(name)
        fits = entry is not None and len(entry.shape) == len(shape) and all(
            isinstance(want, str) or got == want for got, want in zip(entry.shape, shape))
        if entry is None or not fits or not entry.is_float:
            found = "missing" if entry is None else f"{entry.dtype}{list(entry.shape)}"
            raise TargetSourceError(f"{where}: {name} is {found}, expected a float [{', '.join(map(str, shape))}]")
    try:
        eps = float(index.metadata.get("norm_eps", "1e-6"))
    except ValueError:
        raise TargetSourceError(f"{where}: norm_eps metadata {index.metadata.get('norm_eps')!r} is not a number") from None
    return entries, eps


def _read_head(root: Path, manifest: Manifest, files: Sequence[DumpFile]) -> TargetHead:
    """Only what the prediction needs: the embedding rows of the dump's tokens, the norm, lm_head when borrowed."""
    from pytest_eagle3.reference.targets.head import partial_head

    entries, eps = _head_entries(root, manifest)
    tokens = sorted(set(torch.cat([f.token_ids for f in files]).tolist())) if files else []
    return partial_head(entries, LOCAL, ("embed_tokens", "lm_head", "norm"), eps, tokens)


def check_dump(path: str | Path, target: TargetModel, new_tokens: int) -> tuple[Manifest, list[DumpFile]]:
    """Every check a dump gets before use (manifest, target, every file's header): no state is read."""
    root = Path(path)
    manifest = read_manifest(root)
    where = f"hidden states {path}"
    check_target(manifest, target, where)
    if manifest.new_tokens < new_tokens:
        raise TargetSourceError(f"{where}: {manifest.new_tokens} tokens generated per prompt; the measurement needs "
                                f"{new_tokens} (--eagle3-continuation + --eagle3-k): capture again with "
                                f"--new-tokens {new_tokens}")
    bad = [k for k in manifest.layers if not 0 <= k <= manifest.num_hidden_layers]
    if bad:
        raise TargetSourceError(f"{where}: layers {bad} outside the target's states 0..{manifest.num_hidden_layers}")
    files = [_prompt_file(root, i, manifest) for i in range(len(manifest.prompt_lengths))]
    _head_entries(root, manifest)
    return manifest, files


def open_dump(path: str | Path, target: TargetModel, new_tokens: int) -> TargetSide:
    """The dump at ``path`` as a target side for ``target``, continuing each prompt by ``new_tokens`` at least.

    Every file is indexed and checked first (headers only); a state is read when a reading uses it.
    """
    root = Path(path)
    manifest, files = check_dump(root, target, new_tokens)
    where = f"hidden states {path}"
    head = _read_head(root, manifest, files)
    groups: dict[int, list[int]] = {}
    for index, length in enumerate(manifest.prompt_lengths):
        groups.setdefault(length, []).append(index)
    available = frozenset(manifest.layers)
    runs = []
    for length, members in sorted(groups.items()):
        group = [files[i] for i in members]
        keep = length + new_tokens  # a longer capture is cut to what the measurement asks (causal: same states)
        sequences = torch.stack([f.token_ids[:keep] for f in group])
        states = LayerStates(manifest.num_hidden_layers + 1, available, _loader(group, keep), where)
        runs.append(TargetRun(sequences, length, states))  # type: ignore[arg-type, unused-ignore]
    origin = f"dump {path} ({manifest.engine} {manifest.engine_version})"
    return TargetSide(tuple(runs), head, manifest.num_hidden_layers, manifest.hidden_size, manifest.vocab_size,
                      f"{manifest.prompt_source}{DUMP_SUFFIX}", origin)


#: How a prompt set read from a dump is labelled.
DUMP_SUFFIX = " (from the dump)"


def _loader(group: Sequence[DumpFile], keep: int) -> Any:
    def load(k: int) -> torch.Tensor:
        try:
            return torch.stack([read_safetensors_tensor(f.entries[k])[:keep].float() for f in group])
        except CheckpointReadError as exc:
            raise TargetSourceError(f"hidden states: {exc}") from None
    return load
