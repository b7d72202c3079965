"""The verdicts as a markdown table, for a CI job summary (``--eagle3-summary``, ``$GITHUB_STEP_SUMMARY``).

Rendered from the run's report (``verdict.report.Collector``): one row per checkpoint and engine, with its word
(``CheckpointResult.row``, the judgement's), the failing contracts, the prediction, the load plan's outcome and the
first fix. Cells stay short: a long fix is cut and points at the JSON report, which keeps every finding in full.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_eagle3.verdict.judgement import FAIL, NOT_JUDGED, PARTIAL, PASS, STATIC
from pytest_eagle3.verdict.report import ANY_ENGINE, CheckpointResult, Collector, shown

#: The environment variable GitHub Actions sets to the job summary's file.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
#: A fix cell keeps this many characters of the first fix.
FIX_CHARS = 90
TITLE = "## EAGLE-3 verdict"
HEADER = ("checkpoint", "engine", "verdict", "failing contracts", "predicted", "load plan", "fix")


def render(collector: Collector, json_report: str | None = None) -> str:
    """The markdown summary of one run's report; ``json_report`` is where the full report is."""
    checkpoints = list(collector.checkpoints.values())
    rows = {c.path: [ANY_ENGINE, *c.engine_specs(collector.engines)] for c in checkpoints}
    words = {c.path: [c.engine_verdict(spec) for spec in rows[c.path]] for c in checkpoints}
    failed = sum(1 for c in checkpoints if c.verdict == FAIL)
    unjudged = sum(1 for c in checkpoints if c.verdict == NOT_JUDGED)
    statically = sum(1 for c in checkpoints if c.verdict in (PASS, STATIC, PARTIAL) and all(
        w in (PASS, STATIC) for w in words[c.path]) and STATIC in words[c.path])
    facts = [f"target `{collector.target}`" if collector.target else "no target",
             "engines " + (", ".join(f"`{e}`" for e in collector.engines) or "-"),
             f"{failed} of {len(checkpoints)} checkpoint{'s' if len(checkpoints) != 1 else ''} failing"
             + (f", {unjudged} not judged" if unjudged else "") + (f", {statically} passing statically" if statically else "")]
    lines = [TITLE, "", " · ".join(facts), "", _row(HEADER), _row(("---",) * len(HEADER))]
    partial: list[str] = []
    static: list[str] = []
    unjudged_rows: list[str] = []
    for ckpt in checkpoints:
        for index, spec in enumerate(rows[ckpt.path]):
            lines.append(_row(_cells(ckpt, spec, index == 0)))
        for word, said in ((PARTIAL, partial), (STATIC, static), (NOT_JUDGED, unjudged_rows)):
            named = [spec for spec, w in zip(rows[ckpt.path], words[ckpt.path]) if w == word]
            if named:
                said.append(f"`{ckpt.path}` ({', '.join(named)})")
    if unjudged_rows:
        lines += ["", "NOT JUDGED: the aux layers fed or the acceptance reached could not be judged for "
                  + "; ".join(unjudged_rows) + " (no target, or a target without weights): no PASS. The JSON "
                  "report's `not_judged` and `not_run` name them and what would run them."]
    if static:
        lines += ["", "PASS (static): every rule ran and passed, acceptance not measured (the target's config "
                  "without its weights) for " + "; ".join(static) + ". The JSON report's `unmeasured` and "
                  "`measure_with` say what would measure it; `--eagle3-require=measured` makes such a row fail."]
    if partial:
        lines += ["", "PASS (partial): some contracts did not run for " + "; ".join(partial)
                  + ". The JSON report's `not_run` names them and what would run them."]
    if json_report:
        lines += ["", f"Every finding in full, with its evidence: the JSON report `{json_report}`."]
    return "\n".join(lines) + "\n"


def _cells(ckpt: CheckpointResult, spec: str, first: bool) -> tuple[str, ...]:
    name = f"`{ckpt.path}`" if first else ""
    word = ckpt.engine_verdict(spec)
    return (name, spec, "**FAIL**" if word == FAIL else shown(word), ", ".join(ckpt.engine_failing(spec)) or "-",
            _predicted(ckpt, spec), ckpt.outcomes.get(spec) or "-", _fix(ckpt.fixes(spec)))


def _predicted(ckpt: CheckpointResult, spec: str) -> str:
    """An engine's predicted mean acceptance length (``refused`` when it will not load); on the ``any`` row,
    the reference acceptance of the draft as trained: the terminal table's cells."""
    from pytest_eagle3.verdict.report_lines import as_trained_cell, predicted_cell

    if spec == ANY_ENGINE:
        return as_trained_cell(ckpt.reference)
    return predicted_cell(ckpt.predicted.get(spec))


def _fix(fixes: Sequence[str]) -> str:
    """The first fix that names an edit (engine.acceptance's "see the engine contracts ..." points at the
    others), cut to :data:`FIX_CHARS`; a cut or further fixes point at the JSON report."""
    from pytest_eagle3.verdict.report import edits_first

    if not fixes:
        return "-"
    first = " ".join(str(edits_first([str(f) for f in fixes])[0]).split())
    cut = len(first) > FIX_CHARS
    text = first[:FIX_CHARS].rstrip() + "…" if cut else first
    where = "JSON report"
    if len(fixes) > 1:
        return f"{text} (+{len(fixes) - 1} more: {where})"
    return f"{text} (in full: {where})" if cut else text


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def publish(text: str, path: str | None, step_summary: str | None) -> list[str]:
    """Write the summary to ``path`` and append it to the job summary file ``step_summary``; one terminal line
    each (what was written, or why not)."""
    said = []
    if path:
        try:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            said.append(f"markdown summary: {path}")
        except OSError as exc:  # checked writable at start; lost since (disk full, folder removed)
            said.append(f"markdown summary NOT written to {path}: {exc.strerror or exc}")
    if step_summary:
        try:
            with Path(step_summary).open("a", encoding="utf-8") as out:
                out.write(text + "\n")
            said.append(f"markdown summary appended to ${STEP_SUMMARY_ENV}")
        except OSError as exc:
            said.append(f"markdown summary NOT appended to ${STEP_SUMMARY_ENV} ({step_summary}): "
                        f"{exc.strerror or exc}")
    return said


@contextlib.contextmanager
def without_step_summary() -> Iterator[None]:
    """An inner contract run (``plan --json``) whose verdict is the command's output, not a job summary."""
    saved = os.environ.pop(STEP_SUMMARY_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[STEP_SUMMARY_ENV] = saved
