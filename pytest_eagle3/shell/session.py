"""The per-run hooks of a contract run (registered by the plugin only when a checkpoint is configured): the
header, the collection line, the JSON report, the verdict table and the lines under it, the markdown summary, and,
under pytest-xdist, what the controller says for its workers (the collection, the deselected count, the one target
pass every worker reads)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_eagle3.option_table import OPTIONS
from pytest_eagle3.shell.contract import contracts_dir
from pytest_eagle3.shell.options import COLLECTED_KEY, WITH_TESTPATHS_INI, is_xdist_worker

if TYPE_CHECKING:
    from pytest_eagle3.verdict.report import Collector
    from pytest_eagle3.verdict.settings import RunSettings

class Eagle3Session:
    """Per-run hooks, registered only when a checkpoint is configured."""

    def __init__(self, config: pytest.Config, options: RunSettings, collector: Collector) -> None:
        self.config = config
        self.collector = collector
        self.report_path = options.report
        self.options = options
        #: Why the JSON report could not be written at the end (the table is printed all the same).
        self.write_error: str | None = None
        #: What the markdown summary step said (``shell.summary``), for the terminal.
        self.summary_lines: list[str] = []
        #: Tests deselected here (-m, -k, and the plugin's own: probe.load without an interpreter, the live ones).
        self.deselected = 0
        self._collection_said = self._deselected_said = False
        #: The dump of the target's side written for pytest-xdist's workers ("" when none is, None until asked).
        self._shared: str | None = None
        #: The file of the run's verdicts written for pytest-xdist's workers ("" when none is).
        self._verdicts = ""
        #: ``-n N`` given on a run of the contracts alone, which run in this process (``plugin``): N, else 0.
        self.workers_unused = 0
        #: Engine interpreters' releases learned at the start of this run (one line each).
        self.learned: list[str] = []

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The header lines: each setting given and where it came from."""
        lines = []
        for spec in OPTIONS:
            resolved = self.options.sources.get(spec.dest)
            if resolved is not None:
                name = spec.flag.removeprefix("--eagle3-")
                lines.append(f"eagle3: {name}={', '.join(resolved.values)} (from {resolved.source})")
        lines.extend(f"eagle3: {line}" for line in self.learned)
        lines.extend(f"eagle3: WARNING {e.unread}" for e in self.options.engines if e.unread)
        if self.workers_unused:
            lines.append(f"eagle3: -n {self.workers_unused}: the contracts alone run in this process (each verdict is "
                         "computed once; workers would only add their start-up)")
        lines += [f"eagle3: {line}" for line in self._name_targets()]
        return [part for line in lines for part in self._fitted(line)]

    def _name_targets(self) -> list[str]:
        """With no target given, the target each draft's config names (read once, on the controller)."""
        if self.options.target is not None or self.options.hidden_states is not None:
            return []
        from pytest_eagle3.shell.fixtures import run_state
        from pytest_eagle3.shell.verdicts import pipeline

        for path in self.options.checkpoints:
            named = pipeline(self.config).named_target(run_state(self.config).checkpoint(path))
            self.collector.name_target(path, named)
        return self.collector.named_lines()

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        """What was collected: the contracts for N checkpoints, and the user's own tests (or why not)."""
        contracts = os.path.realpath(contracts_dir())
        own = [i for i in items if not os.path.realpath(str(i.path)).startswith(contracts + os.sep)]
        return self._fitted(self._collected_line(len(items) - len(own), len(own)))

    def _fitted(self, line: str) -> list[str]:
        """A line of ours wrapped to the terminal's width (whole in a log)."""
        from pytest_eagle3.shell.terminal import width_of, wrap

        return wrap(line, width_of(self.config))

    def _collected_line(self, contracts: int, own: int) -> str:
        count = len(self.options.checkpoints)
        line = f"eagle3: contracts for {count} checkpoint{'s' if count != 1 else ''} ({contracts} tests)"
        kept = self.config.stash.get(COLLECTED_KEY, "contracts")
        if own or kept in ("paths", "testpaths"):
            line += f" + {own} of your tests"
        if kept.startswith("left out: "):
            line += (f"; your testpaths ({kept.removeprefix('left out: ')}) not collected: name them on the command "
                     f"line, or set {WITH_TESTPATHS_INI} = true in the ini file")
        return line

    # -- under pytest-xdist: the controller says what the workers collected and deselected ---------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The collection line, once, on the controller (the workers collect; the controller prints)."""
        if self._collection_said:
            return
        self._collection_said = True
        contracts = [i for i in ids if os.path.basename(i.split("::")[0]).startswith("test_eagle3_")]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for line in self._fitted(self._collected_line(len(contracts), len(ids) - len(contracts))):
                reporter.write_line(line)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Count the deselected tests (the line after "collected" says them)."""
        self.deselected += len(items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Each worker gets the run's verdicts, computed here once before any worker starts, so ``-n 2`` judges
        once, as a serial run does; and, for what they do not hold, the target's one pass (a dump of its side)."""
        from pytest_eagle3.shell.shared_pass import SHARED_PASS_INPUT, SHARED_VERDICTS_INPUT

        verdicts, dump = self._shared_work()
        if verdicts is not None:
            node.workerinput[SHARED_VERDICTS_INPUT] = verdicts
        if dump is not None:
            node.workerinput[SHARED_PASS_INPUT] = dump

    def _shared_work(self) -> tuple[str | None, str | None]:
        """The file of the run's verdicts and the target pass's dump (each None when there is none)."""
        if self._shared is None:
            from pytest_eagle3.shell.shared_pass import shared_pass, shared_verdicts
            from pytest_eagle3.shell.verdicts import pipeline

            self._verdicts = shared_verdicts(self.options, self.config, pipeline(self.config)) or ""
            # the verdicts hold every contract's answer: the target's pass is dumped only where they could not be
            self._shared = "" if self._verdicts else shared_pass(self.options, self.config) or ""
        return self._verdicts or None, self._shared or None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker's deselected count reaches the controller's summary line (every worker collects the same)."""
        count = getattr(node, "workeroutput", {}).get(DESELECTED_OUTPUT, 0)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if count and not self._deselected_said and reporter is not None:
            self._deselected_said = True
            reporter.stats.setdefault("deselected", []).extend(DeselectedOnWorker() for _ in range(count))

    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
        """A contract module outside the rootdir keeps the id it is printed with (``test_eagle3_engines.py::...``)
        when a node id of it is pasted back: pytest would name the module by its path relative to itself (an
        empty file part) when the module is the path given."""
        if str(module_path.parent) != contracts_dir() or module_path.is_relative_to(self.config.rootpath):
            return None
        module: pytest.Module = pytest.Module.from_parent(parent, path=module_path, nodeid=module_path.name)
        return module

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Under pytest-xdist, on the controller: a contract's record, shipped as data with a worker's report (a run
        in one process hands the record over directly, ``plugin.pytest_runtest_makereport``)."""
        data = getattr(report, "eagle3", None)
        if isinstance(data, dict) and not is_xdist_worker(self.config):
            from pytest_eagle3.verdict.report import ContractReport

            self.collector.add(ContractReport.from_json(data))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Settle the run's exit status (``--eagle3-not-judged=fail``) and write the JSON report and summary."""
        if is_xdist_worker(self.config):
            self.config.workeroutput[DESELECTED_OUTPUT] = self.deselected  # type: ignore[attr-defined]
            return
        self.collector.fill_formats(_format_label)
        self._name_targets()
        if self.options.not_judged_fails and session.exitstatus == pytest.ExitCode.OK and self.collector.not_judged():
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # --eagle3-not-judged=fail: a CI gate
        if self.report_path:
            try:
                self.collector.write(Path(self.report_path))
            except OSError as exc:  # checked writable at start; lost since (disk full, folder removed)
                self.write_error = exc.strerror or str(exc)
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
        if self.options.summary or step_summary:
            from pytest_eagle3.shell.summary import publish, render

            text = render(self.collector, self.report_path)
            self.summary_lines = publish(text, self.options.summary, step_summary or None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the EAGLE-3 verdict table and the lines under it."""
        if is_xdist_worker(self.config) or self.config.option.collectonly:
            return
        from pytest_eagle3.shell.terminal import fit_table, width_of, wrap

        self.collector.fill_formats(_format_label)
        width = width_of(self.config)
        terminalreporter.write_sep("=", "EAGLE-3 verdict")
        from pytest_eagle3.verdict.report_lines import (
            cause_lines,
            partial_lines,
            probe_lines,
            reference_lines,
            table_rows,
        )

        for line in fit_table(table_rows(self.collector), width):
            terminalreporter.write_line(line)
        from pytest_eagle3.shell.repair_hint import repair_lines
        from pytest_eagle3.shell.verdicts import pipeline

        under = [*self.collector.named_lines(), *cause_lines(self.collector),
                 *partial_lines(self.collector, self.options.not_judged_fails),
                 *reference_lines(self.collector),
                 *probe_lines(self.collector),
                 *repair_lines(self.collector, pipeline(self.config), self.options.aux_convention,
                              self.options.hidden_states)]
        for line in (part for text in under for part in wrap(text, width)):
            terminalreporter.write_line(line)
        for line in (part for e in self.options.engines if e.unread for part in wrap(f"WARNING {e.unread}",
                                                                                              width)):
            terminalreporter.write_line(line, yellow=True)
        if self.report_path and self.write_error:
            for line in wrap(f"JSON report NOT written to {self.report_path}: {self.write_error}", width):
                terminalreporter.write_line(line, red=True)
        elif self.report_path:
            for line in wrap(f"JSON report: {self.report_path}", width):
                terminalreporter.write_line(line)
        for line in self.summary_lines:
            terminalreporter.write_line(line, red=" NOT " in line)
        self._say_gate(terminalreporter, width)

    def _say_gate(self, terminalreporter: Any, width: int | None) -> None:
        """The run's last lines before pytest's own: each option that failed rows, and the rows (``shell.gate``);
        pytest's count line then counts the NOT JUDGED rows ``--eagle3-not-judged=fail`` failed."""
        from pytest_eagle3.shell.gate import NOT_JUDGED_STAT, gate_lines, not_judged_failed
        from pytest_eagle3.shell.terminal import wrap

        for line in (part for text in gate_lines(self.collector, self.options.not_judged_fails)
                     for part in wrap(text, width)):
            terminalreporter.write_line(line, red=True)
        count = not_judged_failed(self.collector, self.options.not_judged_fails)
        if count:
            terminalreporter.stats.setdefault(NOT_JUDGED_STAT, []).extend(NotJudgedRow() for _ in range(count))


#: The worker output key carrying a worker's deselected count to the controller.
DESELECTED_OUTPUT = "eagle3_deselected"


class DeselectedOnWorker:
    """A test a worker deselected, counted in the controller's summary line as pytest counts its own."""


class NotJudgedRow:
    """A NOT JUDGED row ``--eagle3-not-judged=fail`` failed, counted in pytest's last line."""


def _format_label(path: str) -> str:
    """The producer format of a checkpoint no contract opened (``-m`` selected none): read all the same."""
    from pytest_eagle3.checkpoint import Checkpoint

    ckpt = Checkpoint.open(path)
    return ckpt.format.label if ckpt.tensors else "unreadable"

