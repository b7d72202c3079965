"""Cost of the target's side: transformers in-process vs a captured dump, on the demo pair.

    python benchmarks/bench_targets.py [--draft examples/demo-draft-sglang] [--target examples/demo-target]

Each source runs in a fresh child process (so its peak RSS is its own): the capture (transformers
engine) once, then the prediction of ``--engine`` from the target directory and from the dump with
only the target's config.json. Prints wall time, peak RSS, the dump's size, bytes per captured token
and per state, and the predicted mean acceptance length (equal for both sources).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(mode: str, draft: str, target: str, dump: str, engine: str) -> dict[str, float | str]:
    started = time.perf_counter()
    if mode == "capture":
        from pytest_eagle3.reference.targets.capture import capture_transformers

        capture_transformers(target, dump, None, 67)
        figure: float | str = "-"
    else:
        from pytest_eagle3.reference.predict import PredictionSession, predict_acceptance

        session = PredictionSession(hidden_states=dump if mode == "dump" else None)
        where = str(Path(target) / "config.json") if mode == "dump" else target
        figure = predict_acceptance(draft, where, engine, session=session).mean_acceptance_length or 0.0
    return {"seconds": time.perf_counter() - started, "peak_rss_mb": resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss / 1024, "predicted": figure}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", default=str(ROOT / "examples" / "demo-draft-sglang"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target"))
    parser.add_argument("--engine", default="vllm==0.32.0")
    parser.add_argument("--child", choices=("capture", "transformers", "dump"), help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.draft, args.target, args.dump, args.engine)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump"
        rows = {}
        for mode in ("capture", "transformers", "dump"):
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--draft", args.draft, "--target",
                                  args.target, "--engine", args.engine, "--dump", str(dump)],
                                 capture_output=True, text=True, check=True)
            rows[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        manifest = json.loads((dump / "manifest.json").read_text())
        tokens = sum(p["prompt_length"] + manifest["new_tokens"] for p in manifest["prompts"])
        states = len(manifest["layers"])
        size = sum(p.stat().st_size for p in dump.glob("prompt-*.safetensors"))
        head = (dump / "head.safetensors").stat().st_size
    print(f"draft {args.draft}; target {args.target}; {args.engine}")
    print(f"{'source':36} {'seconds':>8} {'peak RSS MB':>12} {'predicted':>10}")
    names = {"capture": "capture (transformers engine)", "transformers": "prediction, transformers in-process",
             "dump": "prediction, dump + config.json"}
    for mode, row in rows.items():
        figure = row["predicted"] if isinstance(row["predicted"], str) else f"{row['predicted']:.4f}"
        print(f"{names[mode]:36} {row['seconds']:8.2f} {row['peak_rss_mb']:12.1f} {figure:>10}")
    print(f"dump: {len(manifest['prompts'])} prompts, {tokens} tokens, {states} states of width "
          f"{manifest['target']['hidden_size']}: {size / 1e6:.2f} MB of states ({size / tokens:.0f} bytes per token, "
          f"{size / tokens / states:.0f} per token and state) + head {head / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
