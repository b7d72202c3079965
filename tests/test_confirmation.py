"""The table of confirmation (knowledge/confirmation.py): one row per engine, every source it names exists, and
docs/engines.md holds the rendered copy (regenerate: python -m pytest_eagle3 matrix --readme docs/engines.md)."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_eagle3.knowledge.confirmation import NO, ROWS
from pytest_eagle3.knowledge.releases import ENGINES
from pytest_eagle3.verdict.confirmation import END, START, confirmation_markdown, confirmation_text
from pytest_eagle3.verdict.matrix import readme_block

ROOT = Path(__file__).resolve().parents[1]


def test_one_row_per_engine() -> None:
    assert sorted(r.engine for r in ROWS) == sorted(ENGINES)


def test_every_named_file_and_tox_env_exists() -> None:
    tox = (ROOT / "tox.ini").read_text(encoding="utf-8")
    envs = set(re.findall(r"^\[testenv:([^\]]+)\]", tox, re.MULTILINE))
    envs = {name for group in envs for name in re.sub(r"[{}]", "", group).split(",")}
    for row in ROWS:
        for path in re.findall(r"(?:tests|docs|scripts)/[\w./-]+\.(?:py|md|sh)", row.source + row.live_gpu):
            assert (ROOT / path).is_file(), (row.engine, path)
        for names in re.findall(r"tox -e ([\w,]+)", row.source):
            assert set(names.split(",")) <= envs, (row.engine, names)


def test_a_missing_kind_says_why() -> None:
    for row in ROWS:
        for cell in (row.loader, row.live_cpu, row.live_gpu):
            assert cell != NO and (not cell.startswith(NO) or cell.startswith(f"{NO}: ")), (row.engine, cell)


def test_docs_hold_the_rendered_table() -> None:
    text = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
    assert readme_block(text, START, END) == confirmation_markdown()
    assert max(len(line) for line in confirmation_text().splitlines()) <= 80
