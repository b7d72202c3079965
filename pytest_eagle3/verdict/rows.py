"""A row's judgement: every contract of the table's ``any`` row, or of one engine version's row, judged once.

:func:`judgement` is the one place a judgement is made (the contract tests assert on it; ``check``, ``plan``,
``fix``'s proof, ``sweep`` and the shared pass render it). A row's contracts, their order and the function judging
each are the contract table's (``verdict.contract_table``). It reads the pipeline's steps and hands each contract a
record of what it reads (``assess_checkpoint.Checked``, ``assess_engine.Judged``), never the pipeline: the imports
run one way, rows -> assess_* -> pipeline -> records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pytest_eagle3.verdict import assess_checkpoint, assess_engine
from pytest_eagle3.verdict.assess import (
    SUBJECT_SEPARATOR,
    Assessment,
    Contract,
    NotModelled,
    NotRun,
    assess,
    require_config,
    require_tensors,
)
from pytest_eagle3.verdict.assess_checkpoint import Checked
from pytest_eagle3.verdict.assess_engine import Judged
from pytest_eagle3.verdict.contract_table import (
    CHECKPOINT,
    ENGINE,
    ESSENTIAL,
    ContractDefinition,
    id_of,
    of_scope,
)
from pytest_eagle3.verdict.judgement import (
    FAIL,
    NONE_SELECTED,
    NOT_JUDGED,
    NOT_MODELLED,
    NOT_RUN,
    PARTIAL,
    STATIC,
    UNMEASURED,
    ContractOutcome,
    Judgement,
    RowWord,
    Word,
)
from pytest_eagle3.verdict.records import TargetSide

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.engines.plan_types import LoadPlan
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict.pipeline import Pipeline


def judgement(pipeline: Pipeline, ckpt: Checkpoint, engine: EngineVersion | None,
              side: TargetSide = TargetSide()) -> Judgement:
    """Every contract's outcome for ``engine`` on ``ckpt`` (``engine`` None: the contracts that do not depend on an
    engine), computed once per run (``Pipeline.judgements``, keyed by the side as given): what the contract tests
    assert and every command renders."""
    key = (str(ckpt.path), engine, side)
    if key not in pipeline.judgements:
        pipeline.judgements[key] = (judge_checkpoint(pipeline, ckpt, side) if engine is None
                                    else judge_engine(pipeline, ckpt, engine, side))
    return pipeline.judgements[key]


def judge_checkpoint(pipeline: Pipeline, ckpt: Checkpoint, side: TargetSide) -> Judgement:
    """The contracts that do not depend on an engine (the table's ``any`` row), with the target side as given
    (normalised here: ``Pipeline.side_for``)."""
    from functools import partial

    side = pipeline.side_for(ckpt, side)
    s = pipeline.settings
    fails, measured = s.unknown_fails, s.measured_required
    row = Checked(ckpt, side, s.min_acceptance, pipeline.target_model, partial(pipeline.weight_health, ckpt),
                  partial(pipeline.reference, ckpt, side))
    contracts = of_scope(CHECKPOINT)
    runs = assess_checkpoint.bound(row, [_area(c) for c in contracts])
    outcomes = tuple(assess(c.id, ckpt.path, run, unknown_fails=fails, measured_required=measured and c.measures)
                     for c, run in zip(contracts, runs))
    return Judgement(ckpt.path, None, _format(ckpt), outcomes)


def judge_engine(pipeline: Pipeline, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide) -> Judgement:
    """The engine contracts of one engine version (its row), with the target side as given (the forecast
    normalises it and says which it used)."""
    fails, measured = pipeline.settings.unknown_fails, pipeline.settings.measured_required
    subject = f"{ckpt.path}{SUBJECT_SEPARATOR}{engine.spec}"
    contracts = of_scope(ENGINE)
    try:
        require_tensors(ckpt)
        require_config(ckpt)
    except NotRun as exc:  # no plan: every engine contract says why
        outcomes = tuple(ContractOutcome(c.id, NOT_RUN, str(exc)) for c in contracts)
        return Judgement(ckpt.path, engine, _format(ckpt), outcomes)
    if engine.unread:  # no rules of its own: every engine contract says which command reads it
        outcomes = tuple(assess(c.id, subject, _unread(engine.unread), unknown_fails=fails) for c in contracts)
        return Judgement(ckpt.path, engine, _format(ckpt), outcomes)
    forecast = pipeline.forecast(ckpt, engine, side)
    from pytest_eagle3.verdict.resting import not_carried

    row = Judged(forecast, ckpt, forecast.side, pipeline.settings.min_acceptance, pipeline.settings.max_loss,
                 forecast.plan.label, not_carried(engine))
    runs = assess_engine.bound(row, [_area(c) for c in contracts])
    outcomes = tuple(assess(c.id, subject, run, unknown_fails=fails, measured_required=measured and c.measures,
                            plan=forecast.plan) for c, run in zip(contracts, runs))
    if pipeline.at_floor(ckpt, forecast.side):  # the target comes first: no draft-side fix before it is the draft's
        return Judgement(ckpt.path, engine, _format(ckpt), target_first(outcomes))
    return Judgement(ckpt.path, engine, _format(ckpt), with_causes(outcomes, forecast.plan))


def _area(contract: ContractDefinition) -> Callable[[Assessment, Any], str]:
    assert contract.area is not None, f"{contract.id} is judged by its test, not in a row"
    return contract.area


def _unread(why: str) -> Contract:
    def run(hand: Assessment) -> str:
        from pytest_eagle3.findings import Finding

        fix = why.rpartition("read it first: ")[2]
        raise NotModelled(Finding("release-not-read", why, fix=f"run {fix}, then run again"))
    return run


#: The root cause of a row whose draft accepts nothing on the target under any reading (``Pipeline.at_floor``).
TARGET_FIRST = ("reference.acceptance [low-acceptance]: the draft accepts nothing on this target under any reading: "
                "check that --eagle3-target names the model it was trained for, or retrain it; no draft edit is "
                "advised until it does")


def target_first(outcomes: tuple[ContractOutcome, ...]) -> tuple[ContractOutcome, ...]:
    """Every failing engine contract as a consequence of the target (the root cause names it), its draft-side fixes
    silenced: an edit of the draft cannot help a draft that accepts nothing on the target it is judged with."""
    import dataclasses

    cause = TARGET_FIRST.split(":")[0]
    out = []
    for outcome in outcomes:
        if outcome.status != FAIL:
            out.append(dataclasses.replace(outcome, root_cause=TARGET_FIRST))
            continue
        findings = tuple(dataclasses.replace(f, fix="") for f in outcome.findings)
        out.append(dataclasses.replace(outcome, findings=findings, consequence_of=cause, root_cause=TARGET_FIRST))
    return tuple(out)


def with_causes(outcomes: tuple[ContractOutcome, ...], plan: LoadPlan) -> tuple[ContractOutcome, ...]:
    """The row's root cause on each outcome, and on each failing contract that only follows from another area's
    finding, which one (``engines.plan_types.root_causes``; the predicted loss follows from the plan's first cause)."""
    import dataclasses

    failing = {o.contract for o in outcomes if o.status == FAIL}
    causes = [c for c in plan.causes if f"engine.{c.area}" in failing]
    if len(failing) < 2 or not causes:
        return outcomes
    root = causes[0]
    named = {(c.area, c.code): c for c in causes}
    explained = {pair: f"engine.{c.area} [{c.code}]" for c in causes for pair in c.consequences}
    words = f"engine.{root.area} [{root.code}]: {root.summary}"
    out = []
    for outcome in outcomes:
        cause = ""
        if outcome.status == FAIL and outcome.contract == id_of(assess_engine.acceptance):
            cause = f"engine.{root.area} [{root.code}]"  # the prediction prices the plan's losses
        elif outcome.status == FAIL:
            pairs = {(outcome.contract.removeprefix("engine."), f.code) for f in outcome.findings}
            if pairs and all(p in explained and p not in named for p in pairs):
                cause = explained[next(iter(pairs))]
        out.append(dataclasses.replace(outcome, consequence_of=cause, root_cause=words))
    return tuple(out)


def word_of(checkpoint_row: Sequence[ContractOutcome], engine_row: Sequence[ContractOutcome] | None = None) -> RowWord:
    """A row's word and its reasons, from its outcomes: the ``any`` row's (``checkpoint_row``, which count against
    every engine) and, for an engine version's row, its own (``engine_row``), each in the report's order. The one
    place the word is made: the report, the summary, ``check``, ``plan``, ``sweep`` and ``fix``'s proof read it."""
    own = tuple(engine_row or ())
    table = (*checkpoint_row, *own)
    failing = tuple(o.contract for o in table if o.status == FAIL)
    skipped = [o for o in table if o.skipped]
    not_run = tuple((o.contract, o.message) for o in skipped) if table else (("*", NONE_SELECTED),)
    unmeasured = tuple(o.contract for o in skipped if o.status == UNMEASURED)
    by_id = {o.contract: o for o in own}
    not_judged = tuple(c for c in ESSENTIAL if c in by_id and by_id[c].skipped and by_id[c].status != UNMEASURED)
    unread = bool(own) and all(o.status == NOT_MODELLED for o in own)  # a release nobody read: NOT JUDGED
    word: Word = ("fail" if failing else "not run" if len(skipped) == len(table) and not unread
                  else NOT_JUDGED if not_judged else PARTIAL if any(o.status != UNMEASURED for o in skipped)
                  else STATIC if skipped else "pass")
    return RowWord(word, failing, not_judged, not_run, unmeasured)


def _format(ckpt: Checkpoint) -> str:
    return ckpt.format.label if ckpt.tensors else ""
