"""Command line: ``python -m pytest_eagle3 check PATH...``, ``synth``, ``matrix``, ``fix``, ``plan``, ``sweep``,
``learn`` and ``releases``.

A bad argument is an argparse usage error (exit 2, one line naming the argument), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_eagle3.option_table import BY_DEST, OPTIONS, Resolved, as_argv
from pytest_eagle3.producers.formats import SPECULATORS
from pytest_eagle3.shell.capture_command import capture, capture_parser
from pytest_eagle3.shell.cli_settings import OWN_ENGINE, add_settings, settings_of
from pytest_eagle3.shell.learn_command import learn, learn_parser, releases
from pytest_eagle3.testing import synth as synthetic
from pytest_eagle3.words import plural

if TYPE_CHECKING:
    from pytest_eagle3.verdict.judgement import RowWord
    from pytest_eagle3.verdict.report import Collector

#: ``sweep --fail-on``: what makes the sweep exit 1 (``verdict.sweep.Sweep.gate``).
FAIL_ON = ("best", "any", "never")



def description() -> str:
    """The command line's description, naming every engine the registry holds."""
    from pytest_eagle3.knowledge.engines import REGISTRY

    names = ", ".join(engine.display if engine.display.lower() == engine.name else f"{engine.display} ({engine.name})"
                      for engine in REGISTRY)
    return (f"Judge EAGLE-3 draft checkpoints against engine versions ({names}) and repair them: python -m "
            "pytest_eagle3 COMMAND --help for each command.")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-eagle3", description=description())
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the contract suite on checkpoints (same as pytest --eagle3-ckpt)",
                           epilog="Any other pytest option (-q, -x, -rs, --tb=short, -n 2, ...) is passed to the "
                                  "pytest run.")
    check.add_argument("checkpoints", nargs="+", metavar="PATH", help="the draft checkpoint's directory or Hub id "
                                                                     "hf://ORG/NAME[@REV] (repeat for several)")
    check.add_argument("--report", help="write the JSON verdict here")
    check.add_argument("--engine", help=BY_DEST["eagle3_engines"].help)
    add_settings(check, without=OWN_ENGINE, interpreters=True)
    check.add_argument("-k", dest="keyword", metavar="EXPRESSION", help="only the contracts matching it (pytest -k)")
    check.add_argument("-m", dest="markexpr", metavar="MARKEXPR", help="only the tests matching it (pytest -m)")
    capture_parser(sub)
    matrix = sub.add_parser("matrix", help="print the engine x version support matrix from the profiles: which "
                            "releases load each producer's draft")
    matrix.add_argument("--markdown", action="store_true",
                        help="print it as the markdown docs/engines.md holds, with each cell's contract codes")
    matrix.add_argument("--readme", type=Path,
                        help="rewrite the generated blocks of this markdown file in place: the matrix, the recorded "
                             "probes (docs/engines.md), the engines to name per format (docs/ci.md)")
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
    add_settings(fix, without=OWN_ENGINE)
    fix.add_argument("--prefer", metavar="ENGINE==VER", help="the engine that wins when two need contradicting edits")
    fix.add_argument("--force", action="store_true", help="replace an existing OUT")
    plan = sub.add_parser("plan", help="print what engine versions will do with a draft: the load plan every "
                                       "contract judges (the verdict pipeline's), or with --json the report's row")
    plan.add_argument("draft", metavar="DRAFT", help="the draft checkpoint's directory, or Hub id hf://ORG/NAME[@REV]")
    plan.add_argument("--engine", metavar="ENGINE==VER[,...]", help=BY_DEST["eagle3_engines"].help)
    add_settings(plan, without=OWN_ENGINE)
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
    sweep.add_argument("--engine", metavar="ENGINE==VER[,...]", help=BY_DEST["eagle3_engines"].help)
    sweep.add_argument("--fail-on", choices=FAIL_ON, default="best",
                       help="the exit status: 1 when some engine version has no passing checkpoint (best, the "
                            "default), when any checkpoint fails on any engine version (any), or never (never); "
                            "0 otherwise, 2 for a usage error")
    add_settings(sweep, without=OWN_ENGINE)
    learn_parser(sub)


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
        pytest_args += [f"--eagle3-report={args.report}"] if args.report else []
        pytest_args += [f"--eagle3-engine={args.engine}"] if args.engine is not None else []  # empty: an error
        pytest_args += as_argv({spec.dest: Resolved((str(getattr(args, spec.dest)),), "option") for spec in OPTIONS
                                if (spec.judges or spec.interpreter) and getattr(args, spec.dest, None) is not None})
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
    if args.command == "learn":
        return learn(args)
    if args.command == "releases":
        return releases(args)
    return _synth(parser, args)


def _check_paths(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``check``'s own arguments are named in its usage errors (PATH, --target, --report), not pytest's options."""
    from pytest_eagle3.verdict.setting_values import absent

    for path in args.checkpoints:
        if not path.startswith("hf://") and (not path.strip() or not Path(path).is_dir()):
            what = "is empty" if not path.strip() else absent(path) if not Path(path).exists() else "is a file"
            parser.error(f"PATH: {path!r} {what}; give the draft checkpoint's directory")
    if args.engine is not None and not args.engine.strip():
        parser.error("--engine: empty; name the engines (sglang, vllm, NAME==VERSION, all), or leave it out for "
                     "the default")
    target = args.eagle3_target
    if target is not None and not target.startswith("hf://") and not Path(target).exists():
        parser.error(f"--target: {target} {absent(target)} (give the target model's directory or its config.json)")
    if args.report is not None and (not args.report.strip() or Path(args.report).is_dir()):
        parser.error(f"--report: {args.report!r} is not a file path; give one such as verdict.json")
    if args.report is not None:
        from pytest_eagle3.verdict.setting_values import unwritable

        problem = unwritable(Path(args.report))
        if problem is not None:
            parser.error(f"--report: {args.report} cannot be written: {problem}")


def _matrix(parser: argparse.ArgumentParser, readme: Path | None, markdown: bool = False) -> int:
    from pytest_eagle3.probes.record import probes_markdown
    from pytest_eagle3.verdict import confirmation
    from pytest_eagle3.verdict.matrix import (
        END,
        FORMATS_END,
        FORMATS_START,
        PROBES_END,
        PROBES_START,
        START,
        render_formats,
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
    blocks = ((START, END, render_matrix), (PROBES_START, PROBES_END, probes_markdown),
              (confirmation.START, confirmation.END, confirmation.confirmation_markdown),
              (FORMATS_START, FORMATS_END, render_formats))
    text = readme.read_text(encoding="utf-8")
    present = [(start, end, render) for start, end, render in blocks if start in text and end in text]
    if not present:
        markers = ", ".join(f"{start.strip()} ... {end}" for start, end, _ in blocks)
        parser.error(f"--readme: {readme}: no generated block to replace (needs one of {markers})")
    for start, end, render in present:
        text = splice(text, render(), start, end)
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


def _target_model(parser: argparse.ArgumentParser, target: str | None) -> Any:
    """The target's config, opened once (an unreadable one is a usage error naming it)."""
    if target is None:
        return None
    from pytest_eagle3.checkpoint import TargetModel

    model = TargetModel.open(target)
    if model.problem:
        parser.error(f"--target: {model.problem}")
    return model


def _plan(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.progress import step
    from pytest_eagle3.repair.plan_text import render_plan
    from pytest_eagle3.shell.cli_hub import pinned
    from pytest_eagle3.shell.progress import on_stderr
    from pytest_eagle3.shell.terminal import stream_width, wrap
    from pytest_eagle3.verdict import TargetSide, pipeline_for

    settings = settings_of(parser, args, engines=args.engine)
    _target_model(parser, settings.target)
    draft = pinned(parser, "DRAFT", args.draft, settings.download_weights) or args.draft
    if not draft.startswith("hf://") and not Path(draft).exists():
        from pytest_eagle3.verdict.setting_values import absent

        parser.error(f"DRAFT: {draft} {absent(draft)}")
    pipeline, side = pipeline_for(settings), TargetSide(settings.target, settings.hidden_states)
    ckpt = Checkpoint.open(draft)
    if args.json:
        with on_stderr(), step(f"judging {draft}"):
            data = _report(pipeline, ckpt, side).to_json()
        rows = [row for c in data["checkpoints"] for row in c["engines"] if row["engine"] != "any"]
        print(json.dumps(rows[0] if len(rows) == 1 else rows, indent=2))
        return 0
    problems = ckpt.problems + ([ckpt.config_problem] if ckpt.config_problem else [])
    if problems:
        print(f"plan: {draft} cannot be read: " + "; ".join(problems), file=sys.stderr)
        return 1
    with on_stderr(), step(f"judging {draft}"):
        judged = _report(pipeline, ckpt, side).checkpoints[ckpt.path]
        texts = [(f"load plan, {engine.label}: {engine.unread}" if engine.unread  # no rules of its own to plan by
                  else render_plan(ckpt, pipeline.forecast(ckpt, engine, side).plan))
                 + "\n" + _verdict_line(judged.row(engine.spec)) for engine in settings.engines]
    width = stream_width(sys.stdout)
    print("\n".join(part for line in "\n\n".join(texts).splitlines() for part in wrap(line, width)))
    return 0


def _verdict_line(row: RowWord) -> str:
    """The row's verdict as ``check`` reports it, and what it rests without."""
    from pytest_eagle3.verdict.judgement import MEASURE_WITH
    from pytest_eagle3.verdict.report import shown

    line = f"verdict:              {shown(row.word)}"
    reasons = dict(row.not_run)
    if row.failing:
        line += f": failing {', '.join(row.failing)}"
    elif row.not_judged:
        line += "; not judged: " + "; ".join(f"{c} ({reasons.get(c, 'not run')})" for c in row.not_judged)
    elif row.unmeasured:
        line += f"; not measured: {', '.join(row.unmeasured)} (measure with {MEASURE_WITH})"
    return line


def _report(pipeline: Any, ckpt: Any, side: Any) -> Collector:
    """The report of the pipeline's judgements of ``ckpt`` (exactly what ``pytest --eagle3-report`` reports)."""
    from pytest_eagle3.verdict.report import Collector
    from pytest_eagle3.verdict.rows import judgement

    engines = pipeline.settings.engines
    collector = Collector(target=side.path, engines=[e.spec for e in engines])
    collector.expect((ckpt.path,))
    if not side.given:
        collector.name_target(ckpt.path, pipeline.named_target(ckpt))
    for engine in (None, *engines):
        collector.add_judgement(judgement(pipeline, ckpt, engine, side))
    return collector


def _sweep(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import time

    from pytest_eagle3.progress import step, tick
    from pytest_eagle3.shell.progress import on_stderr
    from pytest_eagle3.shell.terminal import fit_table, stream_width
    from pytest_eagle3.verdict import TargetSide, pipeline_for
    from pytest_eagle3.verdict.setting_values import unwritable
    from pytest_eagle3.verdict.sweep import SweepInputError, checkpoints_from, run_sweep, table_rows, write

    if args.out.exists():
        parser.error(f"--out: {args.out} already exists; sweep never overwrites (choose a new folder)")
    problem = unwritable(args.out / "sweep.json")
    if problem is not None:
        parser.error(f"--out: {args.out} cannot be written: {problem}")
    settings = settings_of(parser, args, engines=args.engine)
    if settings.target is None:
        parser.error("--target: give the target model's directory (or its config.json with --hidden-states)")
    _target_model(parser, settings.target)
    try:
        paths = checkpoints_from(args.checkpoints, settings.download_weights)
    except SweepInputError as exc:
        parser.error(f"CKPT: {exc}")
    start = time.monotonic()
    pipeline = pipeline_for(settings)
    with on_stderr(), step("sweep"):
        result = run_sweep(paths, settings.engines, TargetSide(settings.target, settings.hidden_states), pipeline,
                           progress=lambda done, total: tick(f"{done}/{total} checkpoints"))
    _say("\n".join(write(result, args.out)))
    print("\n".join(fit_table(table_rows(result), stream_width(sys.stdout))))
    _say(f"sweep: {plural(len(paths), 'checkpoint')} x {plural(len(settings.engines), 'engine version')} in "
          f"{time.monotonic() - start:.0f} s, {result.target_runs} target run{'s' if result.target_runs != 1 else ''}")
    for engine, best in result.best().items():
        _say(f"best for {engine}: {best.path if best is not None else result.why_no_best(engine)}")
    tripped = result.gate(args.fail_on)
    for line in tripped:
        _say(f"sweep fails (--fail-on={args.fail_on}): {line}")
    return 1 if tripped else 0


def _fix(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from pytest_eagle3.shell.progress import on_stderr

    with on_stderr():  # the measurement, the predictions and the proof say how far they are
        return _fix_steps(parser, args)


def _fix_steps(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import dataclasses

    from pytest_eagle3.knowledge.llamacpp_builds import CONVERT_COMMAND
    from pytest_eagle3.progress import step
    from pytest_eagle3.repair.fix import check_command, copy_flag, fix, prove, render
    from pytest_eagle3.repair.prediction import Measurement, predicted_lines
    from pytest_eagle3.repair.record import RepairRefused
    from pytest_eagle3.shell.cli_hub import config_only, local
    from pytest_eagle3.verdict import TargetSide, pipeline_for
    from pytest_eagle3.verdict.setting_values import SettingError
    from pytest_eagle3.verdict.settings import engines as engine_versions

    settings = settings_of(parser, args, engines=args.to, engines_flag="--to")
    engines = list(settings.engines)
    unread = [engine.unread for engine in engines if engine.unread]
    if unread:  # no rules of its own to repair by: a copy written by another release's rules would be a guess
        parser.error(f"--to: {unread[0]}; fix writes no copy for a release it has not read")
    prefer = None
    if args.prefer:
        try:
            chosen = engine_versions("--prefer", args.prefer)
        except SettingError as exc:
            parser.error(str(exc))
        if len(chosen) != 1:
            parser.error("--prefer: name one engine version as ENGINE==VER")
        prefer = chosen[0].spec
        if prefer not in {e.spec for e in engines}:
            parser.error(f"--prefer: {prefer} is not one of --to {args.to}")
    target = config_only(parser, "--target", settings.target, settings.download_weights)
    settings = dataclasses.replace(settings, target=target)
    _target_model(parser, target)
    dump = settings.hidden_states
    draft = Path(local(parser, "DRAFT", args.draft, "fix writes a copy of every tensor"))
    if not draft.exists():
        from pytest_eagle3.verdict.setting_values import absent

        parser.error(f"DRAFT: {draft} {absent(draft)}")
    # the measurement needs the target's weights or a dump of its side: a config.json alone gives layer counts only
    measurement = (Measurement(target, dump, settings) if target and (dump or Path(target).is_dir()) else None)
    with step("measuring the training layers"):
        trained = measurement.trained(draft, settings.aux_convention) if measurement else None
    resolved = str(Path(target).resolve()) if target else None
    try:
        solution, out = fix(draft, args.out, engines, resolved, settings.aux_convention, args.force, prefer,
                            trained, measurement.pipeline if measurement else None)
    except RepairRefused as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    except (FileExistsError, OSError) as exc:
        print(f"fix: {exc}", file=sys.stderr)
        return 1
    _say("\n".join(render(solution, out)))
    if measurement is not None and trained is None and measurement.undecided_search:
        _say(f"  layers not measured: no layer set beats the config's ids by more than the noise "
             f"({measurement.undecided_search})")
    served = [e for e in engines if e.spec not in solution.not_served]
    if measurement is not None:
        _say("\n".join(predicted_lines(measurement, draft, out, served, settings.aux_convention,
                                       solution.convention, solution.trained)))
    # the copy judged as check would judge it: its own convention, the served engines, the target run shared
    proving = dataclasses.replace(settings, engines=tuple(served), aux_convention=solution.convention, target=resolved)
    proof = prove(out, served, pipeline_for(proving, measurement.session if measurement else None),
                  TargetSide(resolved, dump))
    if not proof.passed:
        _say(f"proof FAILED: the contracts do not pass on {out} for {', '.join(e.spec for e in served)}:",
             file=sys.stderr)
        _say(proof.output, file=sys.stderr)
        return 1
    _say("\n".join(proof.lines(out, ", ".join(e.spec for e in served))))
    again = dataclasses.replace(settings, checkpoints=(str(out),), engines=tuple(served),
                                aux_convention=copy_flag(out, solution.convention), engine_args=None)
    _say(f"  check again: {check_command(out, again)}")
    if any(e.kind.serving.converts_checkpoint for e in served):
        gguf = out.with_name(out.name + ".gguf")
        _say(f"  convert for llama.cpp (its own converter, from the llama.cpp tree of that build): "
              f"{CONVERT_COMMAND.format(draft=out, target=target or 'TARGET', gguf=gguf)}")
    # as check exits on the copy (a NOT JUDGED row fails only under --not-judged=fail), and 1 for an engine not served
    return 1 if solution.not_served or (proof.not_judged and settings.not_judged_fails) else 0


def _say(text: str, file: TextIO | None = None) -> None:
    """Print ``text`` (on stdout, or ``file``), each line wrapped to the terminal's width (whole into a pipe)."""
    from pytest_eagle3.shell.terminal import stream_width, wrap

    stream = file if file is not None else sys.stdout
    width = stream_width(stream)
    print("\n".join(part for line in text.splitlines() for part in wrap(line, width)), file=stream)


if __name__ == "__main__":
    sys.exit(main())
