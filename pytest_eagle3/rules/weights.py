"""Weight health: NaN/Inf, all-zero and constant (never-initialised) tensors, scanned in chunks.

One ``aminmax`` pass per chunk answers all three questions: NaN propagates into min/max, an
infinity shows as a bound, all-zero is ``min == max == 0``, constant is ``min == max``.
Only a chunk that holds a non-finite value is scanned again to count them.

Quantized drafts (``rules.quantized``): a float8 chunk is upcast to float32 first (``aminmax`` has no float8
kernel; the upcast keeps NaN and Inf bit patterns as NaN and Inf); a weight with a scalar scale reports its
dequantized range; scale tensors are scanned as scales (a zero scale zeroes its weight; a constant per-channel
scale is legitimate); packed weights (uint8 / int32, no float view) are "not modelled", never an exception.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_eagle3.checkpoint import Checkpoint, CheckpointReadError
from pytest_eagle3.checkpoint.draft import DEFAULT_CHUNK_BYTES
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.producers.formats import SPECULATORS
from pytest_eagle3.rules.quantized import FP8_CODES, base_weight, is_packed, is_scale, not_modelled
from pytest_eagle3.words import plural, verb

#: speculators fills these with NaN until ``load_verifier_weights()`` runs.
#: Source: speculators 0.9.0 speculators/model.py DraftVocabMixin._init_vocab.
SPECULATORS_NAN_INIT = ("lm_head.weight", "embed_tokens.weight")


@dataclass(frozen=True)
class TensorHealth:
    """What a scan of one floating-point tensor found."""

    name: str
    numel: int
    nan: int
    inf: int
    minimum: float
    maximum: float
    error: str | None = None
    #: Why the rule cannot read this tensor's values (a packed weight, a dtype with no float view): not modelled.
    unmodelled: str | None = None

    @property
    def finite(self) -> bool:
        """Whether the tensor was read and has no NaN or Inf."""
        return self.nan == 0 and self.inf == 0 and self.error is None and self.unmodelled is None

    @property
    def all_zero(self) -> bool:
        """Whether every element is zero."""
        return self.finite and self.numel > 0 and self.minimum == 0.0 and self.maximum == 0.0

    @property
    def constant(self) -> bool:
        """Whether every element has the same value."""
        return self.finite and self.numel > 1 and self.minimum == self.maximum


def scan_tensor(ckpt: Checkpoint, name: str, chunk_bytes: int) -> TensorHealth:
    """Scan one tensor in bounded chunks."""
    import torch

    nan = inf = 0
    lo, hi = math.inf, -math.inf
    entry = ckpt.tensors[name]
    numel = entry.numel
    upcast = entry.dtype in FP8_CODES
    try:
        for raw in ckpt.chunks(name, chunk_bytes):
            if raw.numel() == 0:
                continue
            chunk = raw.float() if upcast else raw
            cmin, cmax = (float(v) for v in torch.aminmax(chunk))
            if math.isfinite(cmin) and math.isfinite(cmax):
                lo, hi = min(lo, cmin), max(hi, cmax)
                continue
            nan += int(torch.isnan(chunk).sum())
            inf += int(torch.isinf(chunk).sum())
            finite = chunk[torch.isfinite(chunk)]
            if finite.numel():
                fmin, fmax = (float(v) for v in torch.aminmax(finite))
                lo, hi = min(lo, fmin), max(hi, fmax)
    except CheckpointReadError as exc:
        return TensorHealth(name, numel, nan, inf, lo, hi, str(exc))
    except (RuntimeError, NotImplementedError, TypeError) as exc:  # a dtype torch cannot reduce: not modelled
        return TensorHealth(name, numel, 0, 0, lo, hi, unmodelled=f"{entry.dtype}: {str(exc).splitlines()[0]}")
    return TensorHealth(name, numel, nan, inf, lo, hi)


def scan_weights(ckpt: Checkpoint, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[TensorHealth]:
    """Scan every floating-point tensor of the checkpoint; packed quantized weights are listed, unscanned."""
    health = []
    for name, entry in sorted(ckpt.tensors.items()):
        if entry.is_float:
            health.append(scan_tensor(ckpt, name, chunk_bytes))
        elif not is_scale(name) and (is_packed(name, entry, ckpt.tensors) or name.endswith(".weight")):
            health.append(TensorHealth(name, entry.numel, 0, 0, math.nan, math.nan, unmodelled=(
                f"{entry.dtype} weights (packed quantized codes or no float view): the scan reads no values")))
    return _dequantized(health)


def _dequantized(health: list[TensorHealth]) -> list[TensorHealth]:
    """A weight with a scalar scale (per-tensor FP8) reports its dequantized range: raw range x scale."""
    scalars = {base_weight(h.name): h for h in health
               if h.name.endswith((".weight_scale", ".weight_scale_inv")) and h.numel == 1 and h.finite}
    out = []
    for h in health:
        scale = scalars.get(h.name)
        if scale is not None and h.finite and h.numel and scale.minimum > 0:
            h = TensorHealth(h.name, h.numel, h.nan, h.inf, h.minimum * scale.minimum, h.maximum * scale.minimum)
        out.append(h)
    return out


def unmodelled_findings(health: list[TensorHealth]) -> list[Finding]:
    """The tensors the scan cannot read (packed weights, dtypes without a float view): not modelled."""
    names = [h.name for h in health if h.unmodelled]
    if not names:
        return []
    first = next(h for h in health if h.unmodelled)
    return [not_modelled("the weight scan", names,
                         "the engine's own loader (probe.load with --eagle3-vllm-python / --eagle3-sglang-python), "
                         "which unpacks them, or a dequantized export", first.unmodelled or "")]


def diagnose_finite(health: list[TensorHealth], producer: str) -> list[Finding]:
    """NaN or Inf anywhere: the draft's logits become NaN and nothing is accepted."""
    findings = []
    unreadable = [h for h in health if h.error]
    if unreadable:
        findings.append(Finding(
            "unreadable-tensor",
            f"{plural(len(unreadable), 'tensor')} cannot be read: {unreadable[0].error}",
            tuple(Evidence(h.name, h.error or "", "readable bytes") for h in unreadable[:4]),
            "re-export the checkpoint; the file is truncated or its header lies",
        ))
    bad = [h for h in health if h.nan or h.inf]
    if not bad:
        return findings
    trap = producer == SPECULATORS
    nan_init = [h.name for h in bad if trap and h.name in SPECULATORS_NAN_INIT and h.nan == h.numel]
    if nan_init:
        findings.append(Finding(
            "speculators-nan-init",
            f"{short(nan_init)} are entirely NaN: speculators fills them with NaN until "
            "load_verifier_weights() copies the verifier's weights, and this checkpoint was saved before that",
            tuple(Evidence(f"{n}: NaN count", "all", "0") for n in nan_init),
            "call model.load_verifier_weights() (verifier name_or_path must resolve) before save_pretrained",
        ))
    rest = [h for h in bad if h.name not in nan_init]
    if rest:
        findings.append(Finding(
            "non-finite",
            f"{plural(len(rest), 'tensor')} {verb(len(rest), 'holds', 'hold')} NaN or Inf: draft logits become NaN and no token is accepted",
            tuple(Evidence(h.name, f"{h.nan} NaN, {h.inf} Inf of {h.numel}", "0 non-finite") for h in rest[:6]),
            "re-export from a healthy training step (check for loss spikes / fp16 overflow before the save)",
        ))
    return findings


def diagnose_initialised(health: list[TensorHealth]) -> list[Finding]:
    """All-zero or constant tensors: never trained, or never written."""
    zero = [h for h in health if h.all_zero]
    constant = [h for h in health if h.constant and not h.all_zero and h.numel > 1 and not _is_norm(h.name)
                and not is_scale(h.name)]
    findings = []
    if zero:
        findings.append(Finding(
            "all-zero-weights",
            f"{plural(len(zero), 'tensor')} {verb(len(zero), 'is', 'are')} all zero: the draft's signal through them is lost",
            tuple(Evidence(h.name, f"zeros({h.numel})", "trained values") for h in zero[:6]),
            "these tensors were never loaded or trained; re-export from the trained state dict",
        ))
    if constant:
        findings.append(Finding(
            "constant-weights",
            f"{len(constant)} weight matrices hold a single repeated value: never initialised or never trained",
            tuple(Evidence(h.name, f"all {h.minimum:g}", "varied values") for h in constant[:6]),
            "re-export from the trained state dict",
        ))
    return findings


def _is_norm(name: str) -> bool:
    return "norm" in name  # RMSNorm weights start as all ones: constant is legitimate there
