"""``sweep.png``: predicted mean acceptance length per checkpoint per engine version, and the draft as trained.

matplotlib is the optional extra ``[plot]``; without it the plot is skipped and a note says so.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_eagle3.verdict.sweep import Sweep

NO_MATPLOTLIB = "sweep.png skipped: matplotlib is not installed (pip install 'pytest-eagle3[plot]')"


def matplotlib_installed() -> bool:
    """Whether matplotlib is installed (the plot needs it)."""
    return importlib.util.find_spec("matplotlib") is not None


def plot(sweep: Sweep, path: Path) -> str | None:
    """Draw the sweep into ``path``; None when written, else why not."""
    if not matplotlib_installed():
        return NO_MATPLOTLIB
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
