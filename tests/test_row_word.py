"""A row's word is made once, from its contracts' outcomes (``verdict.rows.word_of``): what the table, the JSON, the
summary, ``plan`` and ``sweep`` show for the row."""

from __future__ import annotations

import pytest

from pytest_eagle3.verdict.judgement import NONE_SELECTED, ContractOutcome, Status
from pytest_eagle3.verdict.report import Collector, ContractReport, shown
from pytest_eagle3.verdict.rows import word_of


def _row(**statuses: Status) -> tuple[ContractOutcome, ...]:
    return tuple(ContractOutcome(cid.replace("_", ".", 1), status, f"why {cid}") for cid, status in statuses.items())


@pytest.mark.parametrize(("checkpoint_row", "engine_row", "word"), [
    (_row(checkpoint_readable="pass"), _row(engine_keys="pass", engine_aux_layers="pass"), "PASS"),
    (_row(checkpoint_readable="fail"), _row(engine_keys="pass"), "FAIL"),
    (_row(reference_acceptance="unmeasured"), _row(engine_keys="pass", engine_acceptance="unmeasured"),
     "PASS (static)"),
    (_row(checkpoint_readable="pass"), _row(engine_keys="not run"), "PASS (partial)"),
    (_row(checkpoint_readable="pass"), _row(engine_keys="pass", engine_aux_layers="not modelled"), "NOT JUDGED"),
    # a release nobody read: every contract of the row not modelled is NOT JUDGED, never NOT RUN
    (_row(checkpoint_readable="not run"), _row(engine_aux_layers="not modelled", engine_acceptance="not modelled"),
     "NOT JUDGED"),
    (_row(checkpoint_readable="not run"), _row(engine_keys="not run"), "NOT RUN"),
])
def test_the_rows_word_follows_from_its_outcomes(checkpoint_row: tuple[ContractOutcome, ...],
                                                engine_row: tuple[ContractOutcome, ...], word: str) -> None:
    assert shown(word_of(checkpoint_row, engine_row).word) == word


def test_the_reasons_name_each_contract_that_did_not_run_and_the_report_reads_them() -> None:
    row = word_of(_row(reference_acceptance="unmeasured"), _row(engine_aux_layers="not run", engine_fc="fail"))
    assert (row.failing, row.not_judged, row.unmeasured) == (("engine.fc",), ("engine.aux_layers",),
                                                              ("reference.acceptance",))
    assert row.not_run == (("reference.acceptance", "why reference_acceptance"), ("engine.aux_layers",
                                                                                  "why engine_aux_layers"))
    assert word_of(()).not_run == (("*", NONE_SELECTED),)
    collector = Collector(engines=["vllm==0.34.0"])
    for outcome in _row(engine_aux_layers="not run", engine_fc="fail"):
        collector.add(ContractReport("draft", "vllm==0.34.0", ("", 0), "", outcome))
    entry = collector.to_json()["checkpoints"][0]["engines"][1]
    assert (entry["verdict"], entry["failing"], entry["not_judged"]) == ("fail", ["engine.fc"], ["engine.aux_layers"])
    assert [c["outcome"] for c in entry["contracts"]] == ["skipped", "failed"]
