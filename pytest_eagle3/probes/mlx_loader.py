"""Probe mlx-vlm's EAGLE-3 drafter loader on one draft: mlx_vlm.utils.load_model, then bind to the target's embedding.

Runs in mlx-vlm's own interpreter (``EAGLE3_MLX_VLM_PYTHON``, or one where ``mlx_vlm`` imports); needs
mlx, mlx-vlm and numpy, no torch. Writes the ``harness.SCHEMA`` result: ``stage`` "config" (model type),
"load" (load_model: construction and the strict load), "share" (bind, then fc on the captured states);
parameters matched by value.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import sys
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes.harness import empty_result, error_text, main
else:  # run by path in mlx-vlm's interpreter: the harness next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from harness import empty_result, error_text, main  # type: ignore[import-not-found,no-redef]

ENGINE = "mlx-vlm"
#: What a comparison with the plan may read from this probe (``probes.differential``): the refusal, the layers the
#: drafter asks the target for (no target forward runs), layers and norms, not every parameter's source; and its
#: first step, fc on one state per distinct configured id.
REPORTS_EVERY_FACT = False
RUNS_TARGET_FORWARD = False
RUNS_FIRST_STEP = True


class _Target:
    """The target's embedding, where the drafter's bind looks for it (target_model.model.embed_tokens)."""

    def __init__(self, embed: Any) -> None:
        self.model = type("Inner", (), {"embed_tokens": embed})()


def _checkpoint(folder: Path) -> dict[str, Any]:
    import mlx.core as mx

    tensors: dict[str, Any] = {}
    for file in sorted(folder.glob("*.safetensors")):
        tensors.update(mx.load(str(file)))
    return tensors


def _numpy(array: Any) -> Any:
    import mlx.core as mx
    import numpy as np

    floating = mx.issubdtype(array.dtype, mx.floating)
    return np.asarray(array.astype(mx.float32 if floating else mx.int64))


def _matches(param: Any, tensors: dict[str, Any]) -> list[str]:
    import numpy as np

    value = _numpy(param)
    return [name for name, t in tensors.items()
            if tuple(t.shape) == tuple(param.shape) and np.array_equal(_numpy(t), value)]


def probe(draft: str, target: str) -> Any:
    """Load the draft with mlx-vlm's own loader, bind it to the target, and record what it did."""
    model, result = load_bound(draft, target)
    if model is None:
        return result
    cfg = model.config
    try:  # the fusion step of the first round: the captured states, concatenated, through fc
        import mlx.core as mx

        states = len(set(cfg.capture_layer_ids)) * int(model.target_hidden_size)
        result["fc_applied"] = states != int(model.hidden_size)
        mx.eval(model._prepare_target_hidden(mx.zeros((1, 1, states))))
    except Exception as exc:
        result.update(stage="share", error=f"first round, fc on the captured states: {error_text(exc)}")
        return result
    result["outcome"] = "loaded"
    return result


def load_bound(draft: str, target: str) -> tuple[Any, dict[str, Any]]:
    """(the drafter loaded by load_model and bound to the target's embedding, or None; the probe result so far)."""
    import mlx.nn as nn
    from mlx.utils import tree_flatten
    from mlx_vlm.utils import get_model_type, load_model

    result = empty_result(ENGINE)
    result["version"] = importlib.metadata.version("mlx-vlm")
    folder = Path(draft)
    config = json.loads((folder / "config.json").read_text())
    model_type = get_model_type(config)
    result["draft_class"] = "Eagle3DraftModel" if model_type == "eagle3" else f"mlx_vlm.models.{model_type}"
    warnings: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    try:
        model = load_model(folder)
    except Exception as exc:
        result.update(stage="config" if "not supported" in str(exc) else "load", error=error_text(exc))
        return None, result
    finally:
        logging.getLogger().removeHandler(handler)
    result["notes"].extend(warnings)
    if model_type != "eagle3":
        result.update(stage="construct", error=f"model_type {model_type!r} builds {result['draft_class']}, "
                                                "not the EAGLE-3 drafter")
        return None, result
    tensors = _checkpoint(folder)
    params = dict(tree_flatten(model.parameters()))
    used: set[str] = set()
    for name, value in params.items():
        sources = _matches(value, tensors)
        used.update(sources)
        if sources:
            result["parameters"][name] = {"sources": sources, "equal": True}
    result["shapes"] = {n: list(v.shape) for n, v in params.items()}
    result["dropped"] = sorted(n for n in tensors if n not in used)
    cfg = model.config
    result["aux_layer_ids"] = list(cfg.target_layer_ids)
    result["captured_inputs_of"] = sorted({int(c) + 1 for c in cfg.capture_layer_ids})
    result["fc_input_width"] = int(model.fc.weight.shape[1]) if model.fc is not None else None
    result["norms"] = {"norm_before_residual": bool(cfg.norm_before_residual),
                       "norm_before_fc": model.input_norm is not None, "norm_output": False, "fc_norm": False}
    result["draft_layers"] = len(model.layers)
    if model.d2t is not None:
        result["draft_to_target"] = [i + int(o) for i, o in enumerate(model.d2t.tolist())]
    target_tensors = _checkpoint(Path(target))
    weight = next((t for n, t in target_tensors.items() if n.endswith("embed_tokens.weight")), None)
    embed = nn.Embedding(*weight.shape) if weight is not None else None
    if embed is not None:
        embed.weight = weight
    try:
        model.bind(_Target(embed))
    except Exception as exc:
        result.update(stage="share", error=error_text(exc))
        return None, result
    result["embed_tokens"] = "target" if embed is not None and model.embed_tokens is embed else "draft"
    result["lm_head"] = "draft" if model.lm_head is not None else "embed_tokens"
    return model, result


if __name__ == "__main__":
    raise SystemExit(main(ENGINE, probe, None, __doc__))
