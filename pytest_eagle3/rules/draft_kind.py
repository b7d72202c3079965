"""Is this checkpoint an EAGLE-3 draft at all? A full model, an EAGLE-1/2 head, an MTP head, a
Medusa head or a LoRA adapter passed as ``--eagle3-ckpt`` is named in one line, instead of being
judged tensor by tensor as a broken draft.

Signatures, each read from the class that writes or loads that kind:
- EAGLE-3: ``fc.weight`` [H, k x Th] with k >= 2 aux states, first-layer q/k/v taking 2H
  (vllm model_executor/models/llama_eagle3.py, sglang models/llama_eagle3.py).
- EAGLE-1/2: ``fc.weight`` [H, 2H] (cat of embedding and feature) and q/k/v taking H
  (vllm model_executor/models/llama_eagle.py EagleLlamaForCausalLM, sglang models/llama_eagle.py).
- MTP: ``eh_proj`` / ``enorm`` / ``hnorm`` (vllm deepseek_mtp.py DeepSeekMultiTokenPredictorLayer,
  glm4_moe_mtp.py), or an ``mtp.`` module (qwen3_next_mtp.py), or a ``*MTP*`` architecture.
- Medusa: ``medusa_head`` / ``blocks.N.layers`` (vllm medusa.py), architectures MedusaModel.
- A causal LM: ``[model.]layers.N`` for several N with ``embed_tokens`` and no ``fc``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.words import plural

EAGLE3 = "eagle3"
EAGLE12 = "eagle1/2"
MTP = "mtp"
MEDUSA = "medusa"
CAUSAL_LM = "causal-lm"
ADAPTER = "lora-adapter"
UNKNOWN = "unknown"

LAYER = re.compile(r"^(?:model\.|language_model\.model\.|model\.language_model\.)?layers\.(\d+)\.")
EAGLE12_ARCHS = ("EagleLlamaForCausalLM", "EagleLlama4ForCausalLM", "EagleMiniCPMForCausalLM",
                 "LlamaForCausalLMEagle", "Qwen2ForCausalLMEagle", "EagleDeepSeekMTPModel")


@dataclass(frozen=True)
class DraftKind:
    """What the checkpoint is, one line on why, and the evidence."""

    kind: str
    summary: str
    evidence: tuple[str, ...] = ()

    @property
    def is_draft(self) -> bool:
        """Whether the checkpoint is (or may be) an EAGLE-3 draft."""
        return self.kind in (EAGLE3, UNKNOWN)


def _arch(config: Mapping[str, Any] | None) -> str:
    archs = (config or {}).get("architectures")
    return str(archs[0]) if isinstance(archs, list) and archs else ""


def _find(shapes: Mapping[str, tuple[int, ...]], suffix: str) -> tuple[str, tuple[int, ...]] | None:
    for name in sorted(shapes):
        if name.endswith(suffix):
            return name, tuple(shapes[name])
    return None


def classify(config: Mapping[str, Any] | None, shapes: Mapping[str, tuple[int, ...]]) -> DraftKind:
    """The kind of checkpoint these tensor names/shapes (and config) describe."""
    names = list(shapes)
    arch = _arch(config)
    if any(".lora_A." in n or ".lora_B." in n for n in names):
        return DraftKind(ADAPTER, "a LoRA adapter (lora_A/lora_B tensors), not an EAGLE-3 draft: merge it into "
                                  "its base model first", (f"{sum('.lora_' in n for n in names)} lora tensors",))
    whole = _whole_model(config, shapes, arch)
    if whole is not None:
        return whole
    mtp = [n for n in names if re.search(r"(^|\.)(eh_proj|enorm|hnorm|shared_head)\.", n) or n.startswith("mtp.")]
    if mtp or "MTP" in arch:
        return DraftKind(MTP, f"a multi-token-prediction (MTP/NextN) head ({arch or mtp[0]}), not an EAGLE-3 draft: "
                              "serve it with the engine's MTP/NextN method", tuple(mtp[:3]) or (arch,))
    if arch == "MedusaModel" or any("medusa_head" in n for n in names):
        return DraftKind(MEDUSA, "a Medusa head, not an EAGLE-3 draft", (arch,))
    return _by_layers(config, shapes, arch)


def _by_layers(config: Mapping[str, Any] | None, shapes: Mapping[str, tuple[int, ...]], arch: str) -> DraftKind:
    fc = shapes.get("fc.weight") or shapes.get("model.fc.weight")
    q = _find(shapes, "midlayer.self_attn.q_proj.weight") or _find(shapes, "layers.0.self_attn.q_proj.weight")
    if fc is not None and len(fc) == 2 and q is not None and len(q[1]) == 2:
        hidden, width = fc
        if width == 2 * hidden and q[1][1] == hidden:
            return DraftKind(EAGLE12, f"an EAGLE-1/2 draft (fc {list(fc)} fuses embedding and one feature; "
                                      f"{q[0]} takes {hidden}), not EAGLE-3: serve it with method 'eagle' "
                                      "(SGLang: --speculative-algorithm EAGLE)",
                             (f"fc.weight {list(fc)}", f"{q[0]} {list(q[1])}"))
        if q[1][1] == 2 * hidden:
            return DraftKind(EAGLE3, "an EAGLE-3 draft")
    if arch in EAGLE12_ARCHS:
        return DraftKind(EAGLE12, f"an EAGLE-1/2 draft (architecture {arch}), not EAGLE-3", (arch,))
    return DraftKind(UNKNOWN, "no signature matched: judged as an EAGLE-3 draft")


def _whole_model(config: Mapping[str, Any] | None, shapes: Mapping[str, tuple[int, ...]], arch: str) -> DraftKind | None:
    """Several decoder layers, an embedding and no fc: a target or any plain LM (its MTP layers included)."""
    layers = {int(m.group(1)) for n in shapes if (m := LAYER.match(n))}
    embed = _find(shapes, "embed_tokens.weight")
    if "fc.weight" in shapes or "model.fc.weight" in shapes or embed is None or len(layers) < 2:
        return None
    count = (config or {}).get("num_hidden_layers", len(layers))
    return DraftKind(CAUSAL_LM, f"a full causal LM ({arch or 'no architecture'}, {plural(count, 'layer')}, no fc), not an "
                                "EAGLE-3 draft: pass it as --eagle3-target, and the draft as --eagle3-ckpt",
                     (f"layers {min(layers)}..{max(layers)}", embed[0], "no fc.weight"))


def classify_checkpoint(ckpt: Any) -> DraftKind:
    """``classify`` on a :class:`~pytest_eagle3.checkpoint.Checkpoint`."""
    return classify(ckpt.config_raw, {name: tuple(entry.shape) for name, entry in ckpt.tensors.items()})


def not_a_draft_finding(kind: DraftKind) -> Finding | None:
    """The one-line finding for a checkpoint that is not an EAGLE-3 draft, or None for a draft."""
    if kind.is_draft:
        return None
    return Finding(
        "not-a-draft", f"this checkpoint is {kind.summary}",
        tuple(Evidence(e, "present", "an EAGLE-3 draft's tensors") for e in kind.evidence[:3]),
        "pass the EAGLE-3 draft's directory as --eagle3-ckpt",
    )
