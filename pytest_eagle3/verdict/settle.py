"""A fix is proven before it is printed: apply the config edit to a copy, re-plan every selected
engine version, simulate, and keep the edit only when the failing engine reaches the draft's
as-trained acceptance and no other engine loses.

Candidate edits for one failing engine: the ids written into each field that engine reads, in the
order it reads them (a field read first by this engine and ignored by the others changes nothing
elsewhere, e.g. vLLM's top-level ``eagle_aux_hidden_state_layer_ids``, which SGLang never reads).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.knowledge.llamacpp_builds import CONVERT_COMMAND
from pytest_eagle3.reference.evidence import WEAK, standard_error

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.plan import LoadPlan, Measured
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.reference.predict import DraftPredictor

#: An engine "loses" under an edit when its prediction drops by more than this (accepted tokens).
TOLERANCE = 0.05


@dataclass(frozen=True)
class Settling:
    """What settling a plan reads: the draft's predictor (the simulation), the checkpoint and the target the plans
    are built with, every selected engine version (a proven fix costs none of them), the aux-id convention the
    option gives, the measured training layers, and ``--eagle3-max-loss``."""

    predictor: DraftPredictor
    ckpt: Checkpoint
    target: TargetModel | None
    engines: Sequence[EngineVersion]
    convention: str | None
    measured: Measured | None
    max_loss: float

    def plan_for(self, ckpt: Checkpoint, engine: EngineVersion) -> LoadPlan:
        """``engine``'s load plan of ``ckpt`` (the checkpoint or an edited copy) with this target and readings."""
        from pytest_eagle3.engines.plan import load_plan

        return load_plan(ckpt, engine, self.target, self.convention, self.measured)


@dataclass(frozen=True)
class Proof:
    """An edit, the failing engine's predicted figure under it, and whether it is the best reading."""

    edit: tuple[tuple[str, Any], ...]
    predicted: float | None
    best: float
    ok: bool
    others: tuple[tuple[str, float | None, float | None], ...] = ()
    #: The failing engine's figure before the edit: a proven edit beats it.
    current: float | None = None

    @property
    def text(self) -> str:
        """The config edit this proof made, in words."""
        parts = [f"write {json.dumps(list(v) if isinstance(v, tuple) else v)} into {f}" for f, v in self.edit]
        return " and ".join(parts)


def config_with(raw: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``raw`` with the dotted ``field`` set to ``value`` (lists for tuples)."""
    out = copy.deepcopy(raw)
    scope = out
    parts = field.split(".")
    for part in parts[:-1]:
        scope = scope.setdefault(part, {})
    scope[parts[-1]] = list(value) if isinstance(value, tuple) else value
    return out


def edited_copy(ckpt: Checkpoint, raw: dict[str, Any]) -> Checkpoint:
    """The checkpoint with another config.json: a temporary folder linking the same weight files."""
    from pytest_eagle3.checkpoint import Checkpoint

    folder = Path(tempfile.mkdtemp(prefix="eagle3-fix-"))
    for item in ckpt.root.iterdir():
        if item.name != "config.json":
            (folder / item.name).symlink_to(item.resolve())
    (folder / "config.json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return Checkpoint.open(folder)


def _figure(predictor: DraftPredictor, plan: LoadPlan) -> float | None:
    """The prediction, the worse of the two runtime modes where the plan has two."""
    prediction = predictor.predict(plan)
    figures = [a.mean_acceptance_length for a in (prediction.acceptance, prediction.other_mode) if a is not None]
    return min(figures) if prediction.acceptance is not None else None


def _pins(ckpt: Checkpoint, plans: dict[str, LoadPlan], failing: EngineVersion, fields: Sequence[str]) -> dict[str, Any]:
    """Fields that keep every other engine reading what it reads now: its first id field, when the
    failing engine does not read it, set to the ids it uses as-is today."""
    from pytest_eagle3.knowledge.snapshot import snapshot_of

    pins: dict[str, Any] = {}
    for spec, plan in plans.items():
        snapshot = snapshot_of(plan.engine)
        own = snapshot.behaviours.aux_id_fields or ()
        # a field the engine shifts (its own +1) takes no pin: the ids there are not the ids it uses
        if spec == failing.spec or not own or own[0].shift or own[0].path in fields or plan.aux.captured is None:
            continue
        as_written = plan.aux.configured if plan.aux.field and not plan.aux.field.shift else None
        if as_written is None and str(snapshot.behaviours.aux_transform_llama) != "as-is":
            continue
        pins[own[0].path] = tuple(as_written) if as_written else tuple(plan.aux.captured)
    return pins


def prove_aux_fix(settling: Settling, failing: EngineVersion, ids: Sequence[int]) -> Proof | None:
    """The first field of ``failing``'s aux-id fields whose edit wins without hurting another engine;
    then the first field with the other engines' ids pinned where they read first."""
    from pytest_eagle3.knowledge.snapshot import snapshot_of

    ckpt = settling.ckpt
    plans = {e.spec: settling.plan_for(ckpt, e) for e in settling.engines}
    # a fix writes ids as the engine uses them: into the fields it reads without its own +1
    fields = tuple(f.path for f in snapshot_of(failing).behaviours.aux_id_fields or () if not f.shift)
    pins = _pins(ckpt, plans, failing, fields)
    candidates = [{f: tuple(ids)} for f in fields] + ([{fields[0]: tuple(ids), **pins}] if pins and fields else [])
    return prove_edits(settling, failing, candidates)


def prove_edits(settling: Settling, failing: EngineVersion, candidates: Sequence[dict[str, Any]]) -> Proof | None:
    """The first config edit under which ``failing`` reaches the as-trained figure and no engine loses."""
    ckpt, predictor, engines = settling.ckpt, settling.predictor, settling.engines
    training = predictor.training.acceptance
    best = training.mean_acceptance_length
    floor = best - max(TOLERANCE, 3 * standard_error(training))
    before = {e.spec: _figure(predictor, settling.plan_for(ckpt, e)) for e in engines}
    last: Proof | None = None
    for edit in candidates:
        raw = ckpt.config_raw or {}
        for field, value in edit.items():
            raw = config_with(raw, field, value)
        copy_ = edited_copy(ckpt, raw)
        after = {e.spec: _figure(predictor, settling.plan_for(copy_, e)) for e in engines}
        predicted = after.get(failing.spec)
        others = tuple((spec, before[spec], after[spec]) for spec in before if spec != failing.spec)
        hurt = any(b is not None and (a is None or a < b - TOLERANCE) for _, b, a in others)
        current = before.get(failing.spec)
        beats = predicted is not None and (current is None or predicted > current + TOLERANCE)
        ok = predicted is not None and predicted >= floor and beats and not hurt
        last = Proof(tuple(edit.items()), predicted, best, ok, others, current)
        if ok:
            return last
    return last


def proven_fix_text(proof: Proof | None, engine_label: str) -> str | None:
    """The fix line with its predicted figure, or None when no edit is proven."""
    if proof is None or not proof.ok or proof.predicted is None:
        return None
    return f"{proof.text} (for {engine_label}): predicted {proof.predicted:.2f}"


def unproven_fix_text(proof: Proof | None, best: float) -> str:
    """What to say when no edit is proven: the measurement cannot tell, or every edit loses."""
    if proof is not None and proof.predicted is not None and best - 1.0 <= TOLERANCE:
        return (f"{proof.text} (assumed, not proven: the draft reaches only {best:.2f} as trained, too weak "
                "for the measurement to tell which layers it was trained on)")
    got = "none" if proof is None or proof.predicted is None else f"{proof.predicted:.2f}"
    return (f"no config edit is proven: the simulated edit reaches {got} against {best:.2f} as trained, or "
            "costs another engine; serve with an engine version that feeds the trained layers")


#: Per provable area: the plan area and finding code whose fix is a config edit.
PROVABLE = {"aux": ("aux_layers", "aux-layers"), "norms": ("norms", "norm-flag"),
            "rope": ("producer", "rope-trained")}


def pending_edit(plan: LoadPlan, area: str) -> tuple[tuple[Any, ...], list[Any]] | None:
    """The config edit the rules propose for ``area`` ('aux', 'norms' or 'rope') and the issues it would
    fix, or None when there is nothing left to prove."""
    plan_area, code = PROVABLE[area]
    issues = [i for i in plan.issues if i.area == plan_area and i.finding.code == code]
    edit: Any
    if area == "aux":
        edit = plan.aux.fix_edit
    elif area == "norms":
        edit = ("norms", tuple(plan.norm_edits.items())) if plan.norm_edits else None
    else:
        edit = ("rope", tuple(plan.rope_edit.items())) if plan.rope_edit else None
    if edit is None or not issues or area in plan.proven:
        return None
    return edit, issues


def prove_plan_fixes(plan: LoadPlan, area: str, settling: Settling) -> LoadPlan:
    """A new plan whose ``area`` findings carry the proven fix ('...: predicted 3.80'), or say that none is
    proven; ``plan`` itself when nothing is pending."""
    pending = pending_edit(plan, area)
    if pending is None:
        return plan
    (_, value), issues = pending
    if area == "aux":
        proof = prove_aux_fix(settling, plan.engine, value)
    else:
        proof = prove_edits(settling, plan.engine, [dict(value)])
    text = proven_fix_text(proof, plan.label)
    if text is None:
        text = unproven_fix_text(proof, settling.predictor.training.acceptance.mean_acceptance_length)
    elif plan.engine.kind.serving.converts_checkpoint:  # a config edit reaches llama.cpp through its converter
        text += "; then convert: " + CONVERT_COMMAND.format(draft="DRAFT", target="TARGET", gguf="DRAFT.gguf")
    fixed = tuple(dataclasses.replace(i, finding=dataclasses.replace(i.finding, fix=text)) if i in issues else i
                  for i in plan.issues)
    return dataclasses.replace(plan, issues=fixed, proven=plan.proven | {area})


def drop_harmless_uninitialised(plan: LoadPlan, predictor: DraftPredictor, max_loss: float) -> LoadPlan:
    """A new plan without the 'uninitialised' key findings when simulating those parameters at their initial
    values costs at most ``max_loss`` (evidence overrules the assumption that any is fatal), saying in
    ``harmless`` what was dropped; ``plan`` itself otherwise."""
    keys = [i for i in plan.issues if i.area == "keys"]
    if not keys or any(i.finding.code != "uninitialised" for i in keys):
        return plan
    prediction = predictor.predict(plan)
    cost = next((d.cost for d in prediction.deviations if d.field == "uninitialised"), None)
    if prediction.acceptance is None or cost is None or cost > max_loss:
        return plan
    harmless = f"{', '.join(plan.uninitialised)} left at {plan.label}'s init: simulated cost {cost:.2f} (measured)"
    return dataclasses.replace(plan, issues=tuple(i for i in plan.issues if i not in keys), harmless=harmless)


def price_deviations(plan: LoadPlan, predictor: DraftPredictor, max_loss: float) -> LoadPlan:
    """A new plan whose assumed losses (``plan.assumed``) the simulation priced: the draft run with and without
    each deviation (``Prediction.deviations``, each applied alone to the draft as trained). One costing more
    than ``max_loss`` becomes a loss with its figure; a cheaper one a note in ``priced``; one the simulation
    cannot model (or a plan it cannot run, or a draft too weak to price with: ``evidence.WEAK``) stays
    assumed (a note where the habit is known to apply, never a failure). ``plan`` itself when nothing is
    assumed."""
    from pytest_eagle3.engines.issue import LOSS, Issue

    if not plan.assumed:
        return plan
    prediction = predictor.predict(plan)
    if prediction.acceptance is None:
        return plan
    trained = prediction.training.acceptance.mean_acceptance_length
    if trained < WEAK:
        why = f"too weak to price: {trained:.2f} as trained, below {WEAK:g}"
        return plan.with_assumed([dataclasses.replace(a, why=why) for a in plan.assumed])
    costs = {d.field: d for d in prediction.deviations}
    basis = prediction.basis
    issues, priced, left = list(plan.issues), list(plan.priced), []
    for item in plan.assumed:
        if item.deviation is None:
            left.append(item)
            continue
        found = costs.get(item.deviation)
        cost = found.cost if found is not None else 0.0
        figure = (f"priced by simulation: it alone costs {cost:.2f} accepted tokens against {trained:.2f} as trained "
                  f"(aux layers {basis})")
        finding = item.finding
        if cost > max_loss:
            summary = finding.summary.removeprefix("assumed: ")
            issues.append(Issue(item.area, LOSS, dataclasses.replace(
                finding, summary=f"{summary}; {figure}",
                details=(*finding.details, f"deviation: {found.words if found else item.deviation}",
                         f"--eagle3-max-loss {max_loss:g}"))))
        else:
            priced.append(f"{finding.code}: {figure}, within --eagle3-max-loss {max_loss:g}")
    return dataclasses.replace(plan, issues=tuple(issues), priced=tuple(priced)).with_assumed(left)


def price_recorded(plan: LoadPlan, max_loss: float) -> LoadPlan:
    """A new plan whose assumed deviations with a recorded cost (``Assumed.recorded``, ``knowledge.costs``) are
    priced by it: one costing more than ``max_loss`` becomes a loss with its figure and experiment where the habit
    is known to apply; a cheaper one a note in ``priced``. Runs after the simulation (which overrules it: what it
    priced is no longer assumed). ``plan`` itself when nothing recorded applies."""
    from pytest_eagle3.engines.issue import LOSS, Issue

    if not any(a.recorded is not None for a in plan.assumed):
        return plan
    issues, priced, left = list(plan.issues), list(plan.priced), []
    for item in plan.assumed:
        recorded, finding = item.recorded, item.finding
        if recorded is None or (recorded.cost > max_loss and not item.known):
            left.append(item)
            continue
        figure = f"priced at {recorded.words}"
        if recorded.cost > max_loss:
            summary = finding.summary.removeprefix("assumed: ")
            issues.append(Issue(item.area, LOSS, dataclasses.replace(
                finding, summary=f"{summary}; {figure}",
                details=(*finding.details, f"recorded: {recorded.figures}", f"--eagle3-max-loss {max_loss:g}"))))
        else:
            priced.append(f"{finding.code}: {figure}, within --eagle3-max-loss {max_loss:g}")
    return dataclasses.replace(plan, issues=tuple(issues), priced=tuple(priced)).with_assumed(left)


def settle(plan: LoadPlan, settling: Settling) -> LoadPlan:
    """The plan as every contract reads it: each assumed loss priced by simulation (else by a recorded cost), each
    provable config fix proven by simulation, and the 'uninitialised' findings the simulation shows harmless
    dropped. Computed once, where the plan is built; a new plan, never an edit of ``plan``."""
    predictor, max_loss = settling.predictor, settling.max_loss
    plan = price_recorded(price_deviations(plan, predictor, max_loss), max_loss)
    for area in PROVABLE:
        plan = prove_plan_fixes(plan, area, settling)
    return drop_harmless_uninitialised(plan, predictor, max_loss)
