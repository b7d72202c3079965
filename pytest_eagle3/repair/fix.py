"""``fix``: solve the copy, write it safely, then prove it with the contracts of the chosen engines."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3 import progress
from pytest_eagle3.knowledge.launch_settings import engine_args
from pytest_eagle3.repair.record import RepairRefused
from pytest_eagle3.repair.solve import Solution, Trained, solve
from pytest_eagle3.repair.writer import RECORD, write_copy
from pytest_eagle3.words import plural

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.producers.formats import DetectedFormat
    from pytest_eagle3.verdict import Pipeline, RunSettings, TargetSide
    from pytest_eagle3.verdict.judgement import ContractOutcome

SCHEMA = "pytest-eagle3/fix/1"


@dataclass(frozen=True)
class Proof:
    """The contracts' verdict on the copy: its judgement per engine version, as ``check`` would report it."""

    #: (contract, engine version or "any", failure line) of every failing contract.
    failures: tuple[tuple[str, str, str], ...]
    #: The row's verdict per engine version ("any" first), as the table shows it.
    verdicts: tuple[tuple[str, str], ...]
    #: (contract, engine version or "any", what decides it) of every contract the re-check could not judge.
    undecided: tuple[tuple[str, str, str], ...] = ()
    #: The measuring contracts left unmeasured for want of the target's weights, each once.
    unmeasured: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether the contracts passed on the fixed copy."""
        return not self.failures

    @property
    def proven(self) -> bool:
        """Every row of the re-check reads ``PASS``: the rules pass and the acceptance was measured. A row that
        reads ``PASS (static)`` passed the rules only; a NOT JUDGED or partial row proves nothing."""
        return self.passed and all(verdict == "pass" for _, verdict in self.verdicts)

    @property
    def rules_pass(self) -> bool:
        """Every rule ran and passed; only the measurement with the target's weights is missing (``PASS (static)``)."""
        from pytest_eagle3.verdict.report import STATIC

        return self.passed and all(verdict in ("pass", STATIC) for _, verdict in self.verdicts)

    @property
    def not_judged(self) -> bool:
        """Some row reads NOT JUDGED (``--not-judged=fail`` makes ``fix`` exit 1, as it makes ``check``)."""
        from pytest_eagle3.verdict.report import NOT_JUDGED

        return any(verdict == NOT_JUDGED for _, verdict in self.verdicts)

    @property
    def words(self) -> str:
        """Each row's verdict as the table shows it: ``any PASS (static), vllm==0.33.0 PASS (static)``."""
        from pytest_eagle3.verdict.report import shown

        return ", ".join(f"{spec} {shown(verdict)}" for spec, verdict in self.verdicts)

    @property
    def output(self) -> str:
        """What failed, one line per contract and engine version."""
        return "\n".join(f"  {contract} ({engine}): {line}" for contract, engine, line in self.failures)

    def lines(self, out: Path, engines: str) -> list[str]:
        """What the re-check proves, in words: ``proof:`` only where every row reads PASS (the acceptance measured);
        ``the rules pass`` where only the measurement is missing, naming what would prove it; ``not proven``
        otherwise, each undecided contract with what decides it."""
        if self.proven:
            return [f"proof: the contracts pass on {out} for {engines}, the acceptance measured: {self.words}"]
        unmeasured = ([f"  not measured: {', '.join(self.unmeasured)}: the acceptance and the layers the draft was "
                       f"trained on; the target's weights prove them: {MEASURE_WITH}"] if self.unmeasured else [])
        if self.rules_pass:
            return [f"the rules pass on {out} for {engines}: {self.words}", *unmeasured]
        said: dict[str, list[str]] = {}  # one line per reason, naming every contract it holds back
        for contract, engine, what in self.undecided:
            said.setdefault(what, []).append(f"{contract} ({engine})")
        return [f"not proven: no contract fails on {out}, but the re-check reads {self.words}:",
                *(f"  {', '.join(where)}: {what}" for what, where in said.items()), *unmeasured]


#: What measures the acceptance of a copy where only the target's config was given, in fix's own options.
MEASURE_WITH = ("--target DIR (the model directory, with its weights), or --hidden-states DUMP (a capture of its "
                "hidden states: python -m pytest_eagle3 capture TARGET DUMP)")


def _refuse_paths(source: Path, out: Path) -> None:
    src, dst = source.resolve(), out.resolve()
    if dst == src or dst.is_relative_to(src) or src.is_relative_to(dst):
        raise RepairRefused([f"OUT {out} overlaps the draft {source}: the source is never touched; choose another folder"])


def record_of(solution: Solution, source: Path, engines: Sequence[EngineVersion],
              producer: DetectedFormat | None = None) -> dict[str, Any]:
    """``OUT/eagle3-fix.json``: the source and its producer, the engines, every change and where each tensor came
    from. The producer, the copy's aux-id convention and its config's digest let a reader of the copy read it
    as its trainer wrote it (``checkpoint.draft.FIX_RECORD``)."""
    from pytest_eagle3.checkpoint.draft import config_digest

    return {
        "schema": SCHEMA,
        "source": str(source),
        "producer": producer.producer if producer is not None else None,
        "format_of_source": producer.label if producer is not None else None,
        "config_sha256": config_digest(solution.draft.config),
        "engines": [e.spec for e in engines],
        "not_served": solution.not_served,
        "training_layers": {"inputs": list(solution.trained.inputs) if solution.trained.inputs else None,
                            "from": solution.trained.words},
        "aux_convention_of_copy": solution.convention,
        "layout": solution.layout,
        "changes": [c.to_json() for c in solution.changes],
        # copied byte for byte from the named source tensor (or a row range of it)
        "tensors": {name: solution.draft.origin.get(name, name) for name in sorted(solution.draft.entries)},
        # computed in memory (a rewritten or rebuilt map), from the named source tensor
        "computed": {name: solution.draft.origin.get(name, name) for name in sorted(solution.draft.computed)},
    }


def prove(out: Path, engines: Sequence[EngineVersion], pipeline: Pipeline, side: TargetSide) -> Proof:
    """The judgement of every contract on ``out`` for ``engines`` (the copy read as its record says): the same rows
    ``check`` reports, computed by ``pipeline`` (its settings, the copy's convention; the target's run shared)."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.verdict.judgement import FAIL, NOT_MODELLED, NOT_RUN, UNMEASURED
    from pytest_eagle3.verdict.report import Collector
    from pytest_eagle3.verdict.rows import judgement

    ckpt = Checkpoint.open(out)
    with progress.step(f"proof: the contracts on {out} for {', '.join(e.spec for e in engines)}"):
        judgements = [judgement(pipeline, ckpt, None, side), *(judgement(pipeline, ckpt, e, side) for e in engines)]
    collector = Collector(target=side.path, engines=[e.spec for e in engines])
    for judged in judgements:
        collector.add_judgement(judged)
    row = collector.checkpoints[ckpt.path]
    failures = tuple((o.contract, j.spec, o.message) for j in judgements for o in j if o.status == FAIL)
    undecided = tuple((o.contract, j.spec, _decides(o)) for j in judgements for o in j
                      if o.status in (NOT_MODELLED, NOT_RUN))
    unmeasured = tuple(dict.fromkeys(o.contract for j in judgements for o in j if o.status == UNMEASURED))
    return Proof(failures, tuple((spec, row.engine_verdict(spec)) for spec in ("any", *row.engine_specs([]))),
                 undecided, unmeasured)


def _decides(outcome: ContractOutcome) -> str:
    """Why a contract could not judge the copy, and what decides it (its finding's fix) where one is named."""
    fixes = [f.fix for f in outcome.findings if f.fix]
    return f"{outcome.message}; decides: {fixes[0]}" if fixes else outcome.message


def check_command(out: Path, settings: RunSettings) -> str:
    """The command a user runs to check the copy again: the run's settings for the copy (``RunSettings.to_argv``),
    its engines' launch settings, the convention flag where the copy needs it."""
    words = ["pytest", *settings.to_argv()]
    words += [f"--eagle3-engine-args={launch}"] if (launch := engine_args(settings.engines)) else []
    return " ".join(shlex.quote(w) if any(c in w for c in " '\";[]") else w for w in words)


def copy_flag(out: Path, convention: str | None) -> str | None:
    """The convention a check of the copy must be told: None when the copy's format already implies it."""
    from pytest_eagle3.checkpoint import Checkpoint

    return None if Checkpoint.open(out).config.aux.convention == convention else convention


def tree_hash(path: Path) -> str:
    """A digest of every file under ``path`` (names and bytes), for before/after comparison."""
    digest = hashlib.sha256()
    for file in sorted(p for p in Path(path).rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def fix(source: Path, out: Path, engines: Sequence[EngineVersion], target: str | None = None,
        convention: str | None = None, force: bool = False, prefer: str | None = None,
        trained: Trained | None = None, pipeline: Pipeline | None = None) -> tuple[Solution, Path]:
    """Solve and write the copy (the proof is a separate step: :func:`prove`); ``pipeline`` judges the plans
    (the measurement's, when there is one)."""
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel

    source, out = Path(source), Path(out)
    _refuse_paths(source, out)
    if out.exists() and not force:
        raise FileExistsError(f"{out} already exists; fix never overwrites (pass --force to replace it)")
    ckpt = Checkpoint.open(source)
    model = TargetModel.open(target) if target else None
    solution = solve(ckpt, engines, model, convention, prefer, trained, pipeline)
    write_copy(solution.draft, out, record_of(solution, source, engines, ckpt.format), force)
    return solution, out


def render(solution: Solution, out: Path) -> list[str]:
    """What fix prints about the copy: one line per change, the engines served."""
    lines = [f"fixed copy written to {out} ({plural(len(solution.changes), 'change')}, recorded in {out / RECORD}):"]
    lines += [f"  {c.kind}: {c.what}" for c in solution.changes] or ["  no change needed: the draft loads as written"]
    lines.append(f"  training layer inputs: {list(solution.trained.inputs) if solution.trained.inputs else 'unknown'} "
                 f"({solution.trained.words})")
    for spec, why in solution.not_served.items():
        lines.append(f"  not served: {spec}: {why}")
    return lines


def save_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON to ``path``."""
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
