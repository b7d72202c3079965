"""One server process: its own process group, a free loopback port, health polling, a log file, teardown.

Library choice: mirakuru (``HTTPExecutor``), with psutil to verify the teardown.

- mirakuru is a maintained, pytest-free process executor (it backs pytest-postgresql and
  pytest-redis). It starts the command in its own session (``os.setsid``: a new process group),
  refuses to start when something already answers on the port (``AlreadyRunning``), polls the
  health URL while checking ``Popen.poll()`` so a crash ends the wait at once
  (``ProcessExitedWithError``), kills the process on timeout (``TimeoutExpired``), and stops
  with SIGTERM to the whole group, a wait, then SIGKILL, plus every process still carrying its
  environment marker (children that left the group included).
- pytest-xprocess is a pytest plugin (its state lives in pytest's cache dir and it is driven by
  fixtures): this layer must not import pytest, and users call it outside pytest too.
- psutil alone would mean re-writing all of the above; it is used here only for what mirakuru
  does not give: listing the server's descendants and proving that none survives teardown.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from pytest_eagle3.live.errors import (
    PortTaken,
    ServerDied,
    ServerError,
    ServerLeftovers,
    ServerNeverHealthy,
    root_cause,
    tail,
)

LOOPBACK = "127.0.0.1"
#: Environment variable that marks every process a server starts (found again with psutil).
MARKER_ENV = "EAGLE3_SERVER_ID"
#: Log fragments that mean the engine could not bind its port.
PORT_IN_USE = ("address already in use", "errno 98")
DEFAULT_STOP_TIMEOUT = 30.0
#: Seconds a server may take to answer its health check (``--eagle3-server-timeout``).
DEFAULT_START_TIMEOUT = 600.0
#: The longest start wait accepted (a day): a larger value is a typo, not a model.
MAX_START_TIMEOUT = 86400.0


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether ``port`` can be bound on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def marked_processes(marker: str) -> list[int]:
    """Live (non-zombie) processes carrying ``MARKER_ENV=marker`` in their environment."""
    import psutil  # type: ignore[import-untyped]
    from mirakuru.base_env import processes_with_env

    alive = []
    for pid in processes_with_env(MARKER_ENV, marker):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            continue
    return sorted(alive)


def _executor_class() -> Any:
    from mirakuru import HTTPExecutor
    from mirakuru.exceptions import ProcessExitedWithError

    class _Executor(HTTPExecutor):
        """HTTPExecutor that also treats a clean exit before health as a death, and stops faster."""

        stop_timeout = DEFAULT_STOP_TIMEOUT

        def check_subprocess(self) -> bool:
            if self.process is not None and self.process.poll() == 0:
                self._kill_all_kids(self._kill_signal)
                self._clear_process()
                raise ProcessExitedWithError(self, 0)
            return bool(super().check_subprocess())

        def stop(self, *args: Any, **kwargs: Any) -> Any:
            self._timeout = self.stop_timeout
            return super().stop(*args, **kwargs)

    return _Executor


class ServerProcess:
    """A server command run in its own process group, healthy when ``health_path`` answers 2xx."""

    def __init__(self, command: Sequence[str], port: int, log_path: str | Path, *,
                 health_path: str = "/health", env: Mapping[str, str] | None = None,
                 start_timeout: float = DEFAULT_START_TIMEOUT, stop_timeout: float = DEFAULT_STOP_TIMEOUT,
                 host: str = LOOPBACK, cwd: str | None = None) -> None:
        self.command = tuple(command)
        self.port = port
        self.host = host
        self.log_path = Path(log_path)
        self.health_path = health_path
        self.env = dict(env or {})
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.cwd = cwd
        self.marker = uuid.uuid4().hex
        self.started_in: float | None = None
        self.pid: int | None = None
        self._executor: Any = None
        self._log: IO[str] | None = None

    @property
    def base_url(self) -> str:
        """The server's URL, ``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    def log_text(self) -> str:
        """The server's log so far (empty when unreadable)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> tuple[str, ...]:
        """The last ``lines`` lines of the log."""
        return tail(self.log_text(), lines)

    def _error(self, kind: type[ServerError], detail: str) -> ServerError:
        text = self.log_text()
        return kind(detail, self.command, tail(text), str(self.log_path), root_cause(text))

    def start(self) -> ServerProcess:
        """Start and wait for health; on any failure nothing is left running and a typed error says why."""
        from mirakuru.exceptions import AlreadyRunning, ProcessExitedWithError, TimeoutExpired

        if not port_is_free(self.port, self.host):
            raise self._error(PortTaken, f"{self.host}:{self.port} is already bound by another process")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w", encoding="utf-8")
        executor = _executor_class()(
            list(self.command), url=f"{self.base_url}{self.health_path}", method="GET",
            timeout=self.start_timeout, sleep=0.5, request_timeout=5.0,
            envvars={"PYTHONUNBUFFERED": "1", **self.env, MARKER_ENV: self.marker}, stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT, cwd=self.cwd)
        executor.stop_timeout = self.stop_timeout
        self._executor = executor
        began = time.monotonic()
        try:
            executor.start()
        except AlreadyRunning:
            self._cleanup()
            raise self._error(PortTaken, f"something already answers on {self.host}:{self.port}") from None
        except ProcessExitedWithError as exc:
            self._cleanup()
            raise self._died(exc.exit_code) from None
        except TimeoutExpired:
            self._cleanup()
            raise self._error(ServerNeverHealthy, (
                f"no answer from {self.base_url}{self.health_path} within {self.start_timeout:g} s "
                "(raise --eagle3-server-timeout if the model is large)")) from None
        self.pid = executor.process.pid if executor.process else None
        self.started_in = time.monotonic() - began
        return self

    def _died(self, exit_code: int) -> ServerError:
        text = self.log_text().lower()
        if any(fragment in text for fragment in PORT_IN_USE):
            return self._error(PortTaken, f"the engine could not bind {self.host}:{self.port} (exit code {exit_code})")
        return self._error(ServerDied, f"the process exited with code {exit_code} before {self.health_path} answered")

    def running(self) -> bool:
        """Whether the server process is still running."""
        return bool(self._executor is not None and self._executor.running())

    def stop(self) -> None:
        """Terminate the whole process group, wait, kill; raise if any marked process survives."""
        if self._executor is not None:
            try:
                self._executor.stop(expected_returncode=None)
            except Exception:  # a non-zero exit on SIGTERM is still a stop
                self._executor.kill()
        survivors = self._cleanup()
        if survivors:
            raise self._error(ServerLeftovers, f"pids {survivors} were still alive after teardown (now killed)")

    def survivors(self) -> list[int]:
        """Processes this server started that are still alive (should be empty after ``stop``)."""
        deadline = time.monotonic() + 5.0
        alive = marked_processes(self.marker)
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = marked_processes(self.marker)
        return alive

    def _cleanup(self) -> list[int]:
        """Kill the group, then kill and wait out any marked survivor; return the survivors' pids."""
        if self._executor is not None and self._executor.process is not None:
            self._executor.kill()
        self._executor = None
        if self._log is not None:
            self._log.close()
            self._log = None
        survivors = self.survivors()
        for pid in survivors:
            _kill(pid)
        if survivors:
            self.survivors()  # a killed process stays listed until the kernel has torn it down
        return survivors



def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
