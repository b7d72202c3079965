"""The versioned-table type: its one range semantics, its checks and its lookup."""

from __future__ import annotations

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.releases import RELEASES, EngineVersion
from pytest_eagle3.knowledge.table import Row, Table, TableError, table

#: The newest vLLM read (the default a bare "vllm" selects).
NEWEST_VLLM = RELEASES["vllm"][-1]

SRC = "vllm some/file.py some_function (read)"


def _at(t: Table[str], version: str) -> str | None:
    row = t.find("vllm", Version(version))
    return None if row is None else row.value


def test_since_inclusive_until_exclusive_and_the_next_row_ends_an_open_row() -> None:
    t = table("t", [Row("vllm", "0.8.5", "a", SRC), Row("vllm", "0.10.0", "b", SRC, until="0.12.0"),
                    Row("vllm", "0.12.0", "c", SRC)])
    assert [_at(t, v) for v in ("0.8.5", "0.9.9", "0.10.0", "0.11.9", "0.12.0", "9.0")] == ["a", "a", "b", "b", "c", "c"]
    assert t.at(EngineVersion("vllm", Version("0.10.1"))).value == "b"


def test_an_unread_patch_release_takes_the_earlier_row() -> None:
    t = table("t", [Row("vllm", "0.8.5", "a", SRC), Row("vllm", "0.11.1", "b", SRC)])
    assert _at(t, "0.11.0.post2") == "a" and _at(t, "0.11.1") == "b"


def test_a_partial_table_has_no_row_before_its_first_or_after_a_closed_last_row() -> None:
    t = table("t", [Row("vllm", "0.10.0", "a", SRC, until="0.12.0")], full=False)
    assert (_at(t, "0.9.0"), _at(t, "0.11.0"), _at(t, "0.12.0")) == (None, "a", None)
    with pytest.raises(LookupError, match="no vllm row of table t at 0.12.0"):
        t.at(EngineVersion("vllm", Version("0.12.0")))


@pytest.mark.parametrize(("rows", "full", "message"), [
    ([Row("vllm", "0.8.5", "a", SRC, until="0.11.0"), Row("vllm", "0.10.0", "b", SRC)], True,
     "the row 0.8.5..0.11.0 overlaps the row from 0.10.0"),
    ([Row("vllm", "0.8.5", "a", SRC), Row("vllm", "0.8.5", "b", SRC)], True, "two rows start at 0.8.5"),
    ([Row("vllm", "0.8.5", "a", SRC, until="0.9.0"), Row("vllm", "0.10.0", "b", SRC)], True,
     "no row covers 0.9.0 up to 0.10.0"),
    ([Row("vllm", "0.9.0", "a", SRC)], True, "starts at 0.9.0, not at the first known release 0.8.5"),
    ([Row("vllm", "0.8.5", "a", SRC, until="0.9.0")], True, "no row covers 0.9.0 up to the newest known release"),
    ([Row("vllm", "0.8.5", "a", SRC, read_to="0.10.0"), Row("vllm", "0.9.0", "b", SRC)], True,
     "says it was read to 0.10.0, outside its range"),
    ([Row("vllm", "0.8.5", "a", SRC), Row("vllm", "0.7.0", "b", SRC)], False, "outside the known range"),
])
def test_overlaps_gaps_and_stray_rows_are_refused_when_the_table_is_built(rows: list[Row[str]], full: bool,
                                                                           message: str) -> None:
    with pytest.raises(TableError, match=message.replace(".", r"\.")):
        table("t", rows, full=full)


def test_a_row_needs_a_source_and_a_forward_range() -> None:
    with pytest.raises(TableError, match="needs a source line"):
        Row("vllm", "0.8.5", "a", "")
    with pytest.raises(TableError, match="until 0.8.5 is not after since"):
        Row("vllm", "0.9.0", "a", SRC, until="0.8.5")
    with pytest.raises(TableError, match="is not a version"):
        Row("vllm", "latest", "a", SRC)


def test_label_and_repr_say_the_range_read() -> None:
    t = table("demo", [Row("vllm", "0.8.5", "a", SRC, read_to="0.9.2"), Row("vllm", "0.10.0", "b", SRC)])
    first, last = t.rows
    assert t.label(first) == f"{SRC} [vLLM 0.8.5-0.9.2]"
    assert t.label(last) == f"{SRC} [vLLM 0.10.0-{NEWEST_VLLM}]"
    assert repr(t).splitlines() == ["Table 'demo' (full coverage, 2 rows)",
                                    f"  vLLM 0.8.5-0.9.2: 'a'  <- {SRC}", f"  vLLM 0.10.0-{NEWEST_VLLM}: 'b'  <- {SRC}"]


def test_without_a_row_the_earlier_row_holds_on() -> None:
    t = table("t", [Row("vllm", "0.8.5", "a", SRC), Row("vllm", "0.10.0", "b", SRC), Row("vllm", "0.12.0", "c", SRC)])
    assert _at(t.without(t.rows[1]), "0.10.0") == "a"
