"""A training run at a glance: every checkpoint judged and predicted per engine version, one target run.

``python -m pytest_eagle3 sweep CKPT... --target T --out DIR``: the checkpoints (a folder of checkpoint
folders, a glob, or a list, in training order) each asked of one :class:`~pytest_eagle3.verdict.Pipeline`
(the target run once, its side shared by every draft), written as ``sweep.json``, ``sweep.md`` and
``sweep.png`` (with the optional extra ``[plot]``), naming the best checkpoint per engine version.

The verdict per engine version is the row ``pytest --eagle3-ckpt`` and ``check`` give: the pipeline's judgement
of every contract (files, config, weights and the engine's own), aggregated by the same report code. A checkpoint
is named best for an engine version only when its row passes.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.words import plural

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict.pipeline import Pipeline
    from pytest_eagle3.verdict.records import Forecast, TargetSide
    from pytest_eagle3.verdict.report import CheckpointResult

SCHEMA = "pytest-eagle3/sweep/1"
FILES = ("sweep.json", "sweep.md", "sweep.png")
CELLS = ("Cells: predicted mean acceptance length, then the verdict (FAIL names the failing engine contracts); "
         "`sweep.json` has each first fix.")


class SweepInputError(ValueError):
    """The checkpoints or the output folder cannot be used; the message says which and why."""


def natural_key(text: str) -> list[Any]:
    """``step-2`` before ``step-10``: digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def _is_checkpoint(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def checkpoints_from(given: Sequence[str], download: bool = False) -> list[Path | str]:
    """The checkpoints in training order: each argument a checkpoint folder (kept where given), a Hub id
    (``hf://ORG/NAME[@REV]``, pinned to its commit; its weights downloaded with ``download``), a folder of
    checkpoint folders, or a glob (both sorted naturally). Nothing found, or an argument matching nothing,
    is a :class:`SweepInputError`."""
    from pytest_eagle3.checkpoint.hub import HubError, is_hub, pin
    from pytest_eagle3.verdict.setting_values import absent

    found: list[Path | str] = []
    for arg in given:
        path = Path(arg)
        if is_hub(arg):
            try:
                found.append(pin(arg, download=download))
            except HubError as exc:
                raise SweepInputError(f"{arg}: {exc}") from None
        elif glob.has_magic(arg):
            matches = [Path(m) for m in glob.glob(arg)]
            inside = sorted((m for m in matches if _is_checkpoint(m)), key=lambda p: natural_key(str(p)))
            if not inside:
                raise SweepInputError(f"{arg}: no checkpoint folder (with a config.json) matches")
            found.extend(inside)
        elif _is_checkpoint(path):
            found.append(path)
        elif path.is_dir():
            inside = sorted((p for p in path.iterdir() if _is_checkpoint(p)), key=lambda p: natural_key(p.name))
            if not inside:
                raise SweepInputError(f"{arg}: neither a checkpoint (no config.json) nor a folder of checkpoints")
            found.extend(inside)
        else:
            raise SweepInputError(f"{arg}: {'is a file' if path.exists() else absent(arg)}; give checkpoint "
                                  "folders, a folder of them, or a glob")
    if not found:
        raise SweepInputError("no checkpoints given")
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class EngineRow:
    """One engine version's verdict on one checkpoint."""

    engine: str
    verdict: str
    outcome: str
    failing: tuple[str, ...]
    predicted: float | None
    basis: str | None
    fix: str | None
    #: Why nothing was predicted (a refusal, no target weights), else "".
    unavailable: str = ""

    @property
    def passes(self) -> bool:
        """The row passes: PASS, PASS (static) (acceptance unmeasured), or PASS (partial) where only inessential
        contracts did not run."""
        return self.verdict.startswith("pass")

    def to_json(self) -> dict[str, Any]:
        """The row as the sweep's JSON writes it."""
        return {"engine": self.engine, "verdict": self.verdict, "outcome": self.outcome, "failing": list(self.failing),
                "predicted_acceptance": None if self.predicted is None else round(self.predicted, 4),
                "basis": self.basis, "fix": self.fix, "unavailable": self.unavailable or None}


@dataclass(frozen=True)
class CheckpointRow:
    """One checkpoint: its acceptance as trained (the reference) and each engine's row."""

    path: str
    as_trained: float | None
    engines: tuple[EngineRow, ...]
    #: Why the checkpoint could not be read ("" when it was).
    problem: str = ""

    @property
    def name(self) -> str:
        """The checkpoint's folder name."""
        return Path(self.path).name

    def to_json(self) -> dict[str, Any]:
        """The row as the sweep's JSON writes it."""
        return {"path": self.path, "name": self.name, "problem": self.problem or None,
                "as_trained": None if self.as_trained is None else round(self.as_trained, 4),
                "engines": [e.to_json() for e in self.engines]}


@dataclass(frozen=True)
class Sweep:
    """Every checkpoint x engine version of one training run, against one target side."""

    target: str
    engines: tuple[str, ...]
    checkpoints: tuple[CheckpointRow, ...]
    #: How many times the target's side was computed (run here or read from a dump): 1 for the whole sweep.
    target_runs: int

    def best(self) -> dict[str, CheckpointRow | None]:
        """Per engine version, the passing checkpoint with the highest predicted mean acceptance length (the
        earliest on a tie); None when no checkpoint passes there or nothing was predicted."""
        out: dict[str, CheckpointRow | None] = {}
        for index, engine in enumerate(self.engines):
            passing = [(c, c.engines[index]) for c in self.checkpoints if c.engines
                       and c.engines[index].predicted is not None and c.engines[index].passes]
            out[engine] = max(passing, key=lambda cr: cr[1].predicted or 0.0)[0] if passing else None
        return out

    def why_no_best(self, engine: str) -> str:
        """Why no checkpoint is best for ``engine``: every one refused, none passes, or nothing predicted."""
        index = self.engines.index(engine)
        rows = [(c, c.engines[index]) for c in self.checkpoints if c.engines]
        if rows and all(r.outcome == "refused" for _, r in rows):
            return "none: it refuses every checkpoint"
        scored = [(c, r) for c, r in rows if r.predicted is not None]
        if scored:
            top, row = max(scored, key=lambda cr: cr[1].predicted or 0.0)
            return (f"none: no checkpoint passes (the highest predicted, {top.name} at {row.predicted:.2f}, "
                    f"reads {row.verdict.upper()}: {', '.join(row.failing) or '-'})")
        return "none predicted (needs the target's weights or a dump of its side)"

    def gate(self, fail_on: str) -> list[str]:
        """Why the sweep fails under ``--fail-on`` (empty: it passes): ``best``, an engine version where no checkpoint
        passes; ``any``, every checkpoint x engine version that does not pass (or an unreadable checkpoint);
        ``never``, nothing."""
        if fail_on == "best":  # a passing checkpoint, predicted or not (Hub headers alone predict nothing)
            return [f"{engine}: {self.why_no_best(engine)}" for index, engine in enumerate(self.engines)
                    if not any(c.engines and c.engines[index].passes for c in self.checkpoints)]
        if fail_on != "any":
            return []
        out = [f"{c.name}: unreadable: {c.problem}" for c in self.checkpoints if c.problem]
        return out + [f"{c.name} on {row.engine}: {row.verdict.upper()}" + (f" ({', '.join(row.failing)})"
                                                                             if row.failing else "")
                      for c in self.checkpoints for row in c.engines if not row.passes]

    def to_json(self) -> dict[str, Any]:
        """The sweep as its JSON file holds it."""
        best = {e: (None if c is None else c.path) for e, c in self.best().items()}
        return {"schema": SCHEMA, "target": self.target, "engines": list(self.engines), "target_runs": self.target_runs,
                "best": best, "checkpoints": [c.to_json() for c in self.checkpoints]}


def run_sweep(paths: Sequence[Path | str], engines: Sequence[EngineVersion], side: TargetSide, pipeline: Pipeline,
              progress: Any = None) -> Sweep:
    """Judge and predict every checkpoint for every engine version with one pipeline (one target run): each row
    the one ``check`` gives, from the pipeline's judgements."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.verdict.report import Collector
    from pytest_eagle3.verdict.rows import judgement

    rows = []
    for done, path in enumerate(paths, 1):
        ckpt = Checkpoint.open(path)
        problems = ckpt.problems + ([ckpt.config_problem] if ckpt.config_problem else [])
        if problems:
            rows.append(CheckpointRow(str(path), None, (), "; ".join(problems)))
        else:
            collector = Collector(target=side.path, engines=[e.spec for e in engines])
            for engine in (None, *engines):
                collector.add_judgement(judgement(pipeline, ckpt, engine, side))
            row = collector.checkpoints[ckpt.path]
            forecasts = [pipeline.forecast(ckpt, engine, side) for engine in engines]
            trained = next((v.prediction.training.acceptance.mean_acceptance_length for v in forecasts
                            if v.prediction is not None), None)
            rows.append(CheckpointRow(str(path), trained, tuple(_engine_row(v, row) for v in forecasts)))
        if progress is not None:
            progress(done, len(paths))
    session = pipeline.session(side.hidden_states) if side.given else None
    return Sweep(str(side.path), tuple(e.spec for e in engines), tuple(rows),
                 len(session.targets) if session is not None else 0)


def _engine_row(forecast: Forecast, judged: CheckpointResult) -> EngineRow:
    """The report's row for one engine version (its word and reasons, ``CheckpointResult.row``), with the
    prediction."""
    from pytest_eagle3.verdict.report import edits_first

    prediction = forecast.prediction
    unavailable = forecast.no_prediction if prediction is None else prediction.unavailable
    spec = forecast.engine.spec
    return EngineRow(spec, judged.engine_verdict(spec), forecast.plan.outcome,
                     tuple(judged.engine_failing(spec)),
                     None if prediction is None else prediction.mean_acceptance_length,
                     None if prediction is None else prediction.basis,
                     next(iter(edits_first(judged.fixes(spec))), None), unavailable)


def markdown(sweep: Sweep, plot: str | None) -> str:
    """``sweep.md``: one row per checkpoint, one column per engine version, the best one named per engine."""
    head = ["checkpoint", "as trained", *sweep.engines]
    facts = f"target `{sweep.target}` · {plural(len(sweep.checkpoints), 'checkpoint')} · target runs: {sweep.target_runs}"
    lines = ["## EAGLE-3 sweep", "", facts, "", _md_row(head), _md_row(["---"] * len(head))]
    for ckpt in sweep.checkpoints:
        if ckpt.problem:
            lines.append(_md_row([f"`{ckpt.name}`", "unreadable", *["-"] * len(sweep.engines)]))
            continue
        cells = [_cell(row) for row in ckpt.engines]
        lines.append(_md_row([f"`{ckpt.name}`", _figure(ckpt.as_trained), *cells]))
    lines.append("")
    for engine, best in sweep.best().items():
        if best is None:
            lines.append(f"- best for {engine}: {sweep.why_no_best(engine)}")
            continue
        row = best.engines[sweep.engines.index(engine)]
        lines.append(f"- best for {engine}: `{best.name}` ({_figure(row.predicted)}, {row.verdict})")
    lines += ["", CELLS]
    lines += ["", f"![predicted acceptance per checkpoint]({plot})" if plot else ""]
    return "\n".join(lines).rstrip() + "\n"


#: The terminal table's heading: the verdict table's six columns, the format's place taken by the acceptance as trained.
TABLE_HEAD = ("checkpoint", "as trained", "engine", "verdict", "predicted", "failing contracts")


def table_rows(sweep: Sweep) -> list[tuple[str, str, str, str, str, str]]:
    """The sweep as the terminal shows it, in the verdict table's shape (``shell.terminal.fit_table``): one row per
    checkpoint and engine version, the checkpoint and its acceptance as trained on its first row."""
    from pytest_eagle3.verdict.report import shown

    rows = [TABLE_HEAD]
    for ckpt in sweep.checkpoints:
        if ckpt.problem:
            rows.append((ckpt.name, "unreadable", "-", "-", "-", ckpt.problem))
            continue
        for index, row in enumerate(ckpt.engines):
            figure = "refused" if row.outcome == "refused" else _figure(row.predicted)
            first = (ckpt.name, _figure(ckpt.as_trained)) if index == 0 else ("", "")
            rows.append((*first, row.engine, shown(row.verdict), figure, ", ".join(row.failing) or "-"))
    return rows


def _cell(row: EngineRow) -> str:
    figure = "refused" if row.outcome == "refused" else _figure(row.predicted)
    if row.verdict == "fail":
        return f"{figure} **FAIL** {', '.join(row.failing)}"
    from pytest_eagle3.verdict.report import shown

    return f"{figure} {shown(row.verdict)}"


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


#: The note ``write`` gives instead of ``sweep.png`` where the optional extra ``[plot]`` is not installed.
NO_MATPLOTLIB = "sweep.png skipped: matplotlib is not installed (pip install 'pytest-eagle3[plot]')"


def matplotlib_installed() -> bool:
    """Whether matplotlib is installed (the plot needs it)."""
    return importlib.util.find_spec("matplotlib") is not None


def plot(sweep: Sweep, path: Path) -> str | None:
    """Draw ``sweep.png`` into ``path``: predicted mean acceptance length per checkpoint per engine version, and
    the draft as trained; None when written, else why not."""
    if not matplotlib_installed():
        return NO_MATPLOTLIB
    # matplotlib is optional (the [plot] extra) and heavy: imported only when a plot is drawn
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [c.name for c in sweep.checkpoints]
    xs = list(range(len(names)))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(names) + 2.5), 3.6), dpi=90)
    trained = [math.nan if c.as_trained is None else c.as_trained for c in sweep.checkpoints]
    ax.plot(xs, trained, color="0.25", linestyle="--", marker="s", markersize=4, zorder=5,
            label="as trained (reference)")
    best = sweep.best()
    for index, engine in enumerate(sweep.engines):
        rows = [c.engines[index] if c.engines else None for c in sweep.checkpoints]
        ys = [math.nan if r is None or r.predicted is None else r.predicted for r in rows]
        line, = ax.plot(xs, ys, marker="o", label=engine)
        refused = [x for x, r in zip(xs, rows) if r is not None and r.outcome == "refused"]
        if refused:
            ax.scatter(refused, [1.0] * len(refused), marker="x", color=line.get_color(), zorder=3,
                       label=f"{engine}: refused")
        chosen = best.get(engine)
        if chosen is not None:
            x = sweep.checkpoints.index(chosen)
            ax.scatter([x], [ys[x]], s=160, facecolors="none", edgecolors=line.get_color(), linewidths=2, zorder=4)
    ax.set_xticks(xs, names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("mean acceptance length")
    figures = [y for y in trained if not math.isnan(y)] + [r.predicted for c in sweep.checkpoints for r in c.engines
                                                          if r.predicted is not None]
    ax.set_ylim(0.9, max(figures, default=1.0) + 0.3)
    ax.set_title("EAGLE-3 sweep: predicted acceptance per engine (circled: best)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return None


def write(sweep: Sweep, out: Path) -> list[str]:
    """Write ``sweep.json``, ``sweep.md`` and (with matplotlib) ``sweep.png`` into the new folder ``out``;
    one line per file, or the note saying why the plot was skipped."""
    out.mkdir(parents=True)
    note = plot(sweep, out / "sweep.png")
    (out / "sweep.json").write_text(json.dumps(sweep.to_json(), indent=2) + "\n", encoding="utf-8")
    (out / "sweep.md").write_text(markdown(sweep, None if note else "sweep.png"), encoding="utf-8")
    return [str(out / name) for name in FILES if (out / name).exists()] + ([note] if note else [])
