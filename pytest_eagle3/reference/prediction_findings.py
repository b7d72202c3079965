"""From a prediction to findings: an engine version that loses acceptance, and what each deviation costs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pytest_eagle3.findings import FAILS, PASSES, Evidence, Finding
from pytest_eagle3.reference.defaults import DEFAULT_MAX_LOSS
from pytest_eagle3.reference.predict import Deviation, Prediction

#: A deviation costing less than this (accepted tokens) is not named in a headline.
NAMED_COST = 0.005
#: Where the fix of an acceptance loss is printed: each deviation's own engine contract.
LOSS_FIX = "see the engine contracts that fail for the fix of each deviation"


def named_costs(deviations: Sequence[Deviation]) -> list[str]:
    """Each deviation that costs something, with its cost: ``"aux layers ...: -0.98"``."""
    return [f"{d.words}: {-d.cost:+.2f}" for d in deviations if abs(d.cost) >= NAMED_COST]


def summary(prediction: Prediction) -> str:
    """One line: the engine's predicted figure next to the as-trained one."""
    acc, trained = prediction.acceptance, prediction.training.acceptance
    if acc is None:
        return prediction.unavailable
    line = (f"{prediction.engine.label} will reach {acc.mean_acceptance_length:.2f} (per position "
            f"{list(acc.per_position)}); the draft as trained reaches {trained.mean_acceptance_length:.2f} "
            f"[{prediction.basis}]")
    if prediction.other_mode is not None:
        line += f"; in the other runtime mode {prediction.other_mode.mean_acceptance_length:.2f}"
    return line


def acceptance_findings(prediction: Prediction, minimum: float, max_loss: float = DEFAULT_MAX_LOSS) -> list[Finding]:
    """Fail below ``minimum``, or more than ``max_loss`` below the as-trained acceptance."""
    acc, training = prediction.acceptance, prediction.training
    if acc is None:
        return []
    predicted, trained = acc.mean_acceptance_length, training.acceptance.mean_acceptance_length
    loss = trained - predicted
    low, lossy = predicted < minimum, loss > max_loss
    if not (low or lossy):
        return []
    costs = named_costs(prediction.deviations)
    why = "; ".join(costs) if costs else "no single deviation explains it"
    if lossy:
        head = (f"{prediction.engine.label} will reach {predicted:.2f} mean acceptance length, "
                f"{loss:.2f} below the {trained:.2f} the draft reaches as trained: {why}")
    else:
        head = (f"{prediction.engine.label} will reach {predicted:.2f} mean acceptance length, below "
                f"{minimum:g}; the draft itself reaches only {trained:.2f} as trained: retrain it, or check "
                "--eagle3-target names its target")
    evidence = (
        Evidence("predicted mean acceptance length", f"{predicted:.2f} (per position {list(acc.per_position)})",
                 f">= {minimum:g} and >= {trained:.2f} - {max_loss:g}"),
        Evidence("as trained", f"{trained:.2f}", training.source),
    )
    details = [f"deviation from training, applied alone: {d.words}: {-d.cost:+.2f}" for d in prediction.deviations]
    details += list(prediction.notes)
    return [Finding("predicted-loss" if lossy else "predicted-low", head, evidence,
                    LOSS_FIX, tuple(details))]


def judged_findings(predictions: Mapping[str, Prediction], minimum: float,
                    max_loss: float = DEFAULT_MAX_LOSS) -> tuple[list[Finding], Finding | None]:
    """``acceptance_findings`` under each reading (label -> its prediction, the first the one reported):
    (findings, None) when every reading agrees, a failure under all of them saying "whatever the
    convention"; ([], the undecided finding) when they disagree."""
    judged = {label: acceptance_findings(p, minimum, max_loss) for label, p in predictions.items()}
    first = next(iter(judged.values()))
    if len(judged) == 1 or all(bool(f) == bool(first) for f in judged.values()):
        if first and len(judged) > 1:
            head = first[0]
            first = [dataclasses.replace(head, summary=f"{head.summary} (whatever the convention)",
                                         details=(*head.details, "judged under every plausible reading: "
                                                  + ", ".join(judged))), *first[1:]]
        return first, None
    said = [f"read as {label}: {summary(p)}" + (f" -> fails: {judged[label][0].summary}" if judged[label] else
                                                  " -> passes")
            for label, p in predictions.items()]
    engine = next(iter(predictions.values())).engine.label
    return [], Finding(
        "reading-undecided",
        f"{engine}: the predicted acceptance passes under one reading of the aux ids and fails under another, "
        "and the measurement does not decide between them",
        (Evidence("readings", ", ".join(f"{label}: {'fails' if f else 'passes'}" for label, f in judged.items()),
                  "the same verdict under every reading"),),
        f"state the convention with --eagle3-aux-convention={'|'.join(predictions)}",
        tuple(said),
        readings=tuple((label, FAILS if f else PASSES) for label, f in judged.items()),
    )
