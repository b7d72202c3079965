"""mlx-vlm's own generate loop with its EAGLE-3 drafter, run in mlx-vlm's interpreter (by path; mlx, no torch).

``python mlx_generate.py REQUEST.json``: REQUEST holds ``target``, ``draft`` (or null: the target alone),
``prompts`` (token-id lists), ``steps`` (draft tokens per round; mlx-vlm's ``draft_block_size`` is steps + 1) and
``max_tokens``. Each prompt goes through ``mlx_vlm.generate.ar.generate_step`` at temperature 0 with
``draft_kind="eagle3"``; the drafter's own counters (``speculative/common.py`` ``_record_speculative_round``:
``accept_lens`` per round, ``speculative_total_rounds`` / ``_accepted`` / ``_drafted``) are what it reports.
Prints one JSON line: ``version``, ``tokens`` per prompt, ``accept_lens``, ``rounds``, ``accepted``, ``drafted``,
and ``error`` / ``raised_at`` (the mlx-vlm file and line that raised) when the loop fails.
"""

from __future__ import annotations

import json
import sys
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


def generate(request: dict[str, Any]) -> dict[str, Any]:
    import importlib.metadata

    import mlx.core as mx
    from mlx_vlm.generate.ar import generate_step
    from mlx_vlm.utils import load_model

    result: dict[str, Any] = {"version": importlib.metadata.version("mlx-vlm"), "tokens": [], "accept_lens": [],
                              "rounds": 0, "accepted": 0, "drafted": 0, "error": None, "raised_at": ""}
    target = load_model(Path(request["target"]))
    draft = load_model(Path(request["draft"])) if request.get("draft") else None
    options: dict[str, Any] = {}
    if draft is not None:
        options = {"draft_model": draft, "draft_kind": "eagle3", "draft_block_size": int(request["steps"]) + 1}
    try:
        for prompt in request["prompts"]:
            ids = mx.array([list(prompt)])
            out = [int(t) for t, _ in generate_step(ids, target, None, None, max_tokens=int(request["max_tokens"]),
                                                     temperature=0.0, **options)]
            result["tokens"].append(out)
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        result["raised_at"] = _raised_at(exc)
    if draft is not None:
        result["accept_lens"] = [int(a) for a in getattr(draft, "accept_lens", [])]
        result["rounds"] = int(getattr(draft, "speculative_total_rounds", 0))
        result["accepted"] = round(getattr(draft, "speculative_total_accepted", 0.0))
        result["drafted"] = int(getattr(draft, "speculative_total_drafted", 0))
    return result


if __name__ == "__main__":
    print(json.dumps(generate(json.loads(Path(sys.argv[1]).read_text()))))
