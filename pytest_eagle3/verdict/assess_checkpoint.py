"""The contracts that do not depend on an engine: readable files, the config, the producer's layout, shapes, the
target, the vocab map, the weights and the reference acceptance (the table's ``any`` row)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_eagle3.findings import ASSUMED, MEASURED, ContractViolation, Evidence, Finding, check
from pytest_eagle3.verdict.assess import (
    NEEDS_TARGET,
    Assessment,
    Contract,
    NotRun,
    Unmeasured,
    WeightsMissing,
    not_modelled,
    readability_findings,
    require_config,
    require_draft,
    require_tensors,
)
from pytest_eagle3.words import plural

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.reference.readings import ReferenceResult
    from pytest_eagle3.rules.weights import TensorHealth
    from pytest_eagle3.verdict.records import TargetSide


@dataclass(frozen=True)
class Checked:
    """What every contract of the ``any`` row reads: the checkpoint, the target side, the acceptance minimum, and
    the run's shared measurements, each computed when a contract first asks (the pipeline's caches: the target
    opened once, one weight scan, one reference run; each raises or returns why it cannot run)."""

    ckpt: Checkpoint
    side: TargetSide
    min_acceptance: float
    #: The target at a path as opened (``problem`` set when it cannot be read).
    target_model: Callable[[str], TargetModel]
    #: The weight scan of ``ckpt`` (raises ``NotRun`` when the files are damaged or the weights stayed on the Hub).
    weight_health: Callable[[], list[TensorHealth]]
    #: The measured reference, the finding that says why its inputs are wrong, or why it cannot run here.
    reference: Callable[[], ReferenceResult | Finding | str]


def bound(row: Checked, areas: Sequence[Callable[[Assessment, Checked], str]]) -> list[Contract]:
    """Each of ``areas`` judging ``row``."""
    def judging(area: Callable[[Assessment, Checked], str]) -> Contract:
        return lambda hand: area(hand, row)
    return [judging(area) for area in areas]


def files_readable(hand: Assessment, row: Checked) -> str:
    """Every weight file parses, every tensor's bytes are where its header says."""
    hand.measure("tensor_count", len(row.ckpt.tensors))
    hand.measure("weight_bytes", row.ckpt.nbytes)
    check(readability_findings(row.ckpt))
    ckpt = row.ckpt
    return f"{plural(len(ckpt.tensors), 'tensor')} in {plural(len(ckpt.files), 'file')}, {ckpt.nbytes} bytes"


def config_parseable(hand: Assessment, row: Checked) -> str:
    """config.json is a JSON object with the fields every engine needs."""
    from pytest_eagle3.rules.shapes import config_findings

    check(config_findings(row.ckpt))
    cfg = row.ckpt.config
    return f"hidden {cfg.hidden_size}, vocab {cfg.vocab_size}, draft vocab {cfg.draft_vocab_size}"


def format_detected(hand: Assessment, row: Checked) -> str:
    """The producer is recognised, so its aux-layer convention and defaults are known; a layout no producer's matches
    whose first decoder layer engines load passes as unrecognised, with a note (``rules.shapes.unrecognised_note``)."""
    from pytest_eagle3.producers.habits import beside_weights
    from pytest_eagle3.rules.shapes import format_findings, unrecognised_note

    require_tensors(row.ckpt)
    require_config(row.ckpt)
    fmt, aux = row.ckpt.format, row.ckpt.config.aux
    hand.measure("format", fmt.label)
    hand.measure("aux_layer_ids", list(aux.ids) if aux.ids else "unset")
    hand.measure("aux_convention", aux.convention or "unknown")
    if fmt.producer == "unknown" and fmt.evidence:
        raise NotRun("a layout several producers share: " + "; ".join(fmt.evidence) + " (the reference measurement "
                     "with --eagle3-target=DIR decides the convention, or state it with --eagle3-aux-convention)")
    note = unrecognised_note(row.ckpt)  # a layout engines load is never failed for want of a producer
    if note is None:
        check(format_findings(row.ckpt))
    extra = beside_weights(row.ckpt.source.listing(row.ckpt.root), row.ckpt.files, fmt.producer)
    hand.measure("files_beside_weights", extra)
    beside = f"; beside the weights: {', '.join(extra)}" if extra else ""
    return f"{note or fmt.label + ': ' + '; '.join(fmt.evidence)}{beside}"


def shapes_match_config(hand: Assessment, row: Checked) -> str:
    """lm_head rows = draft vocab, fc = aux count x target hidden, q/k/v take 2 x hidden, norms present; what the
    rule does not model (packed quantized weights, a family it does not know) is not modelled, never failed."""
    from pytest_eagle3.rules.shapes import shape_findings, shape_unmodelled

    require_tensors(row.ckpt)
    require_config(row.ckpt)
    require_draft(row.ckpt)
    check(shape_findings(row.ckpt))
    for finding in shape_unmodelled(row.ckpt):
        not_modelled(finding)
    cfg = row.ckpt.config
    return f"{cfg.layer_count} draft layer(s), first at {cfg.first_layer_prefix}*, shapes agree"


def consistent_with_target(hand: Assessment, row: Checked) -> str:
    """Vocab, hidden size and aux ids fit the target model."""
    from pytest_eagle3.rules.shapes import target_findings

    if row.side.path is None:
        raise NotRun(NEEDS_TARGET)
    model = row.target_model(row.side.path)
    require_config(row.ckpt)
    require_draft(row.ckpt)
    check(target_findings(row.ckpt, model))
    return f"fits target {model.path} ({model.num_hidden_layers} layers)"


def vocab_map(hand: Assessment, row: Checked) -> str:
    """The draft->target token map is what engines expect: ``d2t`` holds offsets (target = i + d2t[i]), in range,
    unique, int64, one per draft token, and agrees with ``t2d`` when both are saved."""
    from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError
    from pytest_eagle3.rules.exports import export_findings
    from pytest_eagle3.rules.vocab_map import diagnose_vocab_map

    require_tensors(row.ckpt)
    require_config(row.ckpt)
    cfg = row.ckpt.config
    lm_head = row.ckpt.shape("lm_head.weight")
    draft_vocab = cfg.draft_vocab_size or (lm_head[0] if lm_head else None)
    if cfg.vocab_size is None or draft_vocab is None:
        raise NotRun("config.json gives no vocab_size / draft_vocab_size: see config.parseable")
    hand.measure("vocab_size", cfg.vocab_size)
    hand.measure("draft_vocab_size", draft_vocab)
    try:
        d2t = row.ckpt.read("d2t") if "d2t" in row.ckpt.tensors else None
        t2d = row.ckpt.read("t2d") if "t2d" in row.ckpt.tensors else None
    except CheckpointReadError as exc:
        raise ContractViolation([Finding("unreadable-map", f"d2t/t2d cannot be read: {exc}",
                                         (Evidence("d2t/t2d", str(exc), "readable tensors"),),
                                         "re-export the checkpoint")]) from exc
    check(diagnose_vocab_map(d2t, t2d, cfg.vocab_size, draft_vocab)
          + export_findings(row.ckpt, cfg.vocab_size, draft_vocab))
    if d2t is None:
        return f"full vocab ({cfg.vocab_size}), no map needed"
    return (f"d2t: {draft_vocab} offsets into vocab {cfg.vocab_size}, in range and unique"
            + (", agrees with t2d" if t2d is not None else ""))


def weights_finite(hand: Assessment, row: Checked) -> str:
    """No NaN or Inf anywhere (speculators saves NaN lm_head/embed before verifier weights load); packed quantized
    weights the scan cannot read are not modelled."""
    from pytest_eagle3.rules.weights import diagnose_finite, unmodelled_findings

    health = row.weight_health()
    hand.measure("nonfinite_values", sum(h.nan + h.inf for h in health))
    check(diagnose_finite(health, row.ckpt.format.producer))
    for finding in unmodelled_findings(health):
        not_modelled(finding)
    return f"{len(health)} float tensors finite"


def weights_initialised(hand: Assessment, row: Checked) -> str:
    """No tensor all zero, no weight matrix holding one repeated value."""
    from pytest_eagle3.rules.weights import diagnose_initialised, unmodelled_findings

    health = row.weight_health()
    check(diagnose_initialised(health))
    for finding in unmodelled_findings(health):
        not_modelled(finding)
    return f"{len(health)} float tensors hold varied values"


def reference_acceptance(hand: Assessment, row: Checked) -> str:
    """Mean acceptance length (greedy, k draft steps, bonus token counted) reaches the minimum."""
    from pytest_eagle3.reference.readings import acceptance_findings, summary

    reference = row.reference()
    if isinstance(reference, WeightsMissing):
        raise Unmeasured(reference)
    if isinstance(reference, str):
        raise NotRun(reference)
    if isinstance(reference, Finding):
        raise ContractViolation([reference])
    data = reference.to_json()
    hand.reference = data
    hand.measure("reference_mean_acceptance_length", data["mean_acceptance_length"])
    hand.measure("reference_per_position", data["per_position"])
    hand.measure("reference_convention", data["convention"])
    check(acceptance_findings(reference, row.min_acceptance))
    return summary(reference)


def reference_convention(hand: Assessment, row: Checked) -> str:
    """The aux-id convention and d2t reading the config declares are the ones the draft was trained with."""
    from pytest_eagle3.reference.evidence import decide

    reference = row.reference()
    if isinstance(reference, WeightsMissing):
        raise Unmeasured(reference)
    if isinstance(reference, str):
        raise NotRun(reference)
    if isinstance(reference, Finding):
        raise NotRun(f"no reference measured: {reference.summary}")
    best = reference.inference.best
    decision = decide(reference.inference.results)
    hand.measure("reference_inferred", best.reading.label)
    hand.measure("reference_margin", round(reference.inference.margin, 4))
    hand.basis = MEASURED if decision.confirmed else ASSUMED
    declared = reference.inference.declared
    if not decision.confirmed:
        return f"{decision.words}; every verdict keeps its assumption (basis: assumed)"
    if declared is None:
        return f"nothing declared; measured {decision.words}"
    if best is declared:
        return f"declared {declared.reading.label} confirmed: {decision.words}"
    return (f"config declares {declared.reading.label} ({declared.mean_acceptance_length:.2f}) but the measurement "
            f"settles it: {decision.words}; every engine contract judges against the measured reading (basis: measured)")
