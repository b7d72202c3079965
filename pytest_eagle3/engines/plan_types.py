"""The load plan: what one engine version will do with one checkpoint (assembled in ``plan``).

Every type here is frozen: a plan, once built, is the same for every contract that reads it, whatever
the order they run in. Each :class:`Issue` is a finding filed under the plan area that judges it (the
engine contract ``engine.<area>``), marked ``refused`` (the engine will not start) or ``loss`` (it
starts and acceptance suffers). Each area computes a :class:`Filed` (its issues, notes and unknowns)
with a :class:`Filing` of its own; ``load_plan`` joins them in area order. :func:`root_causes` (the last
section) orders a plan's failing findings as root causes and the consequences each explains.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.issue import LOSS, REFUSED, Issue
from pytest_eagle3.findings import PASSES, UNJUDGED, Finding
from pytest_eagle3.knowledge.snapshot import AuxField, CaptureSupport, EngineVersion, RecordedCost
from pytest_eagle3.producers.habits import RopeKey
from pytest_eagle3.words import plural


def describe_inputs(indices: Sequence[int] | None) -> str:
    """Layer-input indices as the outputs they are: 'outputs of layers [1, 3, 4]'."""
    if indices is None:
        return "unknown"
    parts = []
    outputs = [j - 1 for j in indices if j > 0]
    if 0 in indices:
        parts.append("the embeddings")
    if outputs:
        parts.append(f"outputs of layers {outputs}")
    return " and ".join(parts) or "nothing"


LOADS = "loads"
LOADS_WITH_LOSS = "loads with loss"


#: Why an assumed loss is not priced: without the target's weights, or not modelled by the simulation.
NOT_PRICED = "not priced without the target's weights"
UNPRICEABLE = "the simulation cannot price it"
#: How to price it (the finding's details).
HOW_TO_PRICE = ("pass --eagle3-target=DIR with the target's weights: engine.acceptance runs the draft with and "
                "without the deviation and prices it")


@dataclass(frozen=True)
class Assumed:
    """A deviation resting on a producer habit whose cost the static plan cannot price. Undecided ones (is the
    habit known to apply?) are reported as assumed (``plan.unknown``, per --eagle3-unknown); known ones
    (``known``) are a note until priced. Never a failure until priced: by the simulation with the target's
    weights (``verdict.settle.price_deviations``; ``deviation`` names the simulated feed field that differs,
    ``reference.simulate.Feed``, None where the simulation cannot model it), or by a cost measured once
    (``recorded``, ``knowledge.costs``; ``verdict.settle.price_recorded``)."""

    area: str
    finding: Finding
    deviation: str | None
    #: Why it is not priced where the default reason does not hold (a draft too weak to price with).
    why: str = ""
    #: The habit is known to apply (engines.habit DIFFERS): unpriced, a note naming it, never a failure.
    known: bool = False
    #: A cost measured once for this deviation whose precondition this draft meets (knowledge.costs).
    recorded: RecordedCost | None = None
    #: What it may cost, in words, where nothing prices it (the note's middle part).
    may_cost: str = ""

    def note(self) -> str:
        """The note of a known difference nobody priced: what differs, what it may cost, how to measure it."""
        head = self.finding.summary.removeprefix("assumed: ")
        why = self.why or (NOT_PRICED if self.deviation is not None else UNPRICEABLE)
        cost = f"; it may cost acceptance: {self.may_cost}" if self.may_cost else "; it may cost acceptance"
        how = f"; to measure it, {HOW_TO_PRICE}" if self.deviation is not None and not self.why else ""
        return f"note [{self.finding.code}], not priced ({why}): {head}{cost}{how}"

    def reported(self) -> Finding:
        """The finding as an assumption: 'assumed (not priced without the target's weights): ...'."""
        head = self.finding.summary.removeprefix("assumed: ")
        why = self.why or (NOT_PRICED if self.deviation is not None else UNPRICEABLE)
        details = (HOW_TO_PRICE,) if self.deviation is not None and not self.why else ()
        readings = self.finding.readings or (
            (f"trained with the habit ({self.finding.code}), its cost unpriced", UNJUDGED),
            ("trained as the engine serves it (the habit did not apply)", PASSES))
        return dataclasses.replace(self.finding, summary=f"assumed ({why}): {head}",
                                   details=(*details, *self.finding.details), readings=readings)


@dataclass(frozen=True)
class Filed:
    """What one area files: its issues, notes, what the profiles cannot judge (per contract area), and the
    losses that rest on an unpriced assumption."""

    issues: tuple[Issue, ...] = ()
    notes: tuple[str, ...] = ()
    unknown: tuple[tuple[str, Finding], ...] = ()
    assumed: tuple[Assumed, ...] = ()

    def __add__(self, other: Filed) -> Filed:
        return Filed(self.issues + other.issues, self.notes + other.notes, self.unknown + other.unknown,
                     self.assumed + other.assumed)


class Filing:
    """An area's own notebook while it computes (never shared): ``filed()`` gives the frozen result."""

    def __init__(self) -> None:
        self._issues: list[Issue] = []
        self._notes: list[str] = []
        self._unknown: list[tuple[str, Finding]] = []
        self._assumed: list[Assumed] = []

    def refuse(self, area: str, finding: Finding) -> None:
        """File an issue that makes the engine refuse the draft."""
        self._issues.append(Issue(area, REFUSED, finding))

    def lose(self, area: str, finding: Finding) -> None:
        """File an issue the engine loads past, losing something."""
        self._issues.append(Issue(area, LOSS, finding))

    def note(self, text: str) -> None:
        """File a note for the plan's description."""
        self._notes.append(text)

    def unknown(self, area: str, finding: Finding) -> None:
        """File what this area cannot decide (not modelled)."""
        self._unknown.append((area, finding))

    def assume(self, area: str, finding: Finding, deviation: str | None, known: bool = False,
               recorded: RecordedCost | None = None, may_cost: str = "") -> None:
        """A deviation that rests on an assumption whose cost is not priced here (:class:`Assumed`); ``known``:
        the habit is known to apply, so it is a note until priced (``recorded``: a cost measured once)."""
        self._assumed.append(Assumed(area, finding, deviation, known=known, recorded=recorded, may_cost=may_cost))

    def filed(self) -> Filed:
        """Everything filed, frozen."""
        return Filed(tuple(self._issues), tuple(self._notes), tuple(self._unknown), tuple(self._assumed))


@dataclass(frozen=True)
class Measured:
    """Training layer inputs (and embedding) settled by the reference measurement, with the words saying how."""

    inputs: tuple[int, ...]
    words: str
    embed: str | None = None  # "draft" / "target": whose embed_tokens the draft was trained with


@dataclass(frozen=True)
class AuxPlan:
    """Aux hidden states: what the target captures versus what the draft was trained on."""

    field: AuxField | None = None
    configured: tuple[int, ...] | None = None
    transform: str = "default"
    requested: tuple[int, ...] | None = None
    captured: tuple[int, ...] | None = None
    never_fire: tuple[int, ...] = ()
    trained: tuple[int, ...] | None = None
    trained_from: str = ""
    basis: str = "assumed"
    fix_edit: tuple[str, tuple[int, ...]] | None = None
    other_mode: tuple[int, ...] | None = None
    graph_mode: tuple[int, ...] | None = None
    target_layers: int | None = None
    support: CaptureSupport | None = None
    #: What the target's capture loop reaches, in words, when a requested index lies outside it.
    reach: str = ""
    #: The producer habit a pass rests on, in words, with how to pin it (engines.habit; empty when none).
    assumed: str = ""


@dataclass(frozen=True)
class FcPlan:
    """The concatenation that reaches fc, and what fc does with it."""

    expects_states: int | None = None
    expects_width: int | None = None
    checkpoint_width: int | None = None
    states_sent: int | None = None
    width_sent: int | None = None
    action: str = "unknown"

    @property
    def sent_words(self) -> str:
        """The width the target sends, or why it is unknown (never "None" on screen)."""
        return f"width sent {self.width_sent}" if self.width_sent is not None else \
            "width sent unknown without the target's config"

    @staticmethod
    def known(width: int | None) -> str:
        """A width, or "unknown"."""
        return "unknown" if width is None else str(width)


def _reported(assumed: Sequence[Assumed], area: str) -> Finding:
    """The unknown of ``area``: its first assumed loss, naming the others in its details."""
    mine = [a for a in assumed if a.area == area]
    first = mine[0].reported()
    more = tuple(f"also {a.reported().summary} [{a.finding.code}]" for a in mine[1:])
    return dataclasses.replace(first, details=(*more, *first.details)) if more else first


def _frozen(value: Mapping[Any, Any] | None) -> FrozenDict[Any, Any]:
    return value if isinstance(value, FrozenDict) else FrozenDict(value or {})


@dataclass(frozen=True)
class LoadPlan:
    """What one engine version will do with one checkpoint (frozen: a proven fix is a new plan)."""

    engine: EngineVersion
    draft_class: str | None
    #: The engine version as the verdicts name it (``vLLM 0.33.0``; read or learned), from its snapshot.
    label: str
    parameters: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenDict)
    #: Every parameter the engine's draft class builds (empty where the class is not simulated).
    built: tuple[str, ...] = ()
    #: Their shapes as the class allocates them (engines.param_shapes), where the config gives the sizes.
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=FrozenDict)
    dropped: Mapping[str, str] = field(default_factory=FrozenDict)
    uninitialised: tuple[str, ...] = ()
    draft_to_target: tuple[int, ...] | None = None
    map_reading: str = ""
    aux: AuxPlan = field(default_factory=AuxPlan)
    fc: FcPlan = field(default_factory=FcPlan)
    norms: Mapping[str, bool] = field(default_factory=FrozenDict)
    embed_tokens: str = "unknown"
    lm_head: str = "unknown"
    draft_layers: int | None = None
    measured: Measured | None = None
    norm_edits: Mapping[str, bool] = field(default_factory=FrozenDict)
    #: The rope the engine builds for the draft (producers.Rope.key), and the config edit that gives it
    #: the rope its producer trained with where that differs (engines.producer).
    draft_rope: RopeKey | None = None
    rope_edit: Mapping[str, Any] = field(default_factory=FrozenDict)
    issues: tuple[Issue, ...] = ()
    notes: tuple[str, ...] = ()
    #: KV-cache compatibility with the target (engines.runtime), None without a target.
    runtime: Any = None
    #: Per contract area, what the profiles cannot judge (reported per --eagle3-unknown).
    unknown: Mapping[str, Finding] = field(default_factory=FrozenDict)
    #: Areas whose config fixes were proven by simulation where the plan was built (verdict.settle.settle).
    proven: frozenset[str] = frozenset()
    #: The 'uninitialised' parameters the simulation showed harmless, in words (verdict.settle.settle).
    harmless: str | None = None
    #: Losses resting on an assumption not priced (yet); each is reported in ``unknown`` until priced.
    assumed: tuple[Assumed, ...] = ()
    #: The assumed losses the simulation priced, in words ('rope ...: priced, costs 0.42').
    priced: tuple[str, ...] = ()
    #: Per area, the producer habit its pass rests on, in words, with how to pin it (engines.habit).
    assumptions: Mapping[str, str] = field(default_factory=FrozenDict)

    def __post_init__(self) -> None:
        for name in ("parameters", "shapes", "dropped", "norms", "norm_edits", "rope_edit", "unknown", "assumptions"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        for name in ("built", "uninitialised", "issues", "notes", "assumed", "priced"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "proven", frozenset(self.proven))

    def with_assumed(self, assumed: Sequence[Assumed]) -> LoadPlan:
        """This plan whose assumed deviations are ``assumed``: each area's first undecided one reported in
        ``unknown`` (where the area has no other unknown), each known one (``known``) a note (:meth:`notes_for`),
        never a failure; an area whose assumptions are all priced reported no more."""
        open_ = [a for a in self.assumed if not a.known]
        ours = {_reported(open_, a.area) for a in open_}
        unknown = {area: f for area, f in self.unknown.items() if f not in ours}
        undecided = [a for a in assumed if not a.known]
        for item in undecided:
            unknown.setdefault(item.area, _reported(undecided, item.area))
        return dataclasses.replace(self, assumed=tuple(assumed), unknown=unknown)

    def notes_for(self, area: str) -> tuple[str, ...]:
        """The notes of ``area``'s known differences nobody priced (what differs, what it may cost, how to price it)."""
        return tuple(a.note() for a in self.assumed if a.known and a.area == area)

    @property
    def outcome(self) -> str:
        """"refused", "loads with loss" or "loads": the worst issue filed."""
        kinds = {i.kind for i in self.issues}
        return REFUSED if REFUSED in kinds else LOADS_WITH_LOSS if LOSS in kinds else LOADS

    @property
    def causes(self) -> tuple[Cause, ...]:
        """The failing findings as root causes first, each naming the findings it explains (:func:`root_causes`)."""
        return root_causes(self.issues)

    @property
    def root_cause(self) -> Cause | None:
        """The first root cause (the area a fix should start with), None when nothing fails."""
        causes = self.causes
        return causes[0] if causes else None

    def issues_for(self, area: str) -> list[Finding]:
        """The findings one area filed."""
        return [i.finding for i in self.issues if i.area == area]

    def describe(self) -> list[str]:
        """The plan in a few lines, for failure messages."""
        lines = [f"load plan, {self.label} ({self.draft_class or 'no draft class'}): {self.outcome}"]
        loaded = sum(len(v) for v in self.parameters.values())
        lines.append(f"  tensors -> parameters: {loaded} loaded into {plural(len(self.parameters), 'parameter')}; "
                     f"dropped {len(self.dropped)}; uninitialised {len(self.uninitialised)}")
        if self.aux.captured is not None or self.aux.requested is not None:
            lines.append(f"  target feeds: {describe_inputs(self.aux.captured)}; "
                         f"draft trained on: {describe_inputs(self.aux.trained)}")
        if self.fc.action != "unknown":
            fc = self.fc
            own = f", the checkpoint's fc takes {fc.checkpoint_width}" if fc.checkpoint_width not in (
                None, fc.expects_width) else ""
            lines.append(f"  fc: {fc.action} ({fc.sent_words}, the engine builds fc for "
                         f"{fc.known(fc.expects_width)}{own})")
        if self.norms:
            lines.append("  norms applied: " + ", ".join(f"{k}={v}" for k, v in self.norms.items()))
        lines.append(f"  embed_tokens: {self.embed_tokens}; lm_head: {self.lm_head}; map: {self.map_reading}")
        return lines

    def as_probe_dict(self) -> dict[str, Any]:
        """The plan in the probes' JSON shape (``pytest-eagle3/probe/1``), for comparison."""
        return {
            "engine": self.engine.engine,
            "version": str(self.engine.version),
            "draft_class": self.draft_class,
            "outcome": "refused" if self.outcome == REFUSED else "loaded",
            "parameters": {k: {"sources": list(v)} for k, v in self.parameters.items()},
            "uninitialised": list(self.uninitialised),
            "dropped": sorted(self.dropped),
            "draft_to_target": list(self.draft_to_target) if self.draft_to_target is not None else None,
            "aux_layer_ids": list(self.aux.requested) if self.aux.requested is not None else None,
            "captured_inputs_of": list(self.aux.captured) if self.aux.captured is not None else None,
            "aux_layer_ids_other_mode": list(self.aux.other_mode) if self.aux.other_mode is not None else None,
            "fc_input_width": self.fc.width_sent,
            "fc_applied": {"fc": True, "bypassed": False}.get(self.fc.action),
            "norms": dict(self.norms),
            "embed_tokens": self.embed_tokens if self.embed_tokens in ("draft", "target") else None,
            "lm_head": self.lm_head if self.lm_head in ("draft", "target") else None,
            "draft_layers": self.draft_layers,
        }


# -- Root causes: which failing area is the cause and which are its consequences, as data the report renders.
#    Several areas can fail for one reason: a target class that captures no aux states also starves fc; an engine that
#    builds one draft layer also has no parameter for the second layer's tensors. Each :class:`CauseRule` says which
#    findings (area, codes) make which others consequences, and why (the engine behaviour behind it). Root causes are
#    listed first: a refusal (the engine will not start) before a loss, then in :data:`PRECEDENCE`.

#: Every code of an area.
ANY: frozenset[str] = frozenset()
#: Area order among independent root causes: what decides whether the draft runs at all comes first.
PRECEDENCE = ("architecture", "layers", "aux_layers", "keys", "geometry", "mlp", "fc", "vocab", "norms", "embeddings",
              "producer", "runtime", "serving")
NO_CAPTURE = frozenset({"target-no-capture", "target-silent-no-capture", "target-not-allowed"})
#: The findings an engine meets before any other refusal: vLLM < 0.17 refuses a target outside its allowlist while it
#: validates the speculative config (config/speculative.py, 0.13.0 lines 621-631; 0.10.0 config.py lines 3027-3031,
#: in the validator that runs after the draft's ModelConfig passed its registry check, which the Transformers
#: fallback class config.py lines 720-733 appends always lets pass), before it builds the draft or the target class
#: whose capture support is checked at load (v1/worker/gpu_model_runner.py).
FIRST_MET = ("target-not-allowed",)


@dataclass(frozen=True)
class CauseRule:
    """A finding of ``area`` with one of ``codes`` (ANY: every code) makes the ``consequences`` findings its own."""

    area: str
    codes: frozenset[str]
    consequences: tuple[tuple[str, frozenset[str]], ...]
    why: str
    #: Words the cause's finding must name, and the consequence's one of (empty: any finding).
    subject: tuple[str, tuple[str, ...]] = ("", ())

    def causes(self, issue: Issue) -> bool:
        """Whether ``issue`` is this rule's cause: its area and code, naming the rule's subject."""
        return issue.area == self.area and (not self.codes or issue.finding.code in self.codes) and \
            _names(issue, (self.subject[0],))

    def explains(self, issue: Issue) -> bool:
        """Whether ``issue`` is one of the consequences this rule's cause explains."""
        return _names(issue, self.subject[1]) and any(
            issue.area == area and (not codes or issue.finding.code in codes) for area, codes in self.consequences)


def _names(issue: Issue, words: tuple[str, ...]) -> bool:
    """Whether the finding's summary or evidence names one of ``words`` (any finding, for none or '')."""
    wanted = [w for w in words if w]
    text = issue.finding.summary + " ".join(e.key + e.obtained for e in issue.finding.evidence)
    return not wanted or any(w in text for w in wanted)


#: What each root cause explains.
RULES: tuple[CauseRule, ...] = (
    CauseRule("aux_layers", frozenset({"target-not-allowed"}), (("aux_layers", ANY), ("fc", ANY)),
              "the engine stops while it validates the speculative config, before it builds the target class"),
    CauseRule("aux_layers", NO_CAPTURE, (("fc", ANY), ("aux_layers", ANY)),
              "the target class captures no aux states: fc gets one hidden state, and no layer fed is the trained one"),
    CauseRule("layers", frozenset({"multi-layer"}), (("keys", ANY),),
              "the engine builds fewer draft layers than the checkpoint has: their tensors find no parameter"),
    CauseRule("aux_layers", frozenset({"aux-index-past-end", "aux-index-zero", "aux-layers", "aux-ids-missing",
                                       "aux-no-default"}),
              (("fc", frozenset({"fc-width", "fc-bypassed", "graph-width", "graph-aux-count"})),),
              "an aux id that never fires: fewer states reach fc than it was trained on"),
    CauseRule("keys", frozenset({"key-refused", "dropped"}), (("norms", frozenset({"norm-flag"})),),
              "the draft class predates EAGLE-3.1: it has no fc_norm module, and reads neither fc_norm nor norm_output",
              subject=("fc_norm", ("fc_norm", "norm_output"))),
    CauseRule("keys", frozenset({"key-refused"}), (("keys", frozenset({"uninitialised", "not-initialised"})),),
              "the loader stops at the refused tensor: what follows it is never loaded"),
)


@dataclass(frozen=True)
class Cause:
    """A root cause (area, finding code, summary) and the findings it explains, as (area, code)."""

    area: str
    code: str
    summary: str
    refused: bool
    consequences: tuple[tuple[str, str], ...] = ()
    why: str = ""
    #: How many findings of this very area and code it stands for (one per tensor, say).
    count: int = 1


def _rank(issue: Issue) -> tuple[int, int, int]:
    area = PRECEDENCE.index(issue.area) if issue.area in PRECEDENCE else len(PRECEDENCE)
    first = FIRST_MET.index(issue.finding.code) if issue.finding.code in FIRST_MET else len(FIRST_MET)
    return (0 if issue.kind == REFUSED else 1, first, area)


def _explains(cause: Issue, issue: Issue) -> bool:
    rule = next((r for r in RULES if r.causes(cause)), None)
    return rule is not None and rule.explains(issue)


def root_causes(issues: Sequence[Issue]) -> tuple[Cause, ...]:
    """The plan's issues as root causes first, each with the issues it explains (none left unexplained twice).

    An issue another one's rule explains comes after it even where it ranks first on its own (a shape crash at fc
    follows from a target that silently captures nothing, though only the crash is a refusal)."""
    explained_by_other = {id(i) for i in issues for j in issues if j is not i and _explains(j, i)
                          and not _explains(i, j)}
    ordered = sorted(issues, key=lambda i: (id(i) in explained_by_other, *_rank(i)))
    explained: set[int] = set()
    causes = []
    for issue in ordered:
        if id(issue) in explained:
            continue
        rule = next((r for r in RULES if r.causes(issue)), None)
        same = [i for i in ordered if id(i) not in explained and (i.area, i.finding.code) == (issue.area, issue.finding.code)]
        mine = [i for i in ordered if id(i) not in explained and i not in same and rule is not None and rule.explains(i)]
        explained.update(id(i) for i in (*same, *mine))
        causes.append(Cause(issue.area, issue.finding.code, issue.finding.summary, issue.kind == REFUSED,
                            tuple(dict.fromkeys((i.area, i.finding.code) for i in mine)), rule.why if rule and mine else "",
                            len(same)))
    return tuple(causes)
