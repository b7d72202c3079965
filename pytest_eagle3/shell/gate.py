"""What failed the run, in its last lines: each option that turned rows into failures, with the rows it failed.

A run can fail with every test passed or skipped (``--eagle3-not-judged=fail`` on a NOT JUDGED row), or with failures
that are no rule's but an option's (``--eagle3-unknown=fail`` on a case the rules do not model,
``--eagle3-require=measured`` on an acceptance left unmeasured). The verdict table says what each row is; these lines
say why the run failed, under it, naming the option (``--eagle3-require=gpu``/``engine`` are said by
``shell.require``).
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_eagle3.verdict.assess import REQUIRE_MEASURED_OPTION, UNKNOWN_FAIL_OPTION
from pytest_eagle3.verdict.judgement import FAIL, ContractOutcome
from pytest_eagle3.verdict.report import ANY_ENGINE, NOT_JUDGED, CheckpointResult, Collector
from pytest_eagle3.verdict.report_lines import NOT_JUDGED_OPTION

#: The key of the NOT JUDGED rows ``--eagle3-not-judged=fail`` failed, in pytest's last line ("2 NOT JUDGED ...").
NOT_JUDGED_STAT = f"NOT JUDGED ({NOT_JUDGED_OPTION})"
#: What each option's line calls the rows it failed.
WHAT = {NOT_JUDGED_OPTION: "NOT JUDGED", UNKNOWN_FAIL_OPTION: "not modelled", REQUIRE_MEASURED_OPTION: "not measured"}


def gate_lines(collector: Collector, not_judged_fails: bool) -> list[str]:
    """One line per option that failed rows of a checkpoint: ``eagle3: --eagle3-not-judged=fail fails the run:
    NOT JUDGED DRAFT (vllm==0.34.0: engine.acceptance, engine.aux_layers)``."""
    lines = []
    for option in WHAT:
        for ckpt in collector.checkpoints.values():
            rows = _failed_rows(ckpt, collector.engines, option, not_judged_fails)
            if rows:
                said = "; ".join(f"{spec}: {', '.join(contracts)}" for spec, contracts in rows.items())
                lines.append(f"eagle3: {option} fails the run: {WHAT[option]} {ckpt.path} ({said})")
    return lines


def not_judged_failed(collector: Collector, not_judged_fails: bool) -> int:
    """How many rows ``--eagle3-not-judged=fail`` failed (0 when it was not given)."""
    return len(collector.not_judged()) if not_judged_fails else 0


def _failed_rows(ckpt: CheckpointResult, engines: list[str], option: str,
                 not_judged_fails: bool) -> dict[str, list[str]]:
    """Row -> the contracts ``option`` failed on it (an engine-independent one once, on the ``any`` row)."""
    specs = [ANY_ENGINE, *ckpt.engine_specs(engines)]
    if option == NOT_JUDGED_OPTION:
        if not not_judged_fails:
            return {}
        return {s: ckpt.not_judged(s) for s in specs if ckpt.engine_verdict(s) == NOT_JUDGED}
    rows = {ANY_ENGINE: _by(ckpt.ordered(ckpt.contracts), option)}
    rows.update({s: _by(ckpt.ordered(ckpt.engines.get(s, {})), option) for s in specs if s != ANY_ENGINE})
    return {s: contracts for s, contracts in rows.items() if contracts}


def _by(results: Iterable[ContractOutcome], option: str) -> list[str]:
    return [r.contract for r in results if r.status == FAIL and r.failed_by == option]
