"""The progress line of the long steps (:mod:`pytest_eagle3.progress`), shown the way pytest shows its own
"collecting ...": only when the output is a terminal, never under ``-q``, rewritten in place, gone when the
step ends.

In a pytest run the line follows what pytest wrote on the current line (the test file's name, or the test's id
under ``-v``) and is erased with backspaces, so pytest's line is left as it was; a command (``fix``,
``capture``, ``sweep``) writes it to stderr. ``EAGLE3_PROGRESS=1`` shows it as if the output were a terminal,
at once and every tick (``-q`` still silences it); ``EAGLE3_PROGRESS=0`` never shows it.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TextIO

import pytest

from pytest_eagle3 import progress

ENV = "EAGLE3_PROGRESS"
#: A step shows once it has lasted this long (short steps print nothing), and is rewritten at most this often.
DELAY_S, INTERVAL_S = 0.5, 0.1
#: Fewer free columns than this on the current line: nothing is shown.
MIN_ROOM = 16


def forced() -> bool | None:
    """``EAGLE3_PROGRESS``: True (as if on a terminal), False (never), None (unset: the terminal decides)."""
    value = os.environ.get(ENV, "").strip()
    return True if value == "1" else False if value == "0" else None


class ProgressLine:
    """A :class:`pytest_eagle3.progress.Listener` writing one line in place through ``write``; ``room()`` is
    the number of columns free on the current line, ``column()`` how many are taken."""

    def __init__(self, write: Callable[[str], None], room: Callable[[], int], column: Callable[[], int] = lambda: 0,
                 at_once: bool = False) -> None:
        self._write, self._room, self._column, self._at_once = write, room, column, at_once
        self._shown = 0
        self._since: float | None = None
        self._last = 0.0

    def show(self, line: str) -> None:
        """Show ``line`` in place of the last one, after a short delay and at most a few times a second."""
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if not self._at_once and (now - self._since < DELAY_S or now - self._last < INTERVAL_S):
            return
        lead = " " if self._column() > 0 and not self._shown else ""
        room = self._room() - len(lead)
        if room < MIN_ROOM and not self._shown:
            return
        keep = room - 3  # too long: the step's name and how far it is stay, the middle goes
        text = lead + (line if len(line) <= room else line[: keep // 2] + "..." + line[len(line) - keep + keep // 2:])
        back = "\b" * self._shown
        self._write(back + text.ljust(self._shown) + "\b" * max(0, self._shown - len(text)))
        self._shown, self._last = len(text), now

    def end(self) -> None:
        """Erase the line, leaving the terminal as it was."""
        if self._shown:
            self._write("\b" * self._shown + " " * self._shown + "\b" * self._shown)
        self._shown, self._since = 0, None


def for_stream(stream: TextIO) -> ProgressLine | None:
    """The line on ``stream`` (a command's stderr), or None when it is no terminal (and not forced)."""
    force = forced()
    if force is False or (force is None and not stream.isatty()):
        return None

    def write(text: str) -> None:
        stream.write(text)
        stream.flush()

    return ProgressLine(write, lambda: shutil.get_terminal_size().columns - 1, at_once=bool(force))


@contextmanager
def on_stderr() -> Iterator[None]:
    """Progress of what runs in the block, on stderr when it is a terminal."""
    line = for_stream(sys.stderr)
    with progress.listening(line) if line is not None else nullcontext():
        yield


class PytestProgress:
    """The line in a pytest run: after pytest's own text on the current line, written with capturing suspended
    (as pytest's live logging does), only when the terminal reporter writes to a terminal and not under ``-q``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.stream = sys.stdout  # what the terminal reporter writes to (it is made from sys.stdout after us)
        self._line: ProgressLine | None | bool = False

    def _active(self) -> ProgressLine | None:
        if self._line is False:
            reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
            force = forced()
            wanted = reporter is not None and force is not False and self.config.option.verbose >= 0 \
                and (force or bool(reporter.isatty))
            writer = self.config.get_terminal_writer() if wanted else None
            self._line = ProgressLine(self._write, lambda: writer.fullwidth - writer.width_of_current_line - 1,
                                      lambda: writer.width_of_current_line, bool(force)) if writer else None
        return self._line if isinstance(self._line, ProgressLine) else None

    def _write(self, text: str) -> None:
        capman: Any = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
            self.stream.write(text)
            self.stream.flush()

    def show(self, line: str) -> None:
        """Show ``line`` on pytest's terminal, if one is active."""
        active = self._active()
        if active is not None:
            active.show(line)

    def end(self) -> None:
        """Erase the line on pytest's terminal, if one is active."""
        active = self._active()
        if active is not None:
            active.end()


def listen_during(config: pytest.Config) -> None:
    """Show the long steps' progress for the rest of this pytest run (not in an xdist worker: its output is
    the controller's to show)."""
    if hasattr(config, "workerinput"):
        return
    listener = PytestProgress(config)
    progress.listen(listener)
    config.add_cleanup(lambda: progress.unlisten(listener))
