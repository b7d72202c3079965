"""mlx-vlm's own generate loop with its EAGLE-3 drafter, run in mlx-vlm's interpreter (by path; mlx, no torch).

``python mlx_generate.py REQUEST.json``: REQUEST holds ``target``, ``draft`` (or null: the target alone),
``prompts`` (token-id lists), ``steps`` (draft tokens per round; mlx-vlm's ``draft_block_size`` is steps + 1: without
it the loop drafts one token a round, ``speculative/eagle3.py`` ``_eagle3_rounds``), ``max_tokens`` and, optionally,
``prefill_step_size`` (``generate_step``'s; absent: its default, 2048). Each prompt
goes through ``mlx_vlm.generate.ar.generate_step`` at temperature 0 with ``draft_kind="eagle3"``, one request at a
time. What it reports is the drafter's own record (``speculative/common.py`` ``_record_speculative_round``):
``accept_lens`` and ``draft_lens`` per round, which the loop clears at the start of each request (``reset``), read
after each; and the lifetime ``speculative_total_rounds`` / ``_accepted`` / ``_drafted``, read at the end.
Prints one JSON line: ``version``, ``tokens`` per prompt, ``accept_lens`` / ``draft_lens`` per prompt, ``rounds``,
``accepted``, ``drafted``, ``seconds``, and ``error`` / ``raised_at`` (the mlx-vlm file and line that raised) when
the loop fails.
"""

from __future__ import annotations

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


def generate(request: dict[str, Any]) -> dict[str, Any]:
    import importlib.metadata

    import mlx.core as mx
    from mlx_vlm.generate.ar import generate_step
    from mlx_vlm.utils import load_model

    result: dict[str, Any] = {"version": importlib.metadata.version("mlx-vlm"), "tokens": [], "accept_lens": [],
                              "draft_lens": [], "rounds": 0, "accepted": 0, "drafted": 0, "seconds": 0.0,
                              "error": None, "raised_at": ""}
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
    return result


if __name__ == "__main__":
    print(json.dumps(generate(json.loads(Path(sys.argv[1]).read_text()))))
