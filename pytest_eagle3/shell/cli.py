"""Command line: ``python -m pytest_eagle3 check PATH...``, ``synth``, ``matrix``, ``fix``, ``plan`` and ``sweep``.

A bad argument is an argparse usage error (exit 2, one line naming the argument), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_eagle3.producers.formats import INPUT_OF, OUTPUT_OF, SPECULATORS
from pytest_eagle3.shell.capture_command import capture, capture_parser
from pytest_eagle3.testing import synth as synthetic

CONVENTIONS = (INPUT_OF, OUTPUT_OF)


DESCRIPTION = ("Judge EAGLE-3 draft checkpoints against engine versions (SGLang, vLLM) and repair them: "
               "python -m pytest_eagle3 COMMAND --help for each command.")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-eagle3", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the contract suite on checkpoints (same as pytest --eagle3-ckpt)",
                           epilog="Any other pytest option (-q, -x, -rs, --tb=short, -n 2, ...) is passed to the "
                                  "pytest run.")
    check.add_argument("checkpoints", nargs="+", metavar="PATH", help="the draft checkpoint's directory or Hub id "
                                                                     "hf://ORG/NAME[@REV] (repeat for several)")
    _target_arguments(check)
    check.add_argument("--report", help="write the JSON verdict here")
    check.add_argument("--engine", help="engine versions (as --eagle3-engine): sglang, vllm, all, NAME==VERSION")
    check.add_argument("-k", dest="keyword", metavar="EXPRESSION", help="only the contracts matching it (pytest -k)")
    check.add_argument("-m", dest="markexpr", metavar="MARKEXPR", help="only the tests matching it (pytest -m)")
    capture_parser(sub)
    matrix = sub.add_parser("matrix", help="print the engine x version support matrix from the profiles: which "
                            "releases load each producer's draft")
    matrix.add_argument("--markdown", action="store_true",
                        help="print it as the markdown docs/engines.md holds, with each cell's contract codes")
    matrix.add_argument("--readme", type=Path,
                        help="rewrite the matrix blocks (profiles and recorded probes) of this markdown file in place "
                             "(docs/engines.md)")
    synth = sub.add_parser("synth", help="write a synthetic draft checkpoint (optionally with faults)")
    synth.add_argument("out", nargs="?", type=Path, help="output directory (must not exist yet)")
    synth.add_argument("--producer", default=SPECULATORS, choices=synthetic.PRODUCERS,
                       help="the producer layout to write")
    synth.add_argument("--fault", action="append", default=[], choices=sorted(synthetic.FAULTS), metavar="FAULT",
                       help="inject a fault (repeatable); see --list-faults")
    synth.add_argument("--target", type=Path, help="also write the matching tiny target model to this directory")
    synth.add_argument("--list-faults", action="store_true", help="print the known faults and exit")
    fix = sub.add_parser("fix", help="write a fixed copy of a draft for chosen engine versions, proven by the contracts")
    fix.add_argument("draft", metavar="DRAFT", help="the draft checkpoint's directory (never modified), or Hub id "
                                                   "hf://ORG/NAME[@REV] (its weights downloaded)")
    fix.add_argument("out", type=Path, metavar="OUT", help="the new directory (refused if it exists, unless --force)")
    fix.add_argument("--to", required=True, metavar="ENGINE==VER[,ENGINE==VER...]", help="the engine versions to serve")
    _target_arguments(fix)
    fix.add_argument("--prefer", metavar="ENGINE==VER", help="the engine that wins when two need contradicting edits")
    fix.add_argument("--force", action="store_true", help="replace an existing OUT")
    plan = sub.add_parser("plan", help="print what engine versions will do with a draft: the load plan every "
                                       "contract judges (the verdict pipeline's), or with --json the report's row")
    plan.add_argument("draft", metavar="DRAFT", help="the draft checkpoint's directory, or Hub id hf://ORG/NAME[@REV]")
    plan.add_argument("--engine", required=True, metavar="ENGINE==VER[,...]",
                      help="engine versions, as --eagle3-engine: sglang, vllm, all, NAME==VERSION, comma-separated")
    _target_arguments(plan)
    plan.add_argument("--json", action="store_true",
                      help="print each engine's row of the JSON report (verdict, outcome, failing contracts, "
                           "prediction, fix), exactly as pytest --eagle3-report writes it")
    _sweep_parser(sub)
    return parser


def _sweep_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sweep = sub.add_parser("sweep", help="a training run's checkpoints judged and predicted per engine version "
                                         "(one target run): DIR/sweep.json, sweep.md, sweep.png")
    sweep.add_argument("checkpoints", nargs="+", metavar="CKPT",
                       help="checkpoint folders in training order, a folder of them, or a glob (sorted naturally)")
    sweep.add_argument("--out", required=True, type=Path, metavar="DIR", help="the new folder to write")
    sweep.add_argument("--engine", default="all", metavar="ENGINE==VER[,...]", help="as --eagle3-engine (default all)")
    _target_arguments(sweep)


def _target_arguments(command: argparse.ArgumentParser) -> None:
    """The target options every command shares with pytest (--eagle3-target, --eagle3-hidden-states,
    --eagle3-aux-convention)."""
    command.add_argument("--target", help="target model dir or config.json (layer counts, vocab; with its weights "
                                          "the training layers are measured and acceptance predicted)")
    command.add_argument("--hidden-states", metavar="DUMP",
                         help="the target's side written by python -m pytest_eagle3 capture (with --target, which may "
                              "then be just its config.json): the training layers measured and acceptance "
                              "predicted from it")
    command.add_argument("--aux-convention", choices=CONVENTIONS,
                         help="how the draft's aux ids name its training layers (default: the producer's convention)")
    command.add_argument("--engine-args", metavar="ARGS",
                         help="as --eagle3-engine-args: the launch settings the plan reads, e.g. "
                              "'trtllm: eagle3_layers_to_capture=[1,3,4]'")
    command.add_argument("--download-weights", action="store_true",
                         help="download the weights of hf:// ids (default: headers and small tensors read by range)")


def main(argv: Sequence[str] | None = None) -> int:
    """The command (``python -m pytest_eagle3`` and the ``pytest-eagle3`` script); a reader that leaves early
    (``... | head -1``) ends it quietly, with no traceback."""
    import os

    try:
        code = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit either
        return 0
    return code


def _main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "check":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "check":
        import pytest

        _check_paths(parser, args)
        # This process imported pytest_eagle3 before pytest could register it for assertion rewriting:
        # pytest's warning about it says nothing to the user.
        pytest_args = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
        pytest_args += [f"--eagle3-ckpt={p}" for p in args.checkpoints]
        pytest_args += [f"--eagle3-target={args.target}"] if args.target else []
        pytest_args += [f"--eagle3-report={args.report}"] if args.report else []
        pytest_args += [f"--eagle3-engine={args.engine}"] if args.engine else []
        pytest_args += [f"--eagle3-hidden-states={args.hidden_states}"] if args.hidden_states else []
        pytest_args += [f"--eagle3-aux-convention={args.aux_convention}"] if args.aux_convention else []
        pytest_args += ["--eagle3-download-weights"] if args.download_weights else []
        pytest_args += [f"--eagle3-engine-args={args.engine_args}"] if args.engine_args else []
        pytest_args += ["-k", args.keyword] if args.keyword is not None else []
        pytest_args += ["-m", args.markexpr] if args.markexpr is not None else []
        return int(pytest.main([*pytest_args, *extra]))
    if args.command == "matrix":
        return _matrix(parser, args.readme, args.markdown)
    if args.command == "fix":
        return _fix(parser, args)
    if args.command == "plan":
        return _plan(parser, args)
    if args.command == "capture":
        return capture(parser, args)
    if args.command == "sweep":
        return _sweep(parser, args)
    return _synth(parser, args)


def _check_paths(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``check``'s own arguments are named in its usage errors (PATH, --target, --report), not pytest's options."""
    for path in args.checkpoints:
        if not path.startswith("hf://") and (not path.strip() or not Path(path).is_dir()):
            what = "is empty" if not path.strip() else "does not exist" if not Path(path).exists() else "is a file"
            parser.error(f"PATH: {path!r} {what}; give the draft checkpoint's directory")
    if args.target is not None and not args.target.startswith("hf://") and not Path(args.target).exists():
        parser.error(f"--target: {args.target} does not exist (give the target model's directory or its config.json)")
    if args.report is not None and (not args.report.strip() or Path(args.report).is_dir()):
        parser.error(f"--report: {args.report!r} is not a file path; give one such as verdict.json")
    if args.report is not None:
        from pytest_eagle3.shell.option_values import unwritable

        problem = unwritable(Path(args.report))
        if problem is not None:
            parser.error(f"--report: {args.report} cannot be written: {problem}")


def _matrix(parser: argparse.ArgumentParser, readme: Path | None, markdown: bool = False) -> int:
    from pytest_eagle3.probes.record import probes_markdown
    from pytest_eagle3.verdict import confirmation
    from pytest_eagle3.verdict.matrix import (
        PROBES_END,
        PROBES_START,
        render_matrix,
        render_text,
        splice,
    )

    if readme is not None and not readme.is_file():
        parser.error(f"--readme: {readme} is not a file")
    if readme is None:
        print(render_matrix() if markdown else render_text(), end="")
        print("\n" + (confirmation.confirmation_markdown() if markdown else confirmation.confirmation_text()), end="")
        return 0
    table = render_matrix()
    try:
        text = splice(readme.read_text(encoding="utf-8"), table)
        text = splice(text, probes_markdown(), PROBES_START, PROBES_END)
        text = splice(text, confirmation.confirmation_markdown(), confirmation.START, confirmation.END)
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


def _engines(parser: argparse.ArgumentParser, flag: str, text: str, engine_args: str | None = None,
             one: bool = False) -> list[Any]:
    from pytest_eagle3.knowledge.launch_settings import with_launch
    from pytest_eagle3.knowledge.selection import parse_selection

    try:
        engines = list(parse_selection(text))
    except ValueError as exc:
        parser.error(f"{flag}: {exc}")
    try:
        engines = list(with_launch(engines, engine_args))
    except ValueError as exc:
        parser.error(f"--engine-args: {exc}")
    if not engines or (one and len(engines) != 1):
        parser.error(f"{flag}: name {'one engine version' if one else 'engine versions'} as ENGINE==VER")
    return engines


def _target(parser: argparse.ArgumentParser, target: str | None) -> Any:
    if target is None:
        return None
    from pytest_eagle3.checkpoint import TargetModel

    if not target.startswith("hf://") and not Path(target).exists():
        parser.error(f"--target: {target} does not exist")
    model = TargetModel.open(target)
    if model.problem:
        parser.error(f"--target: {model.problem}")
    return model


def _dump(parser: argparse.ArgumentParser, model: Any, dump: str | None) -> str | None:
    """The dump's absolute path once it fits the target (manifest, target hash, every file's header)."""
    if dump is None:
        return None
    if model is None:
        parser.error("--hidden-states: needs --target (the target's directory or config.json) to check the dump "
                     "against")
    from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS
    from pytest_eagle3.reference.targets.dump import check_dump
    from pytest_eagle3.reference.targets.source import TargetSourceError

    try:
        check_dump(dump, model, DEFAULT_NEW_TOKENS + DEFAULT_STEPS)
    except TargetSourceError as exc:
        parser.error(f"--hidden-states: {exc}")
    return str(Path(dump).resolve())


def _plan(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.repair.plan_text import render_plan
    from pytest_eagle3.shell.cli_hub import pinned
    from pytest_eagle3.verdict import Pipeline, TargetSide, VerdictSettings

    engines = _engines(parser, "--engine", args.engine, args.engine_args)
    args.target = pinned(parser, "--target", args.target, args.download_weights)
    args.draft = pinned(parser, "DRAFT", args.draft, args.download_weights)
    model = _target(parser, args.target)
    dump = _dump(parser, model, args.hidden_states)
    if not args.draft.startswith("hf://") and not Path(args.draft).exists():
        parser.error(f"DRAFT: {args.draft} does not exist")
    if args.json:
        return _plan_json(args, engines, dump)
    ckpt = Checkpoint.open(args.draft)
    problems = ckpt.problems + ([ckpt.config_problem] if ckpt.config_problem else [])
    if problems:
        print(f"plan: {args.draft} cannot be read: " + "; ".join(problems), file=sys.stderr)
        return 1
    pipeline = Pipeline(VerdictSettings(tuple(engines), args.aux_convention))
    side = TargetSide(args.target, dump)
    print("\n\n".join(render_plan(ckpt, pipeline.verdict(ckpt, engine, side).plan) for engine in engines))
    return 0


def _plan_json(args: argparse.Namespace, engines: Sequence[Any], dump: str | None) -> int:
    """The report's engine rows for the draft: the contract suite run on it (every contract asks the same
    pipeline), its JSON report read back. Exit 0 when it ran, whatever the verdict."""
    import json
    import tempfile

    import pytest

    with tempfile.TemporaryDirectory(prefix="eagle3-plan-") as work:
        report = Path(work, "verdict.json")
        pytest_args = ["-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                       f"--eagle3-ckpt={args.draft}", f"--eagle3-engine={','.join(e.spec for e in engines)}",
                       f"--eagle3-report={report}", "-m", "not engine"]
        pytest_args += [f"--eagle3-target={args.target}"] if args.target else []
        pytest_args += [f"--eagle3-hidden-states={dump}"] if dump else []
        pytest_args += [f"--eagle3-aux-convention={args.aux_convention}"] if args.aux_convention else []
        pytest_args += ["--eagle3-download-weights"] if args.download_weights else []
        pytest_args += [f"--eagle3-engine-args={args.engine_args}"] if args.engine_args else []
        import contextlib
        import io

        from pytest_eagle3.shell.summary import without_step_summary

        with contextlib.redirect_stdout(io.StringIO()) as said, without_step_summary():
            code = pytest.main(pytest_args)
        if not report.is_file():
            print(said.getvalue(), file=sys.stderr)
            return int(code) or 1
        data = json.loads(report.read_text(encoding="utf-8"))
    rows = [row for ckpt in data["checkpoints"] for row in ckpt["engines"] if row["engine"] != "any"]
    print(json.dumps(rows[0] if len(rows) == 1 else rows, indent=2))
    return 0


def _sweep(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import time

    from pytest_eagle3.verdict import Pipeline, TargetSide, VerdictSettings
    from pytest_eagle3.verdict.sweep import SweepInputError, checkpoints_from, run_sweep, write

    if args.target is None:
        parser.error("--target: give the target model's directory (or its config.json with --hidden-states)")
    from pytest_eagle3.shell.cli_hub import pinned

    args.target = pinned(parser, "--target", args.target, args.download_weights)
    if args.out.exists():
        parser.error(f"--out: {args.out} already exists; sweep never overwrites (choose a new folder)")
    from pytest_eagle3.shell.option_values import unwritable

    problem = unwritable(args.out / "sweep.json")
    if problem is not None:
        parser.error(f"--out: {args.out} cannot be written: {problem}")
    engines = _engines(parser, "--engine", args.engine, args.engine_args)
    dump = _dump(parser, _target(parser, args.target), args.hidden_states)
    try:
        paths = checkpoints_from(args.checkpoints)
    except SweepInputError as exc:
        parser.error(f"CKPT: {exc}")
    from pytest_eagle3.progress import step, tick
    from pytest_eagle3.shell.progress import on_stderr

    start = time.monotonic()
    pipeline = Pipeline(VerdictSettings(tuple(engines), args.aux_convention))
    with on_stderr(), step("sweep"):
        result = run_sweep(paths, engines, TargetSide(args.target, dump), pipeline,
                           progress=lambda done, total: tick(f"{done}/{total} checkpoints"))
    print("\n".join(write(result, args.out)))
    print(f"sweep: {len(paths)} checkpoints x {len(engines)} engine versions in {time.monotonic() - start:.0f} s, "
          f"{result.target_runs} target run{'s' if result.target_runs != 1 else ''}")
    for engine, best in result.best().items():
        print(f"best for {engine}: {best.path if best is not None else result.why_no_best(engine)}")
    return 0


def _fix(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pytest_eagle3.shell.progress import on_stderr

    with on_stderr():  # the measurement, the predictions and the proof say how far they are
        return _fix_steps(parser, args)


def _fix_steps(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pytest_eagle3.knowledge.llamacpp_builds import CONVERT_COMMAND
    from pytest_eagle3.knowledge.releases import LLAMACPP
    from pytest_eagle3.progress import step
    from pytest_eagle3.repair.fix import check_command, copy_flag, fix, prove, render
    from pytest_eagle3.repair.prediction import Measurement, predicted_lines
    from pytest_eagle3.repair.record import RepairRefused
    from pytest_eagle3.shell.cli_hub import config_only, local

    engines = _engines(parser, "--to", args.to, args.engine_args)
    prefer = _engines(parser, "--prefer", args.prefer, one=True)[0].spec if args.prefer else None
    if prefer and prefer not in {e.spec for e in engines}:
        parser.error(f"--prefer: {prefer} is not one of --to {args.to}")
    args.target = config_only(parser, "--target", args.target, args.download_weights)
    model = _target(parser, args.target)
    dump = _dump(parser, model, args.hidden_states)
    args.draft = Path(local(parser, "DRAFT", args.draft, "fix writes a copy of every tensor"))
    if not args.draft.exists():
        parser.error(f"DRAFT: {args.draft} does not exist")
    # the measurement needs the target's weights or a dump of its side: a config.json alone gives layer counts only
    measurement = (Measurement(args.target, dump) if args.target and (dump or Path(args.target).is_dir())
                   else None)
    with step("measuring the training layers"):
        trained = measurement.trained(args.draft, args.aux_convention) if measurement else None
    try:
        target = str(Path(args.target).resolve()) if args.target else None
        solution, out = fix(args.draft, args.out, engines, target, args.aux_convention, args.force, prefer,
                            trained, measurement.pipeline if measurement else None)
    except RepairRefused as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    except (FileExistsError, OSError) as exc:
        print(f"fix: {exc}", file=sys.stderr)
        return 1
    print("\n".join(render(solution, out)))
    served = [e for e in engines if e.spec not in solution.not_served]
    if measurement is not None:
        print("\n".join(predicted_lines(measurement, args.draft, out, served, args.aux_convention,
                                         solution.convention)))
    proof = prove(out, served, str(Path(args.target).resolve()) if args.target else None, solution.convention, dump)
    if not proof.passed:
        print(f"proof FAILED: the contracts do not pass on {out} for {', '.join(e.spec for e in served)}:",
              file=sys.stderr)
        print(proof.output, file=sys.stderr)
        return 1
    print(f"proof: the contracts pass on {out} for {', '.join(e.spec for e in served)}")
    print(f"  check again: {check_command(out, served, args.target, copy_flag(out, solution.convention), args.hidden_states)}")
    if any(e.engine == LLAMACPP for e in served):
        gguf = out.with_name(out.name + ".gguf")
        print(f"  convert for llama.cpp (its own converter, from the llama.cpp tree of that build): "
              f"{CONVERT_COMMAND.format(draft=out, target=args.target or 'TARGET', gguf=gguf)}")
    return 1 if solution.not_served else 0


if __name__ == "__main__":
    sys.exit(main())
