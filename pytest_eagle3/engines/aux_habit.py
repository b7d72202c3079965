"""Aux layers when config.json names no ids: the producer's default training layers (``producers.aux_defaults``)
against the layer inputs the engine feeds, by the one habit rule (:mod:`pytest_eagle3.engines.habit`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from pytest_eagle3.engines import habit
from pytest_eagle3.engines.aux_ids import field_text
from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.plan_types import AuxPlan, describe_inputs
from pytest_eagle3.engines.profiles import Profile
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.producers.aux_defaults import AuxDefault, candidate_defaults
from pytest_eagle3.producers.formats import UNKNOWN, ruled_out
from pytest_eagle3.producers.records import RECORDS

#: The config edit that feeds ``aux.trained`` on an engine version (aux_layers.fix_edit).
Edit = Callable[[AuxPlan, Profile], "tuple[str, tuple[int, ...]] | None"]


def ids_missing(sheet: FactSheet) -> bool:
    """A draft that uses aux states and whose config names no aux ids in any field: its producer's default applies."""
    written = sheet.aux_written
    return written is not None and not written.ids and written.field is None and sheet.use_aux_hidden_state is not False


def _producers(rows: Sequence[AuxDefault]) -> str:
    """``modelopt (>= 0.35.0)``; several rows joined."""
    return "; ".join(dict.fromkeys(f"{r.producer} ({r.releases})" for r in rows))


def default_habit(aux: AuxPlan, sheet: FactSheet, prof: Profile, fed: Sequence[int] | None,
                  edit: Edit) -> tuple[AuxPlan, habit.Call[AuxDefault] | None]:
    """The aux plan with the training layers the producer's default gives (None where it does not decide them)
    and the rule's call; ``fed``: the layer inputs the engine feeds."""
    layers = sheet.target_layers
    if fed is None or layers is None:
        return dataclasses.replace(aux, trained=None, trained_from=""), None
    rows = candidate_defaults(sheet.producer, sheet.raw, sheet.tensors)
    call = habit.judge(sheet.producer, rows, lambda r: r.inputs(layers) == tuple(fed))
    sets = {r.inputs(layers) for r in rows}
    if call.outcome == habit.AGREES:
        pin = edit(dataclasses.replace(aux, trained=tuple(fed)), prof)
        how = (f"pin them: write {list(pin[1])} into {pin[0]}" if pin is not None
               else f"nothing to pin: {prof.label} reads no aux-id field")
        rule = " / ".join(dict.fromkeys(r.rule for r in rows))
        words = (f"assumed: no ids in config.json; the default of {_producers(rows)}, {rule}, is "
                 f"{describe_inputs(fed)}, what {prof.label} feeds; {how}")
        return dataclasses.replace(aux, trained=tuple(fed), trained_from=words, assumed=words), call
    if call.outcome == habit.DIFFERS and len(sets) == 1:
        (inputs,) = sets
        words = f"assumed: no ids in config.json; the default of {_producers(rows)}, {rows[0].rule}"
        return dataclasses.replace(aux, trained=inputs, trained_from=words), call
    return dataclasses.replace(aux, trained=None, trained_from=""), call


def id_field_words(prof: Profile) -> str:
    """The first field the engine reads aux ids from, as a message names it."""
    fields = prof.behaviours.aux_id_fields or ()
    return field_text(fields[0]) if fields else "the engine's launch setting"


def differs_finding(prof: Profile, sheet: FactSheet, call: habit.Call[AuxDefault], fed: Sequence[int],
                    fix: str | None) -> Finding:
    """No ids, and the producer's default is not what the engine feeds: both layer sets named."""
    layers = sheet.target_layers or 0
    trains = "; ".join(dict.fromkeys(f"{r.producer} ({r.releases}) trains on {describe_inputs(r.inputs(layers))} "
                                      f"({r.rule})" for r in call.candidates))
    return Finding(
        "aux-ids-missing",
        f"config.json names no aux layer ids: {prof.label} feeds its defaults ({describe_inputs(fed)}); {trains}: "
        "the draft sees the wrong layers, acceptance drops",
        (Evidence("eagle_aux_hidden_state_layer_ids", "absent", "the ids used in training"),
         Evidence("layer inputs fed", str(list(fed)), " / ".join(str(list(r.inputs(layers))) for r in call.candidates))),
        fix or f"write the ids the draft was trained on into {id_field_words(prof)}",
        (*(f"producer default: {r.source}" for r in call.candidates), f"rule: {prof.source('aux_id_fields')}"),
    )


def undecided_finding(prof: Profile, sheet: FactSheet, call: habit.Call[AuxDefault], fed: Sequence[int]) -> Finding:
    """No ids, and nothing says which default applies: what decides it."""
    layers = sheet.target_layers or 0
    who = "the producer is unknown" if sheet.producer == UNKNOWN else (
        f"no default of {sheet.producer} is on record" if not call.candidates
        else f"{sheet.producer}'s releases disagree and the checkpoint names none")
    each = [f"{r.producer} ({r.releases}): {describe_inputs(r.inputs(layers))} "
            f"({'agrees' if r.inputs(layers) == tuple(fed) else 'differs'})" for r in call.candidates]
    release = (f"name the {sheet.producer} release the draft was trained with (its releases' defaults differ), "
               if sheet.producer != UNKNOWN and call.candidates else "")
    return Finding(
        "aux-ids-undecided",
        f"config.json names no aux layer ids: {prof.label} feeds its defaults ({describe_inputs(fed)}), and whether "
        f"the draft was trained on them is not known: {who}",
        (Evidence("eagle_aux_hidden_state_layer_ids", "absent", "the ids used in training"),),
        f"{release}write the ids the draft was trained on into {id_field_words(prof)}, or pass --eagle3-target=DIR "
        "with the target's weights (the reference measures which layers the draft was trained on)",
        (*each[:6], *((f"and {len(each) - 6} more defaults",) if len(each) > 6 else ()),
         *_ruled_out(sheet), f"rule: {prof.source('aux_id_fields')}"),
        readings=default_readings(sheet, prof, call, fed),
    )


def default_readings(sheet: FactSheet, prof: Profile, call: habit.Call[AuxDefault],
                     fed: Sequence[int]) -> tuple[tuple[str, str], ...]:
    """Each default that may have applied, with the verdict under it (:func:`habit.readings`)."""
    layers = sheet.target_layers or 0
    who = "a producer not on record" if sheet.producer == UNKNOWN else f"{sheet.producer}, its default not on record"
    return habit.readings([(f"{r.producer} {r.releases}, its default {describe_inputs(r.inputs(layers))}",
                            r.inputs(layers) == tuple(fed)) for r in call.candidates],
                          who, f"trained on what {prof.label} feeds ({describe_inputs(fed)})", "trained on other layers")


def _ruled_out(sheet: FactSheet) -> tuple[str, ...]:
    """The producers on record the checkpoint rules out as readings (producer unknown only)."""
    if sheet.producer != UNKNOWN:
        return ()
    names = set(sheet.tensors)
    out = [f"not {p}: {why}" for p in RECORDS if (why := ruled_out(p, sheet.raw, names)) is not None]
    return tuple(out)
