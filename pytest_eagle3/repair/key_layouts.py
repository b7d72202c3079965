"""Tensor names: one canonical layout (``layers.0.*``, ``fc.weight``, ``d2t``) and the layouts engines read.

Canonical form strips a trainer's wrapper prefix and the ``model.`` prefix, reads ``midlayer.`` as
``layers.0.`` and splits fused projections (``qkv_proj`` into q/k/v rows, ``gate_up_proj`` into
halves: the stacked-parameter tables of sglang/vllm llama_eagle3.py load them as shards).
A layout renders canonical names the way one engine's loader matches them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_eagle3.repair.virtual import VirtualDraft

#: Wrapper prefixes trainers leave on names (rules/shapes.py LEFTOVER_PREFIXES), then the HF model prefix.
WRAPPERS = ("draft_model.", "eagle_module.", "module.", "model.")
#: Names that never take the ``model.`` prefix.
TOP_LEVEL = ("lm_head.", "d2t", "t2d")


def canonical(name: str) -> str:
    """``draft_model.model.midlayer.self_attn.q_proj.weight`` -> ``layers.0.self_attn.q_proj.weight``."""
    changed = True
    while changed:
        changed = False
        for prefix in WRAPPERS:
            if name.startswith(prefix):
                name, changed = name[len(prefix):], True
    if name.startswith("midlayer."):
        name = "layers.0." + name[len("midlayer."):]
    return name


def _midlayer(name: str) -> str:
    return "midlayer." + name[len("layers.0."):] if name.startswith("layers.0.") else name


def _model(name: str) -> str:
    return name if name.startswith(TOP_LEVEL) else "model." + name


#: Layouts tried in order: the first that every chosen engine loads whole wins.
LAYOUTS: dict[str, Callable[[str], str]] = {
    "layers.0.*": lambda n: n,
    "midlayer.*": _midlayer,
    "model.layers.0.*": _model,
    "model.midlayer.*": lambda n: _model(_midlayer(n)),
}


def _heads(config: dict[str, Any]) -> tuple[int, int] | None:
    layer = config.get("transformer_layer_config")
    scope: dict[str, Any] = layer if isinstance(layer, dict) else config
    heads, kv = scope.get("num_attention_heads"), scope.get("num_key_value_heads") or scope.get("num_attention_heads")
    hidden = scope.get("hidden_size")
    head_dim = scope.get("head_dim") or (hidden // heads if isinstance(hidden, int) and heads else None)
    if not (isinstance(heads, int) and isinstance(kv, int) and isinstance(head_dim, int)):
        return None
    return heads * head_dim, kv * head_dim


def split_fused(draft: VirtualDraft) -> list[str]:
    """Split fused q/k/v and gate/up projections into the separate tensors every loader maps; say what."""
    done = []
    for name in list(draft.entries) + list(draft.computed):
        shape = draft.shape(name)
        if shape is None or len(shape) < 1:
            continue
        if ".qkv_proj." in name:
            widths = _heads(draft.config)
            if widths is None or widths[0] + 2 * widths[1] != shape[0]:
                continue
            q, kv = widths
            draft.split_rows(name, [(name.replace(".qkv_proj.", f".{p}_proj."), rows)
                                    for p, rows in (("q", q), ("k", kv), ("v", kv))])
            done.append(f"split {name} into q_proj/k_proj/v_proj rows ({q}, {kv}, {kv})")
        elif ".gate_up_proj." in name and shape[0] % 2 == 0:
            half = shape[0] // 2
            draft.split_rows(name, [(name.replace(".gate_up_proj.", ".gate_proj."), half),
                                    (name.replace(".gate_up_proj.", ".up_proj."), half)])
            done.append(f"split {name} into gate_proj/up_proj halves ({half} rows each)")
    return done


def layout_mapping(names: list[str], layout: str) -> dict[str, str]:
    """``current name -> name in layout`` for every tensor (identity where nothing changes)."""
    render = LAYOUTS[layout]
    return {name: render(canonical(name)) for name in names}
