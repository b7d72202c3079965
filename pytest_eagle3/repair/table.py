"""``plan``: one engine version's load plan as a table a person reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_eagle3.repair.planview import PlanView, plan_lines

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.knowledge.releases import EngineVersion


def _rows(view: PlanView) -> list[tuple[str, str]]:
    rows = [(", ".join(sources), param) for param, sources in sorted(view.parameters.items())]
    rows += [(name, f"DROPPED: {why}") for name, why in sorted(view.dropped.items())]
    rows += [("(nothing)", f"{param}: UNINITIALISED") for param in view.uninitialised]
    return rows


def render_plan(ckpt: Checkpoint, engine: EngineVersion, target: TargetModel | None = None,
                convention: str | None = None) -> str:
    """The plan's summary lines, the tensor -> parameter table, then layers, fc, norms, embeddings, map, issues."""
    summary, view = plan_lines(ckpt, engine, target, convention)
    rows = _rows(view)
    width = max([len("tensor")] + [len(t) for t, _ in rows])
    lines = [*summary, "", f"{'tensor':<{width}}  parameter", f"{'-' * width}  {'-' * 9}"]
    lines += [f"{tensor:<{width}}  {param}" for tensor, param in rows]
    lines.append("")
    fed = list(view.aux_captured) if view.aux_captured is not None else "unknown (pass --target)"
    trained = list(view.aux_trained) if view.aux_trained is not None else "unknown"
    lines.append(f"layer inputs fed:     {fed}" + (f" (from {view.aux_field})" if view.aux_field else " (defaults)"))
    lines.append(f"layer inputs trained: {trained} ({view.aux_trained_from or 'no aux ids'})")
    lines.append(f"draft layers built:   {view.draft_layers}")
    lines.append(f"fc:                   {view.fc_action} (width sent {view.fc_width_sent}, fc expects "
                 f"{view.fc_expects_width}, checkpoint fc {view.fc_checkpoint_width})")
    lines.append("norms applied:        " + (", ".join(f"{k}={v}" for k, v in view.norms.items()) or "unknown"))
    lines.append(f"embed_tokens from:    {view.embed_tokens}")
    lines.append(f"lm_head from:         {view.lm_head}")
    lines.append(f"map reading:          {view.map_reading or 'unknown'}")
    lines.append(f"outcome:              {view.outcome}")
    lines += [f"  [{i.area}/{i.code}] {i.summary}" + (f"\n    fix: {i.fix}" if i.fix else "") for i in view.issues]
    if view.issues:
        lines.append(f"a fixed copy for {engine.spec}: python -m pytest_eagle3 fix {ckpt.path} OUT --to {engine.spec}")
    return "\n".join(lines)
