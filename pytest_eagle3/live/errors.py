"""Typed server failures: each carries the command and the last lines of the server's log."""

from __future__ import annotations

from collections.abc import Sequence

#: How many log lines a failure message shows.
TAIL_LINES = 30


class ServerError(Exception):
    """A live server could not be started or used; ``log_tail`` holds its last log lines."""

    what = "the server failed"

    def __init__(self, detail: str, command: Sequence[str] = (), log_tail: Sequence[str] = (),
                 log_path: str | None = None) -> None:
        self.detail = detail
        self.command = tuple(command)
        self.log_tail = tuple(log_tail)
        self.log_path = log_path
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.what}: {self.detail}"]
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


def tail(text: str, lines: int = TAIL_LINES) -> tuple[str, ...]:
    """The last ``lines`` non-empty lines of ``text``."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return tuple(kept[-lines:])
