"""``d2t``/``t2d`` semantics: engines read ``target_id = i + d2t[i]`` (offsets).

Sources: speculators 0.9.0 train/vocab_mapping.py build_vocab_mappings_from_distribution
("Store offset: target_token_id = draft_idx + draft_to_target[draft_idx]"); specforge 0.2.0
data/preprocessing.py process_token_dict_to_mappings; SafeAILab/EAGLE traineagle3/cnets.py
scandata; SpecForge#272 and EAGLE#222 (maintainers on the offset design).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_eagle3.findings import Evidence, Finding, short

if TYPE_CHECKING:
    import torch

ACCEPTANCE_NOTE = "acceptance length will be ~1.0"
OFFSETS_FIX = "store offsets: d2t = target_ids - torch.arange(draft_vocab_size), target_ids sorted ascending"


def build_maps(selected_target_ids: torch.Tensor, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The correct ``(d2t, t2d)`` for a set of target ids kept in the draft vocab."""
    import torch

    ids = torch.unique(selected_target_ids.to(torch.int64))  # sorted ascending
    d2t = ids - torch.arange(ids.numel(), dtype=torch.int64)
    t2d = torch.zeros(vocab_size, dtype=torch.bool)
    t2d[ids] = True
    return d2t, t2d


def diagnose_vocab_map(
    d2t: torch.Tensor | None, t2d: torch.Tensor | None, vocab_size: int, draft_vocab_size: int
) -> list[Finding]:
    """Every way the map is wrong, most fundamental first. An empty list means the map is sound."""
    import torch

    v, dv = vocab_size, draft_vocab_size
    if d2t is None:
        return _missing_map(t2d, v, dv)
    shape_problem = _d2t_shape(d2t, dv)
    if shape_problem:
        return [shape_problem]
    findings: list[Finding] = []
    if d2t.dtype != torch.int64:
        findings.append(Finding(
            "d2t-dtype",
            f"d2t is {str(d2t.dtype).removeprefix('torch.')}; engines load it into an int64 buffer",
            (Evidence("d2t.dtype", str(d2t.dtype), "torch.int64"),),
            "save d2t as int64 (d2t.to(torch.int64))",
        ))
        if d2t.is_complex() or d2t.dtype == torch.bool:
            return findings
        if d2t.is_floating_point():  # float8 has no round kernel: judge the values in float64
            wide = d2t.to(torch.float64)
            if not bool(torch.isfinite(wide).all()) or not bool(torch.equal(wide, wide.round())):
                return findings
            d2t = wide
    offsets = d2t.to(torch.int64)
    if dv == v:
        return findings + _full_vocab(offsets)
    t2d_ok = t2d is not None and t2d.dtype == torch.bool and tuple(t2d.shape) == (v,) and int(t2d.sum()) == dv
    selected = torch.nonzero(t2d).squeeze(1) if t2d_ok and t2d is not None else None
    primary = _absolute_ids(offsets, selected, v, dv) or _defaults_never_replaced(offsets, t2d, v, dv)
    if primary:
        return findings + [primary]
    if t2d is not None:
        findings += _t2d_structure(t2d, v, dv)
    zero = _all_zero(offsets, selected, v, dv)
    if zero:
        return findings + [zero]
    targets = torch.arange(dv, dtype=torch.int64) + offsets
    findings += _range_and_uniqueness(offsets, targets, v)
    if selected is not None:
        findings += _t2d_agreement(selected, targets, dv)
    return findings


def _missing_map(t2d: torch.Tensor | None, v: int, dv: int) -> list[Finding]:
    if dv >= v:
        return []
    extra = ("t2d is present but engines read only d2t",) if t2d is not None else ()
    return [Finding(
        "missing-map",
        f"draft vocab {dv} < target vocab {v} but the checkpoint has no d2t: engines map draft "
        f"token i to target token i (the first {dv} ids); {ACCEPTANCE_NOTE}",
        (Evidence("d2t", "absent", f"int64 tensor of length {dv}"),),
        "save the d2t (and t2d) your data preparation built into model.safetensors, not a side file "
        "(NeMo Automodel#2447)",
        extra,
    )]


def _d2t_shape(d2t: torch.Tensor, dv: int) -> Finding | None:
    if d2t.dim() == 1 and d2t.shape[0] == dv:
        return None
    return Finding(
        "d2t-length",
        f"d2t has shape {list(d2t.shape)} but the draft vocab (lm_head rows) is {dv}",
        (Evidence("d2t.shape", str(list(d2t.shape)), f"[{dv}]"),),
        "rebuild d2t for this draft vocab size (a cached mapping for another size? SpecForge#602, "
        "speculators#1081)",
    )


def _full_vocab(offsets: torch.Tensor) -> list[Finding]:
    if not bool(offsets.any()):
        return []
    moved = int(offsets.ne(0).sum())
    return [Finding(
        "full-vocab-nonidentity",
        f"draft vocab equals target vocab but d2t moves {moved} tokens: draft token i is served as "
        f"target token i + d2t[i], a permutation the draft was not trained with",
        (Evidence("d2t (nonzero entries)", str(moved), "0 (identity; EAGLE#222)"),),
        "drop d2t/t2d for a full-vocab draft, or store zeros",
    )]


def _absolute_ids(offsets: torch.Tensor, selected: torch.Tensor | None, v: int, dv: int) -> Finding | None:
    import torch

    arange = torch.arange(dv, dtype=torch.int64)
    if selected is not None:
        # with one draft token the two readings coincide (d2t[0] = target id = offset)
        is_absolute = dv > 1 and bool(torch.equal(offsets, selected)) and not bool(torch.equal(selected, arange))
    else:
        targets = arange + offsets
        offsets_bad = bool(((targets < 0) | (targets >= v)).any()) or torch.unique(targets).numel() != dv
        absolute_fits = bool(((offsets >= 0) & (offsets < v)).all()) and torch.unique(offsets).numel() == dv
        is_absolute = (dv > 1 and bool(torch.equal(offsets, arange))) or (offsets_bad and absolute_fits)
    if not is_absolute:
        return None
    i = min(dv - 1, 1)
    return Finding(
        "absolute-ids",
        f"d2t holds absolute target ids, but engines read target = i + d2t[i]: draft token {i} "
        f"is served as target token {i + int(offsets[i])} instead of {int(offsets[i])}; {ACCEPTANCE_NOTE}",
        (Evidence("d2t[:6]", short(offsets[:6].tolist()),
                  short((offsets[:6] - arange[:6]).tolist()) + " (offsets)"),),
        OFFSETS_FIX + " (verl-SpeCo#67)",
    )


def _defaults_never_replaced(
    offsets: torch.Tensor, t2d: torch.Tensor | None, v: int, dv: int
) -> Finding | None:
    if t2d is None or t2d.dtype.is_floating_point or tuple(t2d.shape) != (v,) or not bool(t2d.all()):
        return None
    zero = not bool(offsets.any())
    return Finding(
        "defaults-never-replaced",
        f"t2d is all True ({v} ids) for a draft vocab of {dv}"
        + (" and d2t is all zero" if zero else "")
        + ": the trainer's default buffers were saved, no vocab mapping was ever loaded; "
        + ACCEPTANCE_NOTE,
        (Evidence("sum(t2d)", str(v), str(dv)),),
        "build the mapping from token frequencies (specforge process_token_dict_to_mappings / "
        "speculators build_vocab_mappings_from_distribution) and load it before training",
    )


def _all_zero(offsets: torch.Tensor, selected: torch.Tensor | None, v: int, dv: int) -> Finding | None:
    import torch

    if bool(offsets.any()):
        return None
    if selected is not None and bool(torch.equal(selected, torch.arange(dv, dtype=torch.int64))):
        return None  # the draft vocab really is the first dv ids
    return Finding(
        "all-zero",
        f"d2t is all zero with draft vocab {dv} < target vocab {v}: every draft token i is served "
        f"as target token i (the first {dv} ids); {ACCEPTANCE_NOTE}"
        + ("" if selected is not None else " (unless the draft vocab really is ids 0..draft_vocab_size-1: save t2d to say so)"),
        (Evidence("d2t", f"zeros({dv})",
                  "nonzero(t2d) - arange" if selected is not None else "offsets to the kept target ids"),),
        "save the d2t built from token frequencies (NeMo Automodel#2447, verl-SpeCo#66)",
    )


def _range_and_uniqueness(offsets: torch.Tensor, targets: torch.Tensor, v: int) -> list[Finding]:
    import torch

    findings = []
    bad = torch.nonzero((targets < 0) | (targets >= v)).squeeze(1)
    if bad.numel():
        examples = ", ".join(f"d2t[{int(i)}]={int(offsets[i])}->{int(targets[i])}" for i in bad[:4])
        findings.append(Finding(
            "out-of-range",
            f"{bad.numel()} draft tokens map outside the target vocab [0, {v}): the engine indexes "
            f"past its embedding (IndexError or garbage tokens)",
            (Evidence("i + d2t[i]", examples, f"0 <= target < {v}"),),
            "rebuild d2t for this target vocab (was it built for another tokenizer or vocab size?)",
        ))
    unique = torch.unique(targets)
    if unique.numel() != targets.numel():
        dup = targets.numel() - unique.numel()
        findings.append(Finding(
            "duplicate-targets",
            f"{dup} draft tokens map to a target token another draft token already maps to: those "
            f"draft logits are wasted and some kept target tokens are unreachable",
            (Evidence("unique(i + d2t[i])", str(unique.numel()), str(targets.numel())),),
            OFFSETS_FIX,
        ))
    return findings


def _t2d_structure(t2d: torch.Tensor, v: int, dv: int) -> list[Finding]:
    import torch

    if t2d.dtype != torch.bool:
        return [Finding("t2d-dtype", f"t2d is {t2d.dtype}, not bool",
                        (Evidence("t2d.dtype", str(t2d.dtype), "torch.bool"),), "save t2d as a bool mask")]
    if tuple(t2d.shape) != (v,):
        return [Finding("t2d-length", f"t2d has shape {list(t2d.shape)}, not [{v}] (the target vocab)",
                        (Evidence("t2d.shape", str(list(t2d.shape)), f"[{v}]"),),
                        "rebuild t2d for this target vocab")]
    marked = int(t2d.sum())
    if marked != dv:
        return [Finding("t2d-count", f"t2d marks {marked} target ids but the draft vocab is {dv}",
                        (Evidence("sum(t2d)", str(marked), str(dv)),),
                        "rebuild t2d and d2t together from one selection of target ids")]
    return []


def _t2d_agreement(selected: torch.Tensor, targets: torch.Tensor, dv: int) -> list[Finding]:
    import torch

    mapped = torch.unique(targets)
    if torch.equal(mapped, selected):
        return []
    missing = selected[~torch.isin(selected, mapped)]
    return [Finding(
        "t2d-mismatch",
        f"d2t and t2d disagree on {missing.numel()} of {dv} target ids: they were built from different "
        f"vocab selections (the data-prep bug), so lm_head rows and the map do not match",
        (Evidence("sorted(i + d2t[i])[:6]", short(mapped[:6].tolist()),
                  short(selected[:6].tolist()) + " = nonzero(t2d)"),),
        "rebuild both from the same selection: d2t = nonzero(t2d) - arange(draft_vocab_size)",
    )]
