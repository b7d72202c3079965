"""Write a synthetic draft to disk in its producer's layout: config.json, safetensors (sharded or not)
or pytorch_model.bin, with the spec's faults applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.producers.formats import EAGLE, MODELOPT, SPECFORGE
from pytest_eagle3.testing.configs import draft_config
from pytest_eagle3.testing.damage import Draft, apply_tensor_faults, damage_file
from pytest_eagle3.testing.layouts import SPECFORGE_HF
from pytest_eagle3.testing.quantize import quantization_config, quantize
from pytest_eagle3.testing.spec import SynthSpec
from pytest_eagle3.testing.tensors import draft_tensors

if TYPE_CHECKING:
    import torch


def write_checkpoint(spec: SynthSpec, out: str | Path) -> Path:
    """Write a draft checkpoint in ``spec.producer``'s layout to ``out`` (created) and return it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if "empty-dir" in spec.faults:
        return out
    draft = Draft(spec, draft_tensors(spec), draft_config(spec))
    apply_tensor_faults(draft)
    tensors, config = draft.tensors, draft.config
    if not spec.aux_hidden_state:
        tensors, config = without_aux_hidden_state(spec, tensors, config)
    if spec.quantization is not None:
        tensors = quantize(tensors, spec.quantization)
        config = config | {"quantization_config": quantization_config(spec.quantization)}
    _write_config(spec, config, out)
    if spec.producer == EAGLE:
        _write_bin(spec, tensors, out)
    else:
        _write_safetensors(spec, tensors, out)
    return out


def without_aux_hidden_state(spec: SynthSpec, tensors: dict[str, torch.Tensor],
                             config: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """A draft without aux hidden states: fc.weight left out, ``eagle_config`` says ``use_aux_hidden_state: false``
    and names no aux ids (nvidia/gpt-oss-120b-Eagle3-v2's config)."""
    if "eagle_config" not in config and spec.producer not in (SPECFORGE, SPECFORGE_HF, MODELOPT):
        raise ValueError(f"the {spec.producer} layout has no eagle_config to say use_aux_hidden_state: false")
    eagle = {k: v for k, v in dict(config.get("eagle_config") or {}).items() if k != "eagle_aux_hidden_state_layer_ids"}
    eagle["use_aux_hidden_state"] = False
    return {k: t for k, t in tensors.items() if not k.startswith("fc.")}, config | {"eagle_config": eagle}


def _write_config(spec: SynthSpec, config: dict[str, Any], out: Path) -> None:
    path = out / "config.json"
    if "config-not-json" in spec.faults:
        path.write_text('{"architectures": ["Eagle3DraftModel"], "hidden_size": 64,,')
    elif "config-not-object" in spec.faults:
        path.write_text("[1, 2, 3]\n")
    else:
        path.write_text(json.dumps(config, indent=2) + "\n")


def _write_safetensors(spec: SynthSpec, tensors: dict[str, torch.Tensor], out: Path) -> None:
    from safetensors.torch import save_file

    names = sorted(tensors)
    if spec.sharded or "shard-outside" in spec.faults:
        half = len(names) // 2
        shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
        weight_map = {}
        for filename, part in shards.items():
            save_file({n: tensors[n].contiguous() for n in part}, str(out / filename), metadata={"format": "pt"})
            weight_map.update({n: filename for n in part})
        if "shard-outside" in spec.faults:
            outside = out.parent / f"{out.name}-outside.safetensors"
            (out / "model-00002-of-00002.safetensors").replace(outside)
            weight_map.update({n: f"../{outside.name}" for n in shards["model-00002-of-00002.safetensors"]})
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
                 "weight_map": weight_map}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
        return
    path = out / "model.safetensors"
    save_file({n: tensors[n].contiguous() for n in names}, str(path), metadata={"format": "pt"})
    damage_file(spec, path)


class _RunsCode:
    """Pickles as a call to ``exec``: what a malicious pytorch_model.bin holds."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pickle code ran')",))


def pickle_marker(out: Path) -> Path:
    """The file a ``pickle-code`` checkpoint's pickle would create if it were ever executed."""
    return out / "PICKLE_CODE_RAN"


def _write_bin(spec: SynthSpec, tensors: dict[str, torch.Tensor], out: Path) -> None:
    import torch

    payload: dict[str, Any] = dict(tensors)
    if "pickle-code" in spec.faults:
        payload["__evil__"] = _RunsCode(pickle_marker(out))
    path = out / "pytorch_model.bin"
    torch.save(payload, path)
    damage_file(spec, path)
