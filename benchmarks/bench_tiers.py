"""The README's timings: the main job serial and with ``-n N``, on the machine as it is and loaded, optionally the fast
tier, with the machine they were measured on.

    python benchmarks/bench_tiers.py                       # serial against -n 2, 3 pairs quiet then 3 loaded
    python benchmarks/bench_tiers.py --pairs 5 --load loaded --burners 4
    python benchmarks/bench_tiers.py --load quiet --fast-tier

Each run is a fresh ``python -m pytest`` from the clone's root (no cache, no pytest-randomly), so the figures are
what a user's command takes, the interpreter's start included. The runs come in pairs, serial and split, their order
alternating from pair to pair, so a busy spell of a shared machine falls on both alike; each pair gives a ratio
(split / serial), and the median ratio is the figure. Beside the wall time each run's CPU time (its processes'
user + system) is printed: equal CPU means the same work, whatever the wall clock says.

``--load loaded`` runs ``--burners`` CPU burners beside the pairs (processes that spin until told to stop, each
ending by itself after ``--load-seconds`` whatever happens to this script). The machine's load average is printed
with each mode: a shared machine's figures are comparable only within one run of this script.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = ("--eagle3-ckpt=examples/demo-draft", "--eagle3-ckpt=examples/demo-draft-sglang",
            "--eagle3-target=examples/demo-target")
FAST_TIER = ("--hypothesis-profile=eagle3-ci",)
#: A CPU burner: spins until its deadline (argv[1] seconds), so it never outlives a bounded measurement.
BURNER = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def machine() -> str:
    """Cores, CPU model, load and Python: the line every figure is stated with."""
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"{usable_cores()} usable of {os.cpu_count() or 0} cores, {cpu_model()}; load average {load}; Python "
            f"{platform.python_version()} on {platform.system()}")


@dataclass(frozen=True)
class Timing:
    """One pytest run: wall seconds, CPU seconds of its processes (user + system), exit status."""

    wall: float
    cpu: float
    status: int


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(args: tuple[str, ...]) -> Timing:
    """One pytest run of ``args`` from the clone's root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_STEP_SUMMARY"))}
    cpu, start = _children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                           *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False)
    return Timing(time.monotonic() - start, _children_cpu() - cpu, done.returncode)


@contextmanager
def burners(count: int, seconds: float) -> Iterator[None]:
    """``count`` CPU burners for the ``with`` block (each ends by itself after ``seconds`` at the latest)."""
    started = [subprocess.Popen([sys.executable, "-c", BURNER, str(seconds)]) for _ in range(count)]
    try:
        yield
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait()


def pairs(serial: tuple[str, ...], split: tuple[str, ...], count: int, label: str) -> list[tuple[Timing, Timing]]:
    """``count`` pairs (serial, split), the order alternating from pair to pair; each run printed."""
    found = []
    for pair in range(count):
        order = ("serial", "split") if pair % 2 == 0 else ("split", "serial")
        runs = {}
        for which in order:
            runs[which] = timed(serial if which == "serial" else split)
            run = runs[which]
            print(f"  {label}, pair {pair + 1}, {which}: {run.wall:.1f} s wall, {run.cpu:.1f} s CPU "
                  f"(exit {run.status})", flush=True)
        found.append((runs["serial"], runs["split"]))
    return found


def summary(found: list[tuple[Timing, Timing]], workers: int, label: str) -> str:
    """The mode's line: median wall of each, the median ratio with every pair's, the mean CPU of each."""
    ratios = [split.wall / serial.wall for serial, split in found]
    serial_wall = statistics.median(s.wall for s, _ in found)
    split_wall = statistics.median(s.wall for _, s in found)
    serial_cpu = statistics.mean(s.cpu for s, _ in found)
    split_cpu = statistics.mean(s.cpu for _, s in found)
    return (f"main job, {label}: {serial_wall:.1f} s serial, {split_wall:.1f} s with -n {workers} (medians of "
            f"{len(found)} pairs); -n {workers} / serial: median {statistics.median(ratios):.2f}x (pairs: "
            f"{', '.join(f'{r:.2f}' for r in ratios)}); CPU {serial_cpu:.1f} s serial, {split_cpu:.1f} s "
            f"with -n {workers}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", "--repeat", type=int, default=3, help="pairs (serial, -n) per mode (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers of the split run (default 2)")
    parser.add_argument("--load", choices=("quiet", "loaded", "both"), default="both",
                        help="the machine as it is, with CPU burners beside, or both in turn (default both)")
    parser.add_argument("--burners", type=int, default=usable_cores(),
                        help="CPU burners of the loaded mode (default: one per usable core)")
    parser.add_argument("--load-seconds", type=float, default=1800.0,
                        help="the longest a burner lives, whatever happens to this script (default 1800)")
    parser.add_argument("--fast-tier", action="store_true", help="also time the fast tier (-n WORKERS, minutes)")
    args = parser.parse_args(argv)
    serial, split = (*MAIN_JOB, "-n", "0"), (*MAIN_JOB, "-n", str(args.workers))
    lines = []
    if args.load in ("quiet", "both"):
        print(f"machine as it is: {machine()}", flush=True)
        lines.append(summary(pairs(serial, split, args.pairs, "as it is"), args.workers, "machine as it is"))
    if args.load in ("loaded", "both"):
        label = f"{args.burners} CPU burners beside"
        with burners(args.burners, args.load_seconds):
            print(f"{label}: {machine()}", flush=True)
            lines.append(summary(pairs(serial, split, args.pairs, label), args.workers, label))
            print(f"{label}, at the end: {machine()}", flush=True)
    if args.fast_tier:
        tier = timed((*FAST_TIER, "-n", str(args.workers)))
        lines.append(f"fast tier: {tier.wall / 60:.1f} min with -n {args.workers} (exit {tier.status})")
    print("\n".join(lines))
    print(f"machine: {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
