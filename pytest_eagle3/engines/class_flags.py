"""The norm flags as one draft class of one release builds and applies them (knowledge.draft_class_rows).

A pure function of the fact sheet, the profile and the draft class. Where the source scan read the class, its rows
decide: a flag the class does not read is off whatever the config says; a module the class builds and loads but never
uses on its forward path ("loaded, not applied") is built (its tensors load) and not applied; a flag the class reads
is applied as its fields say in the config the class sees (the fact sheet's, already turned from a speculators
config the way the engine does, so what the engine drops there the class never sees). Where no scan covers the class
(TensorRT-LLM, llama.cpp, a release newer than every one read without a row) the engine-level rows decide, as the
fact sheet resolved them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_eagle3.engines.facts import FactSheet, lookup
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import FLAG_FIELDS, READ, UNUSED, Row, Snapshot
from pytest_eagle3.words import plural


@dataclass(frozen=True)
class ClassFlags:
    """Per norm flag: applied on the forward path, built (its tensors load), how the class reads it, its row."""

    applied: Mapping[str, bool]
    built: Mapping[str, bool]
    notes: Mapping[str, str]
    #: The class's row per flag, where the scan read the class.
    rows: Mapping[str, Row[str]]

    def unused(self, name: str) -> bool:
        """The class builds and loads the flag's module (or reads the flag) and never applies it."""
        row = self.rows.get(name)
        return row is not None and row.value == UNUSED


def class_flags(sheet: FactSheet, snapshot: Snapshot, draft_class: str | None) -> ClassFlags:
    """The norm flags of ``draft_class`` at ``snapshot``'s release (the engine-level ones where no scan covers it)."""
    applied: dict[str, bool] = {}
    built: dict[str, bool] = {}
    notes: dict[str, str] = {}
    rows: dict[str, Row[str]] = {}
    klass = snapshot.draft_class(draft_class)
    own = klass.reads if klass is not None else ()
    for name, engine_applied in sheet.flags.items():
        row = snapshot.class_row(draft_class, name)
        if row is None:
            value = _configured(sheet.config, _names(name)) if name in own else engine_applied
            applied[name], built[name], notes[name] = value, value, sheet.flag_notes[name]
            continue
        rows[name] = row
        fields = _fields(snapshot, draft_class, name)
        configured = _configured(sheet.config, fields)
        if row.value == READ:
            applied[name], built[name] = configured, configured
            notes[name] = f"{draft_class} reads {' / '.join(fields)} ({row.source})"
        elif row.value == UNUSED:
            applied[name], built[name] = False, configured and name in FLAG_FIELDS
            notes[name] = f"{draft_class} builds and loads it, never applies it: loaded, not applied ({row.source})"
        else:
            applied[name], built[name] = False, False
            notes[name] = f"not read by {draft_class} ({row.source})"
    return ClassFlags(applied, built, notes, rows)


def _names(name: str) -> tuple[str, ...]:
    return (name, "use_aux_norm") if name == "fc_norm" else (name,)


def _fields(snapshot: Snapshot, draft_class: str | None, name: str) -> tuple[str, ...]:
    """The config fields that gate the flag's module in this class (eagle_config's first: it wins where both are
    written); the flag's own name where the class reads it into an attribute."""
    behaviour = FLAG_FIELDS.get(name)
    row = snapshot.class_row(draft_class, behaviour) if behaviour else None
    fields = tuple(row.value) if row is not None and row.value else (name,)
    return tuple(sorted(fields, key=lambda f: (not f.startswith("eagle_config."), f)))


def _configured(config: Mapping[str, object], fields: tuple[str, ...]) -> bool:
    """The first field written decides (eagle_config over the top level); fc_norm and use_aux_norm are or-ed."""
    alternatives = [f for f in fields if f in ("fc_norm", "use_aux_norm")]
    if len(alternatives) > 1:
        return any(bool(lookup(config, f)) for f in alternatives)
    for name in fields:
        value = lookup(config, name)
        if value is not None:
            return bool(value)
    return False


def plan_unreached(snapshot: Snapshot, draft_class: str | None, parameters: Mapping[str, object],
                   flags: ClassFlags) -> Filed:
    """Weights of the class's own module that its forward path never reaches (the scan's ``unreached``), filled by
    this checkpoint: loaded, not applied; a loss under ``keys`` with the class's row. The norm-flag modules
    (fc_norm, input_norm) are the norms area's (``flags.unused``)."""
    out = Filing()
    row = snapshot.class_row(draft_class, "unreached")
    if row is None or not row.value:
        return out.filed()
    for module in row.value:
        name = [part for part in module.split(".") if part != "*"][-1]
        if name in FLAG_MODULES.values() and any(f in flags.rows for f in FLAG_MODULES):
            continue
        pattern = re.compile("^" + re.escape(module).replace(r"\*", r"\d+") + r"\.")
        filled = sorted(p for p in parameters if pattern.match(p))
        if not filled:
            continue
        out.lose("keys", Finding(
            "loaded-not-applied",
            f"{snapshot.label}'s {draft_class} loads {module} ({plural(len(filled), 'tensor')}) but its forward path never uses it "
            "(loaded, not applied): acceptance is what the draft gets without that module",
            (Evidence(module, f"loaded into {', '.join(filled[:3])}{' ...' if len(filled) > 3 else ''}",
                      "a module the forward path applies"),),
            f"serve with an engine version whose {draft_class} applies {module}",
            (f"rule: {row.source}",),
        ))
    return out.filed()


#: The norm flags whose modules the norms area judges (their rows say loaded, not applied), and the modules.
FLAG_MODULES = {"fc_norm": "fc_norm", "norm_before_fc": "input_norm"}
