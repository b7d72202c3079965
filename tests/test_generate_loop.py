"""The live path of an engine with no server (mlx-vlm's own generate loop, ``live/generate_loop.py``), where mlx-vlm is
absent: what a user without it is told, and what a loop that cannot run reports. With mlx-vlm (``tox -e
mlxvlm0710``), ``tests/test_live_mlx.py`` runs the loop for real against the prediction."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from tests.reference_cases import EXAMPLES

DRAFT = EXAMPLES / "qwen35-draft"
TARGET = EXAMPLES / "qwen35-target"


def test_the_drafters_record_gives_the_references_definitions() -> None:
    """Rate at position j: the share of rounds accepting at least j drafts; mean: 1 + accepted / rounds."""
    from pytest_eagle3.live.generate_loop import rounds_acceptance

    got = rounds_acceptance([[3, 0, 1], [2], []], 3, "0.7.10")
    assert got is not None
    assert got.per_position == (3 / 4, 2 / 4, 1 / 4) and got.mean_acceptance_length == 1 + 6 / 4
    assert (got.drafts, got.source) == (4, "mlx-vlm drafter accept_lens (0.7.10)")
    assert rounds_acceptance([[], []], 3, "0.7.10") is None


@pytest.mark.skipif(importlib.util.find_spec("mlx_vlm") is not None, reason="mlx-vlm is importable here")
def test_a_loop_that_cannot_run_fails_with_its_own_words(tmp_path: Path) -> None:
    """This interpreter has no mlx: the run fails naming the exit, the command and the interpreter's last lines,
    and leaves its log."""
    from pytest_eagle3.live.errors import RequestFailed
    from pytest_eagle3.live.generate_loop import GenerateLoop
    from pytest_eagle3.live.interpreter import EngineInstall

    install = EngineInstall("mlx-vlm", sys.executable, "mlx-vlm", Version("0.7.10"), None)
    loop = GenerateLoop(install, str(TARGET), str(DRAFT), tmp_path)
    with pytest.raises(RequestFailed) as raised:
        loop.run([[5], [72]], 8)
    text = str(raised.value)
    assert text.startswith("a request to the server failed: the loop exited 1 without a result"), text
    assert "mlx_generate.py --target" in text and "ModuleNotFoundError: No module named 'mlx'" in text, text
    assert loop.log_path.is_file() and "ModuleNotFoundError" in loop.log_text()


def test_a_missing_draft_is_refused_before_any_run(tmp_path: Path) -> None:
    from pytest_eagle3.live.errors import DraftPathMissing
    from pytest_eagle3.live.generate_loop import GenerateLoop
    from pytest_eagle3.live.interpreter import EngineInstall

    install = EngineInstall("mlx-vlm", sys.executable, "mlx-vlm", Version("0.7.10"), None)
    with pytest.raises(DraftPathMissing, match="has no config.json"):
        GenerateLoop(install, str(TARGET), str(tmp_path / "nowhere"), tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("mlx_vlm") is not None, reason="mlx-vlm is importable here")
def test_live_mlx_vlm_without_mlx_vlm_skips_naming_the_option(run_contracts, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest -m engine --eagle3-engine=mlx-vlm`` where mlx-vlm is not installed: the live contracts skip, naming
    the option that gives its interpreter; nothing runs and nothing fails."""
    monkeypatch.delenv("EAGLE3_MLX_VLM_PYTHON", raising=False)
    run = run_contracts([DRAFT], "-m", "engine", "-rs", "--eagle3-engine=mlx-vlm", target=TARGET)
    out = run.result.stdout.str()
    run.result.assert_outcomes(skipped=3)
    assert "mlx-vlm is not installed for" in out and "pass --eagle3-mlx-vlm-python=PYTHON" in out, out
