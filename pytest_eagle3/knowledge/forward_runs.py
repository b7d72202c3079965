"""What a target class's own forward delivered to the draft, run in the engine with EAGLE-3 capture on.

The capture table (``capture.py``) says whether a class has the capture hook; the reach table (``reach.py``) what its
loop reaches, both read from source. A forward probe (``pytest_eagle3/probes/forward.py``, run in the engine's env)
builds a tiny random-weight target of each capturing class (4 decoder layers, hidden 64) with a tiny Llama EAGLE-3
draft whose aux ids are 1, 2 and 4 (4 = L: the last layer's output), runs the class's forward and the engine's lines
up to the draft's fc (vLLM: the runner's; mlx-vlm: its prefill step, the drafter's fc and one round of its loop), and records per (engine, release, architecture) what reached the fc or the exception's words
(``generated/forward_runs.json``). A recorded run is the knowledge of that exact release: it decides the reach at
index 0 and L (:func:`measured_reach`), and a class that raised fails the aux-layer area with the words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.reach import CRASH, EMBEDDINGS, UNREACHED, Reach
from pytest_eagle3.knowledge.releases import DISPLAY

RECORD = Path(__file__).with_name("generated") / "forward_runs.json"
DELIVERED = "delivered"
UNDER_DELIVERED = "under-delivered"
RAISED = "raised"
NOT_RUN = "not run on CPU"
OUTCOMES = (DELIVERED, UNDER_DELIVERED, RAISED, NOT_RUN)
#: A layer input that, requested alone, delivered nothing.
SILENT = "silent"
#: The prefix of a layer input's entry whose request raised.
RAISES = "raises: "


@cache
def scripts() -> dict[str, str]:
    """engine -> the probe script that ran its classes (its ``Probe.forward_script``)."""
    from pytest_eagle3.knowledge.engines import REGISTRY

    return {e.name: f"pytest_eagle3/probes/{e.interpreter.probe.forward_script}" for e in REGISTRY
            if e.interpreter.probe is not None and e.interpreter.probe.forward_script is not None}
#: The words of index 0's failure where the loop adds a None residual to the embeddings (the reach's ``crash``).
NONE_RESIDUAL = "'NoneType'"


@dataclass(frozen=True)
class ForwardRun:
    """One class's recorded forward at one release."""

    engine: str
    release: str
    architecture: str
    outcome: str
    #: The exception's words (``under-delivered``: the fc's, or how many states reached it); None when delivered.
    error: str | None
    stage: str | None
    #: The tiny target's decoder layers and the draft's aux ids.
    layers: int
    draft_ids: tuple[int, ...]
    #: The layer inputs the runner requested from the draft's ids, and how many states reached the fc.
    requested: tuple[int, ...] | None
    delivered: int | None
    #: Layer input -> what requesting it alone delivered: the layer input its state equals (an int), ``"unmatched"``
    #: (a state equal to no tapped layer input), ``"silent"``, or ``"raises: <words>"``.
    per_id: Mapping[int, int | str]

    @property
    def source(self) -> str:
        """Where the facts come from, as a rule cites it."""
        return (f"forward probe of {DISPLAY[self.engine]} {self.release}: a tiny {self.layers}-layer {self.architecture} "
                f"target, draft aux ids {list(self.draft_ids)} ({scripts()[self.engine]})")

    @property
    def words(self) -> str:
        """What the probe saw, in words: the outcome and the exception's words."""
        seen = f"{self.delivered} of {len(self.requested)} requested states reached the fc" \
            if self.requested is not None and self.delivered is not None else self.outcome
        return f"{seen}: {self.error}" if self.error else seen

    def status(self, index: int) -> str | None:
        """``fires``, ``silent`` or ``raises: <words>`` for layer input ``index`` of the tiny target; None where
        it was not requested alone (``not probed: ...``)."""
        found = self.per_id.get(index)
        if isinstance(found, int) or found in ("unmatched", "several"):
            return "fires"
        return found if isinstance(found, str) and (found == SILENT or found.startswith(RAISES)) else None

    def raised_at(self, index: int) -> str | None:
        """The words of the failure requesting layer input ``index`` alone raised; None where it did not, or where
        index 0 failed on a None residual (the reach's ``crash`` says that)."""
        status = self.status(index)
        if status is None or not status.startswith(RAISES) or (index == 0 and NONE_RESIDUAL in status):
            return None
        return status[len(RAISES):]

    @property
    def boundary_words(self) -> str:
        """What layer inputs 0 and L did requested alone, in words."""
        said = {0: "layer input 0", self.layers: f"layer input {self.layers} (L)"}
        return "; ".join(f"{name} alone: {self.status(index) or 'not probed'}" for index, name in said.items())


@cache
def _record() -> dict[str, Any]:
    if not RECORD.is_file():
        return {"runs": {}}
    data: dict[str, Any] = json.loads(RECORD.read_text())
    return data


def recorded_releases(engine: str) -> tuple[str, ...]:
    """The releases of ``engine`` with a recorded forward run."""
    return tuple(_record()["runs"].get(engine, {}))


@cache
def forward_runs(engine: str, release: str) -> dict[str, ForwardRun]:
    """architecture -> its recorded run at ``release`` (empty where none was recorded)."""
    run = _record()["runs"].get(engine, {}).get(release)
    if run is None:
        return {}
    return {arch: ForwardRun(
        engine, release, arch, str(found["outcome"]), found.get("error"), found.get("stage"), int(run["layers"]),
        tuple(run["draft_ids"]), tuple(found["requested"]) if found.get("requested") is not None else None,
        found.get("delivered"), {int(k): v for k, v in (found.get("per_id") or {}).items()})
        for arch, found in run["classes"].items()}


def forward_run(engine: str, version: Version, architecture: str) -> ForwardRun | None:
    """The recorded run of ``architecture`` at exactly ``version`` (None: not recorded, or not run on CPU)."""
    for release in recorded_releases(engine):
        if Version(release) == version:
            found = forward_runs(engine, release).get(architecture)
            return found if found is not None and found.outcome != NOT_RUN else None
    return None


def measured_reach(run: ForwardRun, scanned: Reach) -> Reach | None:
    """The reach the run measured at index 0 and L (the scanned row's other fields kept, and its own where the run
    could not tell or the request raised: :meth:`ForwardRun.raised_at` says that); None where it saw the same as
    ``scanned``, or where no layer input fired alone (a loop that captures nothing has no reach: the run's outcome
    says what failed)."""
    if not any(run.status(k) == "fires" for k in range(run.layers + 1)):
        return None
    zero, last = run.status(0), run.status(run.layers)
    none_residual = zero is not None and zero.startswith(RAISES) and NONE_RESIDUAL in zero
    measured = Reach(EMBEDDINGS if zero == "fires" else UNREACHED if zero == SILENT else CRASH if none_residual
                     else scanned.zero,
                     scanned.last if last is None or last.startswith(RAISES) else last == "fires",
                     scanned.index, scanned.past, scanned.final_past)
    return None if measured == scanned else measured
