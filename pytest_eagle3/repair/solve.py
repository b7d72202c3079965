"""Find the copy: engine-independent repairs, then re-plan every chosen engine on the copy and apply the
config edit or key layout each remaining issue names, until no engine has an issue left.

Several engines share one copy. When two need contradicting values in one field (or two key layouts),
the copy cannot serve both: :class:`RepairRefused` says which, unless ``prefer`` names the engine that wins
(the other is then left as it is and reported). With ``prefer``, engines no copy can serve are reported
the same way instead of refusing the copy for the preferred one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_eagle3.engines.aux_layers import fix_edit, route_readings
from pytest_eagle3.repair import configs, independent, key_layouts
from pytest_eagle3.repair.record import Change, RepairRefused
from pytest_eagle3.repair.virtual import VirtualDraft

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.issue import Issue
    from pytest_eagle3.engines.plan_types import LoadPlan
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict import Pipeline

from pytest_eagle3.producers.names import INPUT_OF, OUTPUT_OF
from pytest_eagle3.words import plural

MAX_ROUNDS = 8


@dataclass(frozen=True)
class Trained:
    """The target layer inputs the draft was trained on, and how that is known."""

    inputs: tuple[int, ...] | None
    words: str
    #: The draft's mean acceptance length fed those layers as trained, where the target's side measured it.
    acceptance: float | None = None


@dataclass
class Solution:
    """The copy to write, every change made, the engines it serves and the plans that show it.

    ``pipeline`` judges every plan of the search (one for the whole solve: the target's config opened once)."""

    draft: VirtualDraft
    changes: list[Change]
    trained: Trained
    convention: str | None
    pipeline: Pipeline
    plans: dict[str, LoadPlan] = field(default_factory=dict)
    #: The target, whose tensors a copy may need (its embedding, for an engine that requires the draft to ship one).
    target: TargetModel | None = None
    not_served: dict[str, str] = field(default_factory=dict)
    layout: str = "as written"


def trained_layers(ckpt: Checkpoint, convention: str | None, target: TargetModel | None) -> Trained:
    """Training layer inputs: ``--aux-convention`` over the producer's convention over the target's defaults."""
    from pytest_eagle3.producers.formats import default_aux_inputs

    aux = ckpt.config.aux
    if aux.ids:
        layers = target.num_hidden_layers if target is not None else None
        routes = None
        if convention is None and not aux.stated and target is not None and target.architectures:
            routes = route_readings(ckpt.format.producer, ckpt.config_raw or {}, target.architectures[0], layers,
                                    aux.ids)
        routes = tuple(r for r in routes or () if layers is None or max(r.inputs) <= layers)
        if routes and len({r.inputs for r in routes}) == 1:  # what the producer's backend made of them for this class
            return Trained(routes[0].inputs, f"{aux.field} = {list(aux.ids)} as every capture route "
                                             f"{ckpt.format.producer} may have trained through reads them: "
                                             f"{'; '.join(r.label for r in routes)}")
        if routes:
            return Trained(None, f"{aux.field} = {list(aux.ids)} mean other layers under the capture routes "
                                 f"{ckpt.format.producer} may have trained through "
                                 f"({'; '.join(f'{r.label}: {list(r.inputs)}' for r in routes)}): pass --aux-convention")
        given = convention or aux.convention_on(layers)
        how = "--aux-convention" if convention else f"the producer's convention ({aux.convention_source})"
        if given in (INPUT_OF, OUTPUT_OF):
            shift = 1 if given == OUTPUT_OF else 0
            inputs = tuple(sorted({i + shift for i in aux.ids}))
            return Trained(inputs, f"{aux.field} = {list(aux.ids)} read {given}, from {how}")
        return Trained(None, f"{aux.field} = {list(aux.ids)}, convention unknown: pass --aux-convention")
    if target is not None and target.num_hidden_layers is not None:
        inputs = tuple(default_aux_inputs(target.num_hidden_layers))
        return Trained(inputs, "no aux ids in config.json: the producers' default for the target's layer count")
    return Trained(None, "no aux ids in config.json and no target: the training layers are unknown")


def copy_convention(draft: VirtualDraft, trained: Trained) -> str | None:
    """The convention under which the copy's first aux-id field holds the training inputs (passed to the
    plans and to the proof so they read the ids as trained)."""
    if trained.inputs is None:
        return None
    ids = draft.checkpoint().config.aux.ids
    if not ids:
        return None
    if tuple(sorted(ids)) == trained.inputs:
        return INPUT_OF
    if tuple(sorted(i + 1 for i in ids)) == trained.inputs:
        return OUTPUT_OF
    return None


def _plans(pipeline: Pipeline, draft: VirtualDraft, engines: Sequence[EngineVersion], target: TargetModel | None,
           trained: Trained) -> dict[str, LoadPlan]:
    """Every engine's plan of the copy as it stands (the pipeline's judge step), judged against the training
    layers the solution knows: each plan's aux fix then names the ids its engine reads as those layers, by the
    target family's own rule."""
    from pytest_eagle3.engines.plan_types import Measured
    from pytest_eagle3.verdict import TargetSide

    ckpt = draft.checkpoint()
    convention = copy_convention(draft, trained)
    measured = Measured(trained.inputs, trained.words) if trained.inputs is not None else None
    side = TargetSide(str(target.path)) if target is not None else TargetSide()
    return {e.spec: pipeline.judge(ckpt, e, side, measured, convention) for e in engines}


def _codes(plan: LoadPlan, area: str | None = None) -> set[str]:
    return {i.finding.code for i in plan.issues if area is None or i.area == area}


class _Claims:
    """Config fields each engine needed, to catch two engines needing different values."""

    def __init__(self, prefer: str | None) -> None:
        self.prefer = prefer
        self.owner: dict[str, tuple[Any, set[str]]] = {}
        self.losers: dict[str, str] = {}

    def claim(self, dotted: str, value: Any, spec: str) -> bool:
        """Record ``spec`` needing ``value`` in ``dotted``; False when another engine needs another value there
        and wins; :class:`RepairRefused` when nobody was named to win."""
        value = list(value) if isinstance(value, tuple) else value
        held_value, holders = self.owner.get(dotted, (value, set()))
        others = holders - {spec}
        if held_value == value or not others:
            self.owner[dotted] = (value, (holders if held_value == value else set()) | {spec})
            return True
        conflict = (f"{', '.join(sorted(others))} needs {dotted} = {held_value} and {spec} needs {value}: "
                    "one copy cannot serve both")
        if self.prefer == spec:
            self.losers.update({other: conflict for other in others})
            self.owner[dotted] = (value, {spec})
            return True
        if self.prefer in others:
            self.losers[spec] = conflict
            return False
        raise RepairRefused([conflict + "; name the engine that wins with --prefer ENGINE==VER (or fix for each "
                                        "engine into its own copy)"])


def solve(ckpt: Checkpoint, engines: Sequence[EngineVersion], target: TargetModel | None = None,
          convention: str | None = None, prefer: str | None = None, measured: Trained | None = None,
          pipeline: Pipeline | None = None, *, scanned: bool = False) -> Solution:
    """The copy that every engine in ``engines`` loads as trained, or :class:`RepairRefused` with why not.
    ``measured``: the training layer inputs the reference measurement settled (overrules every convention);
    ``pipeline``: the one that judges every plan (a new one when none is given); ``scanned``: the caller ran
    ``independent.refuse_unhealthy`` on ``ckpt`` already (the weights are read once)."""
    from pytest_eagle3.verdict import pipeline_for

    pipeline = pipeline if pipeline is not None else pipeline_for()
    independent.refuse_unreadable(ckpt)
    independent.refuse_config(ckpt, known_convention=bool(convention or measured))
    if not scanned:
        independent.refuse_unhealthy(ckpt)
    draft = VirtualDraft.of(ckpt)
    changes: list[Change] = []
    for text in key_layouts.split_fused(draft):
        changes.append(Change("tensor", text, "the engines load q/k/v and gate/up as shards of their fused "
                                              "parameter (stacked_params_mapping): a fused tensor matches none"))
    _strip_wrappers(draft, changes)
    independent.repair_shapes(draft, changes)
    independent.repair_vocab_map(draft, changes)
    trained = measured or trained_layers(ckpt, convention, target)
    solution = Solution(draft, changes, trained, None, pipeline, target=target)
    claims = _Claims(prefer)
    for _ in range(MAX_ROUNDS):
        plans = _plans(pipeline, draft, engines, target, trained)
        failing = {s: p for s, p in plans.items() if p.issues}
        if not failing and not _aux_misplaced(solution, plans):
            break
        progress = _layout(solution, plans, prefer)
        for plan in failing.values():
            for issue in plan.issues:
                if issue.area != "keys":
                    progress |= _apply(solution, plan, issue, claims)
        progress |= _place_aux_ids(solution, plans, claims)
        if not progress and prefer is not None and prefer not in failing:
            for spec, plan in failing.items():  # the preferred engine is served: the others are reported
                claims.losers[spec] = "; ".join(_unfixable({spec: plan}))
            progress = True
        if claims.losers:  # start again for the engines served, so the copy carries no edit made for a loser
            served = [e for e in engines if e.spec not in claims.losers]
            again = solve(ckpt, served, target, convention, prefer, measured, pipeline, scanned=True)
            again.not_served = {**claims.losers, **again.not_served}
            return again
        if not progress:
            raise RepairRefused(_unfixable(failing))
    else:
        raise RepairRefused(_unfixable({s: p for s, p in _plans(pipeline, draft, engines, target, trained).items()
                                        if p.issues}))
    solution.plans = _plans(pipeline, draft, engines, target, trained)
    solution.convention = copy_convention(draft, trained)
    return solution


def _unfixable(failing: dict[str, LoadPlan]) -> list[str]:
    return [f"{plan.engine.label}: [{issue.area}/{issue.finding.code}] {issue.finding.summary}"
            + (f" (fix: {issue.finding.fix})" if issue.finding.fix else "")
            for plan in failing.values() for issue in plan.issues] or ["no edit makes the engines load the draft"]


def _strip_wrappers(draft: VirtualDraft, changes: list[Change]) -> None:
    from pytest_eagle3.producers.formats import LEFTOVER_PREFIXES

    mapping = {}
    for name in draft.names():
        new = name
        while new.startswith(LEFTOVER_PREFIXES):
            new = new.split(".", 1)[1]
        if new != name:
            mapping[name] = new
    if mapping:
        draft.rename(mapping)
        first = sorted(mapping)[0]
        changes.append(Change("rename", f"{plural(len(mapping), 'tensor')}: {first} -> {mapping[first]}, ...",
                              "a trainer wrapper prefix matches no engine parameter (rules/shapes.py leftover-prefix)"))


def _layout(solution: Solution, plans: dict[str, LoadPlan], prefer: str | None) -> bool:
    """Rename to the first layout under which no engine has a key issue; False when the names already work."""
    if not any(_codes(p, "keys") for p in plans.values()):
        return False
    draft = solution.draft
    engines = [p.engine for p in plans.values()]
    serves: dict[str, list[str]] = {}
    mappings: dict[str, dict[str, str]] = {}
    for layout in key_layouts.LAYOUTS:
        mapping = key_layouts.layout_mapping(draft.names(), layout)
        trial = VirtualDraft(draft.source, draft.config, dict(draft.entries), dict(draft.computed), dict(draft.origin))
        trial.rename(mapping)
        views = _plans(solution.pipeline, trial, engines, None, solution.trained)
        serves[layout] = [s for s, v in views.items() if not _codes(v, "keys")]
        mappings[layout] = mapping
    servable = {s for ok in serves.values() for s in ok}
    if not servable:
        return False  # no layout helps: the key issues are not about names (reported as unfixable)
    for layout, ok in serves.items():
        if set(ok) == servable or (prefer is not None and prefer in ok):
            return _rename(solution, mappings[layout], layout, plans)
    needs = "; ".join(f"{spec} loads {[lay for lay, ok in serves.items() if spec in ok]}" for spec in sorted(servable))
    raise RepairRefused([f"the engines need different tensor names ({needs}): one copy cannot serve them all; "
                         "name the engine that wins with --prefer ENGINE==VER"])


def _rename(solution: Solution, mapping: dict[str, str], layout: str, plans: dict[str, LoadPlan]) -> bool:
    """Rename to ``layout``; False when no name changes."""
    moved = {old: new for old, new in mapping.items() if old != new}
    if not moved:
        return False
    solution.draft.rename(moved)
    solution.layout = layout
    first = sorted(moved)[0]
    why = "; ".join(f"{p.engine.label}: {i.finding.summary}" for p in plans.values() for i in p.issues
                    if i.area == "keys")
    solution.changes.append(Change("rename", f"{plural(len(moved), 'tensor')} to the {layout} layout: {first} -> {moved[first]}, ...",
                                   why, tuple(plans)))
    return True


def _aux_misplaced(solution: Solution, plans: dict[str, LoadPlan]) -> list[tuple[LoadPlan, str, tuple[int, ...]]]:
    """Engines whose first aux-id field does not hold the ids that feed the training layers (checked even
    without a target, when the plans cannot see which layers are fed): the plan's own aux fix, which inverts
    the engine's rule for the target's family (a Llama default without a target)."""
    from pytest_eagle3.knowledge.snapshot import snapshot_of

    if solution.trained.inputs is None:
        return []
    out = []
    for plan in plans.values():  # each plan is judged against the training inputs (``_plans``)
        wanted = plan.aux.fix_edit or fix_edit(plan.aux, snapshot_of(plan.engine))
        if wanted is not None and configs.get(solution.draft.config, wanted[0]) != list(wanted[1]):
            out.append((plan, *wanted))
    return out


def _place_aux_ids(solution: Solution, plans: dict[str, LoadPlan], claims: _Claims) -> bool:
    progress = False
    for plan, dotted, ids in _aux_misplaced(solution, plans):
        progress |= _config_edit(solution, plan, claims, dotted, ids,
                                 f"{plan.engine.label} reads aux ids from {dotted} first: ids {list(ids)} feed the "
                                 f"training layer inputs {list(solution.trained.inputs or ())} "
                                 f"({solution.trained.words})")
    return progress


def _config_edit(solution: Solution, plan: LoadPlan, claims: _Claims, dotted: str, value: Any, why: str) -> bool:
    config = solution.draft.config
    if configs.get(config, dotted) == (list(value) if isinstance(value, tuple) else value):
        return False
    if not claims.claim(dotted, value, plan.engine.spec):
        return False
    before = configs.get(config, dotted)
    configs.put(config, dotted, value)
    shown = list(value) if isinstance(value, tuple) else value
    was = "(not set)" if before is None else repr(before)  # an absent field, never a raw None
    solution.changes.append(Change("config", f"{dotted}: {was} -> {shown!r}", why, (plan.engine.spec,)))
    return True


def _apply(solution: Solution, plan: LoadPlan, issue: Issue, claims: _Claims) -> bool:
    """Apply the edit that fixes ``issue`` for ``plan``'s engine; False when a copy cannot fix it."""
    draft, config = solution.draft, solution.draft.config
    why = f"{plan.engine.label}: {issue.finding.summary}"
    code = issue.finding.code
    if code == "speculators-format":
        if not configs.is_speculators(config) or not claims.claim("<format>", "flat", plan.engine.spec):
            return False
        solution.draft.config = configs.flatten_speculators(config)
        # the speculators' top-level ids stay (vLLM reads them; a flat config with layers.0.* and eagle_config
        # ids alone reads as a ModelOpt export, whose habits the copy does not have)
        if config.get("eagle_aux_hidden_state_layer_ids") is not None:
            solution.draft.config["eagle_aux_hidden_state_layer_ids"] = config["eagle_aux_hidden_state_layer_ids"]
        solution.changes.append(Change("config", "speculators config -> flat SGLang/EAGLE-style config "
                                       f"(transformer_layer_config lifted, architectures ['{configs.FLAT_ARCHITECTURE}'], "
                                       "eagle_config)", why, (plan.engine.spec,)))
        return True
    if code == "speculators-only":
        if configs.is_speculators(config) or not claims.claim("<format>", "speculators", plan.engine.spec):
            return False
        solution.draft.config = configs.to_speculators(config, solution.trained.inputs)
        solution.changes.append(Change("config", "flat config -> speculators format (transformer_layer_config, "
                                       "speculators_model_type eagle3, top-level aux ids: the training layer inputs "
                                       f"{list(solution.trained.inputs or ())})", why, (plan.engine.spec,)))
        return True
    if code == "embed-required":
        return _copy_target_embedding(solution, plan, why)
    if code == "architecture":
        return _config_edit(solution, plan, claims, "architectures", [_architecture(solution, plan)], why)
    if code == "draft-model-type":
        model_type = _class_model_type(config, plan)
        return model_type is not None and _config_edit(solution, plan, claims,
                                                       configs.layer_scope(config) + "model_type", model_type, why)
    if code == "mtp-model-type":
        return _config_edit(solution, plan, claims, configs.layer_scope(config) + "model_type", "deepseek_v2", why)
    if code == "aux-layers":
        if plan.aux.fix_edit is None or solution.trained.inputs is None:
            return False
        dotted, ids = plan.aux.fix_edit
        return _config_edit(solution, plan, claims, dotted, tuple(ids),
                            f"{why} (training layer inputs {list(solution.trained.inputs)}: {solution.trained.words})")
    if code == "norm-flag":
        return any([_config_edit(solution, plan, claims, name, value, why) for name, value in plan.norm_edits.items()])
    if code == "rope-trained":
        scope = configs.layer_scope(config)
        return any([_config_edit(solution, plan, claims, scope + name, value, why)
                    for name, value in plan.rope_edit.items()])
    if code in POSITION_CODES:
        return _raise_positions(solution, plan, claims, why)
    if code == "draft-dtype":
        return _serve_dtype(solution, plan, claims, why)
    if code == "fc-unused":
        return _config_edit(solution, plan, claims, "eagle_config.use_aux_hidden_state", True, why)
    if code == "draft-vocab-size":
        rows = draft.shape("lm_head.weight")
        return rows is not None and bool(rows) and _config_edit(solution, plan, claims, "draft_vocab_size", rows[0],
                                                                why)
    if code == "d2t-missing-zeros":
        return _zero_d2t(solution, plan, claims, why)
    if code == "d2t-full-vocab":
        present = [n for n in ("d2t", "t2d") if n in draft.names()]
        if not present or not claims.claim("<d2t>", "absent", plan.engine.spec):
            return False
        for name in present:
            draft.drop(name)
        solution.changes.append(Change("drop", ", ".join(present), why, (plan.engine.spec,)))
        return True
    return False


#: The engine.runtime findings of a draft with fewer positions than the target is served with.
POSITION_CODES = ("draft-positions", "draft-positions-no-draft", "draft-positions-refused", "draft-positions-context-cut")


def _raise_positions(solution: Solution, plan: LoadPlan, claims: _Claims, why: str) -> bool:
    """Give the draft the target's context where its rope only sizes a rotary table (``max_position_embeddings``
    alone decides it); the change says the positions past the old length were never trained. False for a rope
    whose frequencies depend on the length (yarn, dynamic, longrope) or without the target's context."""
    from pytest_eagle3.engines.facts import CACHE_ONLY_ROPE_TYPES, context_length, rope_types

    config = solution.draft.config
    scope = configs.layer_scope(config)
    layer = configs.get(config, scope.rstrip(".")) if scope else config
    layer = layer if isinstance(layer, dict) else config
    served = context_length(solution.target.text_config, plan.engine.kind) if solution.target is not None else None
    before = configs.get(config, scope + "max_position_embeddings")
    if served is None or not set(rope_types(layer)) <= CACHE_ONLY_ROPE_TYPES:
        return False
    if not _config_edit(solution, plan, claims, scope + "max_position_embeddings", served, why):
        return False
    if isinstance(before, int):  # said on the change itself: the copy serves positions its training never saw
        last = solution.changes[-1]
        solution.changes[-1] = dataclasses.replace(last, what=f"{last.what} (positions past {before}, the draft's "
                                                   "configured length, were never trained: acceptance there is "
                                                   "unmeasured)")
    return True


def _serve_dtype(solution: Solution, plan: LoadPlan, claims: _Claims, why: str) -> bool:
    """Declare the dtype the engine serves the target in, so that draft and target run in one dtype."""
    from pytest_eagle3.engines.runtime import sglang_auto_dtype

    if solution.target is None:
        return False
    text = solution.target.text_config
    declared = text.get("dtype") or text.get("torch_dtype")
    fed = sglang_auto_dtype(declared if isinstance(declared, str) else None, str(text.get("model_type") or ""))
    key = "dtype" if "dtype" in solution.draft.config else "torch_dtype"  # the engines read dtype first
    return _config_edit(solution, plan, claims, key, fed, why)


def _architecture(solution: Solution, plan: LoadPlan) -> str:
    """The engine's own first name for the draft's family (LMDeploy: LlamaForCausalLM), else the flat default."""
    from pytest_eagle3.knowledge.draft_classes import family_architectures
    from pytest_eagle3.rules.mla import attention_family

    names = family_architectures(plan.engine.engine, plan.engine.version, attention_family(solution.draft.names()))
    return names[0] if names else configs.FLAT_ARCHITECTURE


def _zero_d2t(solution: Solution, plan: LoadPlan, claims: _Claims, why: str) -> bool:
    """A full-vocab draft for an engine whose map stays all zeros without d2t (LMDeploy): ship d2t = zeros, the
    identity as offsets. A reduced vocab needs the trained map, which a copy cannot invent."""
    import torch

    config, draft = solution.draft.config, solution.draft
    vocab = configs.get(config, configs.layer_scope(config) + "vocab_size")
    rows = config.get("draft_vocab_size") or vocab
    if "d2t" in draft.names() or not isinstance(rows, int) or rows != vocab \
            or not claims.claim("<d2t>", "present", plan.engine.spec):
        return False
    draft.put("d2t", torch.zeros(rows, dtype=torch.int64), "zeros: the identity map as offsets")
    solution.changes.append(Change("tensor", f"d2t: zeros({rows}) (full vocab: target = i + 0)", why,
                                   (plan.engine.spec,)))
    return True


def _class_model_type(config: dict[str, Any], plan: LoadPlan) -> str | None:
    """The model_type the engine reaches the config's draft class with (draft_classes.DraftClass.model_types)."""
    from pytest_eagle3.knowledge.draft_classes import draft_class

    names = config.get("architectures") or [""]
    klass = draft_class(plan.engine.engine, plan.engine.version, str(names[0]))
    return klass.model_types[0] if klass is not None and klass.model_types else None


def _copy_target_embedding(solution: Solution, plan: LoadPlan, why: str) -> bool:
    """Write the target's embed_tokens into the copy (mlx-vlm's drafter must ship one; it binds the target's)."""
    weights = solution.target.weights if solution.target is not None else None
    name = next((n for n in (weights.tensors if weights is not None else {}) if n.endswith("embed_tokens.weight")), None)
    if weights is None or name is None or "embed_tokens.weight" in solution.draft.names():
        return False
    solution.draft.put("embed_tokens.weight", weights.read(name), f"the target's {name}")
    solution.changes.append(Change("tensor", f"embed_tokens.weight: a copy of the target's {name}", why,
                                   (plan.engine.spec,)))
    return True
