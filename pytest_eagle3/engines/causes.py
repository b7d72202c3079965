"""Which failing area is the root cause and which are its consequences, as data the report renders.

Several areas can fail for one reason: a target class that captures no aux states also starves fc; an engine that
builds one draft layer also has no parameter for the second layer's tensors. Each :class:`CauseRule` says which
findings (area, codes) make which others consequences, and why (the engine behaviour behind it). Root causes are
listed first: a refusal (the engine will not start) before a loss, then in :data:`PRECEDENCE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_eagle3.engines.issue import REFUSED, Issue

#: Every code of an area.
ANY: frozenset[str] = frozenset()
#: Area order among independent root causes: what decides whether the draft runs at all comes first.
PRECEDENCE = ("architecture", "layers", "aux_layers", "keys", "geometry", "mlp", "fc", "vocab", "norms", "embeddings",
              "producer", "runtime", "serving")
NO_CAPTURE = frozenset({"target-no-capture", "target-silent-no-capture", "target-not-allowed"})
#: Within an area, the finding an engine meets first: vLLM < 0.17 refuses a target outside its allowlist while it
#: validates the speculative config (config/speculative.py, 0.13.0 lines 621-631), before it builds the target class
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
    return (0 if issue.kind == REFUSED else 1, area, first)


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
