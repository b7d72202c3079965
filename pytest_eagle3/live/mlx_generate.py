"""mlx-vlm's own generate loop with its EAGLE-3 drafter, run in mlx-vlm's interpreter (by path; mlx, no torch).

``python mlx_generate.py REQUEST.json``, or ``python mlx_generate.py --target DIR [--draft DIR] --prompts FILE
[--steps 3] [--max-tokens 64] [--device cpu]`` (FILE: one JSON token-id list a line, ``--eagle3-prompts``' format). REQUEST holds ``target``, ``draft`` (or null: the target alone),
``prompts`` (token-id lists), ``steps`` (draft tokens per round; mlx-vlm's ``draft_block_size`` is steps + 1: without
it the loop drafts one token a round, ``speculative/eagle3.py`` ``_eagle3_rounds``), ``max_tokens`` and, optionally,
``prefill_step_size`` (``generate_step``'s; absent: its default, 2048) and ``device`` (``cpu``, the default, or
another: mlx's GPU, Metal or CUDA). Each prompt
goes through ``mlx_vlm.generate.ar.generate_step`` at temperature 0 with ``draft_kind="eagle3"``, one request at a
time. What it reports is the drafter's own record (``speculative/common.py`` ``_record_speculative_round``):
``accept_lens`` and ``draft_lens`` per round, which the loop clears at the start of each request (``reset``), read
after each; and the lifetime ``speculative_total_rounds`` / ``_accepted`` / ``_drafted``, read at the end.
Prints one JSON line: ``version``, ``tokens`` per prompt, ``accept_lens`` / ``draft_lens`` per prompt, ``rounds``,
``accepted``, ``drafted``, ``seconds``, ``acceptance`` (from the rounds, with the plugin's definitions: the rate at
draft position j is the share of rounds accepting at least j drafts, the mean acceptance length 1 + accepted /
rounds), and ``error`` / ``raised_at`` (the mlx-vlm file and line that raised) when the loop fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _raised_at(exc: BaseException) -> str:
    """The innermost frame inside mlx_vlm, as ``mlx_vlm/PATH:LINE``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "mlx_vlm" in f.filename]
    if not frames:
        return ""
    path = frames[-1].filename
    return f"{path[path.rindex('mlx_vlm'):]}:{frames[-1].lineno}"


def _record(draft: Any, result: dict[str, Any]) -> None:
    """The request's rounds as the drafter recorded them (accepted per round: an int at batch size 1)."""
    result["accept_lens"].append([round(a) for a in getattr(draft, "accept_lens", [])])
    result["draft_lens"].append([int(d) for d in getattr(draft, "draft_lens", [])])


def acceptance(accept_lens: list[list[int]], steps: int) -> dict[str, Any] | None:
    """Mean acceptance length and the rate per draft position over every round (None: no round)."""
    rounds = [a for request in accept_lens for a in request]
    if not rounds:
        return None
    return {"mean_acceptance_length": round(1.0 + sum(rounds) / len(rounds), 4), "rounds": len(rounds),
            "per_position": [round(sum(a >= j for a in rounds) / len(rounds), 4) for j in range(1, steps + 1)]}


def generate(request: dict[str, Any]) -> dict[str, Any]:
    """Run mlx-vlm's own generate loop for one request (in mlx-vlm's interpreter) and return the counts."""
    import importlib.metadata

    import mlx.core as mx
    from mlx_vlm.generate.ar import generate_step
    from mlx_vlm.utils import load_model

    result: dict[str, Any] = {"version": importlib.metadata.version("mlx-vlm"), "tokens": [], "accept_lens": [],
                              "draft_lens": [], "rounds": 0, "accepted": 0, "drafted": 0, "seconds": 0.0,
                              "error": None, "raised_at": ""}
    mx.set_default_device(mx.cpu if request.get("device", "cpu") == "cpu" else mx.gpu)
    target = load_model(Path(request["target"]))
    draft = load_model(Path(request["draft"])) if request.get("draft") else None
    options: dict[str, Any] = {}
    if draft is not None:
        options = {"draft_model": draft, "draft_kind": "eagle3", "draft_block_size": int(request["steps"]) + 1}
    if "prefill_step_size" in request:  # null: the whole prompt in one pass (mlx-vlm's default chunks it)
        options["prefill_step_size"] = request["prefill_step_size"]
    began = time.monotonic()
    try:
        for prompt in request["prompts"]:
            ids = mx.array([list(prompt)])
            out = [int(t) for t, _ in generate_step(ids, target, None, None, max_tokens=int(request["max_tokens"]),
                                                     temperature=0.0, **options)]
            result["tokens"].append(out)
            if draft is not None:
                _record(draft, result)
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        result["raised_at"] = _raised_at(exc)
    result["seconds"] = round(time.monotonic() - began, 2)
    if draft is not None:
        result["rounds"] = int(getattr(draft, "speculative_total_rounds", 0))
        result["accepted"] = round(getattr(draft, "speculative_total_accepted", 0.0))
        result["drafted"] = int(getattr(draft, "speculative_total_drafted", 0))
        result["acceptance"] = acceptance(result["accept_lens"], int(request["steps"]))
    return result


def request_from(argv: list[str]) -> dict[str, Any]:
    """The request: a JSON file, or the options."""
    if len(argv) == 1 and not argv[0].startswith("-"):
        loaded: dict[str, Any] = json.loads(Path(argv[0]).read_text())
        return loaded
    parser = argparse.ArgumentParser(description="mlx-vlm's generate loop with its EAGLE-3 drafter, greedy")
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", default=None, help="the EAGLE-3 draft (absent: the target alone)")
    parser.add_argument("--prompts", required=True, help="one JSON token-id list a line")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="cpu, or another for mlx's GPU (Metal or CUDA)")
    args = parser.parse_args(argv)
    prompts = [json.loads(line) for line in Path(args.prompts).read_text().splitlines() if line.strip()]
    return {"target": args.target, "draft": args.draft, "prompts": prompts, "steps": args.steps,
            "max_tokens": args.max_tokens, "device": args.device.partition(":")[0]}


if __name__ == "__main__":
    print(json.dumps(generate(request_from(sys.argv[1:]))))
