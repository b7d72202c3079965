"""The one place repair reads the engine layer's load plan (adjust here when the plan's shape changes).

LoadPlan attributes read: ``engine``, ``draft_class``, ``outcome``, ``issues`` (``area``, ``kind``,
``finding``), ``parameters``, ``dropped``, ``uninitialised``, ``built``, ``aux`` (``field``,
``configured``, ``requested``, ``captured``, ``trained``, ``trained_from``, ``fix_edit``),
``fc`` (``action``, ``width_sent``, ``expects_width``, ``checkpoint_width``), ``norms``,
``norm_edits``, ``rope_edit``, ``embed_tokens``, ``lm_head``, ``map_reading``, ``draft_layers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.knowledge.releases import EngineVersion


@dataclass(frozen=True)
class PlanIssue:
    """One thing the engine will do wrong: contract area, finding code, message and the rules' fix."""

    area: str
    code: str
    summary: str
    fix: str


@dataclass(frozen=True)
class PlanView:
    """What repair needs from one engine version's load plan."""

    engine: EngineVersion
    draft_class: str | None
    outcome: str
    issues: tuple[PlanIssue, ...]
    parameters: dict[str, tuple[str, ...]]
    dropped: dict[str, str]
    uninitialised: tuple[str, ...]
    aux_field: str | None
    aux_configured: tuple[int, ...] | None
    aux_captured: tuple[int, ...] | None
    aux_trained: tuple[int, ...] | None
    aux_trained_from: str
    aux_edit: tuple[str, tuple[int, ...]] | None
    fc_action: str
    fc_width_sent: int | None
    fc_expects_width: int | None
    fc_checkpoint_width: int | None
    norms: dict[str, bool]
    norm_edits: dict[str, bool]
    rope_edit: dict[str, Any]
    embed_tokens: str
    lm_head: str
    map_reading: str
    draft_layers: int | None

    def codes(self, area: str | None = None) -> set[str]:
        return {i.code for i in self.issues if area is None or i.area == area}

    def areas(self) -> set[str]:
        return {i.area for i in self.issues}


def plan_view(ckpt: Checkpoint, engine: EngineVersion, target: TargetModel | None = None,
              convention: str | None = None) -> PlanView:
    """The load plan of ``engine`` for ``ckpt``, read into a :class:`PlanView`."""
    from pytest_eagle3.engines.plan import load_plan

    plan = load_plan(ckpt, engine, target, convention)
    aux, fc = plan.aux, plan.fc
    return PlanView(
        engine=plan.engine,
        draft_class=plan.draft_class,
        outcome=plan.outcome,
        issues=tuple(PlanIssue(i.area, i.finding.code, i.finding.summary, i.finding.fix) for i in plan.issues),
        parameters=dict(plan.parameters),
        dropped=dict(plan.dropped),
        uninitialised=tuple(plan.uninitialised),
        aux_field=aux.field,
        aux_configured=aux.configured,
        aux_captured=aux.captured,
        aux_trained=aux.trained,
        aux_trained_from=aux.trained_from,
        aux_edit=aux.fix_edit,
        fc_action=fc.action,
        fc_width_sent=fc.width_sent,
        fc_expects_width=fc.expects_width,
        fc_checkpoint_width=fc.checkpoint_width,
        norms=dict(plan.norms),
        norm_edits=dict(plan.norm_edits),
        rope_edit=dict(plan.rope_edit),
        embed_tokens=plan.embed_tokens,
        lm_head=plan.lm_head,
        map_reading=plan.map_reading,
        draft_layers=plan.draft_layers,
    )


def aux_ids_for(engine: EngineVersion, inputs: Sequence[int]) -> tuple[str, tuple[int, ...]] | None:
    """(field, ids) that make ``engine`` feed the layer inputs ``inputs`` from a Llama-family target: its first
    aux-id field, ids less its own shift and its +1 (engines.aux ``_aux_fix``); None when it reads no field."""
    from pytest_eagle3.engines.aux import id_field
    from pytest_eagle3.engines.profiles import profile

    prof = profile(engine)
    fields = prof.behaviours.aux_id_fields or ()
    if not fields:
        return None
    path, shift = id_field(fields[0])
    rule = str(prof.behaviours.aux_transform_llama)
    return path, tuple(j - shift - (1 if rule.startswith("+1") else 0) for j in inputs)


def plan_lines(ckpt: Checkpoint, engine: EngineVersion, target: TargetModel | None = None,
               convention: str | None = None) -> tuple[list[str], PlanView]:
    """The plan's own summary lines (``LoadPlan.describe``) and its view."""
    from pytest_eagle3.engines.plan import load_plan

    return load_plan(ckpt, engine, target, convention).describe(), plan_view(ckpt, engine, target, convention)


def parse_engines(text: str) -> Sequence[EngineVersion]:
    """``sglang==0.5.23,vllm==0.33.0`` as engine versions (raises ValueError with the reason)."""
    from pytest_eagle3.engines.selection import parse_selection

    return parse_selection(text)
