"""The aux-layer area: the target hidden states an engine feeds the draft, against those it was trained on.

Every set is stated in *layer-input indices*: index j is the residual stream entering decoder layer j (HF
``output_hidden_states[j]``, the output of layer j-1); 0 is the embeddings and L the output of the last layer before
the final norm. Engines capture ``hidden_states + residual`` before layer j, in layer order, so duplicates collapse
and the order is ascending.

The story, in this module's order: :func:`plan_aux` makes the plan. (1) The engine reads the ids from its fields and
applies its target family's transform; (2) the target's capture loop reaches some of those inputs, (3) if its class
captures at all. (4) The draft was trained on what its config says under a convention, or under each capture route its
producer may have trained through; (5) with no ids written, on its producer's default (the habit rule). (6) TensorRT-LLM
takes the layers from a launch setting instead. (7) What is fed is compared with what was trained, and (8) the fix is a
config edit, a launch, another engine that reads the ids, or retraining.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from packaging.version import Version

from pytest_eagle3.engines import habit
from pytest_eagle3.engines.facts import FactSheet, written_ids
from pytest_eagle3.engines.plan_types import AuxPlan, Filed, Filing, Measured, describe_inputs
from pytest_eagle3.findings import FAILS, MEASURED, PASSES, Evidence, Finding
from pytest_eagle3.knowledge.snapshot import (
    ALLOWLIST,
    ALLOWLIST_SOURCE,
    CAPTURES,
    CRASH,
    EMBEDDINGS,
    INDEX_ERROR,
    RAISED,
    RANGE_REACH,
    SILENT,
    UNDER_DELIVERED,
    UNREACHED,
    AuxField,
    Reach,
    Snapshot,
    Support,
    Transform,
    launch_fix,
    newest_snapshot,
    snapshot_at,
)
from pytest_eagle3.producers.aux_defaults import AuxDefault, candidate_defaults, release_of
from pytest_eagle3.producers.capture_routes import TRANSFORMERS, CaptureRoute, routes_of
from pytest_eagle3.producers.formats import (
    CONVENTIONS,
    DEFAULT_AUX_RULE,
    OUTPUT_OF,
    UNKNOWN,
    default_aux_inputs,
    ruled_out,
)
from pytest_eagle3.producers.records import RECORDS

#: mlx-vlm's default when the config names no ids (behaviour aux_default draft-layers).
DRAFT_DEFAULT_RULE = "ids 2, n//2, max(n-3, 0) of the DRAFT's n layers, each the output of layer max(id-1, 0)"

#: The ``aux_default`` of an engine that takes its aux layers from a launch setting (section 6).
LAUNCH_SETTING = "launch-setting"


# -- The plan: what the target captures for the draft, what the draft was trained on, what the area files


@dataclass(frozen=True)
class Aux:
    """The aux plan and what the area files."""

    aux: AuxPlan
    filed: Filed = dataclasses.field(default_factory=Filed)


def plan_aux(sheet: FactSheet, snapshot: Snapshot, convention: str | None, measured: Measured | None = None) -> Aux:
    """What the target captures for the draft and what the draft was trained on (area ``aux_layers``)."""
    out = Filing()
    layers = sheet.target_layers
    arch = sheet.target_architecture
    support = snapshot.capture(arch) if arch else None
    family = support.family if support else "llama"
    capture_range, reach_source = reach_for(snapshot, arch, family)
    fields = snapshot.behaviours.aux_id_fields
    field, configured, used, requested = resolve_ids(snapshot, fields, first_ids(sheet.aux_ids, fields), family, layers,
                                                     sheet.default_inputs)
    captured: tuple[int, ...] | None = None
    never_fire: tuple[int, ...] = ()
    crash = False
    if requested is not None:
        captured, never_fire, crash = firing(requested, layers, capture_range)
    other_mode = None
    other_fields = snapshot.behaviours.aux_id_fields_other_mode
    if other_fields is not None:
        _, _, _, other = resolve_ids(snapshot, other_fields, first_ids(sheet.aux_ids, other_fields), family, layers,
                                     sheet.default_inputs)
        other_mode = firing(other, layers, capture_range)[0] if other is not None else None
    graph_mode = None
    if snapshot.behaviours.graph_mode_default_layers and configured and layers is not None:
        graph_mode = firing(sheet.default_inputs or (), layers, capture_range)[0]
    trained: tuple[int, ...] | None
    routes: tuple[RouteReading, ...] = ()
    if measured is not None:
        trained, trained_from, basis = tuple(measured.inputs), measured.words, MEASURED
    else:
        routes = _routes(sheet, layers, convention)
        trained, trained_from = _trained(sheet, layers, convention, routes)
        basis = "assumed"
    aux = AuxPlan(field=field, configured=configured, transform=used, requested=requested, captured=captured,
                  never_fire=never_fire, trained=trained, trained_from=trained_from, basis=basis,
                  other_mode=other_mode, graph_mode=graph_mode, target_layers=layers, support=support,
                  reach=_reach_words(snapshot, arch, capture_range, reach_source, never_fire, layers))
    call = None
    if measured is None and _ids_missing(sheet):
        aux, call = _default_habit(aux, sheet, snapshot, _fed(aux))
    split = None
    if len({r.inputs for r in routes}) > 1 and aux.captured is not None:
        aux, split = _join_routes(aux, snapshot, routes)
    elif routes and aux.trained is not None and aux.trained == _fed(aux) and not aux.assumed and \
            aux.trained != _convention_inputs(sheet, layers):
        aux = dataclasses.replace(aux, assumed=aux.trained_from)  # a pass resting on a route, not the record, names it
    if _feeds_other_layers(aux, sheet):
        aux = dataclasses.replace(aux, fix_edit=fix_edit(aux, snapshot))
    _support_issues(out, snapshot, support, arch)
    if support is not None and support.support == CAPTURES and arch:
        _forward_issues(out, snapshot, arch, requested, layers)
    _allowlist(out, snapshot, sheet.target_model_type)
    if crash:
        out.refuse("aux_layers", Finding(
            "aux-index-zero",
            f"{snapshot.label} would capture the input of layer 0 (residual is None there): the first forward fails",
            (Evidence("aux ids", str(list(aux.configured or ())), "ids whose captured layer input is >= 1"),),
            "drop the id that maps to layer input 0" + _later(snapshot, arch, "zero", "captures the embeddings there"),
            (f"rule: {reach_source}",),
        ))
    if capture_range.past == INDEX_ERROR and layers is not None and any(j >= layers for j in never_fire):
        out.refuse("aux_layers", Finding(
            "aux-index-past-end",
            f"{snapshot.label}'s {arch} flags self.layers[j] for every requested layer input j; "
            f"{[j for j in never_fire if j >= layers]} is past its {layers} layers: IndexError at startup",
            (Evidence("aux ids", str(list(aux.configured or ())), f"ids whose captured layer input is < {layers}"),),
            f"drop the ids that map to layer input {layers} or beyond", (f"rule: {reach_source}",),
        ))
    if split is not None:
        out.unknown("aux_layers", split)
    elif not _launch_no_default(out, snapshot, layers, aux.trained):
        _compare(out, aux, snapshot, sheet, call)
    _hard_coded_without_target(out, aux, snapshot)
    return Aux(aux, out.filed())


# -- 1. The ids: the fields an engine reads them from, its transform to layer inputs, and back


def _ids(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def field_text(field: AuxField) -> str:
    """A field as a message names it: ``dflash_config.target_layer_ids (+1)``."""
    return field.text()


def read_ids(config: Mapping[str, Any],
             fields: Sequence[AuxField]) -> tuple[AuxField | None, tuple[int, ...] | None]:
    """The first field in ``fields`` that holds ids, as the engine's resolver reads it (ids as written)."""
    return first_ids({field.path: written_ids(config, field) for field in fields}, fields)


def first_ids(written: Mapping[str, tuple[int, ...] | None],
              fields: Sequence[AuxField]) -> tuple[AuxField | None, tuple[int, ...] | None]:
    """The first field in ``fields`` whose path holds ids in ``written`` (path -> ids, the fact sheet's); none past an
    exclusive field whose object exists (``()`` in ``written``: TokenSpeed reads only ``eagle_config``'s ids then)."""
    for field in fields:
        ids = written.get(field.path)
        if ids:
            return field, ids
        if field.exclusive and ids is not None:
            return None, None
    return None, None


def transform(rule: str, ids: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
    """Requested layer-input indices for configured ``ids`` under a profile's transform rule (ValueError: no such
    rule)."""
    try:
        return Transform(rule).apply(ids, layers)
    except ValueError:
        raise ValueError(f"unknown aux transform {rule!r}") from None


def inverse_transform(rule: str, trained: Sequence[int], layers: int | None) -> tuple[int, ...] | None:
    """Non-negative ids the engine reads as exactly ``trained`` under ``rule``; None when no ids do (a
    conditional rule such as ``+1-if-first-is-1`` cannot be made to request some index sets)."""
    wanted, how = tuple(trained), Transform(rule)
    for offset in (1, 0) if how.may_add_one else (0,):
        ids = tuple(j - offset for j in wanted)
        if min(ids, default=0) >= 0 and how.apply(ids, layers) == wanted:
            return ids
    return None


def trained_inputs(ids: Sequence[int], convention: str) -> tuple[int, ...]:
    """The layer inputs a draft was trained on: input-of ids as-is, output-of ids + 1."""
    shift = 1 if convention == OUTPUT_OF else 0
    return tuple(sorted({i + shift for i in ids}))


def resolve_ids(snapshot: Snapshot, fields: Sequence[AuxField], found: tuple[AuxField | None, tuple[int, ...] | None],
                family: str, layers: int | None, defaults: tuple[int, ...] | None
                ) -> tuple[AuxField | None, tuple[int, ...] | None, str, tuple[int, ...] | None]:
    """(field, ids read, transform used, requested layer inputs) for the ids a resolver ``found``."""
    name, ids = found
    if name is None or ids is None:
        return None, None, "default", defaults
    rule = snapshot.aux_transform(family)
    shift = name.shift
    if shift:  # the resolver's own +1 comes before the target's transform
        used = "+1" if rule == "as-is" else f"+{shift}, then {rule}"
        return name, ids, used, transform(rule, [i + shift for i in ids], layers)
    return name, ids, rule, transform(rule, ids, layers)


def resolve_capture(snapshot: Snapshot, fields: Sequence[AuxField], config: Mapping[str, Any], family: str,
                    layers: int | None) -> tuple[AuxField | None, tuple[int, ...] | None, str, tuple[int, ...] | None]:
    """(field, ids read, transform used, requested layer inputs) for one resolver."""
    return resolve_ids(snapshot, fields, read_ids(config, fields), family, layers,
                       default_aux_inputs(layers) if layers is not None else None)


# -- 2. The reach: the layer inputs the target's capture loop takes


def firing(requested: Sequence[int], layers: int | None, capture_range: str | Reach
           ) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(captured ascending and unique, indices that never fire, whether index 0 crashes) under a reach
    (or the profile's ``capture_range`` name)."""
    reach = capture_range if isinstance(capture_range, Reach) else RANGE_REACH[capture_range]
    crash = 0 in requested and reach.zero == CRASH
    low = 0 if reach.zero == EMBEDDINGS else 1
    if layers is None:
        return tuple(sorted({j for j in requested if j >= low})), (), crash
    low, high = reach.bounds(layers)
    final = {layers} if reach.final_past and layers + 1 in requested else set()  # the last output, after the loop
    captured = tuple(sorted({j for j in requested if low <= j <= high} | final))
    never = tuple(sorted({j for j in requested if (j > high and not (final and j == layers + 1)) or j < 0
                          or (j == 0 and reach.zero == UNREACHED)}))
    return captured, never, crash


def capture_range_for(snapshot: Snapshot, family: str) -> str:
    """The profile's reach for a target the scan did not read: gpt-oss from SGLang 0.5.17 captures at
    every block boundary 0..L (models/gpt_oss.py forward)."""
    if family == "gpt_oss" and snapshot.behaviours.aux_transform_gpt_oss == "+1-unless-max-is-L":
        return "all"
    return str(snapshot.behaviours.capture_range)


def reach_for(snapshot: Snapshot, architecture: str | None, family: str) -> tuple[Reach, str]:
    """The reach of the target's capture loop at ``snapshot``'s version and its source: the scanned row for the
    architecture, else the profile's ``capture_range``."""
    row = snapshot.reach(architecture) if architecture else None
    if row is not None and architecture:
        return row.value, snapshot.reach_label(architecture, row)
    return RANGE_REACH[capture_range_for(snapshot, family)], snapshot.source("capture_range")


def _later(snapshot: Snapshot, arch: str | None, index: str, what: str) -> str:
    """``, or serve with vLLM 0.18.0 (its ARCH loop WHAT)``: the first later release of the engine that reaches it."""
    since = snapshot.first_reaching(arch, index) if arch else None
    return f", or serve with {since} (its {arch} loop {what})" if since else ""


def _reach_words(snapshot: Snapshot, arch: str | None, reach: Reach, source: str, never: Sequence[int],
                 layers: int | None) -> str:
    """What the loop reaches, and for an index past it the release that adds it (empty when all fire)."""
    if not never:
        return ""
    words = f"{arch or 'the target'}'s capture loop in {snapshot.label} reaches {reach.words}"
    if layers is not None and layers in never and arch:
        since = snapshot.first_reaching(arch, "last")
        other = snapshot.kind.serving.reach_peer
        elsewhere = snapshot.first_reaching(arch, "last", engine=other, after=Version("0")) if other else None
        words += (f"; L (the last layer's output) is reached from {since}" if since else
                  f"; no {snapshot.label.split()[0]} release read reaches L for {arch}"
                  + (f", {elsewhere} does" if elsewhere else ""))
    return f"{words} (rule: {source})"


# -- 3. The target's class: whether it captures at all (the capture table, vLLM's allowlist)


def _support_issues(out: Filing, snapshot: Snapshot, support: Any, arch: str | None) -> None:
    if support is None:
        return
    if support.support == Support.REFUSED:
        out.refuse("aux_layers", Finding(
            "target-no-capture",
            f"{snapshot.label} cannot capture aux hidden states from target {arch}: startup fails",
            (Evidence("target architecture", str(arch), "a target class that captures EAGLE-3 aux states"),),
            f"serve this target with {_capturing(snapshot, arch)}", (f"rule: {support.source}",),
        ))
    elif support.support == SILENT:
        out.lose("aux_layers", Finding(
            "target-silent-no-capture",
            f"{snapshot.label}'s {arch} never captures the configured aux layers: the draft gets one hidden state",
            (Evidence("target architecture", str(arch), "a target class that captures EAGLE-3 aux states"),),
            f"serve this target with {_capturing(snapshot, arch)}", (f"rule: {support.source}",),
        ))
    elif support.support != CAPTURES:
        out.unknown("aux_layers", Finding(
            "target-unknown",
            f"{snapshot.label}: target architecture {arch} is in no capture table row (hand-checked or scanned from the "
            "released wheels): whether it captures EAGLE-3 aux states is unknown",
            (Evidence("target architecture", str(arch), "an architecture the profiles know"),),
            "check the engine's model file for the target (SupportsEagle3 / set_eagle3_layers_to_capture), or run "
            "the engine's own loader on it",
            (f"rule: {support.source}",),
            readings=((f"{snapshot.label}'s {arch} captures the configured aux layers", PASSES),
                      (f"{snapshot.label}'s {arch} captures none (the draft gets one hidden state)", FAILS)),
        ))


def _forward_issues(out: Filing, snapshot: Snapshot, arch: str, requested: Sequence[int] | None,
                    layers: int | None) -> None:
    """A class whose own forward raised or under-delivered with capture on, in a forward probe of this release: for
    any draft fed aux states, or for one that requests index 0 or L where requesting that index alone raised there."""
    run = snapshot.forward_run(arch)
    if run is None or not requested:
        return
    if run.outcome in (RAISED, UNDER_DELIVERED):
        seen = f"raises with EAGLE-3 capture on ({run.stage}): {run.error}" if run.outcome == RAISED \
            else f"under-delivers with EAGLE-3 capture on ({run.stage}): {run.words}"
        summary = f"{snapshot.label}'s {arch} {seen}"
        fix = f"serve this target with another release or engine whose {arch} forward delivers the aux states"
    else:
        roles = {0: 0, layers: run.layers} if layers is not None else {}
        raised = [(j, words) for j in sorted(set(requested)) if j in roles
                  and (words := run.raised_at(roles[j])) is not None]
        if not raised:
            return
        j, words = raised[0]
        summary = f"{snapshot.label}'s {arch} raises when layer input {j} is requested: {words}"
        fix = f"drop the aux id that maps to layer input {j}"
    out.refuse("aux_layers", Finding(
        "target-forward-raises", summary,
        (Evidence("target architecture", arch, "a target class whose forward delivers the aux states"),),
        fix, (f"rule: {run.source}",),
    ))


def _capturing(snapshot: Snapshot, arch: str | None) -> str:
    """The first release whose class for ``arch`` captures from then on (the other engine's, where none does)."""
    since = snapshot.capture_since(arch) if arch else None
    elsewhere = snapshot.capture_since(arch, engine=snapshot.other_engine) if arch and not since else None
    return snapshot.release_words(since, elsewhere) + (f", whose {arch} captures aux states" if arch else "")


def plan_allowlist(sheet: FactSheet, snapshot: Snapshot) -> Filed:
    """The allowlist refusal alone, for a plan that stops before its aux layers (no draft class): the engine validates
    the speculative config, where the allowlist is checked, before it builds either model."""
    out = Filing()
    _allowlist(out, snapshot, sheet.target_model_type)
    return out.filed()


def _allowlist(out: Filing, snapshot: Snapshot, model_type: str) -> None:
    """vLLM before 0.17 refuses EAGLE-3 for a target model_type outside its allowlist."""
    names = snapshot.allowlisted(model_type) if model_type else None
    if names is None:
        return
    out.refuse("aux_layers", Finding(
        "target-not-allowed",
        f"{snapshot.label} allows EAGLE-3 only for {list(names)} targets; this target is {model_type!r}: "
        "ValueError 'Eagle3 is only supported for ... models' at startup",
        (Evidence("target model_type", model_type, " / ".join(names)),),
        f"serve this target with {snapshot.serve_with(ALLOWLIST, lambda v: not v or any(n in model_type for n in v))}"
        f" (its allowlist admits {model_type!r}), if its class captures aux states",
        (f"rule: {ALLOWLIST_SOURCE}",),
    ))


# -- 4. What the draft was trained on: the written ids under a convention, or under each capture route
#    (``producers/capture_routes.py`` says which backends a producer release trained through; an engine-class route
#    reads the ids with that engine's rule for the class's family at each pinned release, a fixed route with its own;
#    a pin whose class does not capture, or a transformers route for a class transformers does not ship, is no
#    reading). One set of layer inputs stands; sets that disagree are judged each against what the engine feeds.


def _trained(sheet: FactSheet, layers: int | None, convention: str | None,
             routes: Sequence[RouteReading] = ()) -> tuple[tuple[int, ...] | None, str]:
    """The layer inputs the draft was trained on as the config (and its convention, or the producer's capture
    routes for this target's class) says, and the words."""
    written = sheet.aux_written
    if routes and written is not None:
        if len({r.inputs for r in routes}) == 1:
            return routes[0].inputs, _routes_words(written, routes, sheet.producer)
        return None, ""
    given = convention or (written.convention_on(layers) if written else None)
    how = "--eagle3-aux-convention" if convention else written.convention_source_on(layers) if written else ""
    if written and written.ids and given in CONVENTIONS:
        settled = not convention and written.settled_on(layers)
        return (trained_inputs(written.ids, given),
                f"{'' if settled else 'assumed: '}{written.field} = {list(written.ids)}, {given} ({how})")
    if written and written.ids:
        return None, f"{written.field} = {list(written.ids)}, convention unknown"
    if layers is not None and sheet.use_aux_hidden_state is False:
        return default_aux_inputs(layers), "the draft uses no aux hidden states (eagle_config.use_aux_hidden_state)"
    return None, ""


def _convention_inputs(sheet: FactSheet, layers: int | None) -> tuple[int, ...] | None:
    """The layer inputs the producer record's convention reads the written ids as (None where it reads none)."""
    written = sheet.aux_written
    given = written.convention_on(layers) if written is not None else None
    return trained_inputs(written.ids, given) if written is not None and written.ids and given in CONVENTIONS else None


def _routes(sheet: FactSheet, layers: int | None, convention: str | None) -> tuple[RouteReading, ...]:
    """The capture routes the producer may have trained through, each reading the written ids for this target's
    class (:func:`route_readings`); empty where a convention is stated or no route is on record for it."""
    written = sheet.aux_written
    if convention is not None or written is None or not written.ids or written.stated or written.settled_on(layers):
        return ()
    found = route_readings(sheet.producer, sheet.raw, sheet.target_architecture, layers, written.ids)
    # a route under which an id names a state past the target's last layer output cannot have trained the draft
    return tuple(r for r in found or () if layers is None or max(r.inputs) <= layers)


@dataclass(frozen=True)
class RouteReading:
    """The layer inputs the ids name when the draft was trained through one route (and one pinned release)."""

    label: str
    inputs: tuple[int, ...]
    source: str
    #: A transformers route: a reading only where transformers ships the target's class (checked when it matters).
    transformers: bool = False


def route_readings(producer: str, config: Mapping[str, Any], arch: str | None, layers: int | None,
                   ids: Sequence[int]) -> tuple[RouteReading, ...] | None:
    """The readings of ``ids`` for a target of class ``arch``; None where the producer has no routes on record or the
    target's class or depth is not known (then its record's convention holds, ``producers/records.py``)."""
    routes = routes_of(producer)
    if not routes or arch is None or layers is None or not ids:
        return None
    release = release_of(producer, config)
    found: list[RouteReading] = []
    for route in (r for r in routes if _covers(r, release)):
        if route.rule is None:
            found += _engine_readings(route, arch, ids, layers)
            continue
        inputs = tuple(sorted({i + (1 if route.rule == "+1" else 0) for i in ids}))
        how = "the output of layer id" if route.rule == "+1" else "the input of layer id"
        found.append(RouteReading(f"{route.label} ({how})", inputs, route.source,
                                  transformers=route.supports == TRANSFORMERS))
    others = {r.inputs for r in found if not r.transformers}
    # a transformers route matters only where it reads the ids otherwise; then it must load the target's class
    kept = tuple(r for r in found if not r.transformers or {r.inputs} <= others or ships(arch))
    return kept


def _covers(route: CaptureRoute, release: Version | None) -> bool:
    if release is None:
        return True
    return (route.since is None or Version(route.since) <= release) and (
        route.until is None or release < Version(route.until))


def _engine_readings(route: CaptureRoute, arch: str, ids: Sequence[int], layers: int) -> list[RouteReading]:
    """One reading per pinned release whose class for ``arch`` captures: the engine's rule for its family."""
    found = []
    for release in route.releases:
        snapshot = snapshot_at(str(route.engine), release)
        support = snapshot.capture(arch)
        if support.support != CAPTURES:
            continue
        rule = snapshot.aux_transform(support.family)
        inputs = transform(rule, ids, layers)
        if inputs is None:
            continue
        label = f"{route.producer} {route.releases_words} through {snapshot.label}'s {arch} ({rule})"
        found.append(RouteReading(label, tuple(sorted(set(inputs))), f"{route.source}; rule: {support.source}; "
                                  f"{snapshot.source(_transform_behaviour(support.family))}"))
    return found


def _transform_behaviour(family: str) -> Any:
    return {"deepseek": "aux_transform_deepseek", "gpt_oss": "aux_transform_gpt_oss"}.get(family, "aux_transform_llama")


@cache
def ships(arch: str) -> bool:
    """transformers' AutoModelForCausalLM maps ``arch`` (the class an HF backend loads); True where transformers is
    not installed (the reading is kept)."""
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError:  # pragma: no cover - transformers is a dependency of the reference rung
        return True
    return arch in set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())


def _routes_words(written: Any, routes: Sequence[RouteReading], producer: str) -> str:
    """``assumed: eagle_config.x = [2, 30, 58] = inputs of layers [2, 30, 58], as every route ... reads them: ...``."""
    return (f"assumed: {written.field} = {list(written.ids)} = {describe_inputs(routes[0].inputs)}, as every route "
            f"{producer} may have trained through reads them: {'; '.join(r.label for r in routes)}")


def _join_routes(aux: AuxPlan, snapshot: Snapshot, routes: Sequence[RouteReading]) -> tuple[AuxPlan, Finding | None]:
    """Routes that read the ids as different layers, each judged against what the engine feeds: all pass, the plan
    passes naming them; all fail, the first route's layers stand (and fail); else undecided, naming two."""
    fed = tuple(_fed(aux) or ())
    outcomes = [(r, PASSES if r.inputs == fed else FAILS) for r in routes]
    if all(o == PASSES for _, o in outcomes):
        words = (f"assumed: every capture route reads the ids as {describe_inputs(fed)}, what {snapshot.label} feeds "
                 f"({'; '.join(r.label for r in routes)})")
        return dataclasses.replace(aux, trained=fed, trained_from=words, assumed=words), None
    if all(o == FAILS for _, o in outcomes):
        words = f"assumed: {'; '.join(f'{r.label}: {describe_inputs(r.inputs)}' for r in routes)}"
        return dataclasses.replace(aux, trained=routes[0].inputs, trained_from=words), None
    passing = next(r for r, o in outcomes if o == PASSES)
    failing = next(r for r, o in outcomes if o == FAILS)
    finding = Finding(
        "aux-route-undecided",
        f"{snapshot.label} feeds {describe_inputs(fed)}: right if the draft was trained {passing.label}, wrong if "
        f"{failing.label} ({describe_inputs(failing.inputs)}); the checkpoint records neither its producer release "
        "nor the backend it trained through",
        (Evidence("aux ids", f"{list(aux.configured or ())} ({aux.field})", "ids read the same way by every route"),),
        "name the producer release or the backend the draft was trained through (they decide the layers), or write "
        "the layer inputs it was trained on and state --eagle3-aux-convention, or pass --eagle3-target=DIR with the "
        "target's weights (the reference measures which layers the draft was trained on)",
        tuple(f"{r.label}: {describe_inputs(r.inputs)} ({o}); route: {r.source}" for r, o in outcomes),
        readings=tuple((f"{r.label}: {describe_inputs(r.inputs)}", o) for r, o in outcomes),
    )
    return dataclasses.replace(aux, trained=None, trained_from=""), finding


# -- 5. No ids in config.json: the producer's default training layers (``producers.aux_defaults``) against the
#    layer inputs the engine feeds, by the one habit rule (:mod:`pytest_eagle3.engines.habit`)


def _ids_missing(sheet: FactSheet) -> bool:
    """A draft that uses aux states and whose config names no aux ids in any field: its producer's default applies."""
    written = sheet.aux_written
    return written is not None and not written.ids and written.field is None and sheet.use_aux_hidden_state is not False


def _producers(rows: Sequence[AuxDefault]) -> str:
    """``modelopt (>= 0.35.0)``; several rows joined."""
    return "; ".join(dict.fromkeys(r.who for r in rows))


def _default_habit(aux: AuxPlan, sheet: FactSheet, snapshot: Snapshot,
                   fed: Sequence[int] | None) -> tuple[AuxPlan, habit.Call[AuxDefault] | None]:
    """The aux plan with the training layers the producer's default gives (None where it does not decide them)
    and the rule's call; ``fed``: the layer inputs the engine feeds."""
    layers = sheet.target_layers
    if fed is None or layers is None:
        return dataclasses.replace(aux, trained=None, trained_from=""), None
    rows = candidate_defaults(sheet.producer, sheet.raw, sheet.tensors)
    call = habit.judge(sheet.producer, rows, lambda r: r.inputs(layers) == tuple(fed))
    sets = {r.inputs(layers) for r in rows}
    if call.outcome == habit.AGREES:
        pin = fix_edit(dataclasses.replace(aux, trained=tuple(fed)), snapshot)
        how = (f"pin them: write {list(pin[1])} into {pin[0]}" if pin is not None
               else f"nothing to pin: {snapshot.label} reads no aux-id field")
        rule = " / ".join(dict.fromkeys(r.rule for r in rows))
        words = (f"assumed: no ids in config.json; the default of {_producers(rows)}, {rule}, is "
                 f"{describe_inputs(fed)}, what {snapshot.label} feeds; {how}")
        return dataclasses.replace(aux, trained=tuple(fed), trained_from=words, assumed=words), call
    if call.outcome == habit.DIFFERS and len(sets) == 1:
        (inputs,) = sets
        words = f"assumed: no ids in config.json; the default of {_producers(rows)}, {rows[0].rule}"
        return dataclasses.replace(aux, trained=inputs, trained_from=words), call
    return dataclasses.replace(aux, trained=None, trained_from=""), call


def _differs_finding(snapshot: Snapshot, sheet: FactSheet, call: habit.Call[AuxDefault], fed: Sequence[int],
                    fix: str | None) -> Finding:
    """No ids, and the producer's default is not what the engine feeds: both layer sets named."""
    layers = sheet.target_layers or 0
    trains = "; ".join(dict.fromkeys(f"{r.who} trains on {describe_inputs(r.inputs(layers))} "
                                      f"({r.rule})" for r in call.candidates))
    return Finding(
        "aux-ids-missing",
        f"config.json names no aux layer ids: {snapshot.label} feeds its defaults ({describe_inputs(fed)}); {trains}: "
        "the draft sees the wrong layers, acceptance drops",
        (Evidence("eagle_aux_hidden_state_layer_ids", "absent", "the ids used in training"),
         Evidence("layer inputs fed", str(list(fed)), " / ".join(str(list(r.inputs(layers))) for r in call.candidates))),
        fix or f"write the ids the draft was trained on into {_id_field_words(snapshot)}",
        (*(f"producer default: {r.source}" for r in call.candidates), f"rule: {snapshot.source('aux_id_fields')}"),
    )


def _undecided_finding(snapshot: Snapshot, sheet: FactSheet, call: habit.Call[AuxDefault], fed: Sequence[int]) -> Finding:
    """No ids, and nothing says which default applies: what decides it."""
    layers = sheet.target_layers or 0
    who = "the producer is unknown" if sheet.producer == UNKNOWN else (
        f"no default of {sheet.producer} is on record" if not call.candidates
        else f"{sheet.producer}'s releases and the heads its converter carries disagree, and the checkpoint names "
        "neither its release nor whether the draft was trained or converted"
        if any(r.via for r in call.candidates) else f"{sheet.producer}'s releases disagree and the checkpoint names none")
    each = [f"{r.who}: {describe_inputs(r.inputs(layers))} "
            f"({'agrees' if r.inputs(layers) == tuple(fed) else 'differs'})" for r in call.candidates]
    release = (f"name the {sheet.producer} release the draft was trained with (its releases' defaults differ), "
               if sheet.producer != UNKNOWN and call.candidates else "")
    return Finding(
        "aux-ids-undecided",
        f"config.json names no aux layer ids: {snapshot.label} feeds its defaults ({describe_inputs(fed)}), and whether "
        f"the draft was trained on them is not known: {who}",
        (Evidence("eagle_aux_hidden_state_layer_ids", "absent", "the ids used in training"),),
        f"{release}write the ids the draft was trained on into {_id_field_words(snapshot)}, or pass --eagle3-target=DIR "
        "with the target's weights (the reference measures which layers the draft was trained on)",
        (*each[:6], *((f"and {len(each) - 6} more defaults",) if len(each) > 6 else ()),
         *_ruled_out(sheet), f"rule: {snapshot.source('aux_id_fields')}"),
        readings=_default_readings(sheet, snapshot, call, fed),
    )


def _default_readings(sheet: FactSheet, snapshot: Snapshot, call: habit.Call[AuxDefault],
                     fed: Sequence[int]) -> tuple[tuple[str, str], ...]:
    """Each default that may have applied, with the verdict under it (:func:`habit.readings`)."""
    layers = sheet.target_layers or 0
    who = "a producer not on record" if sheet.producer == UNKNOWN else f"{sheet.producer}, its default not on record"
    return habit.readings([(f"{r.who}, its default {describe_inputs(r.inputs(layers))}",
                            r.inputs(layers) == tuple(fed)) for r in call.candidates],
                          who, f"trained on what {snapshot.label} feeds ({describe_inputs(fed)})", "trained on other layers")


def _ruled_out(sheet: FactSheet) -> tuple[str, ...]:
    """The producers on record the checkpoint rules out as readings (producer unknown only)."""
    if sheet.producer != UNKNOWN:
        return ()
    names = set(sheet.tensors)
    out = [f"not {p}: {why}" for p in RECORDS if (why := ruled_out(p, sheet.raw, names)) is not None]
    return tuple(out)


def _id_field_words(snapshot: Snapshot) -> str:
    """The first field the engine reads aux ids from, as a message names it."""
    fields = snapshot.behaviours.aux_id_fields or ()
    return field_text(fields[0]) if fields else "the engine's launch setting"


# -- 6. A launch setting names the layers, not the draft config (behaviour ``aux_default`` launch-setting).
#    TensorRT-LLM never reads the draft's aux ids: ``speculative_config.eagle3_layers_to_capture`` (layer OUTPUTS)
#    names the layers, else ``{1, L//2 - 1, L - 4}``, and a target of 5 layers or fewer has no default at all.
#    What the launch gives arrives in ``EngineVersion.launch`` (``knowledge.launch_settings``); the fact sheet's
#    ``default_inputs`` already holds the layer inputs it feeds. A fix here is a launch, never a copy.


def launched(snapshot: Snapshot) -> bool:
    """Whether ``snapshot``'s engine takes its aux layers from a launch setting."""
    return snapshot.behaviours.aux_default == LAUNCH_SETTING


def _launch_how_read(snapshot: Snapshot, requested: Sequence[int] | None) -> str:
    """What the engine reads instead of the draft's ids, for a headline."""
    spec = snapshot.launch_layers
    path, words = spec.path, spec.default_words
    ids = snapshot.launched_layers
    given = (f"{path} = {list(ids)} (layer outputs)" if ids is not None
             else f"no {path} at launch, so its default {words}")
    return (f"{snapshot.label} never reads the draft config's aux ids; it captures {given} -> inputs of layers "
            f"{list(requested or ())}")


def _launch_fix(snapshot: Snapshot, trained: Sequence[int]) -> str | None:
    """The launch that feeds the layer inputs ``trained`` (setting ids = inputs - 1); None for the embeddings."""
    ids = [j - 1 for j in trained]
    return launch_fix(ids, snapshot.kind.name) if ids and min(ids) >= 0 else None


def _launch_no_default(out: Filing, snapshot: Snapshot, layers: int | None, trained: Sequence[int] | None) -> bool:
    """File the startup failure of the default on a target too shallow for it; True when filed."""
    if not launched(snapshot) or snapshot.launched_layers is not None or layers is None:
        return False
    spec = snapshot.launch_layers
    if layers >= spec.fewest_layers:
        return False
    path, error = spec.path, spec.no_default_error
    wanted = _launch_fix(snapshot, trained) if trained else None
    out.refuse("aux_layers", Finding(
        "aux-no-default",
        f"{snapshot.label} has no default aux layers for a target of {layers} layers: {error} at startup",
        (Evidence(path, "not set at launch", f"the layers the draft was trained on ({describe_inputs(trained)})"),),
        wanted or f"launch with {path} naming the layers the draft was trained on",
        (f"rule: {snapshot.source('aux_default')}",),
    ))
    return True


def _launch_aux_fix(aux: AuxPlan, snapshot: Snapshot) -> str:
    """The fix line of an aux-layers finding for a launch-setting engine."""
    wanted = _launch_fix(snapshot, aux.trained or ())
    return wanted or (f"the draft was trained on layer inputs {list(aux.trained or ())}: input 0 (the embeddings) "
                      f"is no layer output, so no {snapshot.launch_layers.path} feeds it")


# -- 7. Fed against trained: the finding


def _fed(aux: AuxPlan) -> tuple[int, ...] | None:
    """The layer inputs that reach the draft in the default runtime mode (CUDA-graph decode where it differs)."""
    return aux.graph_mode if aux.graph_mode is not None else aux.captured


def _feeds_other_layers(aux: AuxPlan, sheet: FactSheet) -> bool:
    if aux.trained is None or aux.captured is None:
        return False
    return tuple(_fed(aux) or ()) != tuple(aux.trained)


def _compare(out: Filing, aux: AuxPlan, snapshot: Snapshot, sheet: FactSheet,
             call: habit.Call[AuxDefault] | None = None) -> None:
    if call is not None and call.outcome == habit.UNDECIDED:
        out.unknown("aux_layers", _undecided_finding(snapshot, sheet, call, _fed(aux) or ()))
        return
    if call is not None and call.outcome == habit.DIFFERS:
        fix = _aux_fix(aux, snapshot, sheet.target_architecture) if aux.trained is not None else None
        out.lose("aux_layers", _differs_finding(snapshot, sheet, call, _fed(aux) or (), fix))
        return
    if not _feeds_other_layers(aux, sheet):
        return
    fed = _fed(aux) or ()
    out.lose("aux_layers", Finding("aux-layers", _aux_headline(aux, snapshot, fed), _aux_evidence(aux),
                                   _aux_fix(aux, snapshot, sheet.target_architecture), _aux_details(aux, snapshot)))


def _how_read(aux: AuxPlan, snapshot: Snapshot) -> str:
    if launched(snapshot):
        return _launch_how_read(snapshot, aux.requested)
    if aux.configured is None:
        fields = snapshot.behaviours.aux_id_fields
        rule = DEFAULT_AUX_RULE if snapshot.behaviours.aux_default == "target-layers" else DRAFT_DEFAULT_RULE
        if not fields:
            return f"{snapshot.label} hard-codes the aux layers (no draft config field is read): {rule}"
        where = " or ".join(map(field_text, fields)) if len(fields) <= 2 else \
            f"{field_text(fields[0])} and {len(fields) - 1} other fields"
        return f"{snapshot.label} reads aux ids from {where}; none there, so it uses its defaults ({rule})"
    if aux.transform == "+1" or (aux.transform != "as-is" and tuple(aux.requested or ()) != aux.configured):
        return f"{snapshot.label} adds +1 to {list(aux.configured)} -> captures inputs of layers {list(aux.requested or ())}"
    return f"{snapshot.label} uses {list(aux.configured)} as-is -> captures inputs of layers {list(aux.requested or ())}"


def _aux_headline(aux: AuxPlan, snapshot: Snapshot, fed: Sequence[int]) -> str:
    mode = " in CUDA-graph decode" if aux.graph_mode is not None else ""
    return (f"{_how_read(aux, snapshot)} = {describe_inputs(fed)}{mode}; the draft was trained on "
            f"{describe_inputs(aux.trained)}: the draft sees the wrong layers, acceptance drops")


def _aux_evidence(aux: AuxPlan) -> tuple[Evidence, ...]:
    return (Evidence("layer inputs fed", str(list(aux.captured or ())) + (f" (from {field_text(aux.field)})" if aux.field
                                                                          else " (defaults)"),
                     f"{list(aux.trained or ())} ({aux.trained_from})"),)


def _aux_details(aux: AuxPlan, snapshot: Snapshot) -> tuple[str, ...]:
    details = [f"rule: {snapshot.source('aux_id_fields')}"]
    if aux.reach:
        details.append(aux.reach)
    fields = snapshot.behaviours.aux_id_fields or ()
    if len(fields) > 2:
        details.append(f"aux-id fields {snapshot.label} reads, in order: {', '.join(map(field_text, fields))}")
    if aux.configured is not None:
        details.append(f"rule: {snapshot.source('aux_transform_llama')}")
    if aux.other_mode is not None and aux.other_mode != aux.captured:
        details.append(f"in the other runtime mode ({snapshot.source('aux_id_fields_other_mode')}) the target captures "
                       f"{describe_inputs(aux.other_mode)}")
    if aux.graph_mode is not None:
        details.append(f"eager prefill captures {describe_inputs(aux.captured)}; "
                       f"rule: {snapshot.source('graph_mode_default_layers')}")
    return tuple(details)


# -- 8. The fix: a config edit, a launch, a later release or another engine that reads the ids, or retraining
#    (an engine that hard-codes its layers, LMDeploy: the first later release of it, else of another engine,
#    whose class for the target captures, with the ids to write there, that engine's own transform inverted)


def fix_edit(aux: AuxPlan, snapshot: Snapshot) -> tuple[str, tuple[int, ...]] | None:
    """The config edit that feeds the trained layers: the ids written into the engine's first aux-id field,
    which it reads with the target family's transform; None where no field edit can (graph mode, no field)."""
    if aux.trained is None or (aux.graph_mode is not None and aux.captured == aux.trained):
        return None
    fields = snapshot.behaviours.aux_id_fields
    if not fields:
        return None
    family = aux.support.family if aux.support else "llama"
    path, shift = fields[0].path, fields[0].shift
    rule = snapshot.aux_transform(family)
    configured = inverse_transform(rule, aux.trained, aux.target_layers)
    return None if configured is None else (path, tuple(i - shift for i in configured))


def _aux_fix(aux: AuxPlan, snapshot: Snapshot, arch: str | None) -> str:
    trained = list(aux.trained or ())
    unreachable = sorted(set(aux.never_fire) & set(trained))
    if unreachable and aux.reach:
        return f"the draft was trained on layer inputs {unreachable}, out of this target's reach: {aux.reach}"
    if aux.graph_mode is not None and aux.captured == aux.trained:
        return f"serve with {snapshot.serve_with('graph_mode_default_layers', lambda v: not v)} (or --disable-cuda-graph, slow)"
    if launched(snapshot):
        return _launch_aux_fix(aux, snapshot)
    if aux.fix_edit is None:
        since = snapshot.first_release("aux_id_fields", bool) if snapshot.kind.serving.aux_fix_names_own_release else None
        if since is not None:  # a later release of the same engine reads them: name it (computed from the rows)
            return (f"serve with {snapshot.release_words(since, None)}, which reads configured aux ids, and "
                    f"write the trained layer inputs {trained} there ({snapshot.label} ignores them)")
        if not snapshot.behaviours.aux_id_fields:  # no release of this engine reads them: another engine's, or retrain
            return _hard_coded_fix(aux, snapshot, _fed(aux) or (), arch)
        return f"serve with a version that reads configured aux ids ({snapshot.label} ignores them)"
    path, ids = aux.fix_edit
    return f"write {list(ids)} into {path} (for {snapshot.label}: layer inputs {trained})"


def _elsewhere(aux: AuxPlan, snapshot: Snapshot, architecture: str | None) -> str | None:
    """``vLLM >= 0.8.5 with [3, 5, 6] in eagle_aux_hidden_state_layer_ids``: the first engine (release-list order)
    that reads configured ids and captures for the target; None when no engine's rows do."""
    for engine in (snapshot.engine, *snapshot.other_engines):  # a later release of its own first
        since = snapshot.first_release("aux_id_fields", bool, engine=engine)
        if since is None or (engine == snapshot.engine and Version(since) <= snapshot.version):
            continue
        other = newest_snapshot(engine)
        support = other.capture(architecture) if architecture else None
        if support is not None and support.support != CAPTURES:
            continue
        found = fix_edit(dataclasses.replace(aux, support=support, graph_mode=None), other)
        if found is not None:
            return f"{other.display} >= {other.release(since)} with {list(found[1])} in {found[0]}"
    return None


def _hard_coded_fix(aux: AuxPlan, snapshot: Snapshot, fed: Sequence[int], architecture: str | None) -> str:
    """The fix for a draft trained on other layers than an engine that reads no aux-id field feeds."""
    other = _elsewhere(aux, snapshot, architecture)
    serve = f"serve with {other}, or " if other else ""
    return (f"no config edit changes the layers fed: {snapshot.label} feeds {describe_inputs(fed)} to every draft of this target; "
            f"{serve}retrain the draft on {describe_inputs(fed)}")


def _matching_layer_count(trained: Sequence[int]) -> int | None:
    """The target layer count L whose hard-coded inputs (2, L // 2, L - 3) are ``trained``; None when no L is."""
    if len(trained) != 3 or trained[0] != 2:
        return None
    layers = trained[2] + 3
    return layers if layers // 2 == trained[1] else None


def _hard_coded_without_target(out: Filing, aux: AuxPlan, snapshot: Snapshot) -> None:
    """Without the target's layer count: an engine that reads no aux-id field feeds (2, L // 2, L - 3); training
    layers no L gives are never fed, whatever the target (a loss, decided from the config alone)."""
    if snapshot.behaviours.aux_id_fields or snapshot.behaviours.aux_default != "target-layers" or aux.target_layers \
            is not None or aux.trained is None or _matching_layer_count(aux.trained) is not None:
        return
    other = _elsewhere(aux, snapshot, None)
    out.lose("aux_layers", Finding(
        "aux-layers",
        f"{snapshot.label} hard-codes the aux layers (no draft config field is read): inputs of layers 2, L//2, L-3 for "
        f"an L-layer target; the draft was trained on {describe_inputs(aux.trained)}, which no L gives: the draft "
        "sees the wrong layers, acceptance drops",
        (Evidence("layer inputs fed", "[2, L//2, L-3]", f"{list(aux.trained)} ({aux.trained_from})"),),
        f"no config edit changes the layers fed: {('serve with ' + other + ', or ') if other else ''}retrain the draft on "
        "inputs of layers 2, L//2, L-3 of its target (give --eagle3-target for the layer numbers)",
        (f"rule: {snapshot.source('aux_id_fields')}",),
    ))

