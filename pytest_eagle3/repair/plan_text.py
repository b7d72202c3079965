"""``plan``: one engine version's load plan as a table a person reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_eagle3.knowledge.launch_settings import LAUNCH_FIX

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.engines.plan_types import LoadPlan


def _rows(view: LoadPlan) -> list[tuple[str, str]]:
    rows = [(", ".join(sources), param) for param, sources in sorted(view.parameters.items())]
    rows += [(name, f"DROPPED: {why}") for name, why in sorted(view.dropped.items())]
    rows += [("(nothing)", f"{param}: UNINITIALISED") for param in view.uninitialised]
    return rows


def render_plan(ckpt: Checkpoint, view: LoadPlan) -> str:
    """The plan's summary lines, the tensor -> parameter table, then layers, fc, norms, embeddings, map, issues."""
    engine = view.engine
    aux, fc = view.aux, view.fc
    rows = _rows(view)
    width = max([len("tensor")] + [len(t) for t, _ in rows])
    lines = [*view.describe(), "", f"{'tensor':<{width}}  parameter", f"{'-' * width}  {'-' * 9}"]
    lines += [f"{tensor:<{width}}  {param}" for tensor, param in rows]
    lines.append("")
    fed = list(aux.captured) if aux.captured is not None else "unknown (pass --target)"
    trained = list(aux.trained) if aux.trained is not None else "unknown"
    launched = ", ".join(f"{name}: {value}" for name, value in engine.launch)
    lines.append(f"layer inputs fed:     {fed}" + (f" (from {aux.field})" if aux.field else
                                                   f" (from the launch: {launched})" if launched else " (defaults)"))
    lines.append(f"layer inputs trained: {trained} ({aux.trained_from or 'no aux ids'})")
    lines.append(f"draft layers built:   {fc.known(view.draft_layers)}")
    lines.append(f"fc:                   {fc.action} ({fc.sent_words}, fc expects "
                 f"{fc.known(fc.expects_width)}, checkpoint fc {fc.known(fc.checkpoint_width)})")
    lines.append("norms applied:        " + (", ".join(f"{k}={v}" for k, v in view.norms.items()) or "unknown"))
    lines.append(f"embed_tokens from:    {view.embed_tokens}")
    lines.append(f"lm_head from:         {view.lm_head}")
    lines.append(f"map reading:          {view.map_reading or 'unknown'}")
    unjudged = " (what the layers fed cost is not judged: pass --target)" if aux.captured is None and \
        view.outcome != "refused" else ""
    lines.append(f"outcome:              {view.outcome}{unjudged}")
    lines += [f"  [{i.area}/{i.finding.code}] {i.finding.summary}" + (f"\n    fix: {i.finding.fix}" if i.finding.fix else "")
              for i in view.issues]
    lines += [f"  [{area}/undecided] {finding.summary}" for area, finding in view.unknown.items()]
    lines += [f"  [{a.area}] {a.note()}" for a in view.assumed if a.known]
    lines += [f"  priced: {text}" for text in view.priced]
    if any(not i.finding.fix.startswith(LAUNCH_FIX) for i in view.issues):  # a launch setting is no copy's
        lines.append(f"a fixed copy for {engine.spec}: python -m pytest_eagle3 fix {ckpt.path} OUT --to {engine.spec}")
    return "\n".join(lines)
