"""Differential runs: Hypothesis-drawn checkpoint variants through the real engines' loaders, against the plans.

    python benchmarks/differential.py --python ENGINE_PYTHON [--count 5000] [--chunk 100]
    python benchmarks/differential.py --replay [--sample N]

``--python`` runs the first ``--count`` variants (``probes.variants.generate``: one fixed seed) that the record has
not run yet on that interpreter's engine release, ``--chunk`` at a time in one engine process each (the engine is
imported once per chunk), compares each with the plan, and merges the facts into the record
(``pytest_eagle3/probes/differential.json``) after every chunk. ``--replay`` rebuilds every recorded variant (or
every N-th with ``--sample``), plans it with today's knowledge, compares it with the recorded facts and prints
``variants: N, engines: K, agreement: A/N`` (N: variant runs, one variant through one engine release), then each
disagreement.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_eagle3.checkpoint import Checkpoint  # noqa: E402
from pytest_eagle3.checkpoint.target import TargetModel  # noqa: E402
from pytest_eagle3.engines.plan import LoadPlan, load_plan  # noqa: E402
from pytest_eagle3.knowledge.releases import EngineVersion  # noqa: E402
from pytest_eagle3.probes.differential import (  # noqa: E402
    DEFAULT_RECORD,
    RECORD_SCHEMA,
    Tally,
    differences,
    engine_of,
    facts,
    load_record,
    packed,
    replay,
    save_record,
)
from pytest_eagle3.probes.run import ENGINES, engine_version, run_probes  # noqa: E402
from pytest_eagle3.probes.variants import SEED, Variant, fingerprint, generate  # noqa: E402


def plan(engine: EngineVersion, draft: Path, target: Path) -> LoadPlan:
    """The load plan of a written variant on its target."""
    return load_plan(Checkpoint.open(draft), engine, TargetModel.open(target))


#: Seconds a probe may take per variant before the batch counts as stuck.
PER_VARIANT_TIMEOUT = 120.0


def _variants(record: dict[str, Any], count: int) -> list[Variant]:
    """The first ``count`` variants of the seeded draw, the record's own when it holds that many."""
    known = list(record["variants"].values())
    if len(known) >= count:
        return [Variant(v["params"]) for v in known[:count]]
    drawn = generate(count, record.get("seed", SEED))
    return [Variant(p) for p in drawn]


def _torch_version(python: str) -> str:
    code = "import importlib.metadata as m; print(m.version('torch'))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.strip() or "none"


def _run_key(engine: str, python: str) -> tuple[str, dict[str, Any]]:
    version = engine_version(engine, python) if engine != "llamacpp" else None
    meta: dict[str, Any] = {"engine": engine, "torch": _torch_version(python)}
    if engine == "llamacpp":
        from pytest_eagle3.knowledge.llamacpp_builds import vendored_build
        from pytest_eagle3.probes.llamacpp_converter import tree

        folder = tree()
        info = (folder.parent.parent / "PKG-INFO") if folder else None
        release = next((line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
                        if line.startswith("Version:")), "") if info and info.is_file() else ""
        meta.update(version=release, build=f"b{vendored_build(release) or '11312'}")
        return f"llamacpp=={meta['build']}", meta
    meta["version"] = version
    return f"{engine}=={version}", meta


def _engine_for(python: str) -> str:
    from pytest_eagle3.probes.llamacpp_converter import tree

    for engine in ENGINES:
        if engine != "llamacpp" and engine_version(engine, python):
            return engine
    if tree() is not None:
        return "llamacpp"
    raise SystemExit(f"{python}: no engine with a probe is installed there (and no EAGLE3_LLAMACPP_DIR)")


def write_shared(count: int, folder: Path, record_path: Path) -> None:
    """Write the first ``count`` variants into ``folder`` once, for several engine runs at once (``--shared``): each
    variant's folder is marked done when complete, and the engine runs wait for the mark."""
    record = load_record(record_path)
    targets: dict[str, Path] = {}
    for variant in _variants(record, count):
        if (folder / variant.name / DONE).is_file():
            continue
        draft, target = variant.write(folder, targets)
        (target / DONE).touch()
        (draft / DONE).touch()


#: The mark of a variant folder written completely (``write_shared``).
DONE = ".written"


def _written(variant: Variant, folder: Path) -> tuple[Path, Path]:
    draft = folder / variant.name
    while not (draft / DONE).is_file():
        time.sleep(2)
    target = folder / "targets" / variant.target_key
    return draft, target


def run_engine(python: str, count: int, chunk: int, out: Path, shared: Path | None = None) -> None:
    """Probe the variants not yet recorded for this interpreter's engine release, chunk by chunk."""
    record = load_record(out)
    record.setdefault("schema", RECORD_SCHEMA)
    record.setdefault("seed", SEED)
    record["hypothesis"] = importlib.metadata.version("hypothesis")
    engine = _engine_for(python)
    key, meta = _run_key(engine, python)
    variants = _variants(record, count)
    run = record["runs"].setdefault(key, {**meta, "strings": [], "results": {}, "disagreements": {}})
    run.update(meta, date=datetime.date.today().isoformat())
    index = {s: i for i, s in enumerate(run["strings"])}
    todo = [v for v in variants if v.name not in run["results"]]
    print(f"{key}: {len(todo)} of {len(variants)} variants to run", flush=True)
    for start in range(0, len(todo), chunk):
        batch = todo[start:start + chunk]
        began = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="diff-", dir=_scratch()) as tmp:
            root, targets = Path(tmp), dict[str, Path]()
            pairs = [_written(v, shared) if shared else v.write(root, targets) for v in batch]
            for variant, (draft, target) in zip(batch, pairs):
                entry = record["variants"].setdefault(variant.name, {"params": dict(variant.params)})
                entry.setdefault("fingerprint", fingerprint(variant.params, draft, target))
            wrote = time.monotonic()
            results = run_probes(engine, python, pairs, timeout=PER_VARIANT_TIMEOUT)
            probed = time.monotonic()
            tally = Tally()
            for variant, (draft, target), result in zip(batch, pairs, results):
                if result["outcome"] == "probe-error":
                    print(f"  {variant.name}: probe error {result.get('error')}", flush=True)
                    continue
                seen = facts(result)
                found = differences(plan(engine_of(key), draft, target), seen)
                tally.add(variant.name, found)
                run["results"][variant.name] = packed(seen, run["strings"], index)
                if found:
                    run["disagreements"][variant.name] = [str(d) for d in found]
        save_record(record, out)
        print(f"  chunk {start // chunk + 1}: {len(batch)} variants, write {wrote - began:.1f} s, engine "
              f"{probed - wrote:.1f} s ({(probed - wrote) / len(batch):.2f} s each), agree {tally.agree}/{tally.runs}"
              + "".join(f"\n    {n}: {'; '.join(lines)[:400]}" for n, lines in tally.disagreements.items()), flush=True)


def _scratch() -> str | None:
    """A memory-backed folder for the variants' files where there is one."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and shutil.disk_usage(shm).free > 2**30 else None


def replay_record(record_path: Path, sample: int, shared: Path | None = None, update: bool = False) -> int:
    """Replay the record (every ``sample``-th variant) and print the figures; with ``update``, store the differences
    found as the record's."""
    record = load_record(record_path)
    names = list(record["variants"])[::sample]
    with tempfile.TemporaryDirectory(prefix="replay-", dir=_scratch()) as tmp:
        root, targets = Path(tmp), dict[str, Path]()
        written: dict[str, tuple[Path, Path]] = {}

        def folders(name: str) -> tuple[Path, Path]:
            variant = Variant(record["variants"][name]["params"])
            if shared is not None and (shared / name / DONE).is_file():
                return _written(variant, shared)
            if name not in written:
                written[name] = variant.write(root, targets)
            return written[name]

        tallies = replay(record, folders, plan, names)
    if update:
        for key, tally in tallies.items():
            record["runs"][key]["disagreements"] = tally.disagreements
        save_record(record, record_path)
    runs = sum(t.runs for t in tallies.values())
    agree = sum(t.agree for t in tallies.values())
    engines = {record["runs"][k]["engine"] for k, t in tallies.items() if t.runs}
    print(f"variants: {runs}, engines: {len(engines)}, agreement: {agree}/{runs}"
          + (f" ({100 * agree / runs:.2f} %)" if runs else ""))
    print(f"checkpoints: {len(names)}; per engine release: "
          + ", ".join(f"{k} {t.agree}/{t.runs}" for k, t in tallies.items()))
    for key, tally in tallies.items():
        for name, lines in tally.disagreements.items():
            print(f"  {key} {name}: " + "; ".join(lines))
    return 0


def merge(records: list[Path], out: Path) -> None:
    """Merge records made apart (one engine each) into ``out``: the variants in draw order, every run."""
    merged = load_record(out)
    for path in records:
        part = load_record(path)
        for key in ("schema", "seed", "hypothesis"):
            merged[key] = part.get(key, merged.get(key))
        for name, entry in part["variants"].items():
            if entry.get("fingerprint") or name not in merged["variants"]:
                merged["variants"][name] = entry
        merged["runs"].update(part["runs"])
    ran = {name for run in merged["runs"].values() for name in run["results"]}
    merged["variants"] = {n: v for n, v in merged["variants"].items() if n in ran}
    save_record(merged, out)


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", action="append", help="an engine interpreter to run the variants in (repeatable)")
    parser.add_argument("--count", type=int, default=5000, help="variants to run (the first COUNT of the draw)")
    parser.add_argument("--chunk", type=int, default=100, help="variants per engine process")
    parser.add_argument("--replay", action="store_true", help="replay the record without any engine")
    parser.add_argument("--sample", type=int, default=1, help="with --replay: every N-th recorded variant")
    parser.add_argument("--record", default=str(DEFAULT_RECORD))
    parser.add_argument("--shared", help="a folder the variants are written to once (by --write-only) and read from")
    parser.add_argument("--write-only", action="store_true", help="write the variants into --shared, run nothing")
    parser.add_argument("--merge", nargs="+", help="records made apart, merged into --record")
    parser.add_argument("--update", action="store_true", help="with --replay: record the differences found now")
    args = parser.parse_args(argv)
    if args.merge:
        merge([Path(p) for p in args.merge], Path(args.record))
    shared = Path(args.shared) if args.shared else None
    if args.write_only and shared is not None:
        write_shared(args.count, shared, Path(args.record))
    for python in args.python or ():
        run_engine(str(Path(python).absolute()), args.count, args.chunk, Path(args.record), shared)
    if args.replay:
        return replay_record(Path(args.record), args.sample, shared, args.update)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
