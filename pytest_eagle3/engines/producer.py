"""What the producer trained with, or left beside the weights, as one engine version meets it.

Three checks under the plan area ``producer`` (contract ``engine.producer``):

* a config field the producer trained with that the engine never reads, whose value differs from
  what the engine hard-wires (:data:`pytest_eagle3.producers.TRAINED_FIELDS`);
* the rope the producer trained with against the rope the engine builds from the config
  (profile behaviour ``draft_rope``; :data:`pytest_eagle3.producers.ROPE_HABITS`);
* weight files the engine's loader reads although they are not the draft's (profile behaviour
  ``weight_files``): their tensors go through the engine's own key rules.

The first three rest on a producer habit, judged by the one habit rule (:mod:`pytest_eagle3.engines.habit`): a
habit known to apply and to differ from what the engine does (a rope habit marked certain, ModelOpt's extra norm
read from its forward) is a note until it is priced, never a failure; one the checkpoint cannot settle
(``rope-trained-assumed``) is undecided (reported per --eagle3-unknown). Both are filed with ``Filing.assume`` and
the simulated feed field that prices them: with the target's weights ``verdict.settle.price_deviations`` turns each
into a loss with its figure when it costs more than --eagle3-max-loss, else a priced note (the measurement overrules
the habit); without them a cost recorded in ``knowledge.costs`` with the experiment that measured it does the same
(``verdict.settle.price_recorded``), where the draft meets the row's precondition. A trained field no engine reads
has a cost nothing here models: it stays undecided (``field-not-read``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.keys import resolve_keys
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.knowledge.snapshot import Snapshot
from pytest_eagle3.producers.habits import NORM_HABITS, RopeKey
from pytest_eagle3.words import plural

AREA = "producer"
#: The simulated feed fields (reference.simulate.Feed) that price the habits: the rope the draft runs with,
#: and ModelOpt's input_layernorm on the hidden path.
ROPE, HIDDEN_PRENORM = "rope", "hidden_prenorm"


@dataclass(frozen=True)
class ProducerArea:
    """The rope the engine builds, the config edit that gives the trained one, and what the area files."""

    draft_rope: RopeKey
    rope_edit: FrozenDict[str, Any]
    filed: Filed = field(default_factory=Filed)


def plan_producer(sheet: FactSheet, snapshot: Snapshot, params: frozenset[str]) -> ProducerArea:
    """The producer findings of ``snapshot``'s engine version for the checkpoint (``params``: what the class builds)."""
    out = Filing()
    producer = sheet.producer
    for row, value in sheet.unread_fields:
        out.assume(AREA, Finding(
            "field-not-read",
            f"{sheet.format_label} trained with {row.field} = {_json(value)}, which {snapshot.label} never reads: "
            f"{row.engine}; {row.trained}",
            (Evidence(row.field, f"{_json(value)} (trained with)", f"{_json(row.engine_value)} (what the engine does)"),),
            f"retrain with {row.field} = {_json(row.engine_value)}, or serve with an engine that reads it",
            (f"producer: {row.source}", f"rule: no {snapshot.engine} release reads {row.field}"),
        ), None)
    rope_edit = _rope(out, snapshot, sheet, producer, sheet.format_label)
    _norm_habit(out, snapshot, sheet)
    _extra_weights(out, snapshot, sheet, params)
    return ProducerArea(sheet.served_rope, FrozenDict(rope_edit), out.filed())


#: A norm weight whose largest / smallest magnitude stays under this ratio counts as uniform.
UNIFORM_RATIO = 1.01


def _norm_habit(out: Filing, snapshot: Snapshot, sheet: FactSheet) -> None:
    habit = NORM_HABITS.get(sheet.producer)
    prefix = sheet.first_layer_prefix
    name = f"{prefix}{habit.tensor}" if habit is not None and prefix else None
    if habit is None or name is None or name not in sheet.shapes:
        return
    low, high = sheet.contents.magnitude_range(name)
    if low > 0 and high / low < UNIFORM_RATIO:
        return
    spread = f"{low:.3g}..{high:.3g}"
    ratio = high / low if low > 0 else float("inf")
    recorded = snapshot.recorded_cost(sheet.producer, HIDDEN_PRENORM, ratio)
    row = snapshot.recorded_for(sheet.producer, HIDDEN_PRENORM)
    may_cost = (f"an RMSNorm with weights {spread} in front of hidden_norm moves the normalised state; drafts "
                f"trained this way lost {row.words}, with weights spread up to {row.max_spread:g} (this one: "
                f"{ratio:.3g}, outside that range)" if row is not None and recorded is None else
                f"an RMSNorm with weights {spread} in front of hidden_norm moves the normalised state")
    out.assume(AREA, Finding(
        "norm-not-applied",
        f"{snapshot.label} feeds the first layer hidden_norm(fc output); {sheet.format_label} trained it with "
        f"{habit.trained}: {name} ({spread}) is missing from the hidden path",
        (Evidence(name, f"ranges {spread} (not uniform): the engine skips it on the hidden path",
                  "a uniform weight (then skipping it changes nothing)"),),
        "no engine applies this norm: where its price exceeds --eagle3-max-loss, serve the draft where it is "
        "applied, or retrain with a draft whose first layer normalises the hidden path once",
        (f"producer: {habit.source}", f"rule: {snapshot.source('first_layer_hidden_path')}"),
    ), HIDDEN_PRENORM, known=True, recorded=recorded, may_cost=may_cost)


def _json(value: Any) -> str:
    return "true" if value is True else "false" if value is False else "null" if value is None else str(value)


def _rope(out: Filing, snapshot: Snapshot, sheet: FactSheet, producer: str, label: str) -> dict[str, Any]:
    """File the trained-rope finding; the config edit that gives the trained rope (empty where none is certain)."""
    found = sheet.trained_rope
    if found is None:
        return {}
    rope, habit = found
    served = sheet.config_rope
    scale = served.logit_scale() / rope.logit_scale()
    sharper = (f"; {served.kind} also multiplies every attention logit by {scale:.2f}, at every position"
               if abs(scale - 1) > 1e-3 else "")
    finding = Finding(
        "rope-trained",
        f"{snapshot.label} applies the config's rope ({served.describe()}) to the draft; {label} trained it with "
        f"{rope.describe()} ({habit.why}): every attention score over earlier positions differs from training{sharper}",
        (Evidence("draft rope", f"{served.describe()} (what {snapshot.label} applies)", f"{rope.describe()} (trained)"),),
        _rope_fix(rope, habit.certain),
        (f"producer: {habit.source}", f"rule: {snapshot.source('draft_rope')}"),
    )
    if habit.certain:
        out.assume(AREA, finding, ROPE, known=True,
                   may_cost="the draft attends over earlier positions with another rotary table than it was trained with")
        return {"rope_theta": rope.theta, "rope_scaling": rope.scaling}
    out.assume(AREA, Finding(
        "rope-trained-assumed", f"assumed: {finding.summary}", finding.evidence, finding.fix, finding.details,
    ), ROPE)
    return {}


def _rope_fix(rope: Any, certain: bool) -> str:
    scaling = "null" if rope.scaling is None else str(rope.scaling)
    theta = int(rope.theta) if rope.theta.is_integer() else rope.theta
    text = f"write rope_theta: {theta} and rope_scaling: {scaling} into config.json (the rope it was trained with)"
    if certain:
        return text
    return (f"{text} if the export injected the scaling (ModelOpt eagle_export_rope_scaling); keep it if the "
            "draft is meant to extrapolate beyond its training window")


def _extra_weights(out: Filing, snapshot: Snapshot, sheet: FactSheet, params: frozenset[str]) -> None:
    """vLLM and SGLang read every *.safetensors of the folder when no index lists the shards."""
    if snapshot.behaviours.weight_files != "all-safetensors":
        return
    for file_name, names in sheet.stray_weight_files:
        _one_extra_file(out, snapshot, file_name, list(names), params)


def _one_extra_file(out: Filing, snapshot: Snapshot, file_name: str, names: list[str], params: frozenset[str]) -> None:
    if not names:
        return
    res = resolve_keys(snapshot, names, set(params))
    why = f"rule: {snapshot.source('weight_files')}"
    if res.refused:
        refused = [name for name, _ in res.refused]
        out.refuse(AREA, Finding(
            "extra-weights-loaded",
            f"{snapshot.label} loads every *.safetensors in the folder, {file_name} too: {len(refused)} of its tensors "
            f"name no draft parameter ({refused[0]}): {res.refused[0][1]}",
            (Evidence(file_name, f"{plural(len(names), 'tensor')} read as draft weights", "only the draft's weight files"),),
            f"move {file_name} out of the draft folder (or list the draft's shards in model.safetensors.index.json)",
            (why, f"rule: {snapshot.source('unknown_key')}"),
        ))
    elif res.loaded:
        out.lose(AREA, Finding(
            "extra-weights-loaded",
            f"{snapshot.label} loads {file_name} as draft weights too: it overwrites {short(sorted(res.loaded))}",
            (Evidence(file_name, "read as draft weights", "only the draft's weight files"),),
            f"move {file_name} out of the draft folder", (why,),
        ))
    else:
        out.note(f"{snapshot.label} reads {file_name} and drops its {plural(len(names), 'tensor')} (no draft parameter)")
