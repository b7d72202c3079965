"""Command line: ``python -m pytest_eagle3 check PATH...``, ``synth`` and ``matrix``.

A bad argument is an argparse usage error (exit 2, one line naming the argument), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_eagle3.testing import synth as synthetic
from pytest_eagle3.producers.formats import SPECULATORS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-eagle3", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the contract suite on checkpoints (same as pytest --eagle3-ckpt)")
    check.add_argument("checkpoints", nargs="+", metavar="PATH")
    check.add_argument("--target", help="target model dir or config.json")
    check.add_argument("--report", help="write the JSON verdict here")
    check.add_argument("--engine", help="engine versions (as --eagle3-engine): sglang, vllm, all, NAME==VERSION")
    _capture_parser(sub)
    matrix = sub.add_parser("matrix", help="print the engine x version support matrix (markdown) from the profiles")
    matrix.add_argument("--readme", type=Path,
                        help="rewrite the matrix blocks (profiles and recorded probes) of this README in place")
    synth = sub.add_parser("synth", help="write a synthetic draft checkpoint (optionally with faults)")
    synth.add_argument("out", nargs="?", type=Path, help="output directory (must not exist yet)")
    synth.add_argument("--producer", default=SPECULATORS, choices=synthetic.PRODUCERS,
                       help="the producer layout to write")
    synth.add_argument("--fault", action="append", default=[], choices=sorted(synthetic.FAULTS), metavar="FAULT",
                       help="inject a fault (repeatable); see --list-faults")
    synth.add_argument("--target", type=Path, help="also write the matching tiny target model to this directory")
    synth.add_argument("--list-faults", action="store_true", help="print the known faults and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "check":
        import pytest

        pytest_args = [f"--eagle3-ckpt={p}" for p in args.checkpoints]
        pytest_args += [f"--eagle3-target={args.target}"] if args.target else []
        pytest_args += [f"--eagle3-report={args.report}"] if args.report else []
        pytest_args += [f"--eagle3-engine={args.engine}"] if args.engine else []
        return int(pytest.main(pytest_args))
    if args.command == "matrix":
        return _matrix(parser, args.readme)
    if args.command == "capture":
        return _capture(parser, args)
    return _synth(parser, args)


# -- capture (issue 20): the target's side written once, reused by --eagle3-hidden-states ----------------------
def _capture_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS

    capture = sub.add_parser("capture", help="run the target (here, or in the engine that serves it) on the prompts "
                                             "and write its hidden states for --eagle3-hidden-states")
    capture.add_argument("target", help="the target model directory")
    capture.add_argument("out", type=Path, help="the dump directory to write (must not exist yet)")
    capture.add_argument("--engine", choices=("transformers", "vllm"), default="transformers",
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


def _capture(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pytest_eagle3.reference.defaults import MAX_CONTINUATION, MAX_STEPS

    if not Path(args.target, "config.json").is_file():
        parser.error(f"target: {args.target} has no config.json (give the target model's directory)")
    if args.out.exists():
        parser.error(f"out: {args.out} already exists; capture never overwrites (choose a new directory)")
    if args.prompts is not None and not Path(args.prompts).is_file():
        parser.error(f"--prompts: {args.prompts} is not a file")
    if not 2 <= args.new_tokens <= MAX_CONTINUATION + MAX_STEPS:
        parser.error(f"--new-tokens: {args.new_tokens} is outside [2, {MAX_CONTINUATION + MAX_STEPS}]")
    from pytest_eagle3.reference.acceptance import ReferenceInputError
    from pytest_eagle3.reference.targets.source import TargetSourceError

    def progress(done: int, total: int) -> None:
        print(f"\rcapture: {done}/{total} prompts", end="\n" if done == total else "", file=sys.stderr, flush=True)

    try:
        if args.engine == "vllm":
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


def _matrix(parser: argparse.ArgumentParser, readme: Path | None) -> int:
    from pytest_eagle3.probes.record import probes_markdown
    from pytest_eagle3.probes.support_matrix import PROBES_END, PROBES_START, render_matrix, splice

    if readme is not None and not readme.is_file():
        parser.error(f"--readme: {readme} is not a file")
    table = render_matrix()
    if readme is None:
        print(table, end="")
        return 0
    try:
        text = splice(readme.read_text(encoding="utf-8"), table)
        text = splice(text, probes_markdown(), PROBES_START, PROBES_END)
    except ValueError as exc:
        parser.error(f"--readme: {readme}: {exc}")
    readme.write_text(text, encoding="utf-8")
    return 0


def _synth(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.list_faults:
        for name, fault in synthetic.FAULTS.items():
            print(f"{name:24} {fault.contract:22} [{fault.diagnosis}] {fault.description}")
        return 0
    if args.out is None:
        parser.error("synth needs an output directory")
    for flag, path in (("out", args.out), ("--target", args.target)):
        if path is not None and path.exists():
            parser.error(f"{flag}: {path} already exists; synth never overwrites (choose a new directory)")
    try:
        spec = synthetic.SynthSpec(producer=args.producer).with_faults(*args.fault)
    except ValueError as exc:
        parser.error(f"--fault: {exc}")
    print(synthetic.write_checkpoint(spec, args.out))
    if args.target is not None:
        print(synthetic.write_target(spec, args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
