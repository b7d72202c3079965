"""Aux hidden-state layers: config ids -> the physical layer inputs a target captures.

Everything is stated as *layer-input indices*: index j is the residual stream entering decoder
layer j (HF ``output_hidden_states[j]``, the output of layer j-1); 0 is the embeddings and L the
output of the last layer before the final norm. Both engines capture ``hidden_states + residual``
before layer j, in layer order, so duplicates collapse and the order is ascending.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from pytest_eagle3.engines import aux_launch, habit
from pytest_eagle3.engines.aux_elsewhere import hard_coded_fix, hard_coded_without_target
from pytest_eagle3.engines.aux_habit import (
    default_habit,
    differs_finding,
    ids_missing,
    undecided_finding,
)
from pytest_eagle3.engines.aux_ids import (
    field_text,
    first_ids,
    inverse_transform,
    read_ids,
    trained_inputs,
    transform,
)
from pytest_eagle3.engines.aux_routes import RouteReading, route_readings
from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.plan_types import AuxPlan, Filed, Filing, Measured, describe_inputs
from pytest_eagle3.engines.profiles import Profile
from pytest_eagle3.findings import FAILS, MEASURED, PASSES, Evidence, Finding
from pytest_eagle3.knowledge.advice import first_release, other_engine, release_words, serve_with
from pytest_eagle3.knowledge.capture import (
    ALLOWLIST,
    ALLOWLIST_SOURCE,
    CAPTURES,
    REFUSED,
    SILENT,
    allowlisted,
    capture_since,
    capture_support,
)
from pytest_eagle3.knowledge.engines.shared import AuxField
from pytest_eagle3.knowledge.reach import (
    CRASH,
    EMBEDDINGS,
    INDEX_ERROR,
    RANGE_REACH,
    UNREACHED,
    Reach,
    first_reaching,
    reach_at,
)
from pytest_eagle3.knowledge.reach import label as reach_label
from pytest_eagle3.producers.aux_defaults import AuxDefault
from pytest_eagle3.producers.formats import (
    CONVENTIONS,
    DEFAULT_AUX_RULE,
    default_aux_inputs,
)

#: mlx-vlm's default when the config names no ids (behaviour aux_default draft-layers).
DRAFT_DEFAULT_RULE = "ids 2, n//2, max(n-3, 0) of the DRAFT's n layers, each the output of layer max(id-1, 0)"


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


def capture_range_for(prof: Profile, family: str) -> str:
    """The profile's reach for a target the scan did not read: gpt-oss from SGLang 0.5.17 captures at
    every block boundary 0..L (models/gpt_oss.py forward)."""
    if family == "gpt_oss" and prof.behaviours.aux_transform_gpt_oss == "+1-unless-max-is-L":
        return "all"
    return str(prof.behaviours.capture_range)


def reach_for(prof: Profile, architecture: str | None, family: str) -> tuple[Reach, str]:
    """The reach of the target's capture loop at ``prof``'s version and its source: the scanned row for the
    architecture, else the profile's ``capture_range``."""
    row = reach_at(prof.engine, prof.version, architecture) if architecture else None
    if row is not None and architecture:
        return row.value, reach_label(prof.engine, architecture, row)
    return RANGE_REACH[capture_range_for(prof, family)], prof.source("capture_range")


def resolve_capture(prof: Profile, fields: Sequence[AuxField], config: Mapping[str, Any], family: str,
                    layers: int | None) -> tuple[AuxField | None, tuple[int, ...] | None, str, tuple[int, ...] | None]:
    """(field, ids read, transform used, requested layer inputs) for one resolver."""
    return resolve_ids(prof, fields, read_ids(config, fields), family, layers,
                       default_aux_inputs(layers) if layers is not None else None)


def resolve_ids(prof: Profile, fields: Sequence[AuxField], found: tuple[AuxField | None, tuple[int, ...] | None],
                family: str, layers: int | None, defaults: tuple[int, ...] | None
                ) -> tuple[AuxField | None, tuple[int, ...] | None, str, tuple[int, ...] | None]:
    """(field, ids read, transform used, requested layer inputs) for the ids a resolver ``found``."""
    name, ids = found
    if name is None or ids is None:
        return None, None, "default", defaults
    rule = str(prof.behaviours.aux_transform(family))
    shift = name.shift
    if shift:  # the resolver's own +1 comes before the target's transform
        used = "+1" if rule == "as-is" else f"+{shift}, then {rule}"
        return name, ids, used, transform(rule, [i + shift for i in ids], layers)
    return name, ids, rule, transform(rule, ids, layers)


@dataclass(frozen=True)
class Aux:
    """The aux plan and what the area files."""

    aux: AuxPlan
    filed: Filed = field(default_factory=Filed)


def plan_aux(sheet: FactSheet, prof: Profile, convention: str | None, measured: Measured | None = None) -> Aux:
    """What the target captures for the draft and what the draft was trained on (area ``aux_layers``)."""
    out = Filing()
    layers = sheet.target_layers
    arch = sheet.target_architecture
    support = capture_support(prof.engine, prof.version, arch) if arch else None
    family = support.family if support else "llama"
    capture_range, reach_source = reach_for(prof, arch, family)
    fields = prof.behaviours.aux_id_fields
    field, configured, used, requested = resolve_ids(prof, fields, first_ids(sheet.aux_ids, fields), family, layers,
                                                     sheet.default_inputs)
    captured: tuple[int, ...] | None = None
    never_fire: tuple[int, ...] = ()
    crash = False
    if requested is not None:
        captured, never_fire, crash = firing(requested, layers, capture_range)
    other_mode = None
    other_fields = prof.behaviours.aux_id_fields_other_mode
    if other_fields is not None:
        _, _, _, other = resolve_ids(prof, other_fields, first_ids(sheet.aux_ids, other_fields), family, layers,
                                     sheet.default_inputs)
        other_mode = firing(other, layers, capture_range)[0] if other is not None else None
    graph_mode = None
    if prof.behaviours.graph_mode_default_layers and configured and layers is not None:
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
                  reach=_reach_words(prof, arch, capture_range, reach_source, never_fire, layers))
    call = None
    if measured is None and ids_missing(sheet):
        aux, call = default_habit(aux, sheet, prof, _fed(aux), fix_edit)
    split = None
    if len({r.inputs for r in routes}) > 1 and aux.captured is not None:
        aux, split = _join_routes(aux, prof, routes)
    elif routes and aux.trained is not None and aux.trained == _fed(aux) and not aux.assumed and \
            aux.trained != _convention_inputs(sheet, layers):
        aux = dataclasses.replace(aux, assumed=aux.trained_from)  # a pass resting on a route, not the record, names it
    if _feeds_other_layers(aux, sheet):
        aux = dataclasses.replace(aux, fix_edit=fix_edit(aux, prof))
    _support_issues(out, prof, support, arch)
    _allowlist(out, prof, sheet.target_model_type)
    if crash:
        out.refuse("aux_layers", Finding(
            "aux-index-zero",
            f"{prof.label} would capture the input of layer 0 (residual is None there): the first forward fails",
            (Evidence("aux ids", str(list(aux.configured or ())), "ids whose captured layer input is >= 1"),),
            "drop the id that maps to layer input 0" + _later(prof, arch, "zero", "captures the embeddings there"),
            (f"rule: {reach_source}",),
        ))
    if capture_range.past == INDEX_ERROR and layers is not None and any(j >= layers for j in never_fire):
        out.refuse("aux_layers", Finding(
            "aux-index-past-end",
            f"{prof.label}'s {arch} flags self.layers[j] for every requested layer input j; "
            f"{[j for j in never_fire if j >= layers]} is past its {layers} layers: IndexError at startup",
            (Evidence("aux ids", str(list(aux.configured or ())), f"ids whose captured layer input is < {layers}"),),
            f"drop the ids that map to layer input {layers} or beyond", (f"rule: {reach_source}",),
        ))
    if split is not None:
        out.unknown("aux_layers", split)
    elif not aux_launch.no_default(out, prof, layers, aux.trained):
        _compare(out, aux, prof, sheet, call)
    hard_coded_without_target(out, aux, prof, fix_edit)
    return Aux(aux, out.filed())


def _later(prof: Profile, arch: str | None, index: str, what: str) -> str:
    """``, or serve with vLLM 0.18.0 (its ARCH loop WHAT)``: the first later release of the engine that reaches it."""
    since = first_reaching(prof.engine, arch, index, prof.version) if arch else None
    return f", or serve with {since} (its {arch} loop {what})" if since else ""


def _reach_words(prof: Profile, arch: str | None, reach: Reach, source: str, never: Sequence[int],
                 layers: int | None) -> str:
    """What the loop reaches, and for an index past it the release that adds it (empty when all fire)."""
    if not never:
        return ""
    words = f"{arch or 'the target'}'s capture loop in {prof.label} reaches {reach.words}"
    if layers is not None and layers in never and arch:
        since = first_reaching(prof.engine, arch, "last", prof.version)
        other = prof.kind.reach_peer
        elsewhere = first_reaching(other, arch, "last", Version("0")) if other else None
        words += (f"; L (the last layer's output) is reached from {since}" if since else
                  f"; no {prof.label.split()[0]} release read reaches L for {arch}"
                  + (f", {elsewhere} does" if elsewhere else ""))
    return f"{words} (rule: {source})"


def _convention_inputs(sheet: FactSheet, layers: int | None) -> tuple[int, ...] | None:
    """The layer inputs the producer record's convention reads the written ids as (None where it reads none)."""
    written = sheet.aux_written
    given = written.convention_on(layers) if written is not None else None
    return trained_inputs(written.ids, given) if written is not None and written.ids and given in CONVENTIONS else None


def _routes(sheet: FactSheet, layers: int | None, convention: str | None) -> tuple[RouteReading, ...]:
    """The capture routes the producer may have trained through, each reading the written ids for this target's
    class (``engines/aux_routes.py``); empty where a convention is stated or no route is on record for it."""
    written = sheet.aux_written
    if convention is not None or written is None or not written.ids or written.stated:
        return ()
    if written.contradicted_on(layers) and layers is not None:
        return boundary_readings(written.ids, layers, written.convention_source)
    found = route_readings(sheet.producer, sheet.raw, sheet.target_architecture, layers, written.ids)
    # a route under which an id names a state past the target's last layer output cannot have trained the draft
    return tuple(r for r in found or () if layers is None or max(r.inputs) <= layers)


def boundary_readings(ids: Sequence[int], layers: int, habit: str) -> tuple[RouteReading, ...]:
    """Ids whose largest is L under an output-of habit (layer L has no output, so the habit cannot have trained
    them): the two readings such ids admit, each the way an engine that serves them reads them. Block boundaries,
    id k = the state entering layer k and id L the last layer's output (SGLang models/gpt_oss.py
    set_eagle3_layers_to_capture keeps ids as given when max(ids) == L, v0.5.17 #32334); or layer outputs with id L
    clamped to the last layer's output (TokenSpeed models/base/causal_lm.py adds 1 to every id and
    base/transformer_model.py takes the final residual for index L + 1)."""
    boundaries = tuple(ids)
    outputs = tuple(min(i + 1, layers) for i in ids)
    return (RouteReading("read as block boundaries (id L = the last layer's output)", boundaries,
                         f"SGLang models/gpt_oss.py set_eagle3_layers_to_capture (ids kept when max(ids) == L); not "
                         f"{habit}, since layer L has no output"),
            RouteReading("read as layer outputs, id L clamped to the last layer's output", outputs,
                         "TokenSpeed models/base/causal_lm.py (+1) and base/transformer_model.py (index L + 1 = the "
                         "final residual)"))


def _routes_words(written: Any, routes: Sequence[RouteReading], producer: str) -> str:
    """``assumed: eagle_config.x = [2, 30, 58] = inputs of layers [2, 30, 58], as every route ... reads them: ...``."""
    return (f"assumed: {written.field} = {list(written.ids)} = {describe_inputs(routes[0].inputs)}, as every route "
            f"{producer} may have trained through reads them: {'; '.join(r.label for r in routes)}")


def _join_routes(aux: AuxPlan, prof: Profile, routes: Sequence[RouteReading]) -> tuple[AuxPlan, Finding | None]:
    """Routes that read the ids as different layers, each judged against what the engine feeds: all pass, the plan
    passes naming them; all fail, the first route's layers stand (and fail); else undecided, naming two."""
    fed = tuple(_fed(aux) or ())
    outcomes = [(r, PASSES if r.inputs == fed else FAILS) for r in routes]
    if all(o == PASSES for _, o in outcomes):
        words = (f"assumed: every capture route reads the ids as {describe_inputs(fed)}, what {prof.label} feeds "
                 f"({'; '.join(r.label for r in routes)})")
        return dataclasses.replace(aux, trained=fed, trained_from=words, assumed=words), None
    if all(o == FAILS for _, o in outcomes):
        words = f"assumed: {'; '.join(f'{r.label}: {describe_inputs(r.inputs)}' for r in routes)}"
        return dataclasses.replace(aux, trained=routes[0].inputs, trained_from=words), None
    passing = next(r for r, o in outcomes if o == PASSES)
    failing = next(r for r, o in outcomes if o == FAILS)
    finding = Finding(
        "aux-route-undecided",
        f"{prof.label} feeds {describe_inputs(fed)}: right if the draft was trained {passing.label}, wrong if "
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
    how = "--eagle3-aux-convention" if convention else written.convention_source if written else ""
    if written and written.ids and given in CONVENTIONS:
        return (trained_inputs(written.ids, given),
                f"assumed: {written.field} = {list(written.ids)}, {given} ({how})")
    if written and written.ids:
        why = (f" (the largest id is L = {layers}: not {written.convention} ids, as {written.convention_source}, "
               "since layer L has no output; read as block boundaries they name real states)"
               if written.contradicted_on(layers) else "")
        return None, f"{written.field} = {list(written.ids)}, convention unknown{why}"
    if layers is not None and sheet.use_aux_hidden_state is False:
        return default_aux_inputs(layers), "the draft uses no aux hidden states (eagle_config.use_aux_hidden_state)"
    return None, ""


def _support_issues(out: Filing, prof: Profile, support: Any, arch: str | None) -> None:
    if support is None:
        return
    if support.support == REFUSED:
        out.refuse("aux_layers", Finding(
            "target-no-capture",
            f"{prof.label} cannot capture aux hidden states from target {arch}: startup fails",
            (Evidence("target architecture", str(arch), "a target class that captures EAGLE-3 aux states"),),
            f"serve this target with {_capturing(prof, arch)}", (f"rule: {support.source}",),
        ))
    elif support.support == SILENT:
        out.lose("aux_layers", Finding(
            "target-silent-no-capture",
            f"{prof.label}'s {arch} never captures the configured aux layers: the draft gets one hidden state",
            (Evidence("target architecture", str(arch), "a target class that captures EAGLE-3 aux states"),),
            f"serve this target with {_capturing(prof, arch)}", (f"rule: {support.source}",),
        ))
    elif support.support != CAPTURES:
        out.unknown("aux_layers", Finding(
            "target-unknown",
            f"{prof.label}: target architecture {arch} is in no capture table row (hand-checked or scanned from the "
            "released wheels): whether it captures EAGLE-3 aux states is unknown",
            (Evidence("target architecture", str(arch), "an architecture the profiles know"),),
            "check the engine's model file for the target (SupportsEagle3 / set_eagle3_layers_to_capture), or run "
            "the engine's own loader on it",
            (f"rule: {support.source}",),
            readings=((f"{prof.label}'s {arch} captures the configured aux layers", PASSES),
                      (f"{prof.label}'s {arch} captures none (the draft gets one hidden state)", FAILS)),
        ))


def _capturing(prof: Profile, arch: str | None) -> str:
    """The first release whose class for ``arch`` captures from then on (the other engine's, where none does)."""
    since = capture_since(prof.engine, arch) if arch else None
    elsewhere = capture_since(other_engine(prof.engine), arch) if arch and not since else None
    return release_words(prof.engine, since, elsewhere) + (f", whose {arch} captures aux states" if arch else "")


def _allowlist(out: Filing, prof: Profile, model_type: str) -> None:
    """vLLM before 0.17 refuses EAGLE-3 for a target model_type outside its allowlist."""
    names = allowlisted(prof.version, model_type, prof.engine) if model_type else None
    if names is None:
        return
    out.refuse("aux_layers", Finding(
        "target-not-allowed",
        f"{prof.label} allows EAGLE-3 only for {list(names)} targets; this target is {model_type!r}: "
        "ValueError 'Eagle3 is only supported for ... models' at startup",
        (Evidence("target model_type", model_type, " / ".join(names)),),
        f"serve this target with {serve_with(ALLOWLIST, prof.engine, lambda v: not v or any(n in model_type for n in v))}"
        f" (its allowlist admits {model_type!r}), if its class captures aux states",
        (f"rule: {ALLOWLIST_SOURCE}",),
    ))


def _fed(aux: AuxPlan) -> tuple[int, ...] | None:
    """The layer inputs that reach the draft in the default runtime mode (CUDA-graph decode where it differs)."""
    return aux.graph_mode if aux.graph_mode is not None else aux.captured


def _feeds_other_layers(aux: AuxPlan, sheet: FactSheet) -> bool:
    if aux.trained is None or aux.captured is None:
        return False
    return tuple(_fed(aux) or ()) != tuple(aux.trained)


def _compare(out: Filing, aux: AuxPlan, prof: Profile, sheet: FactSheet,
             call: habit.Call[AuxDefault] | None = None) -> None:
    if call is not None and call.outcome == habit.UNDECIDED:
        out.unknown("aux_layers", undecided_finding(prof, sheet, call, _fed(aux) or ()))
        return
    if call is not None and call.outcome == habit.DIFFERS:
        fix = _aux_fix(aux, prof, sheet.target_architecture) if aux.trained is not None else None
        out.lose("aux_layers", differs_finding(prof, sheet, call, _fed(aux) or (), fix))
        return
    if not _feeds_other_layers(aux, sheet):
        return
    fed = _fed(aux) or ()
    out.lose("aux_layers", Finding("aux-layers", _aux_headline(aux, prof, fed), _aux_evidence(aux),
                                   _aux_fix(aux, prof, sheet.target_architecture), _aux_details(aux, prof)))


def _how_read(aux: AuxPlan, prof: Profile) -> str:
    if aux_launch.launched(prof):
        return aux_launch.how_read(prof, aux.requested)
    if aux.configured is None:
        fields = prof.behaviours.aux_id_fields
        rule = DEFAULT_AUX_RULE if prof.behaviours.aux_default == "target-layers" else DRAFT_DEFAULT_RULE
        if not fields:
            return f"{prof.label} hard-codes the aux layers (no draft config field is read): {rule}"
        where = " or ".join(map(field_text, fields)) if len(fields) <= 2 else \
            f"{field_text(fields[0])} and {len(fields) - 1} other fields"
        return f"{prof.label} reads aux ids from {where}; none there, so it uses its defaults ({rule})"
    if aux.transform == "+1" or (aux.transform != "as-is" and tuple(aux.requested or ()) != aux.configured):
        return f"{prof.label} adds +1 to {list(aux.configured)} -> captures inputs of layers {list(aux.requested or ())}"
    return f"{prof.label} uses {list(aux.configured)} as-is -> captures inputs of layers {list(aux.requested or ())}"


def _aux_headline(aux: AuxPlan, prof: Profile, fed: Sequence[int]) -> str:
    mode = " in CUDA-graph decode" if aux.graph_mode is not None else ""
    return (f"{_how_read(aux, prof)} = {describe_inputs(fed)}{mode}; the draft was trained on "
            f"{describe_inputs(aux.trained)}: the draft sees the wrong layers, acceptance drops")


def _aux_evidence(aux: AuxPlan) -> tuple[Evidence, ...]:
    return (Evidence("layer inputs fed", str(list(aux.captured or ())) + (f" (from {field_text(aux.field)})" if aux.field
                                                                          else " (defaults)"),
                     f"{list(aux.trained or ())} ({aux.trained_from})"),)


def fix_edit(aux: AuxPlan, prof: Profile) -> tuple[str, tuple[int, ...]] | None:
    """The config edit that feeds the trained layers: the ids written into the engine's first aux-id field,
    which it reads with the target family's transform; None where no field edit can (graph mode, no field)."""
    if aux.trained is None or (aux.graph_mode is not None and aux.captured == aux.trained):
        return None
    fields = prof.behaviours.aux_id_fields
    if not fields:
        return None
    family = aux.support.family if aux.support else "llama"
    path, shift = fields[0].path, fields[0].shift
    rule = str(prof.behaviours.aux_transform(family))
    configured = inverse_transform(rule, aux.trained, aux.target_layers)
    return None if configured is None else (path, tuple(i - shift for i in configured))


def _aux_fix(aux: AuxPlan, prof: Profile, arch: str | None) -> str:
    trained = list(aux.trained or ())
    unreachable = sorted(set(aux.never_fire) & set(trained))
    if unreachable and aux.reach:
        return f"the draft was trained on layer inputs {unreachable}, out of this target's reach: {aux.reach}"
    if aux.graph_mode is not None and aux.captured == aux.trained:
        return f"serve with {serve_with('graph_mode_default_layers', prof.engine, lambda v: not v)} (or --disable-cuda-graph, slow)"
    if aux_launch.launched(prof):
        return aux_launch.aux_fix(aux)
    if aux.fix_edit is None:
        since = first_release("aux_id_fields", prof.engine, bool) if prof.kind.aux_fix_names_own_release else None
        if since is not None:  # a later release of the same engine reads them: name it (computed from the rows)
            return (f"serve with {release_words(prof.engine, since, None)}, which reads configured aux ids, and "
                    f"write the trained layer inputs {trained} there ({prof.label} ignores them)")
        if not prof.behaviours.aux_id_fields:  # no release of this engine reads them: another engine's, or retrain
            return hard_coded_fix(aux, prof, _fed(aux) or (), arch, fix_edit)
        return f"serve with a version that reads configured aux ids ({prof.label} ignores them)"
    path, ids = aux.fix_edit
    return f"write {list(ids)} into {path} (for {prof.label}: layer inputs {trained})"


def _aux_details(aux: AuxPlan, prof: Profile) -> tuple[str, ...]:
    details = [f"rule: {prof.source('aux_id_fields')}"]
    if aux.reach:
        details.append(aux.reach)
    fields = prof.behaviours.aux_id_fields or ()
    if len(fields) > 2:
        details.append(f"aux-id fields {prof.label} reads, in order: {', '.join(map(field_text, fields))}")
    if aux.configured is not None:
        details.append(f"rule: {prof.source('aux_transform_llama')}")
    if aux.other_mode is not None and aux.other_mode != aux.captured:
        details.append(f"in the other runtime mode ({prof.source('aux_id_fields_other_mode')}) the target captures "
                       f"{describe_inputs(aux.other_mode)}")
    if aux.graph_mode is not None:
        details.append(f"eager prefill captures {describe_inputs(aux.captured)}; "
                       f"rule: {prof.source('graph_mode_default_layers')}")
    return tuple(details)
