"""Tests that need a GPU or a live engine and could not run: said in the terminal summary, and a failure of the run
under ``--eagle3-require=gpu`` (or ``engine``).

A ``-m gpu`` job that lands on a CPU runner skips every test (each names what is missing); pytest exits 0 and the
reasons show only with ``-rs``. :class:`MarkedSkips` counts the skipped tests per marker from their reports (under
pytest-xdist too: the reports reach the controller with their keywords), prints one line per marker with the
reasons, and sets the exit status when the marker is required. Standard library and pytest only: it is registered in
every run.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_eagle3.shell.options import is_xdist_worker

#: The markers whose skipped tests the summary counts, and what ``--eagle3-require`` names them.
MARKED = ("gpu", "engine")
#: Reasons shown per marker (the rest are counted).
SHOWN_REASONS = 3


class MarkedSkips:
    """Per marker in :data:`MARKED`: the skipped tests' reasons; ``required``: the markers that fail the run."""

    def __init__(self, required: tuple[str, ...]) -> None:
        self.required = tuple(m for m in required if m in MARKED)
        self.skipped: dict[str, dict[str, int]] = {m: {} for m in MARKED}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count a skipped test of each marker watched, by its reason."""
        if not report.skipped or report.when not in ("setup", "call"):
            return
        for marker in MARKED:
            if marker in report.keywords:
                reason = _reason(report)
                self.skipped[marker][reason] = self.skipped[marker].get(reason, 0) + 1

    def missing(self, marker: str) -> int:
        """How many tests marked ``marker`` skipped."""
        return sum(self.skipped[marker].values())

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fail the run when a test marked with a required marker skipped."""
        if any(self.missing(m) for m in self.required) and session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def lines(self) -> list[tuple[str, bool]]:
        """The summary's lines, each with whether it reports a failure of the run."""
        out: list[tuple[str, bool]] = []
        for marker in MARKED:
            count = self.missing(marker)
            if not count:
                continue
            fails = marker in self.required
            then = (f"--eagle3-require={marker} fails the run" if fails
                    else f"--eagle3-require={marker} makes this fail the run")
            reasons = sorted(self.skipped[marker].items(), key=lambda item: -item[1])
            # a count per reason only where there are several: one reason's count is the line's own
            said = "; ".join(f"{reason} ({n})" if n > 1 and len(reasons) > 1 else reason
                             for reason, n in reasons[:SHOWN_REASONS])
            more = f"; +{len(reasons) - SHOWN_REASONS} more reasons" if len(reasons) > SHOWN_REASONS else ""
            tests = "test" if count == 1 else "tests"
            out.append((f"eagle3: {count} {tests} marked {marker} did not run ({then}): {said}{more}", fails))
        return out

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        """Say how many marked tests did not run, and why."""
        if is_xdist_worker(config):
            return
        from pytest_eagle3.shell.terminal import width_of, wrap

        for text, fails in self.lines():
            for line in wrap(text, width_of(config)):
                terminalreporter.write_line(line, red=fails, yellow=not fails)


def required_markers(config: pytest.Config) -> tuple[str, ...]:
    """The markers ``--eagle3-require`` (option, env, ini) names; a word outside its choices is a usage error."""
    from pytest_eagle3.option_table import REQUIRE_CHOICES, listed_words
    from pytest_eagle3.shell.options import resolve

    resolved = resolve(config, "eagle3_require")
    try:
        words = listed_words(resolved.value, REQUIRE_CHOICES)
    except ValueError as exc:
        where = "--eagle3-require" if resolved.source == "option" else resolved.source.split()[-1]
        raise pytest.UsageError(f"{where}: {exc}") from None
    return tuple(w for w in words if w in MARKED)


def _reason(report: pytest.TestReport) -> str:
    """A skip's reason, without pytest's ``Skipped: `` prefix."""
    longrepr = report.longrepr
    text = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
    return " ".join(text.removeprefix("Skipped: ").split())
