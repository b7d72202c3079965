"""Trace one checkpoint through ``load_plan``: which project modules it enters, how often, per area.

    python benchmarks/plan_trace.py [DRAFT] [--target TARGET] [--engine vllm==0.33.0]

Defaults: the demo draft (examples/demo-draft-sglang) against the demo target, newest vLLM.
A *stop* is each time control passes into a project module (a call into it, or a return to it
from another project module); a *return* is a stop in a module that control had already left.
An *entry* is a call into a module from another project module. An *area* is one call made by
``load_plan`` itself (the fact sheet, each area function); inside it, the figure that matters is
how often each module is entered: once means the area reads its inputs and computes, with no
back-and-forth through a shared plan. Modules holding knowledge as data (the profiles, the capture
and draft-class tables, versions, the finding and plan records) are counted but listed apart: an
area looks rows up in them, or builds a record, as often as it has questions or findings.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_eagle3"
#: Knowledge as data (rows looked up) and the finding records: counted, not held to "once per area".
TABLE_MODULES = ("profiles", "capture_table", "capture", "draft_classes", "versions", "findings", "frozen",
                 "loadplan", "tables", "table")


def _module(frame: FrameType | None) -> str | None:
    """The project module of the nearest project frame at or above ``frame``."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            return str(name)
        frame = frame.f_back
    return None


def short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def is_table(module: str) -> bool:
    return short(module).rsplit(".", 1)[-1] in TABLE_MODULES


class Tracer:
    """Stops in project modules, overall and per area (each call ``load_plan`` makes)."""

    def __init__(self, planner: Callable[..., Any]) -> None:
        self.planner_code = planner.__code__
        self.current: str | None = None
        self.stops: list[str] = []
        self.area: str | None = None
        self.area_frame: FrameType | None = None
        self.areas: list[tuple[str, Counter[str]]] = []

    def _stop(self, module: str | None) -> None:
        if module is None or module == self.current:
            return
        self.current = module
        self.stops.append(module)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            caller = frame.f_back
            if self.area is None and caller is not None and caller.f_code is self.planner_code:
                self.area, self.area_frame = frame.f_code.co_name, frame
                self.areas.append((self.area, Counter()))
            module = _module(frame)
            if self.area is not None and module is not None and module != _module(caller):
                self.areas[-1][1][module] += 1
            self._stop(module)
        elif event == "return":
            if frame is self.area_frame:
                self.area, self.area_frame = None, None
            self._stop(_module(frame.f_back))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("draft", nargs="?", default=str(ROOT / "examples" / "demo-draft-sglang"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target"))
    parser.add_argument("--engine", default="vllm==0.33.0")
    args = parser.parse_args(argv)

    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.plan import load_plan
    from pytest_eagle3.knowledge.selection import parse_selection

    ckpt, target = Checkpoint.open(args.draft), TargetModel.open(args.target)
    engine = parse_selection(args.engine)[0]
    load_plan(ckpt, engine, target)  # warm: imports and file indexes are not part of the trace
    ckpt, target = Checkpoint.open(args.draft), TargetModel.open(args.target)
    tracer = Tracer(load_plan)
    sys.setprofile(tracer)
    try:
        load_plan(ckpt, engine, target)
    finally:
        sys.setprofile(None)

    stops = [s for s in tracer.stops]
    seen: set[str] = set()
    returns = 0
    for module in stops:
        returns += module in seen
        seen.add(module)
    print(f"load_plan({Path(args.draft).name}, {engine.label}, target {Path(args.target).name})")
    print(f"  {len(stops)} stops in {len(seen)} modules, {returns} returns to a module already left; "
          f"engines.plan entered {stops.count(PACKAGE + '.engines.plan')} times")
    logic = [s for s in stops if not is_table(s)]
    print(f"  without the table modules: {len(logic)} stops in {len(set(logic))} modules")
    worst, worst_area = 0, 0
    print("  per area (module: entries; table modules in brackets):")
    for area, counts in tracer.areas:
        if area.startswith("__"):  # a record's own method (a hash, a constructor, joining two findings lists)
            continue
        own = {m: n for m, n in counts.items() if not is_table(m)}
        tables = {m: n for m, n in counts.items() if is_table(m)}
        worst = max([worst, *own.values()])
        if area != "fact_sheet":
            worst_area = max([worst_area, *own.values()])
        print(f"    {area}: " + ", ".join(f"{short(m)}: {n}" for m, n in sorted(own.items()))
              + (f"  [{', '.join(f'{short(m)}: {n}' for m, n in sorted(tables.items()))}]" if tables else ""))
    print(f"  most entries of one (non-table) module within one area: {worst}; "
          f"within one engine area (the fact sheet, which reads everything once, aside): {worst_area}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
