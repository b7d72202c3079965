"""Where a draft's trained aux layers can be fed when this engine hard-codes its own (LMDeploy: no field read).

Computed from the tables: the first later release of this engine, else of another engine, from which the aux ids
are read from the draft config, whose class for the target captures, and the ids to write there (that engine's own
transform inverted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from packaging.version import Version

from pytest_eagle3.engines.plan_types import AuxPlan, Filing, describe_inputs
from pytest_eagle3.engines.profiles import Profile, profile
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.advice import first_release
from pytest_eagle3.knowledge.capture import CAPTURES, capture_support
from pytest_eagle3.knowledge.releases import DISPLAY, RELEASES, newest, release_text

#: The config edit an engine profile needs to feed ``aux.trained`` (aux_layers.fix_edit).
Edit = Callable[[AuxPlan, Profile], "tuple[str, tuple[int, ...]] | None"]


def elsewhere(aux: AuxPlan, prof: Profile, architecture: str | None, edit: Edit) -> str | None:
    """``vLLM >= 0.8.5 with [3, 5, 6] in eagle_aux_hidden_state_layer_ids``: the first engine (release-list order)
    that reads configured ids and captures for the target; None when no engine's rows do."""
    for engine in (prof.engine, *(e for e in RELEASES if e != prof.engine)):  # a later release of its own first
        since = first_release("aux_id_fields", engine, bool)
        if since is None or (engine == prof.engine and Version(since) <= prof.version):
            continue
        other = profile(newest(engine))
        support = capture_support(engine, other.version, architecture) if architecture else None
        if support is not None and support.support != CAPTURES:
            continue
        found = edit(dataclasses.replace(aux, support=support, graph_mode=None), other)
        if found is not None:
            return f"{DISPLAY[engine]} >= {release_text(engine, since)} with {list(found[1])} in {found[0]}"
    return None


def hard_coded_fix(aux: AuxPlan, prof: Profile, fed: Sequence[int], architecture: str | None, edit: Edit) -> str:
    """The fix for a draft trained on other layers than an engine that reads no aux-id field feeds."""
    other = elsewhere(aux, prof, architecture, edit)
    serve = f"serve with {other}, or " if other else ""
    return (f"no config edit changes it: {prof.label} feeds {describe_inputs(fed)} to every draft of this target; "
            f"{serve}retrain the draft on {describe_inputs(fed)}")


def matching_layer_count(trained: Sequence[int]) -> int | None:
    """The target layer count L whose hard-coded inputs (2, L // 2, L - 3) are ``trained``; None when no L is."""
    if len(trained) != 3 or trained[0] != 2:
        return None
    layers = trained[2] + 3
    return layers if layers // 2 == trained[1] else None


def hard_coded_without_target(out: Filing, aux: AuxPlan, prof: Profile, edit: Edit) -> None:
    """Without the target's layer count: an engine that reads no aux-id field feeds (2, L // 2, L - 3); training
    layers no L gives are never fed, whatever the target (a loss, decided from the config alone)."""
    if prof.behaviours.aux_id_fields or prof.behaviours.aux_default != "target-layers" or aux.target_layers \
            is not None or aux.trained is None or matching_layer_count(aux.trained) is not None:
        return
    other = elsewhere(aux, prof, None, edit)
    out.lose("aux_layers", Finding(
        "aux-layers",
        f"{prof.label} hard-codes the aux layers (no draft config field is read): inputs of layers 2, L//2, L-3 for "
        f"an L-layer target; the draft was trained on {describe_inputs(aux.trained)}, which no L gives: the draft "
        "sees the wrong layers, acceptance drops",
        (Evidence("layer inputs fed", "[2, L//2, L-3]", f"{list(aux.trained)} ({aux.trained_from})"),),
        f"no config edit changes it: {('serve with ' + other + ', or ') if other else ''}retrain the draft on "
        "inputs of layers 2, L//2, L-3 of its target (give --eagle3-target for the layer numbers)",
        (f"rule: {prof.source('aux_id_fields')}",),
    ))
