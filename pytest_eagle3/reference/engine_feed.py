"""From a load plan to the :class:`Feed` the engine gives the draft, or the reason it predicts nothing.

Each field comes from one part of the plan (``pytest_eagle3.engines.plan``): fed layers from
``plan.aux`` (the default runtime mode; CUDA-graph decode where the plan says it captures the
defaults instead), fc from ``plan.fc.action``, norm flags from ``plan.norms`` (the engine's
``norm_output`` is vLLM's: logits always through the final norm, the normed state fed back only
when set; ``llama_eagle3.py`` ``LlamaModel.forward`` 0.32.0), embeddings and lm_head from
``plan.embed_tokens`` / ``plan.lm_head``, d2t from ``plan.map_reading``, layers from
``plan.draft_layers`` and the profile's ``later_layer_norm``, uninitialised parameters from
``plan.uninitialised``, the rope from ``plan.draft_rope`` (the config's: both engines build it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_eagle3.engines.plan import REFUSED, LoadPlan
from pytest_eagle3.knowledge.draft_budget import draft_budget
from pytest_eagle3.knowledge.snapshot import snapshot_of
from pytest_eagle3.reference.simulate import (
    DRAFT,
    FC_BYPASSED,
    FC_RUN,
    IDENTITY,
    NORM_FLAGS,
    OFFSETS,
    RANDOM,
    TARGET,
    TARGET_EMBED,
    Feed,
)

if TYPE_CHECKING:
    from pytest_eagle3.reference.draft import ReferenceDraft


@dataclass(frozen=True)
class EngineFeed:
    """The feed of the engine's default runtime mode, of its other mode when it differs, or why none."""

    feed: Feed | None
    other_mode: Feed | None = None
    unavailable: str = ""
    notes: tuple[str, ...] = ()


def engine_feed(plan: LoadPlan, draft: ReferenceDraft, target_layers: int) -> EngineFeed:
    """What ``plan``'s engine version feeds the draft; ``unavailable`` says why there is no feed."""
    if plan.outcome == REFUSED:
        first = next(i.finding for i in plan.issues if i.kind == REFUSED)
        return EngineFeed(None, unavailable=f"{plan.engine.label} refuses this draft at load, so it predicts "
                                            f"nothing: {first.summary}")
    if plan.draft_class and plan.draft_class.startswith("Eagle3Deepseek"):
        return EngineFeed(None, unavailable=f"the {plan.draft_class} (MLA) draft is not simulated")
    notes: list[str] = []
    fed = plan.aux.graph_mode if plan.aux.graph_mode is not None else plan.aux.captured
    if fed is None:
        return EngineFeed(None, unavailable="the fed layers are unknown (the target's capture rule is not in the table)")
    fc = FC_BYPASSED if plan.fc.action in ("bypassed", "disabled") else FC_RUN
    if fc == FC_BYPASSED:
        notes.append("fc bypassed: the target's last hidden state after its final norm reaches the draft (assumed)")
    lm_head, why = _lm_head(plan, draft)
    if lm_head is None:
        return EngineFeed(None, unavailable=why)
    embed = _embed(plan, draft)
    for source, what in ((embed, "embed_tokens"), (lm_head, "lm_head")):
        if source == RANDOM:
            notes.append(f"{what} is left uninitialised by {plan.engine.label}: simulated as a seeded random init")
    later = str(snapshot_of(plan.engine).behaviours.later_layer_norm) if (plan.draft_layers or 1) > 1 else "input_layernorm"
    uninit = tuple(sorted({n for p in plan.uninitialised for n in canonical_parameters(p)}))
    if uninit:
        notes.append(f"{len(uninit)} uninitialised parameters simulated as a seeded random init (norms: ones)")
    # the plan's rope differs from the draft's own only for a plan of an edited config (a rope fix being proven)
    feed = Feed(indices=tuple(fed), fc=fc, norms=_norms(plan), embed=embed, lm_head=lm_head,
                d2t=_d2t(plan), layers=plan.draft_layers or 1, later_norm=later, uninitialised=uninit,
                rope=plan.draft_rope if plan.draft_rope != draft.config_rope else None,
                budget=str(draft_budget(plan.engine)))
    other = None
    mode = plan.aux.other_mode
    if mode is not None and tuple(mode) != tuple(fed) and all(0 <= i <= target_layers for i in mode):
        other = Feed(**{**feed.__dict__, "indices": tuple(mode)})
    return EngineFeed(feed, other, notes=tuple(notes))


def _norms(plan: LoadPlan) -> tuple[tuple[str, bool], ...]:
    flags = plan.norms
    values = {
        "norm_before_residual": bool(flags.get("norm_before_residual", False)),
        "norm_before_fc": bool(flags.get("norm_before_fc", False)),
        "fc_norm": bool(flags.get("fc_norm", False)),
        "norm_logits": True,
        "feed_normed": bool(flags.get("norm_output", False)),
    }
    return tuple((n, values[n]) for n in NORM_FLAGS)


def _d2t(plan: LoadPlan) -> str:
    return OFFSETS if plan.map_reading.startswith("offsets") else IDENTITY


def _embed(plan: LoadPlan, draft: ReferenceDraft) -> str:
    if plan.embed_tokens.startswith("target"):
        return TARGET
    return DRAFT if "embed_tokens.weight" in draft.weights else RANDOM


def _lm_head(plan: LoadPlan, draft: ReferenceDraft) -> tuple[str | None, str]:
    text = plan.lm_head
    if text.startswith("target (tied"):
        return TARGET_EMBED, ""
    if text.startswith("draft (tied"):
        return (DRAFT if "embed_tokens.weight" in draft.weights else RANDOM), ""
    if text.startswith("target"):
        if _reduced(draft):
            return None, (f"{plan.engine.label} uses the target's full-vocab lm_head with a reduced-vocab draft: "
                          "not simulated (see engine.embeddings)")
        return TARGET, ""
    if text.startswith("draft"):
        return DRAFT, ""
    return None, f"whose lm_head {plan.engine.label} uses is unknown ({text})"


def _reduced(draft: ReferenceDraft) -> bool:
    return "d2t" in draft.weights


def canonical_parameters(name: str) -> tuple[str, ...]:
    """Engine parameter -> the reference forward's names (fused q/k/v and gate/up split)."""
    bare = name.removeprefix("model.").replace("midlayer.", "layers.0.")
    if "qkv_proj" in bare:
        return tuple(bare.replace("qkv_proj", p) for p in ("q_proj", "k_proj", "v_proj"))
    if "gate_up_proj" in bare:
        return tuple(bare.replace("gate_up_proj", p) for p in ("gate_proj", "up_proj"))
    if bare in ("embed_tokens.weight", "lm_head.weight"):
        return ()
    return (bare,)
