"""Engine interpreters: ``RunSettings.interpreters`` maps an engine's name to the interpreter its option named
(``--eagle3-vllm-python`` ...), and each interpreter option belongs to the one engine whose ``python_option`` it is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.option_table import OPTIONS, Resolved
from pytest_eagle3.verdict.setting_values import SettingError
from pytest_eagle3.verdict.settings import RunSettings, build


def test_each_interpreter_option_is_one_engines() -> None:
    owned = {engine.interpreter.python_option: engine.name for engine in REGISTRY if engine.interpreter.python_option}
    assert sorted(spec.dest for spec in OPTIONS if spec.interpreter) == sorted(owned)
    assert {owned[s.dest]: (s.flag, s.env, s.ini) for s in OPTIONS if s.interpreter} == {
        "vllm": ("--eagle3-vllm-python", "EAGLE3_VLLM_PYTHON", "eagle3_vllm_python"),
        "sglang": ("--eagle3-sglang-python", "EAGLE3_SGLANG_PYTHON", "eagle3_sglang_python"),
        "mlx-vlm": ("--eagle3-mlx-vlm-python", "EAGLE3_MLX_VLM_PYTHON", "eagle3_mlx_vlm_python"),
        "openvino": ("--eagle3-openvino-python", "EAGLE3_OPENVINO_PYTHON", "eagle3_openvino_python")}


def _given(**values: str) -> dict[str, Resolved]:
    return {dest: Resolved((value,), "option") for dest, value in values.items()}


def test_the_settings_hold_interpreters_by_engine_name() -> None:
    settings = build(_given(eagle3_mlx_vlm_python=sys.executable, eagle3_sglang_python=sys.executable), {})
    assert settings.interpreters == {"sglang": sys.executable, "mlx-vlm": sys.executable}
    assert settings.python_for("mlx-vlm") == sys.executable and settings.python_for("vllm") is None
    assert RunSettings().python_for("trtllm") is None
    assert "--eagle3-sglang-python" not in " ".join(settings.to_argv())  # it does not change a verdict


def test_a_missing_interpreter_is_named_by_what_the_user_typed(tmp_path: Path) -> None:
    missing = str(tmp_path / "venv" / "bin" / "python")
    with pytest.raises(SettingError) as raised:
        build(_given(eagle3_vllm_python=missing), {"eagle3_vllm_python": "EAGLE3_VLLM_PYTHON"})
    assert str(raised.value).startswith("EAGLE3_VLLM_PYTHON")
    assert f"{missing} does not exist" in str(raised.value)
