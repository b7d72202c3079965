"""Area ``norms``: the norm flags the engine applies against those the draft was trained with.

A pure function of the fact sheet (the flags as the engine resolves them, the flags as trained) and the profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_eagle3.engines import habit
from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.layers import class_flags
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import Snapshot
from pytest_eagle3.producers.formats import NORM_FLAG_DEFAULTS, UNKNOWN

NORM_FIX = {
    "norm_before_residual": "the engine feeds the raw fc output as residual",
    "norm_before_fc": "the engine skips input_norm before fc",
    "fc_norm": "the engine skips the per-chunk fc_norm",
    "norm_output": "the engine feeds back the pre-norm state",
}


@dataclass(frozen=True)
class Norms:
    """The flags applied, the config edits that would give the trained ones, and what the area files."""

    applied: FrozenDict[str, bool]
    edits: FrozenDict[str, bool]
    filed: Filed = field(default_factory=Filed)
    #: The producer defaults a pass rests on, in words, with how to pin them (engines.habit).
    assumed: str = ""


def plan_norms(sheet: FactSheet, snapshot: Snapshot, draft_class: str | None = None) -> Norms:
    """Each norm flag the engine applies differently from training (flags left implicit by the config and
    read only by one format are not judged). The draft class's own rows decide where the source scan read it
    (``engines.layers.class_flags``): a flag another class of the release reads is not read by this one, and a
    module the class loads but never applies is a loss with that row as its source."""
    out = Filing()
    edits: dict[str, bool] = {}
    resolved = class_flags(sheet, snapshot, draft_class)
    flags = dict(resolved.applied)
    assumed: list[str] = []
    for name, applied in flags.items():
        want = sheet.trained_norms.get(name)
        if want is None:
            continue
        implicit = sheet.explicit_norms.get(name) is None
        if implicit and name in ("fc_norm", "norm_output", "norm_before_fc"):
            continue
        if implicit:
            call = habit.judge(sheet.producer, _defaults(sheet.producer, name), applied.__eq__)
            if call.outcome == habit.AGREES:
                assumed.append(f"assumed: {name}={str(applied).lower()}, the default of "
                               f"{'every producer on record' if sheet.producer == UNKNOWN else sheet.producer}; "
                               f"pin it: write {name}: {str(applied).lower()} into config.json")
                continue
            if call.outcome == habit.UNDECIDED:
                out.unknown("norms", _undecided(snapshot, name, applied, sheet))
                continue
        if want == applied:
            continue
        source = sheet.norm_sources.get(name, "")
        row = resolved.rows.get(name)
        rule = f"rule: {row.source}" if row is not None else f"rule: {snapshot.flag_source(name)}"
        if resolved.unused(name) and want:
            out.lose("norms", Finding(
                "loaded-not-applied",
                f"{snapshot.label}'s {draft_class} builds {name} and loads its weights, but its forward path never "
                f"applies it (loaded, not applied): {NORM_FIX[name]}; acceptance drops as without {name}",
                (Evidence(name, f"loaded, not applied ({resolved.notes[name]})", f"{want} ({source})"),),
                f"serve with an engine version whose {draft_class} applies {name}, or retrain with {name}=false",
                (rule,),
            ))
            continue
        reads = _reads(snapshot, name) if row is None else row.value == "read" and not (
            sheet.speculators and snapshot.flag_read(name) == "eagle-format-only")
        out.lose("norms", Finding(
            "norm-flag",
            f"{snapshot.label} applies {name}={applied}, the draft was trained with {name}={want}: "
            f"{NORM_FIX[name] if not applied else 'the engine adds a norm the draft never saw'}; acceptance drops",
            (Evidence(name, f"{applied} ({resolved.notes[name]})", f"{want} ({source})"),),
            _norm_fix(snapshot, name, want, reads, draft_class if row is not None else None),
            (rule,),
        ))
        if reads:
            edits[name] = want
    return Norms(FrozenDict(flags), FrozenDict(edits), out.filed(), "; ".join(assumed))


def _defaults(producer: str, name: str) -> list[bool]:
    """The producer's default for the flag (its record's), or every record's where the producer is unknown."""
    records = NORM_FLAG_DEFAULTS.values() if producer == UNKNOWN else [NORM_FLAG_DEFAULTS.get(producer, {})]
    return [record[name][0] for record in records if name in record]


def _undecided(snapshot: Snapshot, name: str, applied: bool, sheet: FactSheet) -> Finding:
    records = NORM_FLAG_DEFAULTS.items() if sheet.producer == UNKNOWN else [
        (sheet.producer, NORM_FLAG_DEFAULTS.get(sheet.producer, {}))]
    found = [(f"{producer}'s default {name}={str(record[name][0]).lower()}", record[name][0] == applied)
             for producer, record in records if name in record]
    who = "a producer not on record" if sheet.producer == UNKNOWN else f"{sheet.producer}, its default not on record"
    value = str(applied).lower()
    return Finding(
        "norm-default-undecided",
        f"{snapshot.label} applies {name}={applied}; config.json does not say what the draft was trained with, and "
        f"{'the producer is unknown' if sheet.producer == UNKNOWN else 'no default of ' + sheet.producer + ' is on record'}",
        (Evidence(name, f"{applied} ({sheet.flag_notes.get(name, '')})", "the value the draft was trained with"),),
        f"write {name}: true|false into config.json (the value used in training)",
        (f"rule: {snapshot.flag_source(name)}",),
        readings=habit.readings(found, who, f"trained with {name}={value}", f"trained with {name}={str(not applied).lower()}"),
    )


def _reads(snapshot: Snapshot, name: str) -> bool:
    return snapshot.flag_read(name) not in ("not-read", "eagle-format-only")


def _norm_fix(snapshot: Snapshot, name: str, want: bool, reads: bool, draft_class: str | None) -> str:
    if not reads:
        where = f"whose {draft_class} honours {name}" if draft_class else f"that honours {name}"
        return f"serve with an engine version {where}, or retrain with {name}={not want}"
    return f"write {name}: {str(want).lower()} into config.json explicitly"
