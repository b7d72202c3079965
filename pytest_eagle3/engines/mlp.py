"""Area ``mlp``: the draft's MLP tensors against the width the engine builds (behaviour ``mlp_width``).

SGLang 0.4.9+ sizes the MLP of a ``model_type: llama4_text`` draft from ``intermediate_size_mlp``
(transformers' Llama4TextConfig default 16384 when absent), vLLM from ``intermediate_size`` whatever the
model_type. A narrower gate / up / down tensor fails the loader's ``narrow`` at startup before SGLang
0.5.3; from 0.5.3 it is zero-padded (the same MLP: silu(0) x 0 rows and zero columns add nothing), at
the padded width's memory and compute. A wider one is cut to the built width: the rest is lost.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.param_shapes import mlp_width
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import Snapshot

#: Checkpoint sub-names of the MLP and the axis that holds the intermediate width.
MLP_AXIS = {".mlp.gate_proj.": 0, ".mlp.up_proj.": 0, ".mlp.down_proj.": 1}


def _mismatch(sheet: FactSheet, parameters: Mapping[str, tuple[str, ...]], width: int) -> tuple[str, int] | None:
    loaded = {name for names in parameters.values() for name in names}
    for name in sorted(loaded):
        axis = next((a for part, a in MLP_AXIS.items() if part in name and name.endswith(".weight")), None)
        shape = sheet.shapes.get(name)
        if axis is not None and shape and len(shape) == 2 and shape[axis] != width:
            return name, shape[axis]
    return None


def plan_mlp(sheet: FactSheet, snapshot: Snapshot, parameters: Mapping[str, tuple[str, ...]]) -> Filed:
    """A llama4_text draft whose MLP tensors are not the intermediate_size_mlp the engine builds."""
    rule = snapshot.behaviours.mlp_width
    width, field = mlp_width(rule, sheet.config)
    if width is None or field != "intermediate_size_mlp":
        return Filed()  # a plain intermediate_size mismatch is the config.shapes contract's (rules/shapes.py)
    found = _mismatch(sheet, parameters, width)
    if found is None:
        return Filed()
    name, actual = found
    out = Filing()
    written = sheet.config.get(field)
    value = f"{written}" if written is not None else f"absent: Llama4TextConfig's default {width}"
    built = (f"{snapshot.label} builds the draft's MLP {width} wide from {field} ({value}) because model_type is "
             f"llama4_text, but {name} is {actual} wide")
    fix = (f'set "intermediate_size_mlp": {actual} in the draft\'s config.json (SGLang reads it for model_type '
           'llama4_text), or set "model_type": "llama"')
    evidence = (Evidence(f"config.json {field}", value, str(actual)),
                Evidence(f"{name} intermediate width", str(actual), str(width)))
    sources = (f"rule: {snapshot.source('mlp_width')}",)
    if actual < width and rule.endswith("-padded"):
        out.note(f"{built}: the loader zero-pads it on GPU (the same MLP, {width / actual:.0f}x its memory and "
                 f"compute; {fix})")
    elif actual < width:
        out.refuse("keys", Finding("mlp-width", f"{built}: the loader's narrow fails at startup (RuntimeError)",
                                   evidence, fix, sources))
    else:
        out.lose("keys", Finding("mlp-width", f"{built}: the loader keeps its first {width} (the rest is lost): "
                                 "the draft's MLP is not the trained one", evidence, fix, sources))
    return out.filed()
