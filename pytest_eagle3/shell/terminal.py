"""Fitting the verdict table, the lines under it and failure messages to the terminal's width.

The width is pytest's own (``COLUMNS`` when set, else the terminal's) when output goes to a terminal or
``COLUMNS`` is set; output to a pipe or a file with no ``COLUMNS`` is never wrapped (a log keeps whole
lines to search). A table that does not fit takes its compact form: one heading line per checkpoint (path
and format), then one row per engine with the failing contracts wrapped in their own column. Imported only
when the plugin is active (from the summary and the failure hook).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from typing import Any

import pytest

#: Narrower than this, nothing is laid out any more: lines are wrapped at this width.
MIN_WIDTH = 40
#: Continuation lines of a wrapped line are indented this much past the line's own indentation.
HANG = "    "


def width_of(config: pytest.Config) -> int | None:
    """The width to fit, or None (not a terminal and no ``COLUMNS``: lines are left whole)."""
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    columns = os.environ.get("COLUMNS", "")
    if not columns.strip().isdigit() and not getattr(reporter, "isatty", False):
        return None
    width = int(columns) if columns.strip().isdigit() else config.get_terminal_writer().fullwidth
    return max(width, MIN_WIDTH)


def stream_width(stream: Any) -> int | None:
    """A command's width for ``stream``: ``COLUMNS`` when set, else the terminal's when it is one, else None (a pipe
    or a file keeps whole lines)."""
    import shutil

    columns = os.environ.get("COLUMNS", "")
    if columns.strip().isdigit():
        return max(int(columns), MIN_WIDTH)
    isatty = getattr(stream, "isatty", None)
    return max(shutil.get_terminal_size().columns, MIN_WIDTH) if callable(isatty) and isatty() else None


def wrap(line: str, width: int | None, whole_words: bool = False) -> list[str]:
    """One line as lines no wider than ``width``: continuations keep the line's indentation plus :data:`HANG`;
    ``whole_words``: a word longer than the width (a path, a contract name) overflows, never split."""
    if width is None or len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    return textwrap.wrap(line.strip(), width, initial_indent=indent, subsequent_indent=indent + HANG,
                         break_on_hyphens=False, break_long_words=not whole_words) or [line]


def wrap_text(text: str, width: int | None) -> str:
    """Every line of ``text`` wrapped (a failure message)."""
    return "\n".join(part for line in text.splitlines() for part in wrap(line, width))


def fit_table(rows: Sequence[tuple[str, str, str, str, str, str]], width: int | None) -> list[str]:
    """The verdict table: wide when it fits (or no width), else compact.

    ``rows[0]`` is the heading; a row whose first cell is empty continues the checkpoint above it. A name (a path,
    a contract id) is never split: the failing contracts wrap between names, in their column when the longest name
    fits it, else on lines of their own under the row."""
    wide = _columns(rows)
    if width is None or max(len(line) for line in wide) <= width:
        return wide
    compact: list[str] = []
    body = [(r[2], r[3], r[4], r[5]) for r in rows]
    cells = [max(len(r[i]) for r in body) for i in range(3)]
    lead = "  "
    failing_at = len(lead) + sum(cells) + 2 * 3
    room = width - failing_at
    longest = max(len(name) for r in body for name in r[3].split() or [""])
    for index, row in enumerate(rows):
        if row[0]:
            compact.extend(wrap(f"{row[0]}  {row[1]}", width, whole_words=True))
        head = lead + "  ".join(cell.ljust(w) for cell, w in zip(body[index][:3], cells))
        line = f"{head}  {body[index][3]}".rstrip()
        if room < longest:  # too narrow for a column: the failing contracts go under the row
            under = textwrap.wrap(body[index][3], width, initial_indent=lead + HANG, subsequent_indent=lead + HANG,
                                  break_on_hyphens=False, break_long_words=False)
            compact.extend([line] if len(line) <= width else [head.rstrip()] if body[index][3] == "-" else
                           [head.rstrip(), *under])
            continue
        parts = textwrap.wrap(body[index][3], room, break_on_hyphens=False, break_long_words=False) or [""]
        compact.append(f"{head}  {parts[0]}".rstrip())
        compact.extend(" " * failing_at + part for part in parts[1:])
    return compact


def _columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]
