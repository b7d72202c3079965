"""Trace one judgement file by file: how far the engine choice travels (issue 48's measure).

    python benchmarks/trace_judgement.py [--engine vllm==X] [--files] [--from-verdict | --way-out]

Runs ``verdict.rows.judgement`` once, in this fresh process, for the demo draft (examples/demo-draft-sglang)
against the demo target's config.json and one engine version (default: the newest vLLM read), under
``sys.setprofile``, and follows *the engine choice*.

The rule: a call into a ``pytest_eagle3/`` file is *on the path* (a *stop*) when one of its arguments, or one
attribute (one level deep) of its first argument (``self``/``cls``), or one item of an argument that is a tuple,
list, set or dict (its values), is *tainted*. Tainted at the start: the EngineVersion, its Engine (``ev.kind``) and
its Snapshot (``knowledge.snapshot.snapshot_of(ev)``), by identity, and any value equal to one of them. Derived: the value
an on-path call returns (and the ``self`` an on-path ``__init__`` or ``__post_init__`` built) is tainted too,
except plain scalars (None, bools, numbers, strings, bytes), which are not followed.

Figures, over the on-path calls in ``pytest_eagle3/`` in call order: *stops*; *files* entered (distinct);
*returns*, in the sequence of the stops' files with repeats collapsed, each file met again after being left
(A B A counts one); *crossings* between ``engines/`` and ``knowledge/``, each direction, in that same sequence;
and the direct calls from a file in one of them into the other (the caller being the nearest ``pytest_eagle3/``
frame). The same figures are printed for the stops that receive a seed itself (no derived value). Caches: the process is fresh and every ``functools`` cache of a loaded ``pytest_eagle3`` module is cleared
after the seeds are made, so a cached answer does not hide a call. Import-time code is not on the path (it never
receives the engine choice). The figures are a measure, not a gate: the target is at most 15 files and at most
10 returns, with engines/ <-> knowledge/ crossed only through the snapshot.

``--from-verdict`` measures from the other side: it makes the row's word as ``plan`` does (the ``any`` row's and the
engine version's judgements, ``verdict.rows.judgement``, into a ``verdict.report.Collector``, then the row's word),
and follows the way from that verdict entry back to the engine choice: the calls into ``pytest_eagle3/`` that are on
the stack when a stop receiving the EngineVersion, its Engine or its Snapshot itself is called (the stop included),
in order of entry. Files are those calls' distinct files; returns, in that sequence (repeats collapsed), each file
met again after being left.

``--way-out`` follows the judgement the other way, out to the words a user reads, as ``pytest`` gives them: it runs
one contract in this process (``pytest.main``, the same draft, target and engine version, the test of ``--contract``,
default ``engine.aux_layers``, selected with ``-k``) and counts
every call into ``pytest_eagle3/`` that receives a record of the way out (:data:`WAY_OUT`: the judgement, a contract's
outcome, what a test hands the report, the report's rows), by the same rule as a stop, in call order: calls, files,
returns.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = str(ROOT / "pytest_eagle3") + "/"
SCALARS = (type(None), bool, int, float, complex, str, bytes)
CONTAINERS = (tuple, list, set, frozenset)
SNAPSHOT = "knowledge/snapshot.py"
#: The records a judgement's outcome travels in on its way out to the row's word (old names kept, to measure an
#: older tree by the same rule).
WAY_OUT = frozenset({"Judgement", "ContractOutcome", "ContractRecord", "ContractReport", "ContractResult",
                     "CheckpointResult", "Collector", "RowWord", "Eagle3Result"})


def _area(path: str) -> str | None:
    """``engines`` or ``knowledge`` for a file in those packages, else None."""
    rel = path[len(PACKAGE_DIR):]
    top = rel.split("/", 1)[0]
    return top if top in ("engines", "knowledge") and "/" in rel else None


def _attributes(obj: Any) -> list[Any]:
    """``obj``'s own attribute values (its ``__dict__`` or its slots), one level deep."""
    found = getattr(obj, "__dict__", None)
    if isinstance(found, dict):
        return list(found.values())
    values = []
    for klass in type(obj).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if hasattr(obj, name):
                values.append(getattr(obj, name))
    return values


class Tracer:
    """Follows the engine choice through the calls that receive it (the module docstring's rule)."""

    def __init__(self, seeds: list[Any]) -> None:
        self.seeds = seeds
        self.seed_types = tuple({type(s) for s in seeds})
        self.tainted: dict[int, Any] = {id(s): s for s in seeds}  # values kept alive: ids are not reused
        self.on_path: set[int] = set()  # frames of the on-path calls still running
        self.stops: list[str] = []  # the file of each stop, relative to the package
        self.seed_stops: list[str] = []  # the stops that receive a seed itself (no derived value)
        self.direct: Counter[str] = Counter()  # "engines -> knowledge": direct calls between the two
        self.around: Counter[str] = Counter()  # direct engines -> knowledge calls into a file other than the snapshot
        self.stack: list[tuple[int, int]] = []  # (frame id, entry index) of the package's calls still running
        self.entered: list[str] = []  # the file of each call into the package, in order of entry
        self.way: set[int] = set()  # entry indexes of the calls on the stack when a seed itself was received

    def _is_tainted(self, value: Any, seeds_only: bool = False) -> bool:
        if isinstance(value, SCALARS):
            return False
        if id(value) in self.tainted and (not seeds_only or any(value is seed for seed in self.seeds)):
            return True
        if isinstance(value, self.seed_types):
            try:
                return any(value == seed for seed in self.seeds)
            except Exception:  # an odd __eq__: not the engine choice
                return False
        return False

    def _receives(self, frame: FrameType, seeds_only: bool = False) -> bool:
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount
                                 + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)]
        local = frame.f_locals
        for i, name in enumerate(names):
            if name not in local:
                continue
            value = local[name]
            if self._is_tainted(value, seeds_only):
                return True
            if isinstance(value, CONTAINERS):
                items: list[Any] = list(value)[:64]
            elif isinstance(value, dict):
                items = list(value.values())[:64]
            elif i == 0 and name in ("self", "cls"):
                items = _attributes(value)
            else:
                continue
            if any(self._is_tainted(item, seeds_only) for item in items):
                return True
        return False

    def _taint(self, value: Any) -> None:
        if not isinstance(value, SCALARS):
            self.tainted[id(value)] = value

    def way_back(self) -> list[str]:
        """The files of the calls from the verdict entry to each stop receiving a seed itself, in order of entry."""
        return [self.entered[i] for i in sorted(self.way)]

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE_DIR) \
                and frame.f_code.co_name != "<module>":
            self.stack.append((id(frame), len(self.entered)))
            self.entered.append(frame.f_code.co_filename[len(PACKAGE_DIR):])
        elif event == "return" and self.stack and self.stack[-1][0] == id(frame):
            self.stack.pop()
        if event == "call":
            path = frame.f_code.co_filename
            ours = path.startswith(PACKAGE_DIR)
            if not ours and not (path == "<string>" and frame.f_code.co_name in ("__init__", "__post_init__")):
                return
            if frame.f_code.co_name == "<module>" or not self._receives(frame):
                return
            self.on_path.add(id(frame))
            if not ours:  # a dataclass' generated __init__: its self is derived, not a stop
                return
            self.stops.append(path[len(PACKAGE_DIR):])
            if self._receives(frame, seeds_only=True):
                self.seed_stops.append(self.stops[-1])
                self.way.update(index for _, index in self.stack)
            callee = _area(path)
            caller = frame.f_back
            while caller is not None and not caller.f_code.co_filename.startswith(PACKAGE_DIR):
                caller = caller.f_back
            source = _area(caller.f_code.co_filename) if caller is not None else None
            if callee and source and callee != source:
                self.direct[f"{source} -> {callee}"] += 1
                if callee == "knowledge" and not path.endswith(SNAPSHOT):
                    self.around[path[len(PACKAGE_DIR):]] += 1
        elif event == "return" and id(frame) in self.on_path:
            self.on_path.discard(id(frame))
            self._taint(arg)
            if frame.f_code.co_name in ("__init__", "__post_init__") and frame.f_code.co_argcount:
                self._taint(frame.f_locals.get(frame.f_code.co_varnames[0]))


class WayOut:
    """Counts the calls into the package that receive a record of :data:`WAY_OUT` (the stop rule, by type)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(PACKAGE_DIR) or code.co_name == "<module>":
            return
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount
                                 + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)]
        for i, name in enumerate(names):
            value = frame.f_locals.get(name)
            items: list[Any] = [value]
            if isinstance(value, CONTAINERS):
                items += list(value)[:64]
            elif isinstance(value, dict):
                items += list(value.values())[:64]
            elif i == 0 and name in ("self", "cls"):
                items += _attributes(value)
            if any(type(item).__name__ in WAY_OUT for item in items):
                self.calls.append(code.co_filename[len(PACKAGE_DIR):])
                return


def way_out(draft: str, target: str, spec: str, contract: str, files: bool) -> int:
    """The contracts run by pytest in this process under :class:`WayOut`; its figures printed."""
    import contextlib
    import io

    import pytest

    from pytest_eagle3.verdict.contract_table import BY_ID

    tracer = WayOut()
    out = io.StringIO()
    sys.setprofile(tracer)
    try:
        with contextlib.redirect_stdout(out):
            status = pytest.main([f"--eagle3-ckpt={draft}", f"--eagle3-target={target}", f"--eagle3-engine={spec}",
                                  "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                                  "-k", BY_ID[contract].test_name])
    finally:
        sys.setprofile(None)
    word = next((line.split()[-3] for line in out.getvalue().splitlines() if f" {spec} " in f" {line} "), "?")
    got = figures(tracer.calls)
    print(f"pytest on {Path(draft).name}, {spec}, target {Path(target).parent.name}, {contract} alone: exit "
          f"{int(status)}, the row reads {word}")
    print(f"the way out (calls receiving a judgement, an outcome or a report record): {got['stops']} calls, "
          f"{got['files']} files, {got['returns']} returns")
    if files:
        counts = Counter(tracer.calls)
        for f in dict.fromkeys(tracer.calls):
            print(f"  {counts[f]:5d}  {f}")
    return 0


def clear_caches() -> int:
    """Clear every ``functools`` cache held at module level by a loaded ``pytest_eagle3`` module; how many."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if name != "pytest_eagle3" and not name.startswith("pytest_eagle3."):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                value.cache_clear()
                cleared += 1
    return cleared


def figures(stops: list[str]) -> dict[str, int]:
    """Stops, files, returns and engines/ <-> knowledge/ crossings of a sequence of stop files."""
    runs = [f for i, f in enumerate(stops) if i == 0 or stops[i - 1] != f]
    seen: set[str] = set()
    returns = 0
    for f in runs:
        returns += f in seen
        seen.add(f)
    areas = [a for a in (_area(PACKAGE_DIR + f) for f in runs)]
    e2k = sum(1 for a, b in zip(areas, areas[1:]) if a == "engines" and b == "knowledge")
    k2e = sum(1 for a, b in zip(areas, areas[1:]) if a == "knowledge" and b == "engines")
    return {"stops": len(stops), "files": len(seen), "returns": returns, "e2k": e2k, "k2e": k2e}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draft", default=str(ROOT / "examples" / "demo-draft-sglang"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target" / "config.json"))
    parser.add_argument("--engine", default=None, help="an engine version, e.g. vllm==0.33.0 (default: newest vLLM)")
    parser.add_argument("--files", action="store_true", help="list the files in order of first entry")
    parser.add_argument("--without-snapshot", action="store_true",
                        help="seed only the EngineVersion and its Engine (the choice before it is read into a snapshot)")
    parser.add_argument("--seed-files", action="store_true",
                        help="list the files of the stops receiving a seed itself, in order of first entry")
    parser.add_argument("--way-out", action="store_true",
                        help="run the contracts with pytest here and follow the judgement out to the words")
    parser.add_argument("--contract", default="engine.aux_layers", help="--way-out: the contract whose test runs")
    parser.add_argument("--from-verdict", action="store_true",
                        help="make the row's word as plan does and follow the way from it back to the engine choice")
    args = parser.parse_args(argv)

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.knowledge.releases import newest
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.knowledge.snapshot import snapshot_of
    from pytest_eagle3.verdict import RunSettings, TargetSide, pipeline_for
    from pytest_eagle3.verdict.rows import judgement

    ev = parse_selection(args.engine)[0] if args.engine else newest("vllm")
    if args.way_out:
        return way_out(args.draft, args.target, ev.spec, args.contract, args.files)
    seeds = [ev, ev.kind] if args.without_snapshot else [ev, ev.kind, snapshot_of(ev)]
    cleared = clear_caches()
    pipeline = pipeline_for(RunSettings(engines=(ev,)))
    ckpt = Checkpoint.open(args.draft)
    tracer = Tracer(seeds)
    side = TargetSide(args.target)
    sys.setprofile(tracer)
    try:
        if args.from_verdict:
            word = row_word(pipeline, ckpt, ev, side)
        verdict = judgement(pipeline, ckpt, ev, side)
    finally:
        sys.setprofile(None)

    got = figures(tracer.stops)
    print(f"judgement({Path(args.draft).name}, {ev.spec}, target {Path(args.target).parent.name}): "
          f"{len(verdict.outcomes)} contracts; fresh process, {cleared} functools caches cleared")
    print(f"stops: {got['stops']}")
    print(f"files: {got['files']}")
    print(f"returns to a file already left: {got['returns']}")
    print(f"engines/ -> knowledge/ crossings: {got['e2k']}")
    print(f"knowledge/ -> engines/ crossings: {got['k2e']}")
    print("direct calls between them: " + (", ".join(f"{k}: {n}" for k, n in sorted(tracer.direct.items()))
                                            or "none"))
    print("engines/ -> knowledge/ direct calls not into the snapshot: " + (
        ", ".join(f"{k}: {n}" for k, n in sorted(tracer.around.items())) or "none"))
    seed = figures(tracer.seed_stops)
    print(f"receiving the EngineVersion, Engine or Snapshot itself (no derived value): {seed['stops']} stops, "
          f"{seed['files']} files, {seed['returns']} returns, crossings {seed['e2k']} / {seed['k2e']}")
    if args.from_verdict:
        back = figures(tracer.way_back())
        print(f"from the verdict entry (the row's word, {word}) back to the engine choice: {back['stops']} calls, "
              f"{back['files']} files, {back['returns']} returns, crossings {back['e2k']} / {back['k2e']}")
    for wanted, stops in ((args.files, tracer.stops), (args.seed_files, tracer.seed_stops),
                          (args.files and args.from_verdict, tracer.way_back())):
        if wanted:
            counts = Counter(stops)
            for f in dict.fromkeys(stops):
                print(f"  {counts[f]:5d}  {f}")
    return 0


def row_word(pipeline: Any, ckpt: Any, ev: Any, side: Any) -> str:
    """The row's word as ``plan`` makes it: both judgements of the row into a report, then the row's word."""
    from pytest_eagle3.verdict.report import Collector
    from pytest_eagle3.verdict.rows import judgement

    collector = Collector(target=side.path, engines=[ev.spec])
    for engine in (None, ev):
        collector.add_judgement(judgement(pipeline, ckpt, engine, side))
    return str(collector.checkpoints[ckpt.path].engine_verdict(ev.spec))


if __name__ == "__main__":
    raise SystemExit(main())
