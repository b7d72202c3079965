"""Shared by the probe scripts: the result schema, checkpoint reading and the tensor audit.

Imports only the standard library, torch and safetensors: the probes run in an engine's own
interpreter, where this package may not be installed, and load this file from their folder.

Schema ``pytest-eagle3/probe/1`` (``empty_result`` has every key), as the probes fill it:

- ``outcome``: "loaded" (config, construction, ``load_weights`` and the post-load steps all ran)
  or "refused"; ``stage`` says where it stopped: "config" (the engine's config loading),
  "construct" (model class lookup / constructor), "load" (inside ``load_weights``), "share"
  (embedding / lm_head sharing, aux-layer setup). ``probes.run_probe`` adds "probe-error".
- ``parameters``: engine parameter -> the checkpoint tensors whose values are in it (found by
  value, slice by slice) and whether they cover it exactly. On a refused load, ``parameters``,
  ``uninitialised`` and ``dropped`` describe the draft at the moment of the error (a note says so).
- ``shapes``: every draft parameter's shape as the engine's class built it (before loading).
- ``dropped``: checkpoint tensors found in no parameter. SGLang's ``d2t`` becomes
  ``hot_token_id`` (not a parameter) and is not counted as dropped when that happened.
- ``draft_to_target``: the map the engine will apply (vLLM ``i + draft_id_to_target_id``, SGLang
  ``hot_token_id``); null when it is the identity or there is none.
- ``aux_layer_ids``: what the engine stores on the target (vLLM ``aux_hidden_state_layers``,
  sorted and de-duplicated; SGLang ``layers_to_capture``, after its +1); ``captured_inputs_of``:
  those that name a decoder layer whose input is captured. [] when aux capture is off.
- ``embed_tokens`` / ``lm_head``: "target" when the engine put the target's module or weight
  into the draft after loading, else "draft"; null when loading did not get that far.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

SCHEMA = "pytest-eagle3/probe/1"
#: Written into every floating-point parameter before the engine's ``load_weights``.
FLOAT_SENTINEL = -1234.5
#: Written into every integer parameter before the engine's ``load_weights``.
INT_SENTINEL = -7777
#: Written into every byte of a float8 parameter (no float8 format holds FLOAT_SENTINEL): 0x7F is NaN in e4m3fn and
#: e5m2, a value no checkpoint weight has.
FP8_SENTINEL_BYTE = 0x7F
ERROR_CHARS = 2000
STAGES = ("config", "construct", "load", "share")


def empty_result(engine: str) -> dict[str, Any]:
    """Every key of the schema, with the value a probe reports when it learns nothing."""
    return {
        "schema": SCHEMA,
        "engine": engine,
        "version": None,
        "draft_class": None,
        "outcome": "refused",
        "stage": None,
        "error": None,
        "parameters": {},
        "shapes": {},
        "uninitialised": [],
        "dropped": [],
        "draft_to_target": None,
        "aux_layer_ids": None,
        "captured_inputs_of": None,
        "aux_layer_ids_other_mode": None,
        "fc_input_width": None,
        "fc_applied": None,
        "norms": {"norm_before_residual": None, "norm_before_fc": None, "norm_output": None, "fc_norm": None},
        "embed_tokens": None,
        "lm_head": None,
        "draft_layers": None,
        "notes": [],
    }


def error_text(exc: BaseException) -> str:
    """``Type: message``, cut to a readable length."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def offline_environment() -> None:
    """No hub lookups (an unreachable hub costs ~30 s per config), no usage reporting."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(name, "1")
    for name in ("VLLM_NO_USAGE_STATS", "DO_NOT_TRACK", "SGLANG_DISABLE_USAGE_STATS"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def distribution_record(folder: Path, name: str, version: str) -> None:
    """An installed-distribution record (``NAME-VERSION.dist-info/METADATA``) in ``folder`` for an import
    placeholder: transformers compares ``importlib.metadata.version(NAME)`` with a release at import (5.19.0
    ``image_processing_auto``: ``is_torchvision_greater_or_equal("0.27")``), and a module without a record reads
    "N/A" and raises InvalidVersion there."""
    record = folder / f"{name}-{version}.dist-info"
    record.mkdir(parents=True, exist_ok=True)
    (record / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- checkpoint ------------------------------------------------------------------------------
def read_checkpoint(folder: str | Path) -> dict[str, torch.Tensor]:
    """Every tensor of a draft folder (safetensors, or ``.bin`` with ``weights_only=True``)."""
    import torch
    from safetensors import safe_open

    folder = Path(folder)
    tensors: dict[str, torch.Tensor] = {}
    files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    for path in files:
        if path.suffix == ".safetensors":
            with safe_open(str(path), framework="pt") as handle:
                for name in handle.keys():
                    tensors[name] = handle.get_tensor(name)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            tensors.update({k: v for k, v in state.items() if isinstance(v, torch.Tensor)})
    return tensors


# -- the audit -------------------------------------------------------------------------------
@dataclass
class Audit:
    """Parameters filled with a sentinel before loading; afterwards, what each one received."""

    initial: dict[str, torch.Tensor] = field(default_factory=dict)

    def fill(self, model: torch.nn.Module) -> None:
        """Remember each parameter's constructor value, then overwrite it with the sentinel."""
        import torch

        with torch.no_grad():
            for name, param in model.named_parameters():
                if param.dtype == torch.bool:
                    continue
                self.initial[name] = param.detach().clone()
                if _is_fp8(param.data):
                    param.data.view(torch.uint8).fill_(FP8_SENTINEL_BYTE)
                else:
                    param.data.fill_(FLOAT_SENTINEL if param.dtype.is_floating_point else INT_SENTINEL)

    def report(self, model: torch.nn.Module, checkpoint: dict[str, torch.Tensor]) -> dict[str, Any]:
        """``parameters``, ``uninitialised``, ``dropped`` and notes; restores unloaded values.

        A parameter's sources are the checkpoint tensors whose values ended up in it (a fused
        q/k/v or gate/up parameter is matched slice by slice along its first dimension); it is
        ``equal`` when those slices cover it exactly. Values still equal to the sentinel are put
        back to the constructor's, so that what the engine does next sees what it would have seen.
        """
        import torch

        params = {n: p for n, p in model.named_parameters() if n in self.initial}
        parameters: dict[str, Any] = {}
        uninitialised: list[str] = []
        notes: list[str] = []
        used: set[str] = set()
        for name, param in params.items():
            data = param.detach()
            sentinel = _sentinel_mask(data)
            if bool(sentinel.all()):
                uninitialised.append(name)
            elif bool(sentinel.any()):
                rows = int(sentinel.reshape(sentinel.shape[0], -1).any(dim=1).sum()) if data.dim() else 1
                notes.append(f"{name}: {rows} of {data.shape[0]} rows left at their initial values")
            slices = _matching_slices(name, data, checkpoint)
            if slices:
                sources = [s for _, _, s in sorted(slices)]
                used.update(sources)
                parameters[name] = {"sources": sources, "equal": _covers(slices, data.shape[0] if data.dim() else 1)}
            with torch.no_grad():
                if bool(sentinel.any()):
                    param.data[sentinel] = self.initial[name].to(param.device)[sentinel]
        dropped = sorted(n for n in checkpoint if n not in used)
        shapes = {n: list(t.shape) for n, t in self.initial.items()}
        return {"parameters": parameters, "shapes": shapes, "uninitialised": sorted(uninitialised), "dropped": dropped,
                "notes": notes}


def _is_fp8(data: torch.Tensor) -> bool:
    """A float8 tensor: compared byte by byte (float8 arithmetic and comparisons are not all defined on CPU)."""
    return data.dtype.is_floating_point and data.element_size() == 1


def _comparable(data: torch.Tensor) -> torch.Tensor:
    import torch

    return data.view(torch.uint8) if _is_fp8(data) else data


def _sentinel_mask(data: torch.Tensor) -> torch.Tensor:
    if _is_fp8(data):
        return _comparable(data) == FP8_SENTINEL_BYTE
    value = FLOAT_SENTINEL if data.dtype.is_floating_point else INT_SENTINEL
    return data == value


_STACKED = ((r"\.(q|k|v)_proj\.", ".qkv_proj."), (r"\.(gate|up)_proj\.", ".gate_up_proj."))


def normalised_name(name: str) -> str:
    """A checkpoint name in an engine's parameter spelling, for telling identical tensors apart."""
    name = name.replace("midlayer.", "layers.0.").replace("d2t", "draft_id_to_target_id")
    for pattern, repl in _STACKED:
        name = re.sub(pattern, repl, name)
    while name.startswith("model."):
        name = name[len("model."):]
    return name


def _matching_slices(
    pname: str, data: torch.Tensor, checkpoint: dict[str, torch.Tensor]
) -> list[tuple[int, int, str]]:
    """(offset, rows, checkpoint name) for every checkpoint tensor found in the parameter."""
    found: dict[int, list[tuple[int, str]]] = {}
    for cname, tensor in checkpoint.items():
        if str(tensor.dtype) == "torch.bool":
            continue
        if tensor.dtype.is_floating_point != data.dtype.is_floating_point or _is_fp8(tensor) != _is_fp8(data):
            continue
        if tensor.dim() == 0 and data.dim() <= 1:  # a per-tensor scale, loaded into one slot of a fused one
            tensor, data = tensor.reshape(1), data.reshape(-1)
        if tensor.dim() != data.dim() or tensor.dim() == 0:
            continue
        if tensor.shape[1:] != data.shape[1:] or tensor.shape[0] > data.shape[0]:
            continue
        for offset in _offsets(_comparable(data), _comparable(tensor.to(data.dtype))):
            found.setdefault(offset, []).append((int(tensor.shape[0]), cname))
    target = normalised_name(pname)
    slices: list[tuple[int, int, str]] = []
    for offset, hits in found.items():
        named = [h for h in hits if normalised_name(h[1]) == target]
        for rows, cname in named or hits:
            slices.append((offset, rows, cname))
    return slices


def _offsets(data: torch.Tensor, tensor: torch.Tensor) -> Iterator[int]:
    rows = tensor.shape[0]
    if rows == data.shape[0]:
        if data.equal(tensor):
            yield 0
        return
    first = tensor[0]
    starts = (data == first).reshape(data.shape[0], -1).all(dim=1).nonzero().flatten().tolist()
    for start in starts[:4096]:
        if start + rows <= data.shape[0] and data[start : start + rows].equal(tensor):
            yield int(start)


def _covers(slices: list[tuple[int, int, str]], total: int) -> bool:
    position = 0
    for offset, rows, _ in sorted(slices):
        if offset != position:
            return False
        position += rows
    return position == total


# -- script plumbing -------------------------------------------------------------------------
def shared_flag(draft_module: Any, target_module: Any) -> str | None:
    """"target" when the engine put the target's module into the draft, else "draft"."""
    if draft_module is None:
        return None
    return "target" if draft_module is target_module else "draft"


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Engines print progress bars; keep stdout for nothing but what the caller asked for."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved


class ProbeState:
    """What the hook around an engine's loader saw for one draft."""

    def __init__(self) -> None:
        self.stage = "construct"
        self.draft: Any = None
        self.audit = Audit()
        self.report: dict[str, Any] | None = None
        self.checkpoint: dict[str, Any] = {}


def audited_load(state: ProbeState, model: Any, load: Callable[[], Any]) -> Any:
    """Run the engine's own loading call on the draft between a sentinel fill and the audit."""
    state.stage = "load"
    state.draft = model
    state.audit.fill(model)
    try:
        loaded = load()
    finally:
        state.report = state.audit.report(model, state.checkpoint)
    state.stage = "share"
    return loaded


def run_audited(state: ProbeState, draft: str, result: dict[str, Any], install_hook: Callable[[], None],
                current: list[Any], body: Callable[[], None]) -> dict[str, Any]:
    """Read the draft, hook the engine's loader, run ``body`` with ``state`` current, and note an aborted load.

    ``current`` is the loader module's stack of states its hook looks at; ``body`` fills ``result``.
    """
    state.checkpoint = read_checkpoint(draft)
    install_hook()
    current.append(state)
    try:
        body()
    finally:
        current.remove(state)
    if result["outcome"] != "loaded" and state.report is not None:
        result["notes"].append("load aborted: parameters, uninitialised and dropped describe the draft when the "
                               "error was raised")
    return result


def fill_draft_basics(result: dict[str, Any], draft: Any, report: dict[str, Any] | None) -> bool:
    """Merge the sentinel audit and record the draft's class and layer count; False when no draft was built."""
    if report is not None:
        result["notes"].extend(report.pop("notes"))
        result.update(report)
    if draft is None:
        return False
    result["draft_class"] = type(draft).__name__
    layers = getattr(getattr(draft, "model", None), "layers", None)
    result["draft_layers"] = len(layers) if layers is not None else 1
    return True


def write_result(result: dict[str, Any], out: str | Path) -> None:
    """Write one probe result as a JSON line to ``out``."""
    Path(out).write_text(json.dumps(result) + "\n")


def main(engine: str, probe: Callable[[str, str], dict[str, Any]], argv: list[str] | None,
         doc: str | None) -> int:
    """Command line of both probes: one draft (``--draft --target --out``) or a batch (``--jobs``).

    A batch file is a JSON list of ``{"draft", "target", "out"}``; the jobs run one after the
    other in this process (the engine is imported once). A probe bug in one job is written as
    that job's ``probe-error`` result and the batch goes on.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--draft")
    parser.add_argument("--target")
    parser.add_argument("--out")
    parser.add_argument("--jobs", help="JSON list of {draft, target, out}")
    args = parser.parse_args(argv)
    if args.jobs:
        jobs = json.loads(Path(args.jobs).read_text())
    elif args.draft and args.target and args.out:
        jobs = [{"draft": args.draft, "target": args.target, "out": args.out}]
    else:
        parser.error("give --draft, --target and --out, or --jobs")
    for job in jobs:
        with quiet_stdout():
            try:
                result = probe(str(Path(job["draft"]).resolve()), str(Path(job["target"]).resolve()))
            except Exception as exc:
                result = empty_result(engine)
                result.update(outcome="probe-error", error=error_text(exc), stderr_tail=crash_note(exc))
        write_result(result, job["out"])
    return 0


def crash_note(exc: BaseException) -> str:
    """The last frames of an unexpected exception inside the probe itself."""
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(frames)[-ERROR_CHARS:]


def logits_record(argmax: Iterable[Any], finite: int) -> dict[str, Any]:
    """The ``logits`` entry of a behaviour result: each row's best target id after the final norm, finite count."""
    return {"argmax": [int(i) for i in argmax], "normed": True, "finite": finite}


def transformers_model_types(architecture: str) -> list[str]:
    """The model types transformers' auto mappings give an architecture (its ``*_MAPPING_NAMES``), in their order."""
    from transformers.models.auto import modeling_auto

    found: list[str] = []
    for name in dir(modeling_auto):
        mapping = getattr(modeling_auto, name)
        if not name.endswith("_MAPPING_NAMES") or not isinstance(mapping, dict):
            continue
        for model_type, classes in mapping.items():
            names = classes if isinstance(classes, (list, tuple)) else (classes,)
            if architecture in names and model_type not in found:
                found.append(model_type)
    return found


def forward_main(forward: Callable[[dict[str, Any]], dict[str, Any]], schema: str, argv: list[str] | None,
                 doc: str | None) -> int:
    """Command line of the target-forward scripts (vllm_, mlx_forward.py): ``--jobs JOBS.json``, each job's result
    written to its ``out``; a probe bug in one job is written as that job's ``probe-error`` result."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--jobs", required=True)
    args = parser.parse_args(argv)
    for job in json.loads(Path(args.jobs).read_text()):
        with quiet_stdout():
            try:
                result = forward(job)
            except Exception as exc:
                result = {"schema": schema, "architecture": job["architecture"], "outcome": "probe-error",
                          "error": error_text(exc), "notes": [crash_note(exc)]}
        write_result(result, job["out"])
    return 0


def behaviour_main(behaviour: Callable[[str, str], dict[str, Any]], argv: list[str] | None, doc: str | None) -> int:
    """Command line of the behaviour scripts (vllm_, mlx_, sglang_behaviour.py): ``--draft --target --out``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    Path(args.out).write_text(json.dumps(behaviour(args.draft, args.target)))
    return 0
