"""Hidden states that producers already write, read as a target side (``--eagle3-hidden-states=DIR``).

The layout is detected from the directory (:func:`detect_layout`):

``pytest-eagle3``
    our own dump (``manifest.json``; see ``dump.py``).
``speculators``
    ``DIR/hs_{i}.safetensors`` or ``DIR/hidden_states/hs_{i}.safetensors`` (speculators 0.9.0,
    ``data_generation/offline.py`` ``get_existing_hidden_state_indices``; ``hs_connectors/transfer.py``
    ``FileTransfer.get_cached``: ``hidden_states_path / f"hs_{file_idx}.safetensors"``). Each file is the
    one vLLM's extraction connector wrote, moved: ``token_ids [T]`` and ``hidden_states [T, n, H]``
    (``train/data.py``: ``"hidden_states": [seq_len, num_layers, hidden_size]``; ``[:, :-1]`` are the aux
    layers, ``[:, -1]`` the "verifier last hidden states"). Layers: the draft's ``target_layer_ids``,
    default ``[2, L//2, L-3]`` (``models/utils.py`` ``resolve_target_layer_ids``) and ``L`` last
    (``--include-last-layer``; id ``L`` is "the final hidden state"), vLLM's input-of convention.
``vllm``
    ``DIR/{request_id}.safetensors`` from vLLM's ``extract_hidden_states`` method with
    ``ExampleHiddenStatesConnector`` (vllm 0.32.0 ``example_hidden_states_connector.py``
    ``request_finished``): the same two tensors; the layer ids are the extraction draft's
    ``eagle_aux_hidden_state_layer_ids`` (``v1/spec_decode/extract_hidden_states.py``), input-of:
    id ``k`` is ``hidden_states + residual`` entering layer ``k``, id ``L`` the sum after the last layer
    (``model_executor/models/llama.py`` ``_maybe_add_hidden_state(aux, idx + 1, ...)``).
``specforge``
    ``DIR/rows_{a}-{b}/data_{idx}.ckpt`` (or ``.ckpt.gz``) written by ``torch.save`` in SpecForge's
    ``scripts/prepare_hidden_states.py`` (``SglangHiddenStatesGenerator._save_tensor``): a dict with
    ``input_ids [T]``, ``loss_mask [T]``, ``hidden_state [1, T, H]`` (the logits processor's input:
    AFTER the final norm, so not state ``L`` and not used) and ``aux_hidden_state [1, T, n*H]`` (SGLang
    concatenates the captured layers on the last axis). Layers: ``--aux-hidden-states-layers`` ``+ 1``
    ("in sglang, when we do set_eagle3_layers_to_capture, we will add 1"), default ``[2, L//2, L-3]``,
    input-of (SGLang takes ``hidden_states + residual`` before layer ``i``). Read with
    ``torch.load(weights_only=True)``: no pickle is executed.

None of the producer files names its layer ids or where the prompt ends. An optional sidecar
``DIR/pytest-eagle3.json`` gives them: ``{"layers": [...], "prompt_lengths": {"FILE": N, ...}}``.
Without it the layers are the producer's default above, and a prompt's length is: for SpecForge, the
first position of ``loss_mask`` (the answer starts there); for speculators and vLLM, ``T - N`` where
``N`` is the tokens the measurement asks for (the last ``N`` tokens are taken as the target's greedy
continuation, as with ``include_output_tokens`` and ``max_tokens = N + 1`` at temperature 0).
The head (embedding, lm_head, final norm) is not in these files: it is read by name from the target's
own safetensors in the ``--eagle3-target`` directory.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pytest_eagle3.checkpoint import TargetModel
from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError, index_safetensors, read_safetensors_tensor
from pytest_eagle3.reference.acceptance import TargetRun
from pytest_eagle3.reference.targets.dump import HEAD_FILE, MANIFEST, check_dump, open_dump
from pytest_eagle3.reference.targets.source import LayerStates, TargetSide, TargetSourceError
from pytest_eagle3.words import plural

SIDECAR = "pytest-eagle3.json"
#: vLLM extract_hidden_states' files: a producer layout (named after its writer), not the engine.
VLLM_LAYOUT = "vllm"
LAYOUTS = ("pytest-eagle3", "speculators", VLLM_LAYOUT, "specforge")
_HS_NAME = re.compile(r"hs_(\d+)\.safetensors$")
_CKPT_NAME = re.compile(r"data_(\d+)\.ckpt(\.gz)?$")


def default_layers(layout: str, layers: int, count: int) -> tuple[int, ...] | None:
    """The producer's default states for a file holding ``count`` of them (None: no default fits)."""
    aux = (2, layers // 2, layers - 3)
    if layout in ("speculators", VLLM_LAYOUT) and count == 4:
        return (*aux, layers)  # speculators resolve_target_layer_ids + --include-last-layer
    if count == 3:
        return aux  # SpecForge prepare_hidden_states.py; vLLM/SGLang EAGLE-3 defaults
    return None


def detect_layout(root: Path) -> str:
    """Which producer wrote ``root`` (a usage-level error when none fits)."""
    if not root.is_dir():
        raise TargetSourceError(f"hidden states {root}: not a directory (give the directory a capture wrote)")
    if (root / MANIFEST).is_file() or (root / HEAD_FILE).is_file() or any(root.glob("prompt-*.safetensors")):
        return "pytest-eagle3"  # without its manifest: an incomplete dump of ours, reported as such
    if _speculators_files(root):
        return "speculators"
    if _specforge_files(root):
        return "specforge"
    if sorted(root.glob("*.safetensors")):
        return VLLM_LAYOUT
    raise TargetSourceError(
        f"hidden states {root}: no {MANIFEST} (pytest-eagle3), hs_N.safetensors (speculators), "
        "rows_*/data_N.ckpt (SpecForge) or *.safetensors (vLLM extract_hidden_states): an incomplete dump "
        "(a capture cut short?) or not a dump: capture again with python -m pytest_eagle3 capture")


def _speculators_files(root: Path) -> list[Path]:
    for folder in (root, root / "hidden_states"):
        found = [p for p in folder.glob("hs_*.safetensors") if _HS_NAME.match(p.name)] if folder.is_dir() else []
        if found:
            return sorted(found, key=lambda p: int(_HS_NAME.match(p.name).group(1)))  # type: ignore[union-attr]
    return []


def _specforge_files(root: Path) -> list[Path]:
    found = [p for p in root.rglob("data_*.ckpt*") if _CKPT_NAME.match(p.name)]
    return sorted(found, key=lambda p: int(_CKPT_NAME.match(p.name).group(1)))  # type: ignore[union-attr]


@dataclass(frozen=True)
class ProducerFile:
    """One prompt of a producer dump: its ids, its prompt length, and how to read its states."""

    name: str
    token_ids: torch.Tensor
    prompt_length: int
    read_states: Callable[[], torch.Tensor]  # [T, n, H], the file's layers in order


@dataclass(frozen=True)
class ProducerDump:
    """A producer's hidden-state dump: its layout, the layers it holds, and its files."""
    layout: str
    layers: tuple[int, ...]
    files: tuple[ProducerFile, ...]


def _sidecar(root: Path) -> dict[str, Any]:
    path = root / SIDECAR
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TargetSourceError(f"hidden states {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TargetSourceError(f"hidden states {path}: a JSON {type(data).__name__}, not an object")
    layers, lengths = data.get("layers"), data.get("prompt_lengths", {})
    if layers is not None and not (isinstance(layers, list) and all(type(k) is int for k in layers)):
        raise TargetSourceError(f"hidden states {path}: layers must be a list of integers, not {layers!r}")
    if not (isinstance(lengths, dict) and all(type(n) is int and n > 0 for n in lengths.values())):
        raise TargetSourceError(f"hidden states {path}: prompt_lengths must map file names to positive integers")
    return data


def _safetensors_file(path: Path, hidden: int) -> tuple[torch.Tensor, int, Callable[[], torch.Tensor]]:
    where = f"hidden states {path.parent}: {path.name}"
    index = index_safetensors(path)
    if index.problems:
        raise TargetSourceError(f"{where}: {index.problems[0]}")
    entries = {e.name: e for e in index.entries}
    ids, states = entries.get("token_ids"), entries.get("hidden_states")
    if ids is None or len(ids.shape) != 1 or ids.is_float:
        raise TargetSourceError(f"{where}: no integer token_ids [T] (vLLM ExampleHiddenStatesConnector writes one)")
    if states is None or len(states.shape) != 3 or states.shape[0] != ids.shape[0] or states.shape[2] != hidden \
            or not states.is_float:
        found = "missing" if states is None else f"{states.dtype}{list(states.shape)}"
        raise TargetSourceError(f"{where}: hidden_states is {found}, expected a float [{ids.shape[0]}, layers, {hidden}]")
    try:
        token_ids = read_safetensors_tensor(ids).to(torch.int64)
    except CheckpointReadError as exc:
        raise TargetSourceError(f"{where}: {exc}") from None

    def read() -> torch.Tensor:
        try:
            return read_safetensors_tensor(states)
        except CheckpointReadError as exc:
            raise TargetSourceError(f"{where}: {exc}") from None
    return token_ids, states.shape[1], read


def _load_ckpt(path: Path) -> dict[str, Any]:
    where = f"hidden states {path.parent}: {path.name}"
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                data = torch.load(io.BytesIO(handle.read()), weights_only=True, map_location="cpu")
        else:
            data = torch.load(path, weights_only=True, map_location="cpu", mmap=True)
    except Exception as exc:
        raise TargetSourceError(f"{where}: cannot be read as a SpecForge feature file ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not isinstance(data, dict):
        raise TargetSourceError(f"{where}: a {type(data).__name__}, not SpecForge's dict of tensors")
    return data


def _specforge_file(path: Path, hidden: int) -> tuple[torch.Tensor, int, torch.Tensor, Callable[[], torch.Tensor]]:
    where = f"hidden states {path.parent}: {path.name}"
    data = _load_ckpt(path)
    ids, mask, aux = data.get("input_ids"), data.get("loss_mask"), data.get("aux_hidden_state")
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.is_floating_point():
        raise TargetSourceError(f"{where}: no integer input_ids [T]")
    if not isinstance(aux, torch.Tensor) or aux.dim() != 3 or aux.shape[1] != ids.shape[0] \
            or aux.shape[2] % hidden or not aux.is_floating_point():
        found = "missing" if not isinstance(aux, torch.Tensor) else f"{aux.dtype}{list(aux.shape)}"
        raise TargetSourceError(f"{where}: aux_hidden_state is {found}, expected a float [1, {ids.shape[0]}, "
                                f"layers x {hidden}] (prepare_hidden_states.py --enable-aux-hidden-states)")
    count = aux.shape[2] // hidden
    mask = mask if isinstance(mask, torch.Tensor) and mask.shape == ids.shape else torch.zeros_like(ids)

    def read() -> torch.Tensor:
        states: torch.Tensor = _load_ckpt(path)["aux_hidden_state"][0].reshape(ids.shape[0], count, hidden)
        return states
    return ids.to(torch.int64).clone(), count, mask, read


def read_producer_dump(root: Path, layout: str, target: TargetModel, new_tokens: int) -> ProducerDump:
    """Index every file of a producer dump and check it against the target (states are read later)."""
    where = f"hidden states {root}"
    if target.problem is not None:
        raise TargetSourceError(f"{where}: the target cannot be checked: {target.problem}")
    hidden, vocab, layers = target.hidden_size, target.vocab_size, target.num_hidden_layers
    if hidden is None or vocab is None or layers is None:
        raise TargetSourceError(f"{where}: --eagle3-target {target.path} gives no hidden size, vocab or layer count")
    sidecar = _sidecar(root)
    paths = (_speculators_files(root) if layout == "speculators" else _specforge_files(root) if layout == "specforge"
             else sorted(root.glob("*.safetensors")))
    files, counts = [], set()
    for path in paths:
        if layout == "specforge":
            ids, count, mask, read = _specforge_file(path, hidden)
            starts = mask.nonzero()
            guess = int(starts[0]) if len(starts) else len(ids) - new_tokens
        else:
            ids, count, read = _safetensors_file(path, hidden)
            guess = len(ids) - new_tokens
        length = sidecar.get("prompt_lengths", {}).get(path.name, guess)
        if length < 1 or length + new_tokens > len(ids):
            raise TargetSourceError(f"{where}: {path.name} holds {plural(len(ids), 'token')}; the prompt ({length}) plus the "
                                    f"{new_tokens} tokens the measurement needs do not fit (give prompt_lengths in "
                                    f"{SIDECAR}, or capture longer continuations)")
        if bool(((ids < 0) | (ids >= vocab)).any()):
            raise TargetSourceError(f"{where}: {path.name}: token ids outside the target vocab [0, {vocab})")
        counts.add(count)
        files.append(ProducerFile(path.name, ids, length, read))
    if len(counts) != 1:
        raise TargetSourceError(f"{where}: the files hold different numbers of layers {sorted(counts)}")
    count = counts.pop()
    declared = sidecar.get("layers")
    chosen = tuple(declared) if declared is not None else default_layers(layout, layers, count)
    if chosen is None or len(chosen) != count:
        raise TargetSourceError(f"{where}: the files hold {count} states per token; say which in {root / SIDECAR} "
                                f'({{"layers": [...]}}, input-of ids 0..{layers}: the ids the producer was given)')
    bad = [k for k in chosen if not 0 <= k <= layers]
    if bad:
        raise TargetSourceError(f"{where}: layers {bad} outside the target's states 0..{layers}")
    return ProducerDump(layout, chosen, tuple(files))


def check_hidden_states(path: str | Path, target: TargetModel, new_tokens: int) -> str:
    """Every check a dump of any supported layout gets before use; returns the layout."""
    root = Path(path)
    layout = detect_layout(root)
    if layout == "pytest-eagle3":
        check_dump(root, target, new_tokens)
    else:
        read_producer_dump(root, layout, target, new_tokens)
        _check_head(target)
    return layout


def _target_dir(target: TargetModel) -> Path | str:
    if target.on_hub:  # a pinned hf:// id: its headers and the rows needed are read by range
        return target.path
    path = Path(target.path)
    return path.parent if path.is_file() else path


def _check_head(target: TargetModel) -> None:
    """A producer dump has no head: the target's directory must hold the embedding and final norm (headers)."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.targets.head import EMBED_NAMES, NORM_NAMES

    folder = _target_dir(target)
    weights = Checkpoint.open(folder)
    for names, what in ((EMBED_NAMES, "embedding"), (NORM_NAMES, "final norm")):
        if not any(n in weights.tensors for n in names):
            raise TargetSourceError(f"hidden states: a producer dump holds no target head; the target directory "
                                    f"{folder} has no {what} ({', '.join(names)}): give --eagle3-target the "
                                    "directory with the target's safetensors (only these tensors are read)")


def open_hidden_states(path: str | Path, target: TargetModel, new_tokens: int) -> TargetSide:
    """The dump at ``path``, of any supported layout, as a target side for ``target``."""
    root = Path(path)
    layout = detect_layout(root)
    if layout == "pytest-eagle3":
        return open_dump(root, target, new_tokens)
    dump = read_producer_dump(root, layout, target, new_tokens)
    from pytest_eagle3.reference.targets.head import read_head

    tokens = sorted(set(torch.cat([f.token_ids for f in dump.files]).tolist())) if dump.files else []
    head = read_head(_target_dir(target), target, token_ids=tokens)  # the rows the dump's tokens use, no more
    where = f"hidden states {path}"
    position = {k: i for i, k in enumerate(dump.layers)}
    groups: dict[int, list[ProducerFile]] = {}
    for item in dump.files:
        groups.setdefault(item.prompt_length, []).append(item)
    runs = []
    for length, group in sorted(groups.items()):
        keep = length + new_tokens
        sequences = torch.stack([f.token_ids[:keep] for f in group])
        states = LayerStates(target.num_hidden_layers + 1, frozenset(dump.layers),  # type: ignore[operator]
                             _loader(group, keep, position), where)
        runs.append(TargetRun(sequences, length, states))  # type: ignore[arg-type, unused-ignore]
    return TargetSide(tuple(runs), head, target.num_hidden_layers, target.hidden_size,  # type: ignore[arg-type]
                      target.vocab_size, f"{len(dump.files)} prompts of the {layout} dump",  # type: ignore[arg-type]
                      f"{layout} dump {path}")


def _loader(group: list[ProducerFile], keep: int, position: dict[int, int]) -> Callable[[int], torch.Tensor]:
    def load(k: int) -> torch.Tensor:
        return torch.stack([f.read_states()[:keep, position[k]].float() for f in group])
    return load
