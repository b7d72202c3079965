"""A live engine with no server: its own generate loop, run in its interpreter once per batch of prompts.

mlx-vlm serves EAGLE-3 from ``mlx_vlm.generate.ar.generate_step`` (``draft_kind="eagle3"``); ``mlx_generate.py``
runs it greedily over the prompts, one request at a time, and prints the drafter's own per-round record. A
``GenerateLoop`` has the live server's interface (``run``, ``stop``, ``label``, ``log_text``), so the live
contracts judge it as they judge a server: nothing keeps running between runs, and a run that outlives its
timeout is killed with its children.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_eagle3.live.client import Generation
from pytest_eagle3.live.errors import DraftPathMissing, RequestFailed
from pytest_eagle3.live.interpreter import EngineInstall
from pytest_eagle3.live.launch import DEFAULT_STEPS
from pytest_eagle3.live.metrics import LiveAcceptance
from pytest_eagle3.live.server import LiveRun
from pytest_eagle3.words import plural

SCRIPT = Path(__file__).with_name("mlx_generate.py")
#: Where the per-round record comes from (mlx_vlm speculative/common.py ``_record_speculative_round``).
SOURCE = "mlx-vlm drafter accept_lens"
LOG_TAIL_LINES = 30


def loop_command(python: str, target: str, draft: str | None, prompts: str, steps: int, new_tokens: int,
                 device: str = "cpu") -> list[str]:
    """The command that runs the loop (``prompts``: a file of token-id lists, one a line)."""
    argv = [python, str(SCRIPT), "--target", target, "--prompts", prompts, "--steps", str(steps),
            "--max-tokens", str(new_tokens), "--device", device]
    return argv + (["--draft", draft] if draft else [])


def summary(engine: str, result: dict[str, Any], saved: Path) -> str:
    """One log line for a run: what the drafter counted, and where the whole result is."""
    counts = (f"{result['rounds']} rounds, {result['accepted']} of {result['drafted']} drafted tokens accepted"
              if result.get("drafted") else "no draft")
    error = f"; raised {result['error']} at {result.get('raised_at') or '?'}" if result.get("error") else ""
    return (f"{engine} {result.get('version')}: {len(result.get('tokens', []))} requests, {counts}, "
            f"{result.get('seconds')} s{error} (result: {saved})")


def rounds_acceptance(accept_lens: Sequence[Sequence[int]], steps: int, version: str) -> LiveAcceptance | None:
    """Acceptance from the drafter's record with the reference's definitions: the rate at position j is the share
    of rounds accepting at least j drafts, the mean acceptance length 1 + accepted / rounds (None: no round)."""
    rounds = [a for request in accept_lens for a in request]
    if not rounds:
        return None
    per_position = tuple(sum(a >= j for a in rounds) / len(rounds) for j in range(1, steps + 1))
    return LiveAcceptance(1.0 + sum(rounds) / len(rounds), per_position, len(rounds), f"{SOURCE} ({version})")


@dataclass
class GenerateLoop:
    """``target`` (with ``draft``, or alone when ``draft`` is None) in the engine's own loop."""

    install: EngineInstall
    target: str
    draft: str | None
    work_dir: Path
    steps: int = DEFAULT_STEPS
    device: str = "cpu"
    timeout: float = 900.0
    started_in: float | None = None  # no server to start
    results: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.draft is not None and not (Path(self.draft) / "config.json").is_file():
            raise DraftPathMissing(f"{self.draft} has no config.json", log_path=str(self.log_path))

    @property
    def engine(self) -> str:
        """The engine's name."""
        return self.install.engine

    @property
    def log_path(self) -> Path:
        """The log file of this run (target and draft names in it)."""
        return self.work_dir / f"{Path(self.target).name}-{Path(self.draft).name if self.draft else 'alone'}.log"

    @property
    def label(self) -> str:
        """What runs, in words: engine, version, target and draft."""
        version = self.install.version or "?"
        return f"{self.engine} {version} generate loop on {Path(self.target).name}" + (
            f" with {Path(self.draft).name}" if self.draft else " alone")

    def log_text(self) -> str:
        """The log so far (empty before the first run)."""
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""

    def command(self, prompts: str, new_tokens: int) -> list[str]:
        """The command line that runs the engine's generate loop on ``prompts``."""
        return loop_command(self.install.python, self.target, self.draft, prompts, self.steps, new_tokens,
                            self.device)

    def run(self, prompts: Sequence[Sequence[int]], new_tokens: int) -> LiveRun:
        """Greedy continuations, and the drafter's acceptance over exactly these requests."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        prompt_file = self.work_dir / f"prompts-{len(self.results)}.txt"
        prompt_file.write_text("".join(json.dumps(list(p)) + "\n" for p in prompts))
        argv = self.command(str(prompt_file), new_tokens)
        began = time.monotonic()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired as exc:  # subprocess.run killed it
            self._log(argv, str(exc.stdout or ""), str(exc.stderr or ""))
            raise RequestFailed(f"the loop ran past {self.timeout:.0f} s and was killed", argv,
                                self._tail(), str(self.log_path)) from None
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            self._log(argv, done.stdout, done.stderr)
            raise RequestFailed(f"the loop exited {done.returncode} without a result", argv, self._tail(),
                                str(self.log_path))
        result: dict[str, Any] = json.loads(lines[-1])
        saved = self.work_dir / f"{self.log_path.stem}-{len(self.results)}.json"
        saved.write_text(lines[-1] + "\n")
        self._log(argv, "\n".join(line for line in done.stdout.splitlines() if not line.startswith("{")),
                  done.stderr, summary(self.engine, result, saved))
        self.results.append(result)
        if result.get("error"):
            raise RequestFailed(f"{self.engine} {result.get('version')}'s loop raised {result['error']} at "
                                f"{result.get('raised_at') or '?'} after {len(result['tokens'])} of "
                                f"{plural(len(prompts), 'request')}", argv, self._tail(), str(self.log_path))
        meta = tuple({"accept_lens": a, "draft_lens": d} for a, d in zip(result["accept_lens"], result["draft_lens"]))
        generation = Generation(tuple(tuple(t) for t in result["tokens"]), meta)
        acceptance = rounds_acceptance(result["accept_lens"], self.steps, str(result.get("version")))
        return LiveRun(generation, acceptance if self.draft else None, time.monotonic() - began)

    def stop(self) -> None:
        """Nothing runs between batches: each run's process is waited for (or killed) before it returns."""

    def _log(self, argv: Sequence[str], stdout: str, stderr: str, last: str = "") -> None:
        with self.log_path.open("a") as log:
            log.write("\n".join(part.rstrip("\n") for part in ("$ " + " ".join(argv), stderr, stdout, last) if part)
                      + "\n")

    def _tail(self) -> list[str]:
        return self.log_text().splitlines()[-LOG_TAIL_LINES:]
