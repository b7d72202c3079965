"""The lines under the verdict table that say how to repair the failing rows.

A row gets the ``python -m pytest_eagle3 fix`` command only when the repair solver (``repair.solve``, what
``fix`` runs) writes a copy that changes something for it; every other failing row says what to change by hand:
the failing findings' own fix lines, then what the solver found left (:func:`by_hand_text`), rows of one cause on
one line. Whether ``fix`` writes a copy is decided here alone (a finding's fix says what to change, never what the
``fix`` command does), so the findings and the repair line tell one story. A row whose target does not match the
draft gets neither a copy nor an edit of the draft: the target is what to check first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_eagle3.verdict.contract_table import HEALTH, REFERENCE_ACCEPTANCE, TARGET_CONSISTENT
from pytest_eagle3.verdict.judgement import FAIL, PASS
from pytest_eagle3.verdict.report import ANY_ENGINE, CheckpointResult, Collector

#: The finding code of an acceptance ``--eagle3-require=measured`` wanted measured (``verdict.assess``).
UNMEASURED_CODE = "unmeasured"

if TYPE_CHECKING:
    from pytest_eagle3.repair.solve import Solution
    from pytest_eagle3.verdict import Pipeline


def repair_lines(collector: Collector, pipeline: Pipeline, convention: str | None = None,
                 hidden_states: str | None = None) -> list[str]:
    """Per checkpoint: a ``repair`` line with the command for the rows one copy repairs (one line per row when
    their copies contradict), one ``by hand`` line per other reason. ``pipeline``: the run's, so the solver judges
    with the run's settings and caches."""
    lines = []
    for ckpt in collector.checkpoints.values():
        rows = [s for s in ckpt.engine_specs(collector.engines) if s != ANY_ENGINE and _draft_fails(ckpt, s)]
        if not rows:
            continue
        if ckpt.path.startswith("hf://") and not _weights_here(ckpt.path):  # read by its headers: fix downloads
            lines.append(f"repair {ckpt.path} ({', '.join(rows)}): {_command(ckpt.path, rows, collector.target, hidden_states, convention)} "
                         "(it downloads the weights to write the copy, and says what a copy cannot fix)")
            continue
        if _accepts_nothing(ckpt, pipeline, collector.target, hidden_states):  # the root cause: fixes would follow
            lines.append(f"repair {ckpt.path} ({', '.join(rows)}): first the target: {NOTHING_ACCEPTED}")
            continue
        copies, by_hand = _sort(ckpt, rows, collector.target, convention, pipeline, hidden_states)
        for specs in copies:
            lines.append(f"repair {ckpt.path} ({', '.join(specs)}): "
                         f"{_command(ckpt.path, specs, collector.target, hidden_states, convention)}")
        grouped: dict[str, list[str]] = {}
        for spec, why in by_hand.items():
            grouped.setdefault(why, []).append(spec)
        lines.extend(f"repair {ckpt.path} ({', '.join(specs)}) by hand, python -m pytest_eagle3 fix cannot: {why}"
                     for why, specs in grouped.items())
    return lines


def _draft_fails(ckpt: CheckpointResult, spec: str) -> bool:
    """A contract of the row fails on the draft, not only for an acceptance ``--eagle3-require=measured`` wanted
    measured (what to give is said in its failure, and no copy of the draft gives it)."""
    table = [*ckpt.contracts.values(), *ckpt.engines.get(spec, {}).values()]
    return any(c.status == FAIL and any(f.code != UNMEASURED_CODE for f in c.findings) for c in table)


def _command(path: str, specs: list[str], target: str | None, hidden_states: str | None, convention: str | None) -> str:
    command = f"python -m pytest_eagle3 fix {path} OUT --to {','.join(specs)}"
    command += f" --target {target}" if target else ""
    command += f" --hidden-states {hidden_states}" if hidden_states else ""
    return command + (f" --aux-convention {convention}" if convention else "")


def _weights_here(path: str) -> bool:
    from pytest_eagle3.checkpoint import Checkpoint

    return Checkpoint.open(path).weights_local


#: What a draft that accepts nothing on the target under any reading needs before any engine's fix.
NOTHING_ACCEPTED = (f"the draft accepts nothing on it under any reading (see {REFERENCE_ACCEPTANCE}): check that "
                    "--eagle3-target names the model it was trained for, or retrain it; no engine fix is offered "
                    "until it does")


def _accepts_nothing(result: CheckpointResult, pipeline: Pipeline, target: str | None,
                     hidden_states: str | None) -> bool:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.verdict import TargetSide

    reference = result.contracts.get(REFERENCE_ACCEPTANCE)
    if reference is None or reference.status != FAIL:
        return False
    return pipeline.at_floor(Checkpoint.open(result.path), TargetSide(target, hidden_states))


def _sort(ckpt: CheckpointResult, rows: list[str], target: str | None, convention: str | None,
          pipeline: Pipeline, hidden_states: str | None = None) -> tuple[list[list[str]], dict[str, str]]:
    """The copies that repair rows (their engine versions), and what to change by hand for each other row."""
    by_hand = {s: "the target does not match the draft: check --eagle3-target names the model it was trained "
                  f"for (see {TARGET_CONSISTENT})" for s in rows if TARGET_CONSISTENT in ckpt.engine_failing(s)}
    rest = [s for s in rows if s not in by_hand]
    solve = _solver(ckpt, target, convention, pipeline, hidden_states) if rest else None
    if isinstance(solve, str):
        return [], {**by_hand, **{s: solve for s in rest}}
    fixable = []
    for spec in rest:
        assert solve is not None
        alone = solve([spec])
        if isinstance(alone, list) or not alone.changes:  # no copy: the row's findings, then what a copy leaves
            by_hand[spec] = by_hand_text(row_fixes(ckpt, spec), alone if isinstance(alone, list) else []) or \
                f"{', '.join(ckpt.engine_failing(spec))} fail as it is"
        else:
            fixable.append(spec)
    if not fixable or solve is None:
        return [], by_hand
    together = solve(fixable)
    return ([fixable] if not isinstance(together, list) else [[s] for s in fixable]), by_hand


def row_fixes(ckpt: CheckpointResult, spec: str) -> list[str]:
    """A row's failing findings' own fix lines, each once, in contract order (a pointer such as engine.acceptance's
    "see the engine contracts ..." only where no finding names an edit)."""
    from pytest_eagle3.verdict.report import edits_first

    fixes = edits_first(ckpt.fixes(spec))
    return [f for f in fixes if not f.startswith("see ")] or fixes


def by_hand_text(fixes: list[str], refusal: list[str]) -> str:
    """What a row no copy repairs is told: its findings' fix lines (what the rows above say), then what the repair
    solver found left once it made every edit it could (each refusal reason's fix, else the reason), unless a
    finding said it already: the repair line extends the findings' story and never contradicts it."""
    further = [f for f in dict.fromkeys(_fix_of(reason) for reason in refusal) if f not in fixes]
    if not fixes:
        return "; ".join(further)
    return "; ".join(fixes) + ("; then " + "; ".join(further) if further else "")


def _fix_of(reason: str) -> str:
    """A refusal reason's fix ("... (fix: serve with SGLang >= 0.5.11)" -> "serve with SGLang >= 0.5.11"), else
    the reason itself."""
    for mark in (" (fix: ", " (fix by hand: "):
        if mark in reason and reason.endswith(")"):
            return reason[reason.index(mark) + len(mark):-1]
    return reason


def _solver(result: CheckpointResult, target: str | None, convention: str | None, pipeline: Pipeline,
            hidden_states: str | None = None) -> Callable[[list[str]], Solution | list[str]] | str:
    """What the repair solver makes of the draft for some engine versions (the copy, or why none), once the
    engine-independent refusals (unreadable, unhealthy weights) are out of the way (a refusal: its reasons); else
    why it writes no copy.
    The weights are scanned again only when this run's weight contracts did not pass."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.repair.independent import refuse_unhealthy, refuse_unreadable
    from pytest_eagle3.repair.record import RepairRefused
    from pytest_eagle3.repair.solve import Trained, solve
    from pytest_eagle3.verdict import TargetSide

    ckpt = Checkpoint.open(result.path)
    try:
        refuse_unreadable(ckpt)
    except RepairRefused as exc:  # checkpoint.readable said each problem: one line says what to do
        return (f"re-export the checkpoint: {len(exc.reasons)} problem{'s' if len(exc.reasons) != 1 else ''} "
                "reading its files (see checkpoint.readable)")
    try:
        # a Hub id read by its headers: its weights are not here to scan (fix downloads them, then scans)
        scanned = all(c in result.contracts and result.contracts[c].status == PASS for c in HEALTH)
        if ckpt.weights_local and not scanned:
            refuse_unhealthy(ckpt)
    except RepairRefused as exc:
        return "; ".join(exc.reasons)
    except (ValueError, OSError, RuntimeError) as exc:  # the summary never fails on a draft the run judged
        return f"the repair solver cannot read it: {exc}"
    model: Any = pipeline.target_model(target) if target else None
    model = model if model is not None and model.problem is None else None
    # the layers the measurement settled (as fix --target takes them): the solver writes what was trained
    measured = pipeline.measure(ckpt, TargetSide(target, hidden_states)) if model is not None else None
    trained = Trained(measured.inputs, measured.words) if measured is not None else None

    def run(specs: list[str]) -> Solution | list[str]:
        try:
            return solve(ckpt, [parse_selection(s)[0] for s in specs], model, convention, measured=trained,
                         pipeline=pipeline, scanned=True)
        except RepairRefused as exc:
            return list(exc.reasons)
        except (ValueError, OSError, RuntimeError) as exc:
            return [f"the repair solver cannot read it: {exc}"]

    return run
