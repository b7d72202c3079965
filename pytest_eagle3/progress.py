"""Progress of the long steps (the target run, the draft's readings measured, an engine predicted, a fix
proven), told to whoever listens; nobody listens by default.

A long step names itself (:func:`step`: "reference acceptance", "predicting vLLM 0.33.0") and says how far it
is (:func:`tick`: "running the target, prompts 1-16/16: token 30/67"); each listener gets the whole line
("reference acceptance: running the target, ...") and, when the outermost step ends, :meth:`Listener.end`.
The shell listens during a pytest run or a command and decides whether a line shows and where
(:mod:`pytest_eagle3.shell.progress`: a terminal only, never under ``-q``). Steps taken in another thread
(the verdicts computed for pytest-xdist's workers while they start) are not told: one line, the main thread's.
Only the standard library here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, TypeVar

T = TypeVar("T")


class Listener(Protocol):
    """Whoever shows the progress line (the terminal while pytest or a command runs)."""
    def show(self, line: str) -> None:
        """The current line: the steps under way and the last tick."""

    def end(self) -> None:
        """The outermost step ended."""


_listeners: list[Listener] = []
_steps: list[str] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """``listener`` hears every step and tick until the block ends."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def listen(listener: Listener) -> None:
    """Start listening (:func:`unlisten` stops): for a listener that lives as long as a pytest run."""
    _listeners.append(listener)


def unlisten(listener: Listener) -> None:
    """Stop telling ``listener`` the progress."""
    if listener in _listeners:
        _listeners.remove(listener)


@contextmanager
def step(what: str) -> Iterator[None]:
    """A long step named ``what``; steps nest ("predicting vLLM 0.33.0: measuring the draft, reading 2/5")."""
    if not _told():
        yield
        return
    _steps.append(what)
    _tell("")
    try:
        yield
    finally:
        _steps.pop()
        if not _steps:
            for listener in [*_listeners]:  # a copy: a listener may stop listening meanwhile
                listener.end()


def tick(detail: str) -> None:
    """How far the current step is."""
    _tell(detail)


def counted(items: Sequence[T], what: str) -> Iterable[T]:
    """``items``, ticking "``what`` i/n" before each."""
    for index, item in enumerate(items, 1):
        tick(f"{what} {index}/{len(items)}")
        yield item


def _told() -> bool:
    """Whether this thread's steps are told (the main thread's only)."""
    return bool(_listeners) and threading.current_thread() is threading.main_thread()


def _tell(detail: str) -> None:
    if not _told():
        return
    line = ": ".join([*_steps, detail] if detail else _steps)
    for listener in [*_listeners]:  # a copy: a listener may stop listening meanwhile
        listener.show(line)
