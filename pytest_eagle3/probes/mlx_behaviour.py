"""Run mlx-vlm's own EAGLE-3 drafter pieces on a loaded draft, on CPU, and write their outputs.

    python mlx_behaviour.py --draft DIR --target DIR --out FILE.json

Run it with mlx-vlm's interpreter; it is never imported into the plugin's process. The drafter is loaded and bound
to the target's embedding exactly as ``mlx_loader.py`` does (``mlx_vlm.utils.load_model``, then ``bind``); then, with
its own methods and one fixed input (numpy seed 0, written out with the results):

- ``combine``: ``_prepare_target_hidden(aux)`` on ``aux`` of 4 rows x the fc input width (input_norm and fc, as the
  drafter applies them between the captured states and its layer);
- ``logits``: ``_logits(h)`` (the final norm, then lm_head or the embedding) on 4 rows x hidden, and
  ``_draft_to_target`` of each row's best draft id: the target ids the drafter proposes.

The plugin compares them with its reference forward of what the producer trained (``probes/behaviour.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes import mlx_loader as loader
    from pytest_eagle3.probes.harness import behaviour_main, error_text, logits_record
else:  # run by path in mlx-vlm's interpreter: the files next to this one
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mlx_loader as loader  # type: ignore[import-not-found,no-redef]
    from harness import behaviour_main, error_text, logits_record  # type: ignore[import-not-found,no-redef]

SCHEMA = "pytest-eagle3/behaviour/1"
ROWS = 4


def behaviour(draft: str, target: str) -> dict[str, Any]:
    """The outputs of the drafter's pieces; ``error`` where the draft could not be loaded and bound."""
    model, result = loader.load_bound(draft, target)
    out: dict[str, Any] = {"schema": SCHEMA, "engine": loader.ENGINE, "version": result.get("version"),
                           "draft_class": result.get("draft_class"), "error": None, "combine": None, "logits": None}
    if model is None:
        out["error"] = result.get("error") or "the draft was not built"
        return out
    import mlx.core as mx
    import numpy as np

    rng = np.random.default_rng(0)
    width, hidden = int(model.fc.weight.shape[1]), int(model.hidden_size)
    aux = rng.standard_normal((ROWS, width)).astype(np.float32)
    h = rng.standard_normal((ROWS, hidden)).astype(np.float32)
    out["inputs"] = {"aux_width": width, "hidden": hidden, "aux": aux.tolist(), "h": h.tolist()}
    try:
        combined = model._prepare_target_hidden(mx.array(aux)[None])[0]
        out["combine"] = np.asarray(combined.astype(mx.float32)).tolist()
    except Exception as exc:
        out["combine"] = {"error": error_text(exc)}
    try:
        logits = model._logits(mx.array(h)[None])[0]
        best = mx.argmax(logits, axis=-1)
        ids = model._draft_to_target(best, mx.int64)
        out["logits"] = logits_record(np.asarray(ids), int(np.isfinite(np.asarray(logits[0].astype(mx.float32))).sum()))
    except Exception as exc:
        out["logits"] = {"error": error_text(exc)}
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line of the mlx-vlm behaviour probe."""
    return behaviour_main(behaviour, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
