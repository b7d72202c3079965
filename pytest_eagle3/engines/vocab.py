"""Area ``vocab``: the draft vocab the engine builds and how it maps draft ids to target ids.

A pure function of the fact sheet, the profile and the keys area's result (which tensors load, and
the d2t the loader found).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import LLAMA, BehaviourName, Snapshot
from pytest_eagle3.rules.vocab_map import ACCEPTANCE_NOTE
from pytest_eagle3.words import plural


@dataclass(frozen=True)
class VocabMap:
    """How the engine reads the map, and the effective draft -> target ids where they are known."""

    map_reading: str = ""
    draft_to_target: tuple[int, ...] | None = None
    filed: Filed = Filed()


def plan_vocab(sheet: FactSheet, snapshot: Snapshot, parameters: Mapping[str, object], d2t_name: str | None,
               draft_class: str | None = None) -> VocabMap:
    """The engine's reading of the draft -> target map (``parameters`` and ``d2t_name``: the keys area's;
    ``draft_class``: the architecture area's, whose family decides LMDeploy's map without d2t)."""
    out = Filing()
    draft_vocab, head_from_target = _draft_vocab(out, sheet, snapshot)
    if draft_vocab is None:
        return VocabMap(filed=out.filed())
    _lm_head_rows(out, sheet, snapshot, parameters, draft_vocab)
    full = draft_vocab == sheet.reference_vocab
    if d2t_name is None and snapshot.behaviours.d2t_absent == "zeros" and _llama_class(snapshot, draft_class):
        return VocabMap(_zero_map(out, snapshot, draft_vocab, full), (0,) * draft_vocab, out.filed())
    if d2t_name is None:
        reading = _no_map(out, snapshot, draft_vocab, sheet.vocab_size, full, head_from_target)
        return VocabMap(reading, None, out.filed())
    if full and snapshot.behaviours.d2t_full_vocab == "refused":
        out.refuse("vocab", Finding(
            "d2t-full-vocab",
            f"{snapshot.label} has no d2t parameter when draft_vocab_size == vocab_size ({draft_vocab}): loading the "
            "shipped d2t raises 'There is no module or parameter named draft_id_to_target_id'",
            (Evidence("d2t", f"present, {draft_vocab} entries", "absent (full vocab needs no map)"),),
            "drop d2t (and t2d) from the checkpoint: a full-vocab draft needs no map",
            (f"rule: {snapshot.source('d2t_full_vocab')}",),
        ))
        return VocabMap("refused", None, out.filed())
    if full and snapshot.behaviours.d2t_full_vocab == "ignored":
        out.note(f"draft_vocab_size == vocab_size ({draft_vocab}): {snapshot.label} builds no d2t and never reads the "
                 "shipped one (draft ids are target ids)")
        return VocabMap("no d2t parameter for a full vocab: draft ids are used as target ids", None, out.filed())
    if snapshot.behaviours.d2t_present == "discarded":
        if not full:
            out.refuse("vocab", Finding(
                "d2t-discarded",
                f"{snapshot.label} discards d2t after loading (the renamed key is never found), then compute_logits "
                f"asserts the draft's logits are vocab_size ({sheet.config.get('vocab_size')}) wide; they are "
                f"draft_vocab_size ({sheet.draft_vocab_size}) wide: AssertionError 'Expected logits to have shape' "
                "at the first draft step",
                (Evidence("d2t", "shipped", "applied as offsets"),),
                f"serve with {snapshot.serve_with('d2t_present', lambda v: v == 'offsets')}",
                (f"rule: {snapshot.source('d2t_present')}",),
            ))
        return VocabMap("d2t loaded then discarded: draft ids used as target ids", None, out.filed())
    d2t = sheet.contents.d2t(d2t_name)
    mapped = tuple(int(i + v) for i, v in enumerate(d2t)) if d2t is not None else None
    if mapped is not None and snapshot.behaviours.d2t_present == "offsets-checked":
        bad = _checked_map(mapped, sheet.vocab_size)
        if bad:
            out.refuse("vocab", Finding(
                "d2t-checked",
                f"{snapshot.label} turns d2t into absolute target ids at conversion and refuses the map: {bad}",
                (Evidence("i + d2t[i]", bad, "distinct ids below the target vocab size"),),
                "write d2t as offsets (target id - draft index), one distinct target id per draft token",
                (f"rule: {snapshot.source('d2t_present')}",),
            ))
            return VocabMap("refused", None, out.filed())
    return VocabMap("offsets: target = i + d2t[i]", mapped, out.filed())


def _draft_vocab(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> tuple[int | None, bool]:
    """The draft vocab the engine builds, and whether it borrows the target's lm_head; None when refused."""
    present, draft_vocab = sheet.draft_vocab_present, sheet.draft_vocab_size
    if snapshot.kind.loading.lm_head_rows_field == "vocab_size":  # draft_vocab_size never read (ATOM)
        return sheet.vocab_size, False
    if present and draft_vocab is not None:
        return (draft_vocab if isinstance(draft_vocab, int) else None), False
    behaviour: BehaviourName = "draft_vocab_size_missing" if not present else "draft_vocab_size_null"
    rule = snapshot.behaviours.draft_vocab_size_missing if not present else snapshot.behaviours.draft_vocab_size_null
    state = "absent" if not present else "null"
    if rule == "vocab_size-if-tied" and sheet.tie_word_embeddings:
        out.note(f"draft_vocab_size {state}, tie_word_embeddings: {snapshot.label} never reads it (lm_head = embed_tokens)")
        return sheet.vocab_size, False
    if rule in ("refused", "vocab_size-if-tied"):
        out.refuse("vocab", Finding(
            "draft-vocab-size",
            f"{snapshot.label} needs draft_vocab_size in the draft config; it is {state}: startup fails"
            + (" (AttributeError from the config)" if state == "absent" else ""),
            (Evidence("config.json draft_vocab_size", state, "the lm_head row count"),),
            "write draft_vocab_size (the lm_head rows) into config.json",
            (f"rule: {snapshot.source(behaviour)}",),
        ))
        return None, False
    head_from_target = rule == "target-lm_head"
    if head_from_target:
        out.note("draft_vocab_size: null -> the target's lm_head and embed are used")
    return sheet.vocab_size, head_from_target


def _lm_head_rows(out: Filing, sheet: FactSheet, snapshot: Snapshot, parameters: Mapping[str, object],
                  draft_vocab: int) -> None:
    lm_head = sheet.shapes.get("lm_head.weight")
    field = snapshot.kind.loading.lm_head_rows_field
    dropped = snapshot.kind.loading.load_errors_dropped
    if lm_head and lm_head[0] != draft_vocab and "lm_head.weight" in parameters and dropped is not None:
        out.lose("vocab", Finding(
            "lm-head-rows-dropped",
            f"{snapshot.label} builds lm_head with {field} ({draft_vocab}) rows; the checkpoint's has {lm_head[0]}: "
            f"loading it fails and {dropped}: every draft token is scored by garbage",
            (Evidence("lm_head.weight.shape[0]", str(lm_head[0]), f"{field} {draft_vocab}"),),
            f"serve a draft whose lm_head has {field} rows, or serve with "
            f"{snapshot.serve_with('d2t_present', lambda v: v == 'offsets')}",
            (f"rule: {snapshot.source('draft_vocab_size_missing')}",),
        ))
        return
    if lm_head and lm_head[0] != draft_vocab and "lm_head.weight" in parameters:
        out.refuse("vocab", Finding(
            "lm-head-rows",
            f"{snapshot.label} builds lm_head with {draft_vocab} rows; the checkpoint's has {lm_head[0]}: startup fails",
            (Evidence("lm_head.weight.shape[0]", str(lm_head[0]), f"draft_vocab_size {draft_vocab}"),),
            "make draft_vocab_size equal lm_head rows",
        ))


def _no_map(out: Filing, snapshot: Snapshot, draft_vocab: int, vocab: int | None, full: bool,
            head_from_target: bool) -> str:
    reading = "no d2t: draft ids are used as target ids"
    if full:
        return reading
    if snapshot.behaviours.d2t_absent == "crash":
        out.refuse("vocab", Finding(
            "d2t-missing-crash",
            f"{snapshot.label} needs d2t for a reduced draft vocab ({draft_vocab} of {vocab}): " + (
                snapshot.kind.loading.missing_d2t_error.format(vocab=vocab, draft_vocab=draft_vocab)
                if snapshot.kind.loading.missing_d2t_error is not None else
                "its d2t parameter is left unfilled: the strict load fails ('Missing parameters: d2t')"
                if snapshot.behaviours.unloaded_parameter == "refused" else
                "the map is set to None and compute_logits asserts the logits are vocab_size wide: AssertionError "
                "'Expected logits to have shape' at the first draft step"),
            (Evidence("d2t", "absent", f"{draft_vocab} offsets"),), "save d2t (offsets) with the draft",
            (f"rule: {snapshot.source('d2t_absent')}",),
        ))
    elif not head_from_target:
        out.lose("vocab", Finding(
            "d2t-missing",
            f"{snapshot.label} will use draft ids 0..{draft_vocab - 1} as target ids: the draft vocab is reduced "
            f"({draft_vocab} of {vocab}) and no d2t is shipped: {ACCEPTANCE_NOTE}",
            (Evidence("d2t", "absent", f"{draft_vocab} offsets (target = i + d2t[i])"),),
            "save d2t with the draft (build it from t2d: d2t = nonzero(t2d) - arange(draft_vocab_size))",
            (f"rule: {snapshot.source('d2t_absent')}",),
        ))
    return reading


def _llama_class(snapshot: Snapshot, draft_class: str | None) -> bool:
    """Whether the class built is of the Llama family (LMDeploy's MLA class starts its map from arange)."""
    klass = snapshot.draft_class(draft_class)
    return klass is None or klass.family == LLAMA


def _zero_map(out: Filing, snapshot: Snapshot, draft_vocab: int, full: bool) -> str:
    """LMDeploy keeps its all-zero draft_id_to_target_id when no d2t is shipped: every draft token is target 0."""
    kind = "a full-vocab draft" if full else f"a reduced draft vocab ({draft_vocab})"
    out.lose("vocab", Finding(
        "d2t-missing-zeros",
        f"{snapshot.label} maps every draft token through draft_id_to_target_id, which stays all zeros without a shipped "
        f"d2t ({kind}): every draft token becomes target id 0 and acceptance will be ~1.0",
        (Evidence("d2t", "absent", f"{draft_vocab} offsets (target = i + d2t[i]"
                  + ("; all zeros for a full vocab)" if full else ")")),),
        "save d2t with the draft" + (" (a full-vocab draft: d2t = zeros(vocab_size), the identity as offsets)" if full
                                     else " (build it from t2d: d2t = nonzero(t2d) - arange(draft_vocab_size))"),
        (f"rule: {snapshot.source('d2t_absent')}",),
    ))
    return "no d2t: draft_id_to_target_id stays all zeros (every draft token becomes target id 0)"
def _checked_map(mapped: tuple[int, ...], vocab: int | None) -> str | None:
    """Why a converter that checks the absolute map refuses it (an id out of range, a repeated id), or None."""
    out = [t for t in mapped if t < 0 or (vocab is not None and t >= vocab)]
    if out:
        return f"{plural(len(out), 'id')} outside 0..{vocab - 1 if vocab else '?'} (first {out[0]}): 'd2t target ids out of range'"
    if len(set(mapped)) != len(mapped):
        return f"{len(mapped) - len(set(mapped))} repeated ids: 'd2t contains duplicate target ids'"
    return None
