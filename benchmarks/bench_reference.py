"""Cost of the reference-acceptance measurement against one target forward over the same tokens.

    python benchmarks/bench_reference.py [--draft examples/demo-draft] [--target examples/demo-target]

Prints the median wall time (of ``--rounds``) of: one plain target forward over the finished
sequences; the measurement (one forward capturing every layer's state, k batched draft steps,
the engine walk); the greedy continuation (token by token, reported apart); and the ratio
measurement / forward next to the goal 1.2 x (1 + k x draft FLOPs / target FLOPs), FLOPs per token
counted as the weight-matrix sizes each token goes through (embedding lookups excluded).

    python benchmarks/bench_reference.py --main-job [--rounds 3]

The main job on the demo pair (``pytest -p no:cacheprovider --eagle3-ckpt=examples/demo-draft
--eagle3-ckpt=examples/demo-draft-sglang --eagle3-target=examples/demo-target``), each round a fresh
process: the median wall time, and the target's forward passes (every call of its transformers model)
next to those of ``python -m pytest_eagle3 capture`` on the same target and prompts (one target pass:
the reference, the predictions and the fix proofs share it, so the two are equal).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
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


MAIN_JOB = ("-p", "no:cacheprovider", "-q", "--eagle3-ckpt=examples/demo-draft",
            "--eagle3-ckpt=examples/demo-draft-sglang", "--eagle3-target=examples/demo-target")


def _counted_child(what: str) -> None:
    """Run the main job or the capture here, counting the target model's forward calls; print them as JSON."""
    import contextlib
    import io

    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    calls = [0]
    real = LlamaForCausalLM.forward

    @functools.wraps(real)  # its signature kept: reference.acceptance reads the cache argument's name from it
    def counted(self: LlamaForCausalLM, *args: object, **kwargs: object) -> object:
        calls[0] += 1
        return real(self, *args, **kwargs)

    LlamaForCausalLM.forward = counted  # type: ignore[method-assign]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if what == "main-job":
            import pytest

            pytest.main(list(MAIN_JOB))
        else:
            from pytest_eagle3.shell.cli import main as cli

            with tempfile.TemporaryDirectory() as work:
                cli(["capture", "examples/demo-target", str(Path(work) / "dump")])
    print(json.dumps({"forwards": calls[0]}))


def _child(what: str) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", what], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    return time.perf_counter() - started, int(json.loads(done.stdout.splitlines()[-1])["forwards"])


def main_job(rounds: int) -> None:
    """The main job's median wall time and its target forward passes, next to the capture's."""
    runs = [_child("main-job") for _ in range(rounds)]
    _, captured = _child("capture")
    wall = statistics.median(t for t, _ in runs)
    print(f"main job (demo pair, 2 drafts): median {wall:.1f} s of {rounds} rounds "
          f"({', '.join(f'{t:.1f}' for t, _ in runs)} s)")
    print(f"target forward passes: main job {runs[0][1]}, capture on the same target and prompts {captured}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", default=str(ROOT / "examples" / "demo-draft"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--main-job", action="store_true", help="the main job's wall time and target passes")
    parser.add_argument("--child", choices=("main-job", "capture"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _counted_child(args.child)
    if args.main_job:
        return main_job(args.rounds)
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
