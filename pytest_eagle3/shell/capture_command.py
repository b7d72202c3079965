"""``python -m pytest_eagle3 capture TARGET OUT``: the target's side written once (here with transformers, or in
vLLM's own workers), reused by ``--eagle3-hidden-states``; its progress on stderr when that is a terminal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The capture command's default backend: the target's forward in this process (the other: vLLM's workers).
TRANSFORMERS = "transformers"


def capture_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``capture`` command and its arguments."""
    from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS

    capture = sub.add_parser("capture", help="run the target (here, or in the engine that serves it) on the prompts "
                                             "and write its hidden states for --eagle3-hidden-states")
    capture.add_argument("target", help="the target model directory, or Hub id hf://ORG/NAME[@REV] (downloaded)")
    capture.add_argument("out", type=Path, help="the dump directory to write (must not exist yet)")
    capture.add_argument("--engine", choices=(TRANSFORMERS, "vllm"), default=TRANSFORMERS,
                         help="who runs the target: transformers here (default), or vLLM's own workers")
    capture.add_argument("--vllm-python", metavar="PY", help="interpreter of the venv where vLLM is installed "
                                                              "(--engine vllm; default: this one)")
    capture.add_argument("--engine-args", default="", metavar="ARGS",
                         help="extra vLLM engine arguments, shell-quoted (e.g. \"--tensor-parallel-size 8\")")
    capture.add_argument("--prompts", metavar="FILE", help="one prompt per line: JSON token ids or text "
                                                             "(default: the built-in set)")
    capture.add_argument("--new-tokens", type=int, default=DEFAULT_NEW_TOKENS + DEFAULT_STEPS, metavar="N",
                         help="tokens generated per prompt (default %(default)s: --eagle3-continuation + --eagle3-k)")
    capture.add_argument("--layers", metavar="LIST", help="states to keep besides the defaults (around the "
                                                         "engines' default aux ids, and the last layer): 'all' or "
                                                         "a comma list; state k = input of layer k")
    capture.add_argument("--device", default="cpu", help="device for --engine transformers (default cpu)")


def capture(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run ``capture``: the target on the prompts, its hidden states written to a new folder."""
    from pytest_eagle3.reference.defaults import MAX_CONTINUATION, MAX_STEPS
    from pytest_eagle3.shell.cli_hub import local

    if args.out.exists():
        parser.error(f"out: {args.out} already exists; capture never overwrites (choose a new directory)")
    args.target = local(parser, "target", args.target, "capture runs the target")
    if not Path(args.target, "config.json").is_file():
        parser.error(f"target: {args.target} has no config.json (give the target model's directory)")
    if args.prompts is not None and not Path(args.prompts).is_file():
        parser.error(f"--prompts: {args.prompts} is not a file")
    if not 2 <= args.new_tokens <= MAX_CONTINUATION + MAX_STEPS:
        parser.error(f"--new-tokens: {args.new_tokens} is outside [2, {MAX_CONTINUATION + MAX_STEPS}]")
    from pytest_eagle3.progress import step, tick
    from pytest_eagle3.reference.acceptance import ReferenceInputError
    from pytest_eagle3.reference.targets.source import TargetSourceError
    from pytest_eagle3.shell.progress import on_stderr

    def progress(done: int, total: int) -> None:
        tick(f"{done}/{total} prompts written")

    try:
        with on_stderr(), step(f"capture {args.out}"):
            if args.engine != TRANSFORMERS:  # the other choice: vLLM's own workers
                from pytest_eagle3.live.capture import capture_vllm

                manifest = capture_vllm(args.target, args.out, args.prompts, args.new_tokens, args.layers,
                                        args.vllm_python or sys.executable, args.engine_args, progress)
            else:
                from pytest_eagle3.reference.targets.capture import capture_transformers

                manifest = capture_transformers(args.target, args.out, args.prompts, args.new_tokens, args.layers,
                                                args.device, progress)
    except (TargetSourceError, ReferenceInputError) as exc:
        print(f"pytest-eagle3 capture: error: {exc}", file=sys.stderr)
        return 2
    print(manifest)
    return 0
