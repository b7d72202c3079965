"""Command line: ``python -m pytest_eagle3 check PATH...``, ``synth`` and ``matrix``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-eagle3", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the contract suite on checkpoints (same as pytest --eagle3-ckpt)")
    check.add_argument("checkpoints", nargs="+", metavar="PATH")
    check.add_argument("--target", help="target model dir or config.json")
    check.add_argument("--report", help="write the JSON verdict here")
    check.add_argument("--engine", help="engine versions (as --eagle3-engine): sglang, vllm, all, NAME==VERSION")
    matrix = sub.add_parser("matrix", help="print the engine x version support matrix (markdown) from the profiles")
    matrix.add_argument("--readme", help="rewrite the matrix blocks (profiles and recorded probes) of this README in place")
    synth = sub.add_parser("synth", help="write a synthetic draft checkpoint (optionally with faults)")
    synth.add_argument("out", nargs="?", help="output directory")
    synth.add_argument("--producer", default="speculators", help="speculators, specforge, specforge-hf, eagle, modelopt, angelslim")
    synth.add_argument("--fault", action="append", default=[], help="inject a fault (repeatable); see --list-faults")
    synth.add_argument("--target", help="also write the matching tiny target model to this directory")
    synth.add_argument("--list-faults", action="store_true", help="print the known faults and exit")
    args = parser.parse_args(argv)
    if args.command == "check":
        import pytest

        pytest_args = [f"--eagle3-ckpt={p}" for p in args.checkpoints]
        pytest_args += [f"--eagle3-target={args.target}"] if args.target else []
        pytest_args += [f"--eagle3-report={args.report}"] if args.report else []
        pytest_args += [f"--eagle3-engine={args.engine}"] if args.engine else []
        return int(pytest.main(pytest_args))
    if args.command == "matrix":
        from pathlib import Path

        from pytest_eagle3.probes.record import probes_markdown
        from pytest_eagle3.probes.support_matrix import (
            PROBES_END,
            PROBES_START,
            render_matrix,
            splice,
        )

        table = render_matrix()
        if args.readme:
            readme = Path(args.readme)
            text = splice(readme.read_text(encoding="utf-8"), table)
            text = splice(text, probes_markdown(), PROBES_START, PROBES_END)
            readme.write_text(text, encoding="utf-8")
        else:
            print(table, end="")
        return 0
    from pytest_eagle3 import synth as synthetic

    if args.list_faults:
        for name, fault in synthetic.FAULTS.items():
            print(f"{name:24} {fault.contract:22} [{fault.diagnosis}] {fault.description}")
        return 0
    if not args.out:
        parser.error("synth needs an output directory")
    spec = synthetic.SynthSpec(producer=args.producer).with_faults(*args.fault)
    print(synthetic.write_checkpoint(spec, args.out))
    if args.target:
        print(synthetic.write_target(spec, args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
