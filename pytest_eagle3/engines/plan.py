"""Load plans: what one engine version will do with a checkpoint, computed from its snapshot.

``load_plan(ckpt, engine_version, target=None)`` reads the fact sheet once (``engines.facts``) and
assembles the areas, each a pure function of the sheet and the snapshot (and, where an area needs
another's result, that result passed in): architecture, layers, keys, fc, geometry, vocab, aux layers,
norms, embeddings, producer habits, runtime (KV cache, CUDA graphs, serving beside the target: positions,
quantization, sliding window, dtype). The result is a frozen :class:`LoadPlan`: tensor ->
parameter, dropped tensors, parameters left uninitialised, the effective draft -> target map, the
physical target layers fed to the draft, the width reaching ``fc`` and whether ``fc`` runs, the norms
applied, where embed_tokens and lm_head come from; plus :class:`Issue` s, each a finding filed under
the contract area that judges it, marked ``refused`` (the engine will not start) or ``loss`` (it
starts and acceptance suffers).
"""

from __future__ import annotations

import dataclasses

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.engines.architecture import plan_architecture, plan_mla_rope
from pytest_eagle3.engines.aux_layers import plan_allowlist, plan_aux
from pytest_eagle3.engines.embeddings import plan_embeddings
from pytest_eagle3.engines.facts import fact_sheet
from pytest_eagle3.engines.fc import plan_fc, plan_fc_shape
from pytest_eagle3.engines.geometry import GeometryArea, plan_geometry
from pytest_eagle3.engines.issue import LOSS, REFUSED, Issue
from pytest_eagle3.engines.keys import plan_keys, plan_mlp, plan_unreached
from pytest_eagle3.engines.layers import class_flags, plan_layers
from pytest_eagle3.engines.norms import plan_norms
from pytest_eagle3.engines.plan_types import (
    LOADS,
    LOADS_WITH_LOSS,
    AuxPlan,
    FcPlan,
    Filed,
    LoadPlan,
    Measured,
)
from pytest_eagle3.engines.producer import plan_producer
from pytest_eagle3.engines.runtime import plan_runtime
from pytest_eagle3.engines.vocab import plan_vocab
from pytest_eagle3.findings import FAILS, PASSES, Finding
from pytest_eagle3.knowledge.snapshot import LLAMA_ATTENTION, BehaviourName, EngineVersion, Snapshot, snapshot_of

#: The code of a finding that rests on a rule borrowed from another engine (not judged, never a failure).
BORROWED = "borrowed-rule"

__all__ = ["LOADS", "LOADS_WITH_LOSS", "LOSS", "REFUSED", "AuxPlan", "FcPlan", "Issue", "LoadPlan", "Measured",
           "load_plan"]


def load_plan(ckpt: Checkpoint, engine: EngineVersion | Snapshot, target: TargetModel | None = None,
              convention: str | None = None, measured: Measured | None = None,
              read_as: str | None = None) -> LoadPlan:
    """Compute what ``engine`` will do with ``ckpt`` (and the target, when known).

    ``measured``: the layer inputs (and embedding) the draft was trained with, as the reference
    measurement settled them; it overrules every convention assumption (``plan.aux.basis``).
    ``read_as``: the producer whose writing the checkpoint is read as (one reading; the detected one without).
    """
    snapshot = engine if isinstance(engine, Snapshot) else snapshot_of(engine)
    sheet = fact_sheet(ckpt, snapshot, target, read_as)
    arch = plan_architecture(sheet, snapshot)
    if not arch.builds:
        own = own_rules(arch.filed + plan_allowlist(sheet, snapshot), snapshot)
        return LoadPlan(snapshot.target, arch.draft_class, snapshot.label, measured=measured,
                        issues=_lifted(own, snapshot), notes=own.notes,
                        unknown=dict(own.unknown)).with_assumed(own.assumed)
    layers = plan_layers(sheet, snapshot, arch.draft_class)
    keys = plan_keys(sheet, snapshot, layers.shape, layers.fc_states)
    unreached = plan_unreached(snapshot, arch.draft_class, keys.parameters, class_flags(sheet, snapshot, arch.draft_class))
    fc_shape = plan_fc_shape(sheet, snapshot, layers.fc_states, keys.parameters)
    mlp = plan_mlp(sheet, snapshot, keys.parameters)
    mla_rope = plan_mla_rope(sheet, snapshot, arch.draft_class)
    geometry = plan_geometry(sheet, snapshot) if layers.shape.attention == LLAMA_ATTENTION else GeometryArea()
    vocab = plan_vocab(sheet, snapshot, keys.parameters, keys.d2t_name, arch.draft_class)
    aux = plan_aux(sheet, snapshot, convention, measured)
    fc = plan_fc(sheet, snapshot, fc_shape.fc, aux.aux)
    norms = plan_norms(sheet, snapshot, arch.draft_class)
    sharing = plan_embeddings(sheet, snapshot, measured)
    producer = plan_producer(sheet, snapshot, keys.params)
    runtime, runtime_filed = plan_runtime(sheet, snapshot, layers.fc_states)
    # in the order the areas were always filed: the findings of one contract keep their order
    filed = own_rules(arch.filed + layers.filed + keys.filed + unreached + fc_shape.filed + mlp + mla_rope
                      + geometry.filed + vocab.filed + aux.filed + fc.filed + norms.filed + sharing.filed
                      + producer.filed + runtime_filed, snapshot)
    return LoadPlan(
        snapshot.target, arch.draft_class, snapshot.label,
        parameters=keys.parameters, built=keys.built, shapes=keys.shapes,
        dropped={**keys.dropped, **geometry.cut}, uninitialised=keys.uninitialised,
        draft_to_target=vocab.draft_to_target, map_reading=vocab.map_reading,
        aux=aux.aux, fc=fc.fc, norms=norms.applied, norm_edits=norms.edits,
        embed_tokens=sharing.embed_tokens, lm_head=sharing.lm_head, draft_layers=layers.draft_layers,
        measured=measured, draft_rope=producer.draft_rope, rope_edit=producer.rope_edit, runtime=runtime,
        assumptions={area: words for area, words in (("aux_layers", aux.aux.assumed), ("norms", norms.assumed))
                     if words},
        issues=_lifted(filed, snapshot), notes=filed.notes, unknown=dict(filed.unknown),  # the last unknown of an area wins
    ).with_assumed(filed.assumed)


def own_rules(filed: Filed, snapshot: Snapshot) -> Filed:
    """The areas' filing with every issue that rests on a rule borrowed from another engine (a row whose
    ``origin`` is not this engine: a fork's parent's, read in its source) made not judged: a rule read in another
    engine is a reading for this one, never evidence. The finding says whose rule it is and what in this engine's
    own source would decide."""
    kept: list[Issue] = []
    unknown = list(filed.unknown)
    for issue in filed.issues:
        names = snapshot.borrowed_rules(issue.finding)
        if names:
            unknown.append((issue.area, borrowed(issue, names, snapshot)))
        else:
            kept.append(issue)
    if len(kept) == len(filed.issues):
        return filed
    return Filed(tuple(kept), filed.notes, tuple(unknown), filed.assumed)


def borrowed(issue: Issue, names: tuple[BehaviourName, ...], snapshot: Snapshot) -> Finding:
    """The not-judged finding of an issue resting on borrowed rules ``names``: whose rules, what would decide."""
    whose = sorted({snapshot.read_in(name) for name in names})
    own = snapshot.display
    cites = sorted({str(cite) for name in names for cite in snapshot.row(name).cites})
    where = f" ({', '.join(cites)})" if cites else ""
    finding = issue.finding
    return Finding(
        BORROWED,
        f"not judged: {finding.summary}; this rests on {' and '.join(whose)}'s rule ({', '.join(names)}), not read "
        f"in {own}'s own source",
        finding.evidence,
        (f"what decides: {own}'s own released source for {', '.join(names)}{where}"
         + (f"; if it does as {' and '.join(whose)} does: {finding.fix}" if finding.fix else "")),
        (*finding.details, f"borrowed: {', '.join(f'{name} read in {snapshot.read_in(name)}' for name in names)}"),
        readings=((f"{own} does as {' and '.join(whose)} does", FAILS), (f"{own}'s own code differs", PASSES)),
    )


def _lifted(filed: Filed, snapshot: Snapshot) -> tuple[Issue, ...]:
    """The areas' issues, each fix lifted to one upgrade where the snapshot knows one (the plan's notes and unknowns
    are the areas' own; its assumed deviations go through :meth:`LoadPlan.with_assumed`)."""
    lifted = snapshot.one_upgrade([i.finding for i in filed.issues])
    return tuple(dataclasses.replace(i, finding=f) for i, f in zip(filed.issues, lifted))
