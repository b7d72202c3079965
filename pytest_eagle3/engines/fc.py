"""Area ``fc``: the width fc is built for against the checkpoint's, and the concatenation that reaches it.

Two pure functions: :func:`plan_fc_shape` (what the class builds, from the fact sheet) and
:func:`plan_fc` (what the target sends, from the aux area's result: passed in, never read from a plan).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.plan_types import AuxPlan, FcPlan, Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import Snapshot
from pytest_eagle3.rules.vocab_map import ACCEPTANCE_NOTE


@dataclass(frozen=True)
class Fc:
    """The fc plan and what the area files."""

    fc: FcPlan
    filed: Filed = Filed()


def plan_fc_shape(sheet: FactSheet, snapshot: Snapshot, fc_states: int, parameters: Mapping[str, object]) -> Fc:
    """fc as the class builds it (``fc_states`` x target_hidden_size) against the checkpoint's fc width."""
    out = Filing()
    target_hidden = sheet.target_hidden_size
    expects = fc_states * target_hidden if target_hidden else None
    width = sheet.fc_width
    fc = FcPlan(expects_states=fc_states, expects_width=expects, checkpoint_width=width)
    if "model.fc.weight" in parameters and width and expects and width != expects:
        trained = width // target_hidden if target_hidden else "?"
        written = sheet.aux_written.ids if sheet.aux_written is not None else ()
        if snapshot.behaviours.fc_aux_count == "3":
            fix = f"{snapshot.label} always builds fc for 3 aux states: serve with a version that reads num_aux_hidden_states"
        elif written and len(written) != trained:  # the ids disagree with fc: one edit makes both agree
            fix = (f"config.json names {len(written)} aux ids {list(written)} but fc was trained on {trained} states: "
                   f"write the {trained} ids the draft was trained on ({snapshot.label} sizes fc from them and captures "
                   "them; see config.shapes)")
        else:
            fix = (f"write num_aux_hidden_states: {trained} into config.json ({snapshot.label} reads num_aux_hidden_states, "
                   "else len(eagle_config.eagle_aux_hidden_state_layer_ids), else 3; never the top-level ids)")
        out.refuse("fc", Finding(
            "fc-shape",
            f"{snapshot.label} builds fc for {fc_states} aux states ({expects} wide) but the checkpoint's fc "
            f"takes {width}: the weight loader's shape assert stops startup",
            (Evidence("fc.weight.shape[1]", str(width), f"{fc_states} x target_hidden_size {target_hidden} = {expects}"),),
            fix,
            (f"rule: {snapshot.source('fc_aux_count')}",),
        ))
    return Fc(fc, out.filed())


#: What the engine's ``fc_without_aux`` does to a trained fc, in a finding's words.
FC_WITHOUT_AUX = {"bypassed": "skips fc silently", "disabled": "drops fc at load"}

def plan_fc(sheet: FactSheet, snapshot: Snapshot, built: FcPlan, aux: AuxPlan) -> Fc:
    """What reaches fc: the states the target captures (``aux``, the aux area's result), and fc's action."""
    out = Filing()
    hidden, target_hidden = sheet.hidden_size, sheet.target_hidden_size
    honoured = snapshot.behaviours.use_aux_hidden_state == "honoured"
    missing_is_false = (snapshot.kind.loading.use_aux_missing_is_false is not None and sheet.use_aux_hidden_state is None
                        and bool(sheet.config.get("eagle_config")))  # ATOM: `if eagle_cfg:`
    if (sheet.use_aux_hidden_state is False or missing_is_false) and honoured:
        fc = dataclasses.replace(built, states_sent=1, width_sent=target_hidden,
                                 action=snapshot.kind.loading.fc_without_aux)
        said = (f"eagle_config has no use_aux_hidden_state, which {snapshot.label} reads as false "
                f"({snapshot.kind.loading.use_aux_missing_is_false})" if missing_is_false
                else "eagle_config.use_aux_hidden_state is false")
        if fc.checkpoint_width and fc.checkpoint_width != target_hidden:
            out.lose("fc", Finding(
                "fc-unused",
                f"{said}, so {snapshot.label} sends one {target_hidden}-wide hidden "
                f"state and {FC_WITHOUT_AUX[snapshot.kind.loading.fc_without_aux]}; the checkpoint's "
                f"fc was trained on {fc.checkpoint_width // target_hidden if target_hidden else '?'} concatenated "
                f"states: {ACCEPTANCE_NOTE}",
                (Evidence("eagle_config.use_aux_hidden_state", "absent" if missing_is_false else "false",
                          f"true (fc.weight is {fc.checkpoint_width} wide)"),),
                "set eagle_config.use_aux_hidden_state: true" + ("" if missing_is_false else " (or remove it)"),
                (f"rule: {snapshot.source('use_aux_hidden_state')}", f"rule: {snapshot.source('fc_applied')}"),
            ))
        return Fc(fc, out.filed())
    if sheet.use_aux_hidden_state is False:
        _flag_ignored(out, sheet, snapshot, built)
    states = built.states_sent
    if aux.support is not None and aux.support.support == "silent-no-capture":
        states = 1
    elif aux.captured is not None:
        states = len(aux.captured)
    if states is None or target_hidden is None or hidden is None:
        return Fc(dataclasses.replace(built, states_sent=states), out.filed())
    width = states * target_hidden
    fc = dataclasses.replace(built, states_sent=states, width_sent=width)
    if width == fc.expects_width:
        return Fc(dataclasses.replace(fc, action="fc"), out.filed())
    if snapshot.behaviours.fc_applied == "when-width-differs" and width == hidden:
        out.lose("fc", Finding(
            "fc-bypassed",
            f"{snapshot.label} receives {states} hidden state ({width} wide = the draft's hidden size) "
            f"and skips fc silently: the draft runs on unfused features, {ACCEPTANCE_NOTE}",
            (Evidence("width reaching fc", str(width), f"{fc.expects_states} x {target_hidden} = {fc.expects_width}"),),
            _capture_fix(aux),
            (f"rule: {snapshot.source('fc_applied')}",),
        ))
        return Fc(dataclasses.replace(fc, action="bypassed"), out.filed())
    out.refuse("fc", Finding(
        "fc-width",
        f"{snapshot.label} concatenates {states} captured states ({width} wide) but fc expects "
        f"{fc.expects_states} ({fc.expects_width}): the first draft step fails with a shape error",
        (Evidence("states captured", str(states), str(fc.expects_states)),),
        _capture_fix(aux),
        (f"rule: {snapshot.source('fc_applied')}", f"rule: {snapshot.source('fc_aux_count')}"),
    ))
    return Fc(dataclasses.replace(fc, action="crash"), out.filed())


def _flag_ignored(out: Filing, sheet: FactSheet, snapshot: Snapshot, built: FcPlan) -> None:
    """``use_aux_hidden_state: false`` where the release does not read it: it captures aux states and runs fc."""
    if built.checkpoint_width and sheet.target_hidden_size and built.checkpoint_width != sheet.target_hidden_size:
        return  # the checkpoint's fc takes several states: the width rules below judge it
    out.lose("fc", Finding(
        "aux-flag-ignored",
        f"eagle_config.use_aux_hidden_state is false (the draft was trained on the target's last hidden state), but "
        f"{snapshot.label} does not read it: it captures aux states and runs them through fc, which this draft "
        f"{'does not have (fc stays at its initial values)' if not built.checkpoint_width else 'was not trained with'}: "
        f"{ACCEPTANCE_NOTE}",
        (Evidence("eagle_config.use_aux_hidden_state", "false (no fc.weight)" if not built.checkpoint_width else "false",
                  f"a release that honours it ({snapshot.serve_with('use_aux_hidden_state', _honoured)})"),),
        f"serve with {snapshot.serve_with('use_aux_hidden_state', _honoured)}",
        (f"rule: {snapshot.source('use_aux_hidden_state')}", f"rule: {snapshot.source('fc_applied')}"),
    ))


def _honoured(value: str) -> bool:
    return value == "honoured"


def _capture_fix(aux: AuxPlan) -> str:
    if aux.never_fire:
        return (f"use aux ids the target can capture (ids whose captured layer input is {list(aux.never_fire)} "
                f"never fire: {aux.reach})" if aux.reach else
                f"use aux ids the target can capture (ids whose captured layer input {list(aux.never_fire)} "
                "lies past the last layer never fire)")
    return "make the target capture as many aux states as fc was trained on (aux ids in the field the engine reads)"
