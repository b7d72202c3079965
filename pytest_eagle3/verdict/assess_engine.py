"""The engine contracts: what one engine version will do with the draft, one area of its settled load plan each,
and the acceptance it is predicted to reach (``engine.acceptance``).

Each area fails with what the engine will do, the evidence, the fix and the plan itself; it is not run where the
target given is another model and would change the area's verdict, and not modelled where the profiles cannot
judge the area or its verdict depends on an undecided reading.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_eagle3.engines.plan import BORROWED
from pytest_eagle3.findings import Finding, check
from pytest_eagle3.verdict.assess import (
    NEEDS_TARGET,
    Assessment,
    Contract,
    NotRun,
    Unmeasured,
    WeightsMissing,
    not_modelled,
)
from pytest_eagle3.verdict.judgement import basis_of
from pytest_eagle3.words import plural

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.engines.plan_types import LoadPlan
    from pytest_eagle3.verdict.records import Forecast, TargetSide


@dataclasses.dataclass(frozen=True)
class Judged:
    """What every engine contract of one row reads: the engine version's verdict, the checkpoint, the target side
    and the run's acceptance bounds (``--eagle3-min-acceptance``, ``--eagle3-max-loss``)."""

    forecast: Forecast
    ckpt: Checkpoint
    side: TargetSide
    min_acceptance: float
    max_loss: float
    #: The engine version's display label (``vLLM 0.34.0``), as every message writes it.
    label: str
    #: Contract id -> why it is not modelled at a learned release (a behaviour it rests on changed); empty for a
    #: bundled release (``verdict.resting.not_carried``).
    not_carried: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def plan(self) -> LoadPlan:
        """The load plan of the engine version."""
        return self.forecast.plan


def bound(row: Judged, areas: Sequence[Callable[[Assessment, Judged], str]]) -> list[Contract]:
    """Each of ``areas`` judging ``row``: not modelled first where its contract rests on a behaviour a learned release
    does not carry over."""
    def judging(area: Callable[[Assessment, Judged], str]) -> Contract:
        def run(hand: Assessment) -> str:
            _carried(row, hand.contract)
            return area(hand, row)
        return run
    return [judging(area) for area in areas]


def _carried(row: Judged, contract: str) -> None:
    """Not modelled where the contract rests on a behaviour whose cited function changed in a learned release."""
    why = row.not_carried.get(contract)
    if why is not None:
        not_modelled(Finding("not-carried-over", why, fix=f"read the change and add a row for {row.plan.engine.spec} "
                                                          "(docs/development.md: adding a release)"))


def _judge(row: Judged, area: str, *, with_plan: bool = True, needs_class: bool = False) -> None:
    """Fail with the plan's findings for ``area``; not run where the target given is not this draft's and would
    change the area's verdict, or the engine builds no draft (unless it refuses the area first: vLLM's allowlist);
    not modelled where the profiles cannot judge it."""
    plan = row.plan
    if row.forecast.target_mismatch and area in row.forecast.target_areas:
        raise NotRun(f"not run: {row.forecast.target_mismatch}")
    if area != "architecture" and plan.draft_class is None and not plan.issues_for(area):
        raise NotRun(f"{row.label} does not build a draft from this config: see engine.architecture")
    if needs_class and plan.draft_class and not _key_map_modelled(plan.engine.engine, plan.draft_class):
        raise NotRun(f"the key map of {plan.draft_class} (MLA draft) is not simulated: the knowledge has no rows "
                     "for its parameters")
    findings = plan.issues_for(area)
    if findings and with_plan:
        first = findings[0]
        findings = [dataclasses.replace(first, details=(*first.details, *plan.describe())), *findings[1:]]
    check(findings)
    if area in plan.unknown:
        not_modelled(plan.unknown[area])


def _key_map_modelled(engine: str, draft_class: str) -> bool:
    """Whether the key map of ``draft_class`` is simulated: a Llama-layout class, or an MLA class whose own
    parameters, fused tensors and loader the knowledge holds (knowledge.draft_classes ``CLASSES``)."""
    from pytest_eagle3.knowledge.draft_classes import CLASSES

    return not draft_class.startswith("Eagle3Deepseek") or (engine, draft_class) in CLASSES


def _for_target(row: Judged, reason: str) -> NotRun:
    """Not run for want of the target: the mismatch when the target given is not this draft's, else ``reason``."""
    mismatch = row.forecast.target_mismatch
    return NotRun(f"not run: {mismatch}" if mismatch else reason)


def architecture(hand: Assessment, row: Judged) -> str:
    """The engine builds an EAGLE-3 draft class from this config format and architecture."""
    _judge(row, "architecture", with_plan=False)
    return f"{row.label} builds {row.plan.draft_class}"


def keys(hand: Assessment, row: Judged) -> str:
    """No checkpoint tensor dropped or refused, no engine parameter left uninitialised (unless the simulation shows
    the parameter's initial value costs nothing)."""
    plan = row.plan
    _judge(row, "keys", needs_class=True)
    loaded = sum(len(v) for v in plan.parameters.values())
    hand.measure(f"{plan.engine.test_id}.tensors_loaded", loaded)
    return (f"{row.label}: {plural(loaded, 'tensor')} into {plural(len(plan.parameters), 'parameter')}, none dropped, "
            + (plan.harmless or "none uninitialised"))


def vocab(hand: Assessment, row: Judged) -> str:
    """The engine reads the draft->target map the way it was written."""
    _judge(row, "vocab")
    return f"{row.label}: {row.plan.map_reading}"


def aux_layers(hand: Assessment, row: Judged) -> str:
    """The target layers the engine feeds are the layers the draft was trained on."""
    from pytest_eagle3.engines.plan_types import describe_inputs

    plan, aux = row.plan, row.plan.aux
    _judge(row, "aux_layers")
    if aux.captured is None:
        raise _for_target(row, f"{row.label} uses its default aux layers [2, L//2, L-3] or a rule that needs "
                               "the target's layer count: pass --eagle3-target=DIR")
    if aux.trained is None:
        raise NotRun(f"cannot tell which layers the draft was trained on ({aux.trained_from}): state the "
                     "convention with --eagle3-aux-convention=input-of|output-of, or pass --eagle3-target=DIR with "
                     "the target's weights (reference.convention measures it)")
    hand.measure(f"{plan.engine.test_id}.captured_inputs_of", list(aux.captured))
    other = ""
    if aux.other_mode is not None and aux.other_mode != aux.captured:
        other = f"; the other runtime mode would feed {describe_inputs(aux.other_mode)}"
    return (f"{row.label} feeds {describe_inputs(aux.captured)} = training{other}"
            + (f" ({plan.assumptions['aux_layers']})" if "aux_layers" in plan.assumptions else ""))


def fc(hand: Assessment, row: Judged) -> str:
    """The concatenation the target sends matches what fc was trained on; fc is not bypassed."""
    plan = row.plan
    _judge(row, "fc")
    if plan.fc.action == "unknown":
        raise _for_target(row, "how many states the target captures depends on its layer count and architecture: "
                               "pass --eagle3-target=DIR")
    return f"{row.label}: {plan.fc.states_sent} states, {plan.fc.width_sent} wide -> fc ({plan.fc.action})"


def norms(hand: Assessment, row: Judged) -> str:
    """The engine applies the norms the draft was trained with."""
    _judge(row, "norms")
    plan = row.plan
    return (f"{row.label}: " + ", ".join(f"{k}={v}" for k, v in plan.norms.items())
            + (f" ({plan.assumptions['norms']})" if "norms" in plan.assumptions else ""))


def embeddings(hand: Assessment, row: Judged) -> str:
    """embed_tokens and lm_head come from where the draft was trained with them."""
    _judge(row, "embeddings")
    plan = row.plan
    return f"{row.label}: embed_tokens from {plan.embed_tokens}, lm_head from {plan.lm_head}"


def layers(hand: Assessment, row: Judged) -> str:
    """The engine builds as many draft layers as the checkpoint has."""
    _judge(row, "layers")
    return f"{row.label}: {row.plan.draft_layers} draft layer(s)"


def geometry(hand: Assessment, row: Judged) -> str:
    """The attention the engine builds (heads, KV heads, head_dim as it derives them) fits the q/k/v/o tensors."""
    _judge(row, "geometry", needs_class=True)
    return f"{row.label}: q/k/v/o fit the heads and head_dim it derives"


def runtime(hand: Assessment, row: Judged) -> str:
    """Draft and target can run together: the draft's KV pages fit the engine's KV-cache manager, its position range
    covers the target's context, and its quantization, sliding window and dtype are the ones it was trained with
    (engines.runtime)."""
    from pytest_eagle3.engines.runtime import NOTE_PREFIX

    plan = row.plan
    _judge(row, "runtime")
    verdict = plan.runtime
    if verdict is None:
        raise _for_target(row, "the KV-cache check needs the target's attention geometry: pass --eagle3-target=DIR")
    if verdict.status == "unknown":
        not_modelled(Finding("runtime-unknown", f"{row.label}: {verdict.message}", fix="",
                             details=(f"rule: {verdict.source}",)))
    serving = [n.removeprefix(NOTE_PREFIX) for n in plan.notes if n.startswith(NOTE_PREFIX)]
    return f"{row.label}: {verdict.message}" + "".join(f"; {n}" for n in serving)


def producer(hand: Assessment, row: Judged) -> str:
    """What the producer trained with reaches the engine: fields it never reads, the rope it builds from the config,
    and the files beside the weights that its loader reads. A known difference nobody priced is a note (in the pass
    message and the report's ``notes`` property), never a failure (engines.plan_types.Assumed)."""
    plan = row.plan
    notes = plan.notes_for("producer")
    if notes:  # kept in the report whatever the contract's outcome
        hand.measure(f"{plan.engine.test_id}.notes", list(notes))
    _judge(row, "producer")
    fmt = row.ckpt.format
    extra = [n for n in plan.notes if "drops its" in n]
    lost = "lost at a known price" if notes else "lost"
    what = (f"nothing {fmt.label} is known to train with is {lost} (fields, rope, norms)" if fmt.producer != "unknown"
            else "producer unknown: only the files beside the weights are checked")
    priced = f"; {'; '.join(plan.priced)}" if plan.priced else ""
    return (f"{row.label}: {what}" + (f"; {'; '.join(extra)}" if extra else "") + priced
            + "".join(f"; {n}" for n in notes))


def _resting_on_borrowed(failed: Finding, borrowed: list[Finding]) -> Finding:
    """The not-judged finding of a failing prediction whose plan rests on rules borrowed from another engine (the
    plan's ``engines.plan.borrowed`` findings): whose rules, and what decides."""
    rests = "; ".join(b.summary.rpartition("; ")[2].removeprefix("this ") for b in borrowed)
    return Finding(
        BORROWED, f"not judged: {failed.summary}; the plan it predicts {rests}", failed.evidence, borrowed[0].fix,
        (*failed.details, *(d for b in borrowed for d in b.details if d.startswith("borrowed: "))),
        readings=borrowed[0].readings)


def acceptance(hand: Assessment, row: Judged) -> str:
    """The engine's predicted mean acceptance length reaches the minimum and loses at most --eagle3-max-loss against
    the draft as trained."""
    from pytest_eagle3.reference.prediction_findings import judged_findings, summary

    if row.side.path is None:
        raise NotRun(NEEDS_TARGET)
    forecast = row.forecast
    prediction = forecast.prediction
    if prediction is None and isinstance(forecast.no_prediction, WeightsMissing):
        raise Unmeasured(f"{hand.contract} {forecast.no_prediction}")
    if prediction is None:
        raise NotRun(f"{hand.contract} {forecast.no_prediction}")
    hand.prediction = prediction.to_json()
    hand.basis = basis_of(prediction.basis)
    if prediction.acceptance is None:
        raise NotRun(prediction.unavailable)
    findings, undecided = judged_findings(forecast.predictions, row.min_acceptance, row.max_loss)
    borrowed = [f for f in forecast.plan.unknown.values() if f.code == BORROWED]
    if findings and borrowed:  # the loss rests on a rule read in another engine: a reading, never a failure
        not_modelled(_resting_on_borrowed(findings[0], borrowed))
    check(findings)
    if undecided is not None:
        not_modelled(undecided)
    return summary(prediction)
