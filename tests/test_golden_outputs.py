"""What users see stays put unless a change means to alter it: ``matrix``, ``plan --json``, ``check`` and the main
job print exactly what ``tests/data/golden/`` recorded (timings and paths normalised). A restructuring passes
untouched; a change to the knowledge or the messages records them anew with
``python scripts/golden_outputs.py --write``, and the diff of the recorded files shows what users will see change."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the main job measures with the target (pip install -e '.[test]')")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "golden_outputs.py"
_spec = importlib.util.spec_from_file_location("golden_outputs", SCRIPT)
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(golden.COMMANDS))
def test_the_output_is_the_recorded_one(name: str) -> None:
    diff = golden.differences(name)
    assert diff == [], ("the output changed; if that is meant, record it with python scripts/golden_outputs.py "
                        f"--write {name}\n" + "".join(diff[:80]))


def test_normalising_leaves_only_what_a_change_can_alter() -> None:
    """Timings on pytest's lines and the interpreter's path go; a verdict word or a figure stays."""
    text = "=== 3 failed, 54 passed in 4.62s (0:00:04) ===\nvllm==0.34.0  FAIL  2.68 ± 0.14 at k=3 (sim) 1.5s\n"
    assert golden.normalised(text) == "== 3 failed, 54 passed in T ==\nvllm==0.34.0  FAIL  2.68 ± 0.14 at k=3 (sim) 1.5s"
