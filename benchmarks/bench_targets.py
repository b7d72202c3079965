"""Cost of the target's side: transformers in-process vs a captured dump, on the demo pair; then a
Kimi-K2.5-shaped draft against synthetic dumps.

    python benchmarks/bench_targets.py [--draft examples/demo-draft-sglang] [--target examples/demo-target]
    python benchmarks/bench_targets.py --kimi [--vocab 163840] [--target-layers 61,122] [--prompts 2]

Each source runs in a fresh child process (so its peak RSS is its own): the capture (transformers
engine) once, then the prediction of ``--engine`` from the target directory and from the dump with
only the target's config.json. Prints wall time, peak RSS, the dump's size, bytes per captured token
and per state, and the predicted mean acceptance length (equal for both sources).

``--kimi``: the draft of ``bench_contracts.LARGE_SPEC`` (hidden 7168, one layer, SpecForge layout, bf16)
built for targets of each ``--target-layers`` count, each with a config-only target and a synthetic dump
(random states at the capture's default layers, random token ids, random head: the figures are costs,
the predicted length is noise) of ``--prompts`` and twice as many prompts. Prints time and peak RSS of
the prediction per case: they follow the draft and the captured tokens, not the target's layer count; and per
case a JSON line with ``peak_rss_mb``, ``draft_file_mb`` (MiB) and the bound, 2 x the draft's file + 1 GiB
(the draft runs in float32; of the target, only the embedding rows of the dump's tokens are read).
``--vocab`` scales the vocabulary (163840 for Kimi-K2.5; the head is then 2 x 4.7 GB in float32).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM): ``ru_maxrss`` keeps the parent's across fork and exec (getrusage(2),
    NOTES), so a child forked from a parent holding a synthetic head would report the parent's memory."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, draft: str, target: str, dump: str, engine: str) -> dict[str, float | str]:
    started = time.perf_counter()
    if mode == "capture":
        from pytest_eagle3.reference.targets.capture import capture_transformers

        capture_transformers(target, dump, None, 67)
        figure: float | str = "-"
    else:
        from pytest_eagle3.reference.predict import PredictionSession
        from pytest_eagle3.verdict import predict_acceptance

        session = PredictionSession(hidden_states=dump if mode == "dump" else None)
        where = str(Path(target) / "config.json") if mode == "dump" else target
        figure = predict_acceptance(draft, where, engine, session=session).mean_acceptance_length or 0.0
    return {"seconds": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb(), "predicted": figure}


def kimi_child(draft: str, target: str, dump: str, engine: str) -> dict[str, float | str]:
    started = time.perf_counter()
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    session = PredictionSession(hidden_states=dump)
    figure = predict_acceptance(draft, str(Path(target) / "config.json"), engine, session=session)
    return {"seconds": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb(),
            "predicted": figure.mean_acceptance_length or 0.0}


def synthetic_dump(target: Path, out: Path, prompts: int, prompt_length: int = 20, new_tokens: int = 67) -> int:
    """A dump in our format for the config-only target at ``target``: random states and head, real files."""
    import torch

    from pytest_eagle3.reference.targets.capture import default_layers
    from pytest_eagle3.reference.targets.dump import DumpWriter, Manifest, config_hash
    from pytest_eagle3.reference.targets.source import PromptStates, TargetHead

    config = json.loads((target / "config.json").read_text())
    hidden, vocab, layers = config["hidden_size"], config["vocab_size"], config["num_hidden_layers"]
    states = default_layers(layers)
    gen = torch.Generator().manual_seed(0)
    writer = DumpWriter(out)
    for i in range(prompts):
        ids = torch.randint(0, vocab, (prompt_length + new_tokens,), generator=gen)
        writer.add(i, PromptStates(ids, prompt_length, {k: torch.randn(len(ids), hidden, generator=gen) for k in states}))
    head = TargetHead((torch.randn(vocab, hidden, generator=gen) * 0.02).bfloat16(),
                      (torch.randn(vocab, hidden, generator=gen) * 0.02).bfloat16(), torch.ones(hidden).bfloat16(), 1e-5)
    writer.finish(head, Manifest(config_hash(config), hidden, vocab, layers, states, new_tokens,
                                 (prompt_length,) * prompts, "synthetic", "synthetic", "0",
                                 tuple(config.get("architectures", ()))))
    return len(states)


def kimi(args: argparse.Namespace) -> None:
    """Prediction cost for a Kimi-K2.5-shaped draft from synthetic dumps (see the module docstring)."""
    import dataclasses
    import multiprocessing

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_contracts import LARGE_SPEC

    from pytest_eagle3.testing.synth import write_checkpoint, write_target

    print(f"Kimi-K2.5-shaped draft (hidden {LARGE_SPEC.hidden_size}, vocab {args.vocab}), {args.engine}")
    print(f"{'target layers':>13} {'prompts':>7} {'tokens':>6} {'states':>6} {'dump MB':>8} {'draft MB':>8} "
          f"{'seconds':>8} {'peak RSS MB':>12} {'predicted':>9}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (int(n) for n in args.target_layers.split(",")):
            spec = dataclasses.replace(LARGE_SPEC, vocab_size=args.vocab, target_layers=layers)
            draft, target = Path(tmp) / f"draft-{layers}", Path(tmp) / f"target-{layers}"
            worker = multiprocessing.get_context("spawn").Process(target=write_checkpoint, args=(spec, draft))
            worker.start()
            worker.join()
            write_target(spec, target, with_weights=False)
            draft_mb = sum(f.stat().st_size for f in draft.iterdir()) / 1e6
            for prompts in (args.prompts, 2 * args.prompts):
                dump = Path(tmp) / f"dump-{layers}-{prompts}"
                states = synthetic_dump(target, dump, prompts)
                dump_mb = sum(f.stat().st_size for f in dump.iterdir()) / 1e6
                out = subprocess.run([sys.executable, __file__, "--child", "kimi", "--draft", str(draft), "--target",
                                      str(target), "--engine", args.engine, "--dump", str(dump)],
                                     capture_output=True, text=True, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{layers:13d} {prompts:7d} {prompts * 87:6d} {states:6d} {dump_mb:8.0f} {draft_mb:8.0f} "
                      f"{row['seconds']:8.1f} {row['peak_rss_mb']:12.0f} {row['predicted']:9.4f}", flush=True)
                draft_mib = draft_mb * 1e6 / 2**20  # the bound: 2 x the draft's file + 1 GiB, all in MiB
                print(json.dumps({"target_layers": layers, "prompts": prompts, "peak_rss_mb": round(row["peak_rss_mb"]),
                                  "draft_file_mb": round(draft_mib), "bound_mb": round(2 * draft_mib + 1024),
                                  "within_bound": row["peak_rss_mb"] <= 2 * draft_mib + 1024}), flush=True)
                shutil.rmtree(dump)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", default=str(ROOT / "examples" / "demo-draft-sglang"))
    parser.add_argument("--target", default=str(ROOT / "examples" / "demo-target"))
    parser.add_argument("--engine", default="vllm==0.32.0")
    parser.add_argument("--kimi", action="store_true", help="the Kimi-K2.5-shaped draft on synthetic dumps")
    parser.add_argument("--vocab", type=int, default=163840, help="--kimi: vocabulary size (Kimi-K2.5: 163840)")
    parser.add_argument("--target-layers", default="61,122", help="--kimi: target layer counts, a comma list")
    parser.add_argument("--prompts", type=int, default=2, help="--kimi: prompts in the smaller dump (87 tokens each)")
    parser.add_argument("--child", choices=("capture", "transformers", "dump", "kimi"), help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "kimi":
        print(json.dumps(kimi_child(args.draft, args.target, args.dump, args.engine)))
        return
    if args.kimi:
        kimi(args)
        return
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
