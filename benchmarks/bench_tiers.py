"""The README's timings: the main job serial and split over workers (``-n N``), optionally the fast tier, with the
machine they were measured on.

    python benchmarks/bench_tiers.py                 # the main job, serial and -n 2 in turn, best of 2 runs each
    python benchmarks/bench_tiers.py --repeat 3 --workers 2 --fast-tier

Each run is a fresh ``python -m pytest`` from the clone's root (no cache, no pytest-randomly), so the figures are
what a user's command takes, the interpreter's start included. The machine's load is printed beside them: a
shared machine's figures are only comparable within one run of this script.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = ("--eagle3-ckpt=examples/demo-draft", "--eagle3-ckpt=examples/demo-draft-sglang",
            "--eagle3-target=examples/demo-target")
FAST_TIER = ("--hypothesis-profile=eagle3-ci",)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """Cores, CPU model, load and Python: the line every figure is stated with."""
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"{usable} usable of {cores} cores, {cpu_model()}; load average {load}; Python "
            f"{platform.python_version()} on {platform.system()}")


def timed(args: tuple[str, ...]) -> tuple[float, int]:
    """Seconds one pytest run takes, and its exit status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EAGLE3_", "GITHUB_STEP_SUMMARY"))}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                           *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False)
    return time.monotonic() - start, done.returncode


def alternating(runs: dict[str, tuple[str, ...]], repeat: int) -> dict[str, float]:
    """The best of ``repeat`` runs of each (the least disturbed by the machine's other work), taken in turn so a
    busy spell falls on both alike; each run printed."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, args in runs.items():
            seconds, status = timed(args)
            times[name].append(seconds)
            print(f"  {name}: {seconds:.1f} s (exit {status})", flush=True)
    return {name: min(found) for name, found in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each (the best is reported; default 2)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers of the split run (default 2)")
    parser.add_argument("--fast-tier", action="store_true", help="also time the fast tier (-n WORKERS, minutes)")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}", flush=True)
    split_name = f"main job, -n {args.workers}"
    found = alternating({"main job, serial": (*MAIN_JOB, "-n", "0"), split_name: (*MAIN_JOB, "-n", str(args.workers))},
                        args.repeat)
    serial, split = found["main job, serial"], found[split_name]
    print(f"main job: {serial:.1f} s serial, {split:.1f} s with -n {args.workers} "
          f"({split / serial:.2f}x the serial time)")
    if args.fast_tier:
        tier = alternating({"fast tier": (*FAST_TIER, "-n", str(args.workers))}, 1)["fast tier"]
        print(f"fast tier: {tier / 60:.1f} min with -n {args.workers}")
    print(f"machine: {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
