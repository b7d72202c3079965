"""``probe.load``: the installed engine's own loader on the user's checkpoint, judged against the static plan.

``judge_probe`` turns one probe result (``harness.SCHEMA``) and the load plan of the same engine
version into a :class:`ProbeVerdict`: what the engine did is the truth (the evidence ladder's "real
loader" rung); the plan is what the profiles said it would do. A refusal or a lossy load fails with
the engine's own words and says whether the plan predicted it; a plan that disagrees on any fact
fails as a wrong profile; a probe that did not run to an answer is no verdict at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_eagle3.engines.issue import LOSS, REFUSED
from pytest_eagle3.engines.plan_types import LOADS_WITH_LOSS, LoadPlan
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, EngineVersion
from pytest_eagle3.probes.compare import Difference, compare, cpu_backend_limit, losses, map_summary
from pytest_eagle3.probes.run import SCRIPTS
from pytest_eagle3.words import plural

AGREES = "agrees"
REFUSED_BY_ENGINE = "refused"
LOSSY = "loss"
DISAGREES = "disagrees"
PROBE_ERROR = "probe-error"
UNPLANNED = "unplanned"
#: Lines of the probe's stderr a "probe-error" quotes.
STDERR_LINES = 15
PROFILE_FIX = ("trust the engine's result for this version: the rows in pytest_eagle3/knowledge/ "
               "are wrong here (each names its source); correct the rule for this range, or report it with this output")


@dataclass(frozen=True)
class ProbeVerdict:
    """What the engine's loader did, how it compares with the plan, and the findings to fail or skip with."""

    status: str
    message: str
    findings: tuple[Finding, ...] = ()
    differences: tuple[Difference, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Whether the probe refused, lost something, or disagreed with the plan."""
        return self.status in (REFUSED_BY_ENGINE, LOSSY, DISAGREES)

    def to_json(self) -> dict[str, Any]:
        """The report's ``probe`` entry: the engine's facts next to the plan's, per fact that differs."""
        return {**self.facts, "status": self.status,
                "differences": [{"fact": d.fact, "plan": d.plan, "engine": d.engine} for d in self.differences]}


def judge_probe(probe: dict[str, Any], engine: EngineVersion, plan: LoadPlan | None, *,
                reduced_vocab: bool, python: str) -> ProbeVerdict:
    """The verdict on one probe of ``engine`` (installed in ``python``); ``plan`` is None outside the known range."""
    label = engine.label
    facts = _facts(probe, python, plan)
    if probe["outcome"] == PROBE_ERROR:
        return ProbeVerdict(PROBE_ERROR, "", (_probe_error(probe, engine, python),), facts=facts)
    limit = cpu_backend_limit(probe)
    if limit is not None:
        return ProbeVerdict(PROBE_ERROR, "", (_cpu_limit(probe, label, limit),), facts=facts)
    differences = tuple(compare(plan, probe)) if plan is not None else ()
    lost = losses(engine.engine, probe, reduced_vocab)
    findings: list[Finding] = []
    if probe["outcome"] == "refused":
        findings.append(_refused(probe, label, plan))
    elif lost:
        findings.append(_lossy(lost, label, plan))
    if differences and plan is not None:
        findings.append(_profile_wrong(differences, label, plan))
    if findings:
        status = REFUSED_BY_ENGINE if probe["outcome"] == "refused" else LOSSY if lost else DISAGREES
        return ProbeVerdict(status, findings[0].summary, tuple(findings), differences, facts)
    parameters = probe.get("parameters") or {}
    loaded = sum(len(p["sources"]) for p in parameters.values())
    done = f"{label}'s own loader ({python}) loaded {plural(loaded, 'tensor')} into {plural(len(parameters), 'parameter')}"
    if plan is None:
        return ProbeVerdict(UNPLANNED, done, (_unplanned(engine, done),), facts=facts)
    return ProbeVerdict(AGREES, f"{done}, none dropped or left uninitialised; the static plan agrees on every "
                                "fact compared", facts=facts)


def _cpu_limit(probe: dict[str, Any], label: str, source: str) -> Finding:
    """The CPU backend itself cannot build this draft: the probe says nothing about the engine on a GPU."""
    return Finding("probe-cpu-limit",
                   f"{label}'s CPU backend cannot build this draft, so its loader here says nothing about a GPU "
                   "server (unknown)", (), "run probe.load with a GPU build of the engine",
                   (f"rule: {source}", f"engine error: {str(probe.get('error') or '')[:300]}"))


#: The facts the report shows side by side: what the engine did, what the static plan said.
FACTS = ("draft_class", "uninitialised", "dropped", "captured_inputs_of", "norms", "embed_tokens", "lm_head",
         "draft_layers", "draft_to_target")


def _facts(probe: dict[str, Any], python: str, plan: LoadPlan | None) -> dict[str, Any]:
    mine = plan.as_probe_dict() if plan is not None else None
    return {
        "python": python, "version": probe.get("version"), "outcome": probe["outcome"], "stage": probe.get("stage"),
        "error": probe.get("error"),
        "engine": {k: _brief(k, probe.get(k)) for k in FACTS},
        "plan": {"outcome": plan.outcome, **{k: _brief(k, mine[k]) for k in FACTS}} if plan and mine else None,
    }


def _brief(key: str, value: Any) -> Any:
    return map_summary(value) if key == "draft_to_target" else value


def _prediction(plan: LoadPlan | None, outcome: str) -> tuple[str, str]:
    """(clause for the summary, detail line): whether the static plan predicted the engine's ``outcome``."""
    if plan is None:
        return "no static plan for this version", "static plan: none (the version is outside the profiles' range)"
    why = "; ".join(f"{i.area}: {i.finding.code}" for i in plan.issues) or "no issue"
    clause = ("our static plan predicted it" if plan.outcome == outcome
              else f"our static plan did not predict it: it says {plan.outcome}")
    return clause, f"static plan: {plan.outcome} ({why})"


def _plan_fix(plan: LoadPlan | None, kind: str) -> str:
    if plan is None:
        return ""
    return next((i.finding.fix for i in plan.issues if i.kind == kind and i.finding.fix), "")


def _refused(probe: dict[str, Any], label: str, plan: LoadPlan | None) -> Finding:
    clause, detail = _prediction(plan, REFUSED)
    error = probe.get("error") or "no error text"
    draft = (f"draft class built: {probe['draft_class']}",) if probe.get("draft_class") else ()
    return Finding(
        "engine-refused", f"{label}'s own loader refused the draft ({probe.get('stage')} stage): {error} ({clause})",
        (Evidence(f"{label} loading the draft", error, "loads"),), _plan_fix(plan, REFUSED), (detail, *draft))


def _lossy(lost: list[str], label: str, plan: LoadPlan | None) -> Finding:
    clause, detail = _prediction(plan, LOADS_WITH_LOSS)
    return Finding(
        "engine-loss", f"{label}'s own loader loaded the draft with loss: {lost[0]} ({clause})",
        tuple(Evidence(f"{label} loading the draft", line, "every tensor and every parameter loaded") for line in lost),
        _plan_fix(plan, LOSS), (detail,))


def _profile_wrong(differences: tuple[Difference, ...], label: str, plan: LoadPlan) -> Finding:
    facts = ", ".join(dict.fromkeys(d.fact for d in differences))
    return Finding(
        "profile-wrong", f"our profile is wrong for {label}: its own loader disagrees with the static plan on "
                         f"{len(differences)} fact(s) ({facts}); the engine's result is the truth",
        tuple(Evidence(d.fact, f"{d.engine} (what {label}'s loader did)", f"{d.plan} (our static plan)")
              for d in differences),
        PROFILE_FIX, tuple(plan.describe()))


def _unplanned(engine: EngineVersion, done: str) -> Finding:
    first, last = KNOWN_RANGES[engine.engine]
    return Finding(
        "version-unknown", f"{engine.label} is outside the profiles' known range {first} to {last}: {done}, with "
                           "nothing dropped or left uninitialised; there is no static plan to compare it with",
        fix=f"judge against a known version (--eagle3-engine) and keep this probe as the evidence for {engine.label}")


def _probe_error(probe: dict[str, Any], engine: EngineVersion, python: str) -> Finding:
    tail = [line for line in str(probe.get("stderr_tail") or "").splitlines() if line.strip()][-STDERR_LINES:]
    last = f"; stderr ends: {tail[-1].strip()}" if tail else "; stderr empty"
    return Finding(
        "probe-error", f"{engine.label}'s loader could not be run to an answer with {python}: {probe.get('error')}"
                       f"{last}; no verdict on the draft either way",
        (), f"run the probe by hand to see why: {python} {SCRIPTS[engine.engine]} --draft DRAFT --target TARGET "
            "--out result.json",
        ("stderr (last lines):", *(f"  {line}" for line in tail)) if tail else ("stderr: empty",))
