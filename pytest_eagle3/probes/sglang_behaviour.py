"""Run SGLang's own EAGLE-3 draft forward on a loaded draft, on CPU, up to its first decoder layer, and write its outputs.

    python sglang_behaviour.py --draft DIR --target DIR --out FILE.json

Run it with SGLang's interpreter (tox -e sglang0523); it is never imported into the plugin's process. The draft is
built, loaded and shared with the target exactly as ``sglang_loader.py`` does (``get_model``, ``set_embed``); then,
with the class's own code and one fixed input (``torch.Generator`` seed 0, written out with the results):

- ``combine``: the draft model's own ``forward`` (``LlamaModel.forward`` of models/llama_eagle3.py) on 4 rows of
  ``aux`` (the fc input width) as ``forward_batch.spec_info.hidden_states``, stopped where its first decoder layer is
  called: the ``hidden_states`` it hands that layer are what the class did between the captured states and the layer
  (input_norm, fc_norm, fc, applied only where the width differs from the draft's hidden size). Nothing past that
  point runs: attention needs SGLang's attention backend and a real batch.
- ``logits``: the final ``model.norm`` on 4 rows x hidden, the logits processor's ``_compute_lm_head`` with the
  draft's ``lm_head``, each row's best draft id mapped by ``hot_token_id`` as the EAGLE worker maps its top-k
  (speculative/eagle_worker_v2.py: ``topk_index = self.hot_token_id[topk_index]``).

The plugin compares them with its reference forward of what the producer trained (``probes/behaviour.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

if __package__:
    from pytest_eagle3.probes import sglang_loader as loader
    from pytest_eagle3.probes.harness import behaviour_main, error_text, logits_record
else:  # run by path in SGLang's interpreter: the files next to this one
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sglang_loader as loader  # type: ignore[import-not-found,no-redef]
    from harness import behaviour_main, error_text, logits_record  # type: ignore[import-not-found,no-redef]

SCHEMA = "pytest-eagle3/behaviour/1"
ROWS = 4


class _ReachedLayer(Exception):
    """Raised by the hook on the first decoder layer: what the forward hands it is in ``args``."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("the draft forward reached its first decoder layer")
        self.args, self.kwargs = args, kwargs


def _first_layer(inner: Any) -> Any:
    layers = getattr(inner, "layers", None)
    return layers[0] if layers is not None else inner.midlayer  # <= 0.5.11: one ``midlayer``


def _forward_batch(aux: Any) -> SimpleNamespace:
    """A decode-like batch with no multimodal inputs: only what the forward reads before its first layer."""
    mode = SimpleNamespace(is_extend=lambda: False, is_draft_extend_v2=lambda: False, is_idle=lambda: False)
    return SimpleNamespace(spec_info=SimpleNamespace(hidden_states=aux), mm_input_embeds=None, forward_mode=mode,
                           contains_mm_inputs=lambda: False, mrope_positions=None)


def _combine(model: Any, aux: Any) -> Any:
    """The hidden states the draft's own forward hands its first decoder layer (the fc path's output)."""
    import torch

    inner = model.model

    def stop(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        raise _ReachedLayer(args, kwargs)

    handle = _first_layer(inner).register_forward_pre_hook(stop, with_kwargs=True)
    try:
        inner(torch.arange(aux.shape[0]), torch.arange(aux.shape[0]), _forward_batch(aux))
    except _ReachedLayer as reached:
        # layer(positions, embeds, hidden_states, forward_batch, residual)
        return reached.args[2] if len(reached.args) >= 3 else reached.kwargs["hidden_states"]
    finally:
        handle.remove()
    raise RuntimeError("the draft forward returned without calling its first decoder layer")


def behaviour(draft: str, target: str) -> dict[str, Any]:
    """The outputs of the draft's own forward and head; ``error`` where the draft could not be built and loaded."""
    state, result = loader.load(draft, target)
    model = state.draft
    out: dict[str, Any] = {"schema": SCHEMA, "engine": loader.ENGINE, "version": result.get("version"),
                           "draft_class": result.get("draft_class"), "error": None, "combine": None, "logits": None}
    if model is None or result["outcome"] != "loaded":
        out["error"] = result.get("error") or "the draft was not built"
        return out
    import torch

    inner = model.model
    dtype = inner.fc.weight.dtype
    gen = torch.Generator().manual_seed(0)
    width, hidden = int(inner.fc.weight.shape[1]), int(model.config.hidden_size)
    aux = torch.randn(ROWS, width, generator=gen)
    h = torch.randn(ROWS, hidden, generator=gen)
    out["inputs"] = {"aux_width": width, "hidden": hidden, "aux": aux.tolist(), "h": h.tolist()}
    with torch.no_grad():
        try:
            out["combine"] = _combine(model, aux.to(dtype)).float().tolist()
        except Exception as exc:
            out["combine"] = {"error": error_text(exc)}
        try:
            normed = inner.norm(h.to(dtype))
            logits = model.logits_processor._compute_lm_head(normed, model.lm_head)
            best = logits.float().argmax(dim=-1)
            hot = getattr(model, "hot_token_id", None)
            ids = hot.to(torch.long)[best] if hot is not None else best
            out["logits"] = logits_record(ids, int(torch.isfinite(logits[0].float()).sum()))
        except Exception as exc:
            out["logits"] = {"error": error_text(exc)}
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line of the SGLang behaviour probe."""
    return behaviour_main(behaviour, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
