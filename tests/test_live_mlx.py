"""mlx-vlm live on CPU: its own generate loop (``mlx_vlm.generate.ar.generate_step``) with its EAGLE-3 drafter, on the
demo pair, in mlx-vlm's interpreter (``pytest_eagle3/live/mlx_generate.py``).

The demo target is a Llama, and mlx-vlm's Llama language model takes the capture request as ``**kwargs`` and returns
no hidden states (mlx_vlm/models/llama/language.py LanguageModel.__call__): the plugin's mlx-vlm plan refuses the
pair (``target-no-capture``), and the real loop stops at its first speculative round. What runs is checked: the
target alone loads and generates the reference's own greedy tokens; with the drafter the loop raises where the plan
says, before a round is counted. Acceptance on mlx-vlm needs a target of a family it captures (Qwen3.5, Gemma 4,
Nemotron-H, ...). Runs where an mlx-vlm interpreter is found (``EAGLE3_MLX_VLM_PYTHON``, or ``tox -e mlxvlm0710``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.probes.run import env_variable, find_engine_python
from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="the reference target run needs transformers (pip install -e '.[test]')")

pytestmark = pytest.mark.engine
ENGINE = "mlx-vlm"
TARGET = EXAMPLES / "demo-target"
DRAFT = EXAMPLES / "demo-draft"
PROMPTS = [[3], [68], [133], [198]]
NEW_TOKENS = 32
SCRIPT = Path(__file__).resolve().parents[1] / "pytest_eagle3" / "live" / "mlx_generate.py"


@pytest.fixture(scope="module")
def mlx_python() -> str:
    python = find_engine_python(ENGINE)
    if python is None:
        pytest.skip(f"no mlx-vlm interpreter: set {env_variable(ENGINE)} or run tox -e mlxvlm0710")
    return python


def generate(python: str, tmp_path: Path, draft: Path | None) -> dict[str, Any]:
    request = tmp_path / f"request-{draft.name if draft else 'alone'}.json"
    request.write_text(json.dumps({"target": str(TARGET), "draft": str(draft) if draft else None,
                                   "prompts": PROMPTS, "steps": 3, "max_tokens": NEW_TOKENS}))
    done = subprocess.run([python, str(SCRIPT), str(request)], capture_output=True, text=True, timeout=600,
                          check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def test_the_plan_refuses_the_llama_target() -> None:
    """What the plugin says for mlx-vlm 0.7.10 on the demo pair: the target cannot feed the drafter."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.checkpoint.target import TargetModel
    from pytest_eagle3.engines.plan import REFUSED, load_plan
    from pytest_eagle3.knowledge.selection import parse_selection

    plan = load_plan(Checkpoint.open(DRAFT), parse_selection("mlx-vlm==0.7.10")[0], TargetModel.open(TARGET))
    refusals = {i.finding.code: i.finding.summary for i in plan.issues if i.kind == REFUSED}
    assert "target-no-capture" in refusals
    assert "cannot capture aux hidden states from target LlamaForCausalLM" in refusals["target-no-capture"]


def test_the_target_alone_generates_the_references_tokens(mlx_python: str, tmp_path: Path) -> None:
    """mlx-vlm loads the demo target and decodes it greedily to the same tokens as the reference's transformers run:
    the refusal below is the capture, not the model."""
    import torch

    from pytest_eagle3.reference.acceptance import greedy_continue, load_target

    alone = generate(mlx_python, tmp_path, None)
    assert alone["error"] is None, alone
    target = load_target(str(TARGET))
    with torch.no_grad():
        expected = [greedy_continue(target.model, torch.tensor([p]), NEW_TOKENS)[0, len(p):].tolist()
                    for p in PROMPTS]
    assert alone["tokens"] == expected


def test_the_drafter_loop_stops_where_the_plan_says(mlx_python: str, tmp_path: Path) -> None:
    """With the EAGLE-3 drafter, mlx-vlm's loop raises at its first round: the Llama model returned no hidden states
    to concatenate (speculative/utils.py run_speculative_rounds), and no round was counted."""
    result = generate(mlx_python, tmp_path, DRAFT)
    assert result["version"] == "0.7.10"
    assert result["error"] is not None and result["error"].startswith("TypeError: concatenate()"), result
    assert result["raised_at"].startswith("mlx_vlm/speculative/utils.py:"), result
    assert (result["rounds"], result["drafted"], result["tokens"]) == (0, 0, [])
