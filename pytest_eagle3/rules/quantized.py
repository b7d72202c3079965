"""Quantized drafts: which tensors are scales (not weights), which weights are packed (no float view), and
what the rules say where they cannot read a tensor ("not modelled", never an exception).

The names are the ones the exporters write and the engines' quantized linear layers declare as parameters:
- FP8 per-tensor / per-channel (vLLM ``layers/quantization/fp8.py`` ``Fp8LinearMethod.create_weights``:
  ``weight_scale``, ``input_scale``; block-wise: ``weight_scale_inv``; ModelOpt FP8 exports the same names,
  ``modelopt.py`` ``ModelOptFp8LinearMethod``);
- compressed-tensors (``compressed_tensors_wNa16.py``: ``weight_packed`` int32, ``weight_scale``,
  ``weight_zero_point``, ``weight_shape``, ``weight_g_idx``);
- ModelOpt NVFP4 (``modelopt.py`` ``ModelOptNvFp4LinearMethod``: ``weight`` uint8 (two e2m1 values a byte),
  ``weight_scale`` float8_e4m3fn per 16-block, ``weight_scale_2`` and ``input_scale`` float32);
- KV-cache scales (``k_scale``, ``v_scale``; ``kv_cache.py`` ``BaseKVCacheMethod``).
Source: vllm 0.11.0 and 0.33.0 wheels, model_executor/layers/quantization/ (read for this module).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_eagle3.checkpoint.tensorfiles import FLOAT_CODES, TensorEntry
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.words import plural

#: Companions of a quantized weight: scales, zero points, shapes and group indices (never weights themselves).
SCALE_SUFFIXES = (".weight_scale", ".weight_scale_inv", ".weight_scale_2", ".input_scale", ".output_scale",
                  ".weight_zero_point", ".input_zero_point", ".weight_global_scale", ".input_global_scale",
                  ".weight_shape", ".weight_g_idx", ".k_scale", ".v_scale", ".q_scale", ".prob_scale")
#: A packed weight stored under its own name (compressed-tensors ``weight_packed`` replaces ``weight``).
PACKED_SUFFIX = ".weight_packed"
#: float8 codes: scanned by upcasting each chunk to float32 (e4m3fn NaN = S.1111.111, no Inf; e5m2 IEEE-like).
FP8_CODES = frozenset({"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0"})
#: What a rule says where it cannot read a tensor's values or shape.
NOT_MODELLED = "not-modelled"


def is_scale(name: str) -> bool:
    """``name`` is a quantization companion (a scale, zero point, shape or group index), not a weight."""
    return name.endswith(SCALE_SUFFIXES)


def base_weight(name: str) -> str:
    """The weight a companion or packed tensor belongs to: ``x.weight_scale`` / ``x.weight_packed`` -> ``x.weight``."""
    for suffix in (*SCALE_SUFFIXES, PACKED_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)] + ".weight"
    return name


def is_packed(name: str, entry: TensorEntry, tensors: Mapping[str, TensorEntry]) -> bool:
    """A weight stored without a float view: ``weight_packed``, or a ``.weight`` of an integer dtype (uint8 NVFP4,
    int8 / int32 packs) beside a scale. Its shape is not the logical matrix's, its bytes are not values."""
    if name.endswith(PACKED_SUFFIX):
        return True
    if not name.endswith(".weight") or entry.dtype in FLOAT_CODES or entry.dtype == "BOOL":
        return False
    stem = name[: -len(".weight")]
    return any(stem + suffix in tensors for suffix in SCALE_SUFFIXES) or entry.dtype in ("U8", "I8", "I32")


def present_weights(tensors: Mapping[str, TensorEntry]) -> set[str]:
    """The logical weight names the checkpoint provides (``x.weight_packed`` provides ``x.weight``)."""
    return set(tensors) | {base_weight(n) for n in tensors if n.endswith(PACKED_SUFFIX)}


@dataclass(frozen=True)
class QuantizedView:
    """What is quantized in a checkpoint: scale tensors, packed weights, the dtypes of weights that have a float
    view only through an upcast (float8)."""

    scales: tuple[str, ...]
    packed: tuple[str, ...]
    fp8: tuple[str, ...]

    @property
    def quantized(self) -> bool:
        """Whether the checkpoint holds quantized weights (scales, packed or fp8 tensors)."""
        return bool(self.scales or self.packed or self.fp8)


def quantized_view(tensors: Mapping[str, TensorEntry]) -> QuantizedView:
    """Sort the checkpoint's tensors into scales, packed weights and float8 weights."""
    scales = tuple(sorted(n for n in tensors if is_scale(n)))
    packed = tuple(sorted(n for n, e in tensors.items() if not is_scale(n) and is_packed(n, e, tensors)))
    fp8 = tuple(sorted(n for n, e in tensors.items() if e.dtype in FP8_CODES and not is_scale(n)))
    return QuantizedView(scales, packed, fp8)


def not_modelled(rule: str, names: list[str], decides: str, why: str) -> Finding:
    """A rule's "not modelled": what it could not read, what would decide it, and why (in that order: the report
    clips a skip's message)."""
    return Finding(
        NOT_MODELLED,
        f"not modelled: {rule}, {plural(len(names), 'tensor')} ({short(names, 2)}); decided by {decides}: {why}",
        (Evidence("tensors outside the rule", short(names, 6), "tensors the rule can read"),),
        "",
    )
