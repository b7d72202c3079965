"""Cost of the reference-acceptance measurement against one target forward over the same tokens.

    python benchmarks/bench_reference.py [--draft examples/demo-draft] [--target examples/demo-target]

Prints the median wall time (of ``--rounds``) of: one plain target forward over the finished
sequences; the measurement (one forward capturing every layer's state, k batched draft steps,
the engine walk); the greedy continuation (token by token, reported apart); and the ratio
measurement / forward next to the goal 1.2 x (1 + k x draft FLOPs / target FLOPs), FLOPs per token
counted as the weight-matrix sizes each token goes through (embedding lookups excluded).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.reference.acceptance import (
    Reading,
    capture_states,
    greedy_continue,
    infer,
    load_prompts,
    load_target,
    measure,
    run_target,
)
from pytest_eagle3.reference.defaults import DEFAULT_STEPS
from pytest_eagle3.reference.draft import ReferenceDraft

ROOT = Path(__file__).resolve().parent.parent


def _median(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _matrix_params(tensors: dict[str, torch.Tensor] | torch.nn.Module, skip: tuple[str, ...]) -> int:
    items = tensors.named_parameters() if isinstance(tensors, torch.nn.Module) else tensors.items()
    return sum(t.numel() for name, t in items if t.dim() == 2 and not any(s in name for s in skip))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", default=str(ROOT / "examples" / "demo-draft"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    steps = DEFAULT_STEPS
    ckpt = Checkpoint.open(args.draft)
    draft = ReferenceDraft.from_checkpoint(ckpt)
    target = load_target(args.target)
    prompts, source = load_prompts(target, None)
    runs = run_target(target, prompts)
    sequences = torch.cat([r.sequences for r in runs])
    ids = ckpt.config.aux.ids or (2, target.layers // 2, target.layers - 3)
    embed = draft.weights.get("embed_tokens.weight", target.embed)
    reading = Reading(tuple(ids), 0 if ckpt.config.aux.convention == "input-of" else 1)

    def forward() -> None:
        with torch.no_grad():
            target.model(input_ids=sequences, use_cache=False)

    def measurement() -> None:
        with torch.no_grad():
            for run in runs:
                capture_states(target.model, run.sequences)
        measure(draft, embed, runs, reading, steps)

    def inference() -> None:
        with torch.no_grad():
            for run in runs:
                capture_states(target.model, run.sequences)
        infer(draft, embed, runs, tuple(ids), ckpt.config.aux.convention, target.layers, target.vocab_size, steps)

    def continuation() -> None:
        with torch.no_grad():
            for run in runs:
                greedy_continue(target.model, run.sequences[:, : run.prompt_length], run.sequences.shape[1]
                                - run.prompt_length)

    measurement()  # warm-up
    t_forward = _median(forward, args.rounds)
    t_measure = _median(measurement, args.rounds)
    t_infer = _median(inference, args.rounds)
    t_continue = _median(continuation, args.rounds)
    target_flops = _matrix_params(target.model, ("embed_tokens",))
    draft_flops = _matrix_params(draft.weights, ("embed_tokens",))
    goal = 1.2 * (1 + steps * draft_flops / target_flops)
    print(f"prompts: {source}; {sequences.shape[0]} sequences x {sequences.shape[1]} tokens; k = {steps}; "
          f"{torch.get_num_threads()} thread(s)")
    print(f"weight-matrix parameters per token: target {target_flops:,}, draft {draft_flops:,} "
          f"(ratio {draft_flops / target_flops:.3f})")
    print(f"one target forward           {t_forward * 1000:8.1f} ms")
    print(f"measurement (states + walk)  {t_measure * 1000:8.1f} ms")
    print(f"with every reading tried     {t_infer * 1000:8.1f} ms  (convention inference: "
          f"{t_infer / t_forward:.2f} x)")
    print(f"greedy continuation          {t_continue * 1000:8.1f} ms  (token by token, not in the ratio)")
    print(f"cost ratio {t_measure / t_forward:.2f} x one target forward; goal <= {goal:.2f}")


if __name__ == "__main__":
    main()
