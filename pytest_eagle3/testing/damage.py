"""What each fault (``faults.FAULTS``) does: to a draft's tensors and config before they are written, or to a
written weight file. torch is imported where a tensor is made (it is heavy, and the fault table needs none)."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.producers.formats import MODELOPT
from pytest_eagle3.testing.configs import llama_fields
from pytest_eagle3.testing.faults import FAULTS
from pytest_eagle3.testing.spec import SynthSpec
from pytest_eagle3.testing.tensors import generator, matrix

if TYPE_CHECKING:
    import torch


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


# -- the faults of their own -------------------------------------------------------------------
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


# -- the file form of each vocab-map corruption of the catalogue (corruptions.CATALOGUE) ------------
def _draft_absolute(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.sort(d.targets()).values if d.spec.producer != MODELOPT else d.targets()


def _draft_all_zero(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.zeros_like(d.tensors["d2t"])


def _draft_other_selection(d: Draft) -> None:
    import torch

    dv = d.spec.draft_vocab_size
    other = torch.sort(torch.randperm(d.spec.vocab_size, generator=generator(d.spec.seed + 7))[:dv]).values
    d.tensors["d2t"] = other - torch.arange(dv)


def _draft_defaults(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = torch.zeros_like(d.tensors["d2t"])
    d.tensors["t2d"] = torch.ones(d.spec.vocab_size, dtype=torch.bool)


def _draft_out_of_range(d: Draft) -> None:
    bad = d.tensors["d2t"].clone()
    bad[-1] = d.spec.vocab_size  # target = dv - 1 + v >= v
    d.tensors["d2t"] = bad


def _draft_duplicates(d: Draft) -> None:
    dup = d.tensors["d2t"].clone()
    dup[1] = d.targets()[0] - 1
    d.tensors["d2t"] = dup


def _draft_missing(d: Draft) -> None:
    d.tensors.pop("d2t")
    d.tensors.pop("t2d", None)


def _draft_int32(d: Draft) -> None:
    import torch

    d.tensors["d2t"] = d.tensors["d2t"].to(torch.int32)


def _draft_wrong_length(d: Draft) -> None:
    d.tensors["d2t"] = d.tensors["d2t"][: d.spec.draft_vocab_size // 2].clone()


def _draft_t2d_extra_id(d: Draft) -> None:
    import torch

    t2d = d.tensors["t2d"].clone()
    t2d[int(torch.nonzero(~t2d)[0])] = True
    d.tensors["t2d"] = t2d


#: What each tensor fault does to the draft about to be written, by its name in FAULTS.
TENSOR_FORMS: dict[str, Callable[[Draft], None]] = {
    "nan-lm-head": _nan_lm_head,
    "inf-weight": _inf_weight,
    "zero-weight": _zero_weight,
    "constant-weight": _constant_weight,
    "fc-width": _fc_width,
    "qkv-width": _qkv_width,
    "missing-norm": _missing_norm,
    "missing-lm-head": _missing_lm_head,
    "leftover-prefix": _leftover_prefix,
    "layer-count": _layer_count,
    "config-missing-hidden": _config_missing_hidden,
    "unknown-format": _unknown_format,
    "d2t-absolute": _draft_absolute,
    "d2t-all-zero": _draft_all_zero,
    "d2t-t2d-mismatch": _draft_other_selection,
    "t2d-defaults": _draft_defaults,
    "d2t-out-of-range": _draft_out_of_range,
    "d2t-duplicates": _draft_duplicates,
    "d2t-missing": _draft_missing,
    "d2t-int32": _draft_int32,
    "d2t-wrong-length": _draft_wrong_length,
    "t2d-wrong-count": _draft_t2d_extra_id,
}
#: What each file fault does to a written weight file, by its name in FAULTS.
FILE_FORMS: dict[str, Callable[[Path], None]] = {
    "truncated": _truncated,
    "header-length-lie": _header_length_lie,
    "header-offsets-lie": _header_offsets_lie,
}


def apply_tensor_faults(draft: Draft) -> None:
    """Apply the spec's tensor faults (in FAULTS order) to the draft about to be written."""
    for name, fault in FAULTS.items():
        form = TENSOR_FORMS.get(name)
        if name in draft.spec.faults and form is not None and (fault.needs is None or fault.needs in draft.tensors):
            form(draft)


def damage_file(spec: SynthSpec, path: Path) -> None:
    """Apply the spec's file faults to a written weight file."""
    for name in FAULTS:
        form = FILE_FORMS.get(name)
        if name in spec.faults and form is not None:
            form(path)
