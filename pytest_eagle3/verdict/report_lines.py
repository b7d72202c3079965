"""The verdict as the terminal shows it: the table (one row per checkpoint and engine version) and the lines under
it (what did not run and why, the reference acceptance, the real loaders), rendered from a :class:`Collector`."""

from __future__ import annotations

from typing import Any

from pytest_eagle3.verdict.judgement import FAIL
from pytest_eagle3.verdict.report import (
    ANY_ENGINE,
    NOT_JUDGED,
    NOT_RUN,
    PARTIAL,
    STATIC,
    Collector,
    one_line,
    rules_from,
    shown,
)
from pytest_eagle3.words import plural

#: The option that fails a run with a NOT JUDGED row.
NOT_JUDGED_OPTION = "--eagle3-not-judged=fail"


def table(collector: Collector) -> list[str]:
    """The verdict table, whole (``shell.terminal.fit_table`` fits it to a terminal)."""
    rows = table_rows(collector)
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]

def table_rows(collector: Collector) -> list[tuple[str, str, str, str, str, str]]:
    """The table's heading and rows: checkpoint, format, engine, verdict, predicted, failing contracts."""
    rows = [("checkpoint", "format", "engine", "verdict", "predicted", "failing contracts")]
    for ckpt in collector.checkpoints.values():
        for index, spec in enumerate((ANY_ENGINE, *ckpt.engine_specs(collector.engines))):
            first = (ckpt.path, ckpt.format or "unreadable") if index == 0 else ("", "")
            failing = ", ".join(ckpt.engine_failing(spec)) or "-"
            engine = f"{spec} (learned)" if rules_from(spec) else spec
            cell = (as_trained_cell(ckpt.reference) if spec == ANY_ENGINE
                    else predicted_cell(ckpt.predicted.get(spec)))
            rows.append((*first, engine, shown(ckpt.engine_verdict(spec)), cell, failing))
    return rows

def partial_lines(collector: Collector, not_judged_fails: bool = False) -> list[str]:
    """What did not run, per checkpoint, and why: a PASS (partial) is not a pass, NOT RUN is no verdict.

    Each heading lists exactly the contracts it names, each with its reason: NOT JUDGED names the essential
    contracts it could not judge (the others that did not run follow under their own heading), PASS (static) the
    ones left unmeasured. ``not_judged_fails``: ``--eagle3-not-judged=fail`` was given (no hint to give it)."""
    lines = []
    for ckpt in collector.checkpoints.values():
        said: set[tuple[str, str]] = set()  # a reason is said once per checkpoint, under its worst row
        for verdict in (NOT_RUN, NOT_JUDGED, PARTIAL, STATIC):
            specs = [s for s in (ANY_ENGINE, *ckpt.engine_specs(collector.engines)) if ckpt.engine_verdict(s) == verdict]
            reasons = {c: r for spec in specs for c, r in ckpt.not_run_reasons(spec)}
            if verdict == NOT_JUDGED:
                essential = dict.fromkeys(c for s in specs for c in ckpt.not_judged(s))
                named = {c: reasons[c] for c in essential if c in reasons}
            elif verdict == STATIC:
                named = {c: reasons[c] for c in dict.fromkeys(c for s in specs for c in ckpt.unmeasured(s))
                         if c in reasons}
            else:
                named = {}
            rest = {c: r for c, r in reasons.items() if c not in named and (c, r) not in said}
            said.update({*named.items(), *rest.items()})
            where = f"{ckpt.path} ({', '.join(specs)})"
            if named and verdict == NOT_JUDGED:
                then = (f"{NOT_JUDGED_OPTION} fails the run" if not_judged_fails
                        else f"{NOT_JUDGED_OPTION} makes this fail the run")
                lines.append(f"NOT JUDGED for {where}: {', '.join(named)} could not be judged, so no PASS ({then}):")
            elif named:
                lines.append(f"PASS (static) for {where}: every rule ran and passed; {', '.join(named)} not measured "
                             "(--eagle3-require=measured makes this fail):")
            lines.extend(f"  {cid}: {reason}" for cid, reason in named.items())
            if not rest:
                continue
            if verdict == NOT_RUN:
                lines.append(f"not run for {where}: no contract ran:")
            elif named:
                lines.append(f"also not run for {where}: {plural(len(rest), 'contract')}:")
            else:
                lines.append(f"partial verdict for {ckpt.path}: {plural(len(rest), 'contract')} did not run:")
            lines.extend(f"  {cid}: {reason}" for cid, reason in rest.items())
    return lines


def reference_lines(collector: Collector) -> list[str]:
    """One line per checkpoint with a measured reference acceptance."""
    lines = []
    for ckpt in collector.checkpoints.values():
        ref = ckpt.reference
        if ref is None:
            continue
        inferred = ref["inferred"]
        lines.append(
            f"reference acceptance {ckpt.path}: {ref['mean_acceptance_length']:.2f} at k={ref['draft_steps']} "
            f"(per position {ref['per_position']}) with aux ids read as {ref['convention']}; inferred "
            f"convention {inferred['convention']}, d2t as {inferred['d2t']} "
            f"({inferred['mean_acceptance_length']:.2f}, leads by {inferred['margin']:.2f})")
    return lines

def probe_lines(collector: Collector) -> list[str]:
    """One line per probe.load run: what the installed engine's loader did, and the static plan beside it."""
    lines = []
    for ckpt in collector.checkpoints.values():
        for spec, probe in ckpt.probes.items():
            lines.append(f"real loader {ckpt.path}@{spec} ({probe['python']}): {_probe_summary(probe)}")
    return lines


def _probe_summary(probe: dict[str, Any]) -> str:
    """The engine's outcome, then how the static plan compares."""
    status, differences = probe["status"], probe["differences"]
    if status == "probe-error":
        return f"no answer: {probe.get('error')}"
    done = ("refused: " + one_line(str(probe.get("error")), None).rstrip(".") if probe["outcome"] == "refused"
            else "loaded with loss" if status == "loss" else "loaded")
    if status == "unplanned":
        return f"{done}; no static plan (version outside the profiles' range)"
    if differences:
        return f"{done}; the static plan differs on " + ", ".join(dict.fromkeys(d["fact"] for d in differences))
    return f"{done}; the static plan agrees"


#: What a predicted figure is, by its basis: a simulation of the engine's plan, with the layers the draft was
#: trained on measured (the reference settled them) or assumed (the producer's declared convention). Never an
#: engine's own counter (those are ``live.acceptance``'s).
PREDICTED_TAGS = {"measured": "sim, layers measured", "assumed": "sim, layers assumed"}


def predicted_cell(predicted: dict[str, Any] | None) -> str:
    """An engine row's predicted mean acceptance length and what it rests on (the table, the summary, ``check``)."""
    if not predicted:
        return "-"
    value = predicted.get("mean_acceptance_length")
    if value is None:
        return "refused"
    basis = predicted.get("basis") or "assumed"
    error = predicted.get("error") or {}
    bar = f" ± {error['value']:.2f}" if error.get("value") is not None else ""
    setting = f" at {predicted['setting']}" if predicted.get("setting") else ""
    return f"{value:.2f}{bar}{setting} ({PREDICTED_TAGS.get(basis, basis)})"


def as_trained_cell(reference: dict[str, Any] | None) -> str:
    """The ``any`` row's figure: the reference acceptance of the draft as trained, or ``-``."""
    return f"{reference['mean_acceptance_length']:.2f} as trained" if reference else "-"


def cause_lines(collector: Collector) -> list[str]:
    """One line per engine row with several failing contracts: the root cause, and what follows from it."""
    lines = []
    for ckpt in collector.checkpoints.values():
        for spec in ckpt.engine_specs(collector.engines):
            root = ckpt.root_causes.get(spec)
            if not root or len(ckpt.engine_failing(spec)) < 2:
                continue
            table = ckpt.engines.get(spec, {})
            follow = [c.contract for c in ckpt.ordered(table) if c.status == FAIL and c.consequence_of]
            then = f"; {', '.join(follow)} follow{'s' if len(follow) == 1 else ''} from it" if follow else ""
            lines.append(f"root cause for {ckpt.path} ({spec}): {root}{then}")
    return lines
