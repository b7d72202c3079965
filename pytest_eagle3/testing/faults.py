"""File faults: each a named way a written checkpoint goes wrong, with the contract and diagnosis that
must catch it. The vocab-map faults come from the corruption catalogue (:mod:`.corruptions`)."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.producers.formats import EAGLE, SPECULATORS
from pytest_eagle3.testing.configs import llama_fields
from pytest_eagle3.testing.corruptions import CATALOGUE
from pytest_eagle3.testing.layouts import PRODUCERS, SAFETENSORS
from pytest_eagle3.testing.tensors import generator, matrix

if TYPE_CHECKING:
    import torch

    from pytest_eagle3.testing.spec import SynthSpec


@dataclass
class Draft:
    """A draft being written: its spec, tensors and config, which tensor faults change in place."""

    spec: SynthSpec
    tensors: dict[str, torch.Tensor]
    config: dict[str, Any]

    @property
    def first(self) -> str:
        """The first decoder layer's key prefix."""
        return "midlayer." if any(k.startswith("midlayer.") for k in self.tensors) else "layers.0."

    @property
    def layer_fields(self) -> dict[str, Any]:
        """The config object holding the decoder fields (speculators: transformer_layer_config)."""
        fields: dict[str, Any] = self.config.get("transformer_layer_config", self.config)
        return fields

    def targets(self) -> torch.Tensor:
        """The target id each draft id maps to (d2t read as offsets)."""
        import torch

        return torch.arange(self.spec.draft_vocab_size) + self.tensors["d2t"]


@dataclass(frozen=True)
class Fault:
    """A corruption: what it imitates, which contract catches it, with which diagnosis."""

    description: str
    contract: str
    diagnosis: str
    producers: tuple[str, ...] = PRODUCERS
    tensors: Callable[[Draft], None] | None = None
    file: Callable[[Path], None] | None = None
    #: The tensor the fault changes; a layout without it is left as it is (the map of a full-vocab draft).
    needs: str | None = None
    #: The catalogue entry (``corruptions.CATALOGUE``) this fault is the file form of.
    corruption: str | None = None


def _nan_lm_head(d: Draft) -> None:
    import torch

    for name in ("lm_head.weight", "embed_tokens.weight"):
        if name in d.tensors:
            d.tensors[name] = torch.full_like(d.tensors[name], float("nan"))


def _inf_weight(d: Draft) -> None:
    fc = d.tensors["fc.weight"].clone()
    fc[0, 0] = float("inf")
    d.tensors["fc.weight"] = fc


def _zero_weight(d: Draft) -> None:
    import torch

    name = d.first + "self_attn.o_proj.weight"
    d.tensors[name] = torch.zeros_like(d.tensors[name])


def _constant_weight(d: Draft) -> None:
    import torch

    name = d.first + "mlp.down_proj.weight"
    d.tensors[name] = torch.full_like(d.tensors[name], 0.5)


def _fc_width(d: Draft) -> None:
    hidden = d.spec.hidden_size
    d.tensors["fc.weight"] = matrix(generator(3), hidden, 4 * hidden, d.tensors["fc.weight"].dtype)


def _qkv_width(d: Draft) -> None:
    name = d.first + "self_attn.q_proj.weight"
    d.tensors[name] = d.tensors[name][:, : d.spec.hidden_size].clone()


def _missing_norm(d: Draft) -> None:
    d.tensors.pop(d.first + "hidden_norm.weight")


def _missing_lm_head(d: Draft) -> None:
    d.tensors.pop("lm_head.weight")


def _leftover_prefix(d: Draft) -> None:
    for name in list(d.tensors):
        d.tensors["draft_model." + name] = d.tensors.pop(name)


def _layer_count(d: Draft) -> None:
    d.layer_fields["num_hidden_layers"] = d.spec.draft_layers + 1


def _config_missing_hidden(d: Draft) -> None:
    d.layer_fields.pop("hidden_size")


def _unknown_format(d: Draft) -> None:
    for key in ("architectures", "speculators_model_type", "speculators_config", "transformer_layer_config",
                "eagle_config", "target_model_type", "draft_vocab_size"):
        d.config.pop(key, None)
    d.config.update(llama_fields(d.spec) | {"architectures": ["MysteryDraft"],
                                             "draft_vocab_size": d.spec.draft_vocab_size})
    for name in list(d.tensors):
        if name.startswith(("midlayer.", "layers.0.")):
            d.tensors["blocks.0." + name.split(".", 1)[1].removeprefix("0.")] = d.tensors.pop(name)
    d.tensors.pop("t2d", None)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    cut = len(data) // 2 if path.suffix == ".bin" else len(data) - max(16, len(data) // 5)
    path.write_bytes(data[:cut])


def _header_length_lie(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(struct.pack("<Q", len(data) * 4) + data[8:])


def _header_offsets_lie(path: Path) -> None:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    name = next(n for n in sorted(header) if n != "__metadata__")
    begin, end = header[name]["data_offsets"]
    header[name]["data_offsets"] = [begin + len(data), end + len(data)]
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + length :])


#: Every fault: what it imitates, the contract and diagnosis that must catch it, and what it does (to the
#: tensors and config before writing, or to a written file). The rest shape how the writer writes.
#: The vocab.map rows are the file forms of the corruption catalogue.
FAULTS: dict[str, Fault] = {
    **{c.fault: Fault(c.description, c.contract, c.diagnosis, c.producers, tensors=c.on_draft, needs=c.needs,
                      corruption=c.name)
       for c in CATALOGUE if c.fault is not None},
    "nan-lm-head": Fault("speculators' NaN lm_head/embed saved before load_verifier_weights()", "weights.finite",
                         "speculators-nan-init", (SPECULATORS,), tensors=_nan_lm_head),
    "inf-weight": Fault("an fp16 overflow left Inf in fc", "weights.finite", "non-finite", tensors=_inf_weight),
    "zero-weight": Fault("an all-zero o_proj (never loaded)", "weights.initialised", "all-zero-weights", tensors=_zero_weight),
    "constant-weight": Fault("an uninitialised constant mlp.down_proj", "weights.initialised", "constant-weights", tensors=_constant_weight),
    "fc-width": Fault("fc sized for 4 aux states, config says 3", "config.shapes", "shape-mismatch", tensors=_fc_width),
    "qkv-width": Fault("first-layer q_proj takes H, not 2H", "config.shapes", "shape-mismatch", tensors=_qkv_width),
    "missing-norm": Fault("hidden_norm not exported", "config.shapes", "missing-tensors", tensors=_missing_norm),
    "missing-lm-head": Fault("no lm_head with a reduced vocab", "config.shapes", "missing-lm-head", tensors=_missing_lm_head),
    "leftover-prefix": Fault("draft_model. prefix left on every key", "config.shapes", "leftover-prefix", tensors=_leftover_prefix),
    "layer-count": Fault("config says 2 draft layers, checkpoint holds 1", "config.shapes", "layer-count", tensors=_layer_count),
    "config-missing-hidden": Fault("config.json without hidden_size", "config.parseable", "config-missing-field", tensors=_config_missing_hidden),
    "unknown-format": Fault("architectures and keys of no known producer", "format.detected", "format-unknown", SAFETENSORS, tensors=_unknown_format),
    "truncated": Fault("weight file cut short", "checkpoint.readable", "unreadable", file=_truncated),
    "header-length-lie": Fault("safetensors length prefix larger than the file", "checkpoint.readable", "unreadable", SAFETENSORS, file=_header_length_lie),
    "header-offsets-lie": Fault("a tensor's data_offsets run past the file", "checkpoint.readable", "unreadable", SAFETENSORS, file=_header_offsets_lie),
    "shard-outside": Fault("shard index points outside the checkpoint directory", "checkpoint.readable", "unreadable", SAFETENSORS),
    "pickle-code": Fault("pytorch_model.bin whose pickle runs code", "checkpoint.readable", "unreadable", (EAGLE,)),
    "config-not-json": Fault("config.json is not JSON", "config.parseable", "config-unreadable"),
    "config-not-object": Fault("config.json is a JSON list", "config.parseable", "config-unreadable"),
    "empty-dir": Fault("an empty directory", "checkpoint.readable", "unreadable"),
}


def apply_tensor_faults(draft: Draft) -> None:
    """Apply the spec's tensor faults (in FAULTS order) to the draft about to be written."""
    for name, fault in FAULTS.items():
        applies = fault.tensors is not None and (fault.needs is None or fault.needs in draft.tensors)
        if name in draft.spec.faults and applies and fault.tensors is not None:
            fault.tensors(draft)


def damage_file(spec: SynthSpec, path: Path) -> None:
    """Apply the spec's file faults to a written weight file."""
    for name, fault in FAULTS.items():
        if name in spec.faults and fault.file is not None:
            fault.file(path)
