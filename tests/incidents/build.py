"""Write an incident of ``incidents.json`` as a draft folder and a target config.json.

The draft starts from a synthetic checkpoint in its producer's layout (``pytest_eagle3.testing``; ``base``:
a probe case, e.g. the MLA draft, with the incident's layer count and aux ids), then takes the incident's config
fields and extra tensors; the target is a config.json with the incident's architecture, model_type and layer count
(nested in ``text_config`` where the real one is a multimodal wrapper), and the draft's widths.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_eagle3.probes.cases import CASES_BY_NAME, write_case
from pytest_eagle3.testing.synth import SynthSpec, target_config, write_checkpoint

HERE = Path(__file__).resolve().parent
INCIDENTS: list[dict[str, Any]] = json.loads((HERE / "incidents.json").read_text(encoding="utf-8"))["incidents"]


def spec_of(draft: dict[str, Any]) -> SynthSpec:
    """The synthetic draft's shapes and layout for one incident."""
    ids = draft.get("aux_layer_ids")
    return SynthSpec(producer=draft.get("producer", "speculators"), target_layers=draft["target_layers"],
                     draft_layers=draft.get("draft_layers", 1), write_aux_ids=draft.get("write_aux_ids", True),
                     aux_layer_ids=tuple(ids) if ids is not None else None)


def write_draft(draft: dict[str, Any], out: Path) -> Path:
    """The incident's draft: its layout, then its config fields and extra tensors."""
    spec = spec_of(draft)
    if "base" in draft:
        case = CASES_BY_NAME[draft["base"]]
        based = replace(case.spec, target_layers=spec.target_layers, write_aux_ids=spec.write_aux_ids)
        if spec.aux_layer_ids is not None:
            based = replace(based, aux_layer_ids=spec.aux_layer_ids)
        write_case(replace(case, spec=based), out)
    else:
        write_checkpoint(spec, out)
    path = out / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(draft.get("config", {}).get("set", {}))
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    added = draft.get("tensors", {}).get("add", {})
    if added:
        import torch
        from safetensors.torch import load_file, save_file

        weights = out / "model.safetensors"
        tensors = load_file(str(weights))
        dtype = tensors["norm.weight"].dtype
        tensors.update({name: torch.ones(shape, dtype=dtype) for name, shape in added.items()})
        save_file({n: tensors[n].contiguous() for n in sorted(tensors)}, str(weights), metadata={"format": "pt"})
    return out


def write_target(draft: dict[str, Any], target: dict[str, Any], out: Path) -> Path:
    """The target's config.json (no weights): the incident's class, model_type and layer count."""
    fields = target_config(spec_of(draft)) | {"num_hidden_layers": target["num_hidden_layers"],
                                              "model_type": target["model_type"]}
    fields["architectures"] = target["architectures"]
    if "text_model_type" in target:
        text = {k: v for k, v in fields.items() if k != "architectures"} | {"model_type": target["text_model_type"]}
        fields = {"architectures": target["architectures"], "model_type": target["model_type"], "text_config": text}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "config.json"
    path.write_text(json.dumps(fields, indent=2) + "\n", encoding="utf-8")
    return path
