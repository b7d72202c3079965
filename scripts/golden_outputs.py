"""The user-visible outputs a restructuring must leave byte-identical: ``matrix``, ``plan --json`` (every engine's
newest; every profile segment of vLLM and SGLang with the demo target; the other engines with a config-only target),
``check`` and the main job, each run from the repository's root as a user would, timings and the interpreter's
path normalised. ``tests/test_golden_outputs.py`` compares them with ``tests/data/golden/``.

    python scripts/golden_outputs.py            # compare, print the first difference of each output
    python scripts/golden_outputs.py --write    # record them anew (after a change meant to alter what users see)
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"
PAIR = ("--eagle3-ckpt=examples/demo-draft", "--eagle3-ckpt=examples/demo-draft-sglang",
        "--eagle3-target=examples/demo-target")
#: name -> the command's arguments after ``python``.
COMMANDS: dict[str, tuple[str, ...]] = {
    "matrix.txt": ("-m", "pytest_eagle3", "matrix"),
    "plan-all.json": ("-m", "pytest_eagle3", "plan", "examples/demo-draft", "--engine", "all", "--json"),
    "plan-segments.json": ("-m", "pytest_eagle3", "plan", "examples/demo-draft-sglang", "--engine",
                           "vllm==*,sglang==*", "--target", "examples/demo-target", "--json"),
    "plan-others.json": ("-m", "pytest_eagle3", "plan", "examples/demo-draft-sglang", "--engine",
                         "trtllm,llamacpp,mlx-vlm,tokenspeed,lmdeploy", "--target", "examples/demo-target/config.json",
                         "--json"),
    "check.txt": ("-m", "pytest_eagle3", "check", "examples/demo-draft", "--engine", "vllm,sglang", "-p",
                  "no:randomly"),
    "main-job.txt": ("-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *PAIR),
}
_TIMING = re.compile(r"\b\d+(\.\d+)?s\b( \(\d+:\d\d:\d\d\))?")


def normalised(text: str) -> str:
    """The output without what changes from run to run: pytest's timings (and the padding of its ``=`` lines, whose
    width follows them), this interpreter's path, the rootdir."""
    text = text.replace(sys.executable, "PYTHON").replace(str(ROOT), "ROOT")
    lines = [f"== {_TIMING.sub('T', line).strip('= ')} ==" if line.startswith("=") else line
             for line in text.splitlines()]
    return "\n".join(line for line in lines if not line.startswith(("platform ", "plugins: ", "rootdir: ",
                                                                     "configfile: ", "cachedir: ")))


def run(name: str) -> str:
    """The normalised stdout and stderr of one command, run from the root with the columns a wide terminal has."""
    # CI and BUILD_NUMBER make pytest print its short summary untruncated: the recorded width is a terminal's
    env = {**{k: v for k, v in os.environ.items()
              if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS", "CI", "BUILD_NUMBER")},
           "COLUMNS": "200", "PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, *COMMANDS[name]], cwd=ROOT, capture_output=True, text=True, env=env,
                          check=False, timeout=900)
    return normalised(f"exit {done.returncode}\n{done.stdout}\n--- stderr\n{done.stderr}") + "\n"


def differences(name: str) -> list[str]:
    """The unified diff between the recorded output and the command's output now ([] when identical)."""
    recorded = (GOLDEN / name).read_text(encoding="utf-8").splitlines(keepends=True)
    return list(difflib.unified_diff(recorded, run(name).splitlines(keepends=True), f"recorded/{name}", f"now/{name}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record the outputs anew")
    parser.add_argument("names", nargs="*", default=list(COMMANDS), help="which outputs (default: all)")
    args = parser.parse_args(argv)
    status = 0
    for name in args.names:
        if args.write:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name).write_text(run(name), encoding="utf-8")
            print(f"recorded {name}")
            continue
        diff = differences(name)
        print(f"{name}: {'identical' if not diff else f'{len(diff)} diff lines'}")
        sys.stdout.writelines(diff[:40])
        status |= bool(diff)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
