"""``python -m pytest_eagle3.scanners.add_release``: folding one release into the generated tables incrementally
gives what the scanners' full run over every release gives (the scanners' own ``scan_engine`` / ``spans`` and
``render``, fed the same per-release scan results)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from pytest_eagle3.scanners import add_release, capture, fields

#: Per release: (field, role, place) as ``fields.scan`` gives them.
FIELD_SCANS = {
    "0.90.0": [("draft_vocab_size", "draft", "a.py:f"), ("dtype", "target", "b.py:g"), ("gone", "draft", "c.py:h")],
    "0.91.0": [("draft_vocab_size", "draft", "a.py:f"), ("draft_vocab_size", "draft", "d.py:k"),
               ("new_field", "draft", "e.py:m"), ("dtype", "target", "b.py:g")],
    "0.92.0": [("gone", "draft", "c.py:h"), ("new_field", "draft", "e.py:m")],
}
#: Per release: (architectures that capture, registered architectures).
CAPTURE_SCANS = {
    "0.90.0": ({"LlamaForCausalLM"}, {"LlamaForCausalLM", "GPT2LMHeadModel", "OldModel"}),
    "0.91.0": ({"LlamaForCausalLM", "Qwen3ForCausalLM"}, {"LlamaForCausalLM", "GPT2LMHeadModel", "Qwen3ForCausalLM"}),
    "0.92.0": ({"Qwen3ForCausalLM"}, {"LlamaForCausalLM", "Qwen3ForCausalLM"}),
}


def _roots(tmp_path: Path, releases: list[str]) -> list[Path]:
    return [tmp_path / f"vllm-{r}" for r in releases]


@pytest.mark.parametrize("upto", [1, 2])
def test_fields_folded_one_release_at_a_time_equal_the_full_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 upto: int) -> None:
    monkeypatch.setattr(fields, "scan", lambda engine, root, version=None: FIELD_SCANS[root.name.split("-")[1]])
    releases = list(FIELD_SCANS)
    full = fields.scan_engine("vllm", _roots(tmp_path, releases))
    data: dict[str, dict[str, object]] = fields.scan_engine("vllm", _roots(tmp_path, releases[:upto]))  # type: ignore[assignment]
    changes: list[str] = []
    for release in releases[upto:]:
        data, said = add_release.fold_fields("vllm", release, FIELD_SCANS[release], data)
        changes += said
    assert fields.dumps(data) == fields.dumps(full)  # type: ignore[arg-type]
    if upto == 1:
        assert "fields: new_field (draft) first read in 0.91.0" in changes
        assert "fields: gone (draft) no longer read in 0.91.0 (last 0.90.0)" in changes
        assert "fields: gone (draft) read again from 0.92.0" in changes


def test_capture_folded_equals_the_full_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def scanned(engine: str, root: Path) -> types.SimpleNamespace:
        capturing, registered = CAPTURE_SCANS[root.name.split("-")[1]]
        return types.SimpleNamespace(capturing=dict.fromkeys(capturing), registered=registered, platforms={})

    monkeypatch.setattr(capture, "scan_release", scanned)
    releases = list(CAPTURE_SCANS)
    empty: tuple[list[str], capture.Runs, set[str], capture.Runs, capture.Notes] = (["0.1.0"], {}, set(), {}, {})
    others = {"sglang": empty, "tokenspeed": empty}
    full = capture.render({"vllm": capture.spans("vllm", _roots(tmp_path, releases)), **others}, {})
    first = capture.render({"vllm": capture.spans("vllm", _roots(tmp_path, releases[:1])), **others}, {})
    table = types.ModuleType("capture_table")
    exec(compile(first, "capture_table.py", "exec"), table.__dict__)
    changes: list[str] = []
    for release in releases[1:]:
        text, said = add_release.fold_capture("vllm", release, *CAPTURE_SCANS[release], table=table)
        changes += said
        table = types.ModuleType("capture_table")
        exec(compile(text, "capture_table.py", "exec"), table.__dict__)
    assert text == full
    assert "capture: Qwen3ForCausalLM captures from 0.91.0" in changes
    assert "capture: LlamaForCausalLM no longer captures in 0.92.0 (last 0.91.0)" in changes
