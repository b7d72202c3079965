"""Engine-independent repairs and refusals: readable files, finite weights, the vocab map, shapes.

The diagnoses are the rules' (rules.vocab_map, rules.weights, rules.shapes): repair acts only on the
codes whose remedy is certain and refuses the rest with the rule's own words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_eagle3.findings import Finding
from pytest_eagle3.repair import configs
from pytest_eagle3.repair.record import Change, RepairRefused
from pytest_eagle3.repair.virtual import VirtualDraft

if TYPE_CHECKING:
    import torch

    from pytest_eagle3.checkpoint import Checkpoint

#: Shape findings a copy repairs (by names, by the config) rather than refuses.
SHAPE_REPAIRED = {"leftover-prefix", "layer-count"}
#: Shape findings that are warnings, not a reason to refuse.
SHAPE_IGNORED = {"unused-fc-norm"}


def _reason(finding: Finding) -> str:
    return f"[{finding.code}] {finding.summary}" + (f" (fix by hand: {finding.fix})" if finding.fix else "")


def refuse_unreadable(ckpt: Checkpoint) -> None:
    """Refuse a checkpoint the reader cannot read whole, or whose config is not a JSON object."""
    reasons = list(ckpt.problems)
    if not ckpt.tensors and not reasons:
        reasons.append(f"{ckpt.path}: no tensors")
    if ckpt.config_problem:
        reasons.append(ckpt.config_problem)
    if reasons:
        raise RepairRefused(reasons)


def refuse_unhealthy(ckpt: Checkpoint) -> None:
    """Refuse NaN/Inf, all-zero or constant weights: no renaming brings trained values back."""
    from pytest_eagle3.rules.weights import diagnose_finite, diagnose_initialised, scan_weights

    health = scan_weights(ckpt)
    findings = diagnose_finite(health, ckpt.format.producer) + diagnose_initialised(health)
    if findings:
        raise RepairRefused([_reason(f) for f in findings])


def refuse_config(ckpt: Checkpoint, known_convention: bool = False) -> None:
    """Refuse a config the engines cannot build from, or an unknown format whose aux ids nobody can read
    (unless the convention is given or measured)."""
    from pytest_eagle3.rules.shapes import config_findings, format_findings

    findings = config_findings(ckpt) + ([] if known_convention else format_findings(ckpt))
    if findings:
        raise RepairRefused([_reason(f) for f in findings])


def repair_shapes(draft: VirtualDraft, changes: list[Change]) -> None:
    """Write the layer count the tensors hold into the config; refuse every other shape finding."""
    from pytest_eagle3.rules.shapes import shape_findings

    ckpt = draft.checkpoint()
    findings = [f for f in shape_findings(ckpt) if f.code not in SHAPE_IGNORED]
    refused = [f for f in findings if f.code not in SHAPE_REPAIRED]
    if refused:
        raise RepairRefused([_reason(f) for f in refused])
    if any(f.code == "layer-count" for f in findings):
        held = ckpt.config.layer_count
        field = configs.layer_scope(draft.config) + "num_hidden_layers"
        before = configs.get(draft.config, field)
        configs.put(draft.config, field, held)
        changes.append(Change("config", f"{field}: {before} -> {held}",
                              f"the checkpoint holds {held} draft layer(s); config.json said {before} (rules/shapes.py layer-count)"))


def _vocab_sizes(ckpt: Checkpoint) -> tuple[int, int] | None:
    cfg = ckpt.config
    lm_head = ckpt.shape("lm_head.weight")
    draft_vocab = cfg.draft_vocab_size or (lm_head[0] if lm_head else None)
    if cfg.vocab_size is None or draft_vocab is None:
        return None
    return cfg.vocab_size, draft_vocab


def _absolute_is_certain(d2t: torch.Tensor, t2d: torch.Tensor | None, v: int, dv: int) -> bool:
    """Absolute ids, for sure: t2d selects exactly them, or read as offsets they leave the vocab or collide
    while read as ids they are in range, unique and ascending."""
    import torch

    ids = d2t.to(torch.int64)
    if t2d is not None and t2d.dtype == torch.bool and tuple(t2d.shape) == (v,) and int(t2d.sum()) == dv:
        return bool(torch.equal(torch.nonzero(t2d).squeeze(1), ids))
    targets = torch.arange(dv) + ids
    offsets_bad = bool(((targets < 0) | (targets >= v)).any()) or torch.unique(targets).numel() != dv
    ascending = bool((ids[1:] > ids[:-1]).all()) if dv > 1 else True
    return offsets_bad and ascending and bool(((ids >= 0) & (ids < v)).all())


def repair_vocab_map(draft: VirtualDraft, changes: list[Change]) -> None:
    """d2t as int64 offsets (from absolute ids when that reading is certain, from t2d when d2t is missing),
    t2d rebuilt from d2t when missing; every other map problem refused."""
    import torch

    from pytest_eagle3.rules.vocab_map import build_maps, diagnose_vocab_map

    ckpt = draft.checkpoint()
    sizes = _vocab_sizes(ckpt)
    if sizes is None:
        return
    v, dv = sizes
    d2t = draft.read("d2t") if "d2t" in ckpt.tensors else None
    t2d = draft.read("t2d") if "t2d" in ckpt.tensors else None
    for finding in diagnose_vocab_map(d2t, t2d, v, dv):
        if finding.code == "d2t-dtype" and d2t is not None and not d2t.is_floating_point():
            d2t = d2t.to(torch.int64)
            draft.put("d2t", d2t, "d2t")
            changes.append(Change("tensor", "d2t: cast to int64", finding.summary))
        elif finding.code == "absolute-ids" and d2t is not None and _absolute_is_certain(d2t, t2d, v, dv):
            ids = d2t.to(torch.int64)
            d2t = ids - torch.arange(dv, dtype=torch.int64)
            draft.put("d2t", d2t, "d2t")
            changes.append(Change("tensor", "d2t: absolute target ids rewritten as offsets (d2t[i] = id[i] - i)",
                                  finding.summary))
        elif finding.code == "missing-map" and t2d is not None and t2d.dtype == torch.bool \
                and tuple(t2d.shape) == (v,) and int(t2d.sum()) == dv:
            d2t, _ = build_maps(torch.nonzero(t2d).squeeze(1), v)
            draft.put("d2t", d2t, "t2d")
            changes.append(Change("tensor", "d2t: built from t2d (d2t = nonzero(t2d) - arange(draft_vocab_size))",
                                  finding.summary))
        else:
            raise RepairRefused([_reason(finding) + ": the map is corrupt or ambiguous; a copy cannot know "
                                 "the right one (rebuild it from the training data)"])
    if d2t is not None and t2d is None and dv < v:
        _, t2d = build_maps(torch.arange(dv, dtype=torch.int64) + d2t.to(torch.int64), v)
        draft.put("t2d", t2d, "d2t")
        changes.append(Change("tensor", "t2d: rebuilt from d2t", "t2d was missing (speculators and SpecForge ship both)"))
    remaining = diagnose_vocab_map(draft.read("d2t") if d2t is not None else None, t2d, v, dv)
    if remaining:
        raise RepairRefused([_reason(f) for f in remaining])
