"""Quantized synthetic drafts: the decoder layers' linear weights as the exporters write them, with their scales.

``SynthSpec(quantization=NAME)`` with NAME one of :data:`QUANTIZATIONS`:
- ``fp8`` / ``fp8-e5m2``: float8 weights with a float32 per-tensor ``weight_scale`` and ``input_scale`` (vLLM /
  llm-compressor FP8 static), ``quantization_config.quant_method: fp8``;
- ``fp8-block``: float8_e4m3fn weights with ``weight_scale_inv`` per 128x128 block (DeepSeek-style);
- ``modelopt-fp8``: the same tensors as ``fp8`` with ModelOpt's config (``quant_method: modelopt``, ``quant_algo: FP8``);
- ``modelopt-nvfp4``: uint8 weights (two e2m1 values a byte, half the columns), float8_e4m3fn ``weight_scale`` per
  16 values, float32 ``weight_scale_2`` and ``input_scale``;
- ``compressed-tensors-w4a16``: int32 ``weight_packed`` (8 int4 a word) with ``weight_scale`` per 32-group,
  ``weight_shape`` and ``weight_zero_point``.
fc, lm_head, embeddings and norms stay in the spec's dtype (the exporters leave them unquantized).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

QUANTIZATIONS = ("fp8", "fp8-e5m2", "fp8-block", "modelopt-fp8", "modelopt-nvfp4", "compressed-tensors-w4a16")

_CONFIGS: dict[str, dict[str, Any]] = {
    "fp8": {"quant_method": "fp8", "activation_scheme": "static"},
    "fp8-e5m2": {"quant_method": "fp8", "activation_scheme": "static"},
    "fp8-block": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    "modelopt-fp8": {"quant_method": "modelopt", "quant_algo": "FP8"},
    "modelopt-nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    "compressed-tensors-w4a16": {"quant_method": "compressed-tensors", "format": "pack-quantized"},
}


def quantization_config(name: str) -> dict[str, Any]:
    """The quantization_config an exporter writes into config.json for ``name``."""
    if name not in _CONFIGS:
        raise ValueError(f"unknown quantization {name!r}; known: {list(QUANTIZATIONS)}")
    return dict(_CONFIGS[name])


def _quantized(name: str) -> bool:
    return name.endswith("_proj.weight")


def quantize(tensors: dict[str, torch.Tensor], name: str) -> dict[str, torch.Tensor]:
    """The state dict with every decoder-layer projection quantized as ``name`` writes it (scales beside)."""
    quantization_config(name)
    out: dict[str, torch.Tensor] = {}
    for key, tensor in tensors.items():
        if not _quantized(key):
            out[key] = tensor
            continue
        out.update(_one(key.removesuffix(".weight"), tensor.float(), name))
    return out


def _one(stem: str, w: torch.Tensor, name: str) -> dict[str, torch.Tensor]:
    import torch

    if name in ("fp8", "fp8-e5m2", "modelopt-fp8"):
        dtype = torch.float8_e5m2 if name == "fp8-e5m2" else torch.float8_e4m3fn
        scale = (w.abs().max() / torch.finfo(dtype).max).clamp(min=1e-12)
        return {f"{stem}.weight": (w / scale).to(dtype), f"{stem}.weight_scale": scale.reshape(()).float(),
                f"{stem}.input_scale": torch.tensor(0.05, dtype=torch.float32)}
    if name == "fp8-block":
        rows, cols = w.shape
        blocks = torch.ones((rows + 127) // 128, (cols + 127) // 128) * (w.abs().max() / 448.0).clamp(min=1e-12)
        return {f"{stem}.weight": (w / blocks[0, 0]).to(torch.float8_e4m3fn), f"{stem}.weight_scale_inv": blocks}
    if name == "modelopt-nvfp4":
        rows, cols = w.shape
        codes = torch.randint(0, 256, (rows, cols // 2), generator=torch.Generator().manual_seed(rows * cols),
                              dtype=torch.uint8)
        block = torch.full((rows, max(1, cols // 16)), 1.0).to(torch.float8_e4m3fn)
        return {f"{stem}.weight": codes, f"{stem}.weight_scale": block,
                f"{stem}.weight_scale_2": (w.abs().max() / (6.0 * 448.0)).reshape(()).float(),
                f"{stem}.input_scale": torch.tensor(0.05, dtype=torch.float32)}
    rows, cols = w.shape  # compressed-tensors w4a16, pack-quantized
    packed = torch.randint(-(2**31), 2**31 - 1, (rows, max(1, cols // 8)),
                           generator=torch.Generator().manual_seed(rows + cols), dtype=torch.int32)
    groups = max(1, cols // 32)
    return {f"{stem}.weight_packed": packed, f"{stem}.weight_scale": torch.full((rows, groups), 0.01),
            f"{stem}.weight_shape": torch.tensor([rows, cols], dtype=torch.int64),
            f"{stem}.weight_zero_point": torch.zeros((rows // 8 or 1, groups), dtype=torch.int32)}
