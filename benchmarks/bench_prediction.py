"""Cost of engine.acceptance for N engine versions: one target run shared, one draft pass per distinct feed.

    python benchmarks/bench_prediction.py [--draft examples/demo-draft-sglang] [--target examples/demo-target]

For N = 1, 2, 4, 8 and every profile segment of both engines (``vllm==*,sglang==*``), prints the
wall time of the load plans and the predictions (the target run and the training reading are
made once, timed apart), the number of draft passes, and the number of distinct feeds. The goal:
cost grows with distinct feeds, not with engine versions.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.reference.engine_feed import engine_feed
from pytest_eagle3.reference.predict import PredictionSession
from pytest_eagle3.verdict import RunSettings, TargetSide, pipeline_for

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", default=str(ROOT / "examples" / "demo-draft-sglang"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target"))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ckpt, target = Checkpoint.open(args.draft), TargetModel.open(args.target)
    every = parse_selection("vllm==*,sglang==*")
    PredictionSession().target_feed(args.target)  # warm-up: imports and first-touch allocations
    print(f"draft {args.draft}; target {args.target}; {torch.get_num_threads()} thread(s); "
          f"{len(every)} engine versions in vllm==*,sglang==*")
    for count in (1, 2, 4, 8, len(every)):
        engines = every[:: max(1, len(every) // count)][:count]
        session = PredictionSession()
        started = time.perf_counter()
        session.target_feed(args.target)
        t_target = time.perf_counter() - started
        started = time.perf_counter()
        predictor = session.predictor(ckpt, args.target)
        t_training = time.perf_counter() - started
        base = predictor.simulator.passes
        started = time.perf_counter()
        plans = [pipeline_for(RunSettings()).judge(ckpt, e, TargetSide(str(target.path))) for e in engines]
        t_plans = time.perf_counter() - started
        started = time.perf_counter()
        with torch.no_grad():
            for plan in plans:
                predictor.predict(plan)
        t_predict = time.perf_counter() - started
        feeds = {engine_feed(p, predictor.simulator.draft, target.num_hidden_layers or 0).feed for p in plans} - {None}
        print(f"N={count:3d}: target run {t_target:6.2f} s (once); training readings {t_training:5.2f} s "
              f"({base} passes, once); plans {t_plans:5.2f} s; predictions {t_predict:5.2f} s with "
              f"{predictor.simulator.passes - base} new draft passes for {len(feeds)} distinct engine feeds")


if __name__ == "__main__":
    main()
