"""Area ``mlp``: the draft's MLP tensors against the width the engine builds (behaviour ``mlp_width``).

SGLang 0.4.9+ sizes the MLP of a ``model_type: llama4_text`` draft from ``intermediate_size_mlp``
(transformers' Llama4TextConfig default 16384 when absent), vLLM from ``intermediate_size`` whatever the
model_type. A gate / up / down tensor of another width fails the loader's shape assert at startup.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.loadplan import Filed, Filing
from pytest_eagle3.engines.param_shapes import mlp_width
from pytest_eagle3.engines.profiles import Profile
from pytest_eagle3.findings import Evidence, Finding

#: Checkpoint sub-names of the MLP and the axis that holds the intermediate width.
MLP_AXIS = {".mlp.gate_proj.": 0, ".mlp.up_proj.": 0, ".mlp.down_proj.": 1}


def plan_mlp(sheet: FactSheet, prof: Profile, parameters: Mapping[str, tuple[str, ...]]) -> Filed:
    """Refuse when a loaded MLP weight's intermediate width differs from the one the engine builds."""
    width, field = mlp_width(prof.value("mlp_width"), sheet.config)
    if width is None or field != "intermediate_size_mlp":
        return Filed()  # a plain intermediate_size mismatch is the config.shapes contract's (rules/shapes.py)
    loaded = {name for names in parameters.values() for name in names}
    for name in sorted(loaded):
        axis = next((a for part, a in MLP_AXIS.items() if part in name and name.endswith(".weight")), None)
        shape = sheet.shapes.get(name)
        if axis is None or not shape or len(shape) != 2 or shape[axis] == width:
            continue
        out = Filing()
        written = sheet.config.get(field)
        value = f"{written}" if written is not None else f"absent: Llama4TextConfig's default {width}"
        out.refuse("keys", Finding(
            "mlp-width",
            f"{prof.label} builds the draft's MLP {width} wide from {field} ({value}) because model_type is "
            f"llama4_text, but {name} is {list(shape)}: the loader's shape assert fails at startup",
            (Evidence(f"config.json {field}", value, str(shape[axis])),
             Evidence(f"{name} shape", str(list(shape)), f"intermediate width {width}")),
            f'set "intermediate_size_mlp": {shape[axis]} in the draft\'s config.json (SGLang reads it for model_type '
            'llama4_text), or set "model_type": "llama"',
            (f"rule: {prof.source('mlp_width')}",),
        ))
        return out.filed()
    return Filed()
