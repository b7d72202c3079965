"""The one pipeline: checkpoint x engine version x target side -> a frozen :class:`Forecast` (what the engine will do with the draft, and reach).

Four steps, always in this order and nowhere else:

1. **measure**: with the target's weights (or a dump of its side), the reference forward settles which
   layers (and embedding) the draft was trained with (:class:`~pytest_eagle3.engines.plan_types.Measured`);
   with it, what every engine's plan reads of the target side is decided once (:class:`TargetUse`);
2. **judge**: the engine's load plan under every plausible reading, joined area by area
   (:mod:`pytest_eagle3.verdict.judge`);
3. **settle**: with a predictor, assumed losses priced, config fixes proven, harmless uninitialised
   parameters dropped (:mod:`pytest_eagle3.verdict.settle`);
4. **predict**: the draft run the way the settled plan feeds it, under each plausible aux-id reading
   when nothing decided it.

The contracts' fixture, ``check``, ``plan``, ``fix``, the live expectation and ``probe.load`` all ask a
:class:`Pipeline`; nothing else builds a load plan. A pipeline caches what it computed (the target run,
each draft's simulation, each forecast and judgement) for the life of one run: the target's config is opened once, and the
target is run once (:attr:`Pipeline.passes`, at the longest length any consumer needs) for the reference
measurement, the predictions, the fix proofs and every checkpoint.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch

from pytest_eagle3 import progress
from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.checkpoint.hub import NOT_DOWNLOADED
from pytest_eagle3.checkpoint.named_target import NamedTarget, named_target
from pytest_eagle3.engines.plan_types import LoadPlan, Measured
from pytest_eagle3.findings import MEASURED, Evidence, Finding
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.reference.acceptance import ReferenceInputError
from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS
from pytest_eagle3.reference.draft_setting import DraftSetting
from pytest_eagle3.reference.predict import DraftPredictor, Prediction, PredictionSession, PredictionUnavailable
from pytest_eagle3.reference.readings import ReferenceResult, ReferenceUnavailable, measure_reference
from pytest_eagle3.reference.targets.passes import TargetPasses
from pytest_eagle3.rules.shapes import target_findings
from pytest_eagle3.rules.weights import TensorHealth, scan_weights
from pytest_eagle3.verdict.assess import (
    NEEDS_TARGET,
    NotRun,
    WeightsMissing,
    require_config,
    require_tensors,
    require_weights,
)
from pytest_eagle3.verdict.judge import judged_plan, plausible_readings
from pytest_eagle3.verdict.judgement import Judgement
from pytest_eagle3.verdict.records import Forecast, TargetSide
from pytest_eagle3.verdict.settings import RunSettings
from pytest_eagle3.verdict.settle import Settling, price_recorded, settle


@dataclass(frozen=True)
class Simulation:
    """The draft's predictor against the target's weights (or its dump), or why there is none."""

    predictor: DraftPredictor | None = None
    #: Why there is no predictor, "" when there is (a ``WeightsMissing`` when only the weights are missing).
    unavailable: str = ""


@dataclass(frozen=True)
class TargetUse:
    """What every engine's plan of one checkpoint reads of its target side, decided once before any is planned
    (:meth:`Pipeline.target_use`): the target's config as given; the config alone when the draft accepts nothing on
    it (its weights are no evidence: the target may be another model's, ``Pipeline.at_floor``); none when it is
    another model than the draft's (``mismatch``: judged as if no target were given); and the training layers the
    reference measurement settled."""

    #: The side judged with (``Pipeline.side_for``).
    side: TargetSide
    #: The target's config the plans read (None: none given, unreadable, or another model's).
    model: TargetModel | None
    #: Why the target is another model than the draft's, "" when it is not (``Pipeline.mismatch``).
    mismatch: str = ""
    measured: Measured | None = None


class Pipeline:
    """One run's forecasts and judgements: the target measured and run once, each draft's predictor built once."""

    def __init__(self, settings: RunSettings, session: PredictionSession | None = None) -> None:
        self.settings = settings
        self._session = session
        self._passes: TargetPasses | None = None
        self._targets: dict[str, TargetModel] = {}
        self._simulations: dict[tuple[str, str | None, str | None], Simulation] = {}
        self._uses: dict[tuple[str, TargetSide], TargetUse] = {}
        self._forecasts: dict[tuple[str, EngineVersion, TargetSide], Forecast] = {}
        #: Each row's judgement, keyed by checkpoint, engine version (its launch settings too; None: the ``any`` row)
        #: and target side as given: filled by :func:`pytest_eagle3.verdict.rows.judgement`, the one place a judgement
        #: is made.
        self.judgements: dict[tuple[str, EngineVersion | None, TargetSide], Judgement] = {}
        self._health: dict[str, list[TensorHealth]] = {}
        self._references: dict[tuple[str, TargetSide], ReferenceResult | Finding | str] = {}
        self._named: dict[str, NamedTarget | None] = {}

    # -- what a run computed, handed to another process (pytest-xdist's workers) ---------------------------
    #: The caches :meth:`computed` hands over: every one holds plain frozen data (no tensors, no open files).
    SHAREABLE = ("_forecasts", "judgements", "_health", "_references", "_named")

    def computed(self) -> dict[str, dict[object, object]]:
        """The forecasts, judgements, weight scans, references and named targets computed so far."""
        return {name: dict(getattr(self, name)) for name in self.SHAREABLE}

    def adopt(self, computed: dict[str, dict[object, object]]) -> None:
        """Take another pipeline's :meth:`computed` results as this one's (what is asked again is not recomputed)."""
        for name in self.SHAREABLE:
            getattr(self, name).update(computed.get(name, {}))

    # -- the target side ---------------------------------------------------------------------------
    def target_model(self, path: str) -> TargetModel:
        """The target at ``path`` as opened (once per run; ``problem`` set when it cannot be read)."""
        if path not in self._targets:
            self._targets[path] = TargetModel.open(path)
        return self._targets[path]

    def target(self, side: TargetSide) -> TargetModel | None:
        """The target's config as the plans read it; None when none was given or it cannot be read."""
        if side.path is None:
            return None
        model = self.target_model(side.path)
        return model if model.problem is None else None

    @property
    def passes(self) -> TargetPasses:
        """The run's target passes: the target run once per prompts, for the longest length any consumer
        needs (``continuation + k``), shared by the reference measurement and every predictor."""
        if self._passes is None:
            session, s = self._session, self.settings
            if session is None:
                self._passes = TargetPasses(s.continuation + s.steps)
            else:  # a session given: its passes, long enough for its predictions and this run's reference
                if session.passes is None:
                    session.passes = TargetPasses(max(s.continuation + s.steps, session.continuation + session.steps))
                self._passes = session.passes
        return self._passes

    def mismatch(self, ckpt: Checkpoint, side: TargetSide) -> str:
        """Why the target is another model than the draft's (target.consistent's ``target-mismatch``: vocab or hidden
        size), "" when it is the draft's or none usable was given. Aux ids out of range are not a mismatch: they
        fail target.consistent, and the engine contracts say what each engine's boundary rule makes of them."""
        model = self.target(side)
        if model is None or ckpt.config_raw is None:
            return ""
        findings = [f for f in target_findings(ckpt, model) if f.code == "target-mismatch"]
        if not findings:
            return ""
        what = "; ".join(f"{e.key.split(' (')[0]}: {e.obtained} vs {e.expected}" for f in findings for e in f.evidence)
        return f"the target does not match the draft ({what or findings[0].summary}): see target.consistent"

    def at_floor(self, ckpt: Checkpoint, side: TargetSide) -> bool:
        """Whether the draft accepts nothing on this target under any reading, with its own embedding or the target's
        (below ``--eagle3-min-acceptance``): then no reading is measured (each leads the others by noise), so nothing
        is concluded from the measurement; the target may not be the draft's, or the draft untrained."""
        predictor = self.simulation(ckpt, side).predictor if self.target(side) is not None else None
        if predictor is None:
            return False
        training = predictor.training
        best = training.acceptance.mean_acceptance_length
        if training.decision.best is not None:
            best = max(best, training.decision.best.mean_acceptance_length)
        return best < self.settings.min_acceptance

    def session(self, hidden_states: str | None = None) -> PredictionSession:
        """The prediction session: one target run shared by every engine and checkpoint."""
        if self._session is None:
            s = self.settings
            self._session = PredictionSession(s.device, s.steps, s.continuation, s.prompts,
                                              hidden_states=hidden_states, passes=self.passes, tree=s.draft_setting)
        return self._session

    def simulation(self, ckpt: Checkpoint, side: TargetSide, convention: str | None = None,
                   *, use_option: bool = True) -> Simulation:
        """The draft's predictor against the target's weights (or its dump), or why there is none.

        ``convention`` defaults to ``--eagle3-aux-convention`` (``use_option``)."""
        given = convention if convention is not None or not use_option else self.settings.aux_convention
        key = (str(ckpt.path), side.path, given)
        if key not in self._simulations:
            self._simulations[key] = self._simulate(ckpt, side, given)
        return self._simulations[key]

    def _simulate(self, ckpt: Checkpoint, side: TargetSide, convention: str | None) -> Simulation:
        model = self.target(side)
        if model is not None and not ckpt.weights_local:
            return Simulation(unavailable=WeightsMissing(NOT_DOWNLOADED))
        if model is not None and side.hidden_states is None and model.on_hub and model.no_weights:
            return Simulation(unavailable=WeightsMissing(f"not run: {model.no_weights}"))
        needs = ("needs the target's weights: pass --eagle3-target=DIR (the model directory), or a dump of its "
                 "hidden states with --eagle3-hidden-states=DIR")
        if model is None:
            return Simulation(unavailable=needs)
        if side.hidden_states is None and (model.weights_dir is None or Path(model.path).is_file()):
            return Simulation(unavailable=WeightsMissing(needs))
        if importlib.util.find_spec("transformers") is None:
            return Simulation(unavailable="needs transformers (pip install 'pytest-eagle3[target]')")
        try:
            where = str(model.weights_dir) if side.hidden_states is None else model.path
            return Simulation(self.session(side.hidden_states).predictor(ckpt, where, convention))
        except (PredictionUnavailable, ReferenceInputError) as exc:
            return Simulation(unavailable=str(exc))

    # -- the steps ---------------------------------------------------------------------------------
    def measure(self, ckpt: Checkpoint, side: TargetSide) -> Measured | None:
        """Step 1: the training layers (and embedding) when the reference measurement settles them."""
        predictor = self.simulation(ckpt, side).predictor
        if predictor is None or predictor.training.basis != MEASURED or self.at_floor(ckpt, side):
            return None
        feed = predictor.training.feed
        return Measured(feed.indices, predictor.training.source,
                        feed.embed if feed.embed in ("draft", "target") else None)

    def judge(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide = TargetSide(),
              measured: Measured | None = None, convention: str | None = None,
              *, use_option: bool = True) -> LoadPlan:
        """Step 2: the load plan under every plausible reading, joined area by area (no simulation).

        ``convention`` defaults to ``--eagle3-aux-convention`` (``use_option``)."""
        given = convention if convention is not None or not use_option else self.settings.aux_convention
        return judged_plan(ckpt, engine, self.target(side), given, measured)

    def forecast(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide = TargetSide()) -> Forecast:
        """Every step: measure, judge, settle, predict (cached per checkpoint, engine and target side; the side
        normalised here, :meth:`side_for`, and carried by the forecast)."""
        side = self.side_for(ckpt, side)
        key = (str(ckpt.path), engine, side)
        if key not in self._forecasts:
            with progress.step(f"predicting {engine.label}"):  # the long part: the target run, the readings
                self._forecasts[key] = self._forecast(ckpt, engine, side)
        return self._forecasts[key]

    def named_target(self, ckpt: Checkpoint) -> NamedTarget | None:
        """The target the draft's config names (``checkpoint.named_target``), resolved once; None when none."""
        if ckpt.path not in self._named:
            self._named[ckpt.path] = named_target(ckpt.config_raw, ckpt.root)
        return self._named[ckpt.path]

    def side_for(self, ckpt: Checkpoint, side: TargetSide) -> TargetSide:
        """The target side a checkpoint is judged with: the one given, else the target its config names (config and
        headers only for a Hub id), else none."""
        if side.given or side.hidden_states is not None:
            return side
        named = self.named_target(ckpt)
        return TargetSide(named.path) if named is not None and named.path is not None else side

    def weight_health(self, ckpt: Checkpoint) -> list[TensorHealth]:
        """One chunked scan of every floating-point tensor, shared by the weight contracts (raises
        ``assess.NotRun`` when the files are damaged or the weights stayed on the Hub)."""
        require_tensors(ckpt)
        require_weights(ckpt)
        if str(ckpt.path) not in self._health:
            self._health[str(ckpt.path)] = scan_weights(ckpt)
        return self._health[str(ckpt.path)]

    def reference(self, ckpt: Checkpoint, side: TargetSide) -> ReferenceResult | Finding | str:
        """The measured reference acceptance of ``ckpt`` (the run's one target pass, cut to the reference's
        length), the finding that says why its inputs are wrong, or why it cannot run here."""
        key = (str(ckpt.path), side)
        if key not in self._references:
            self._references[key] = self._reference(ckpt, side)
        return self._references[key]

    def _reference(self, ckpt: Checkpoint, side: TargetSide) -> ReferenceResult | Finding | str:
        why = self.reference_inputs(ckpt, side)
        if why is not None or side.path is None:
            return why or ""
        s, model = self.settings, self.target_model(side.path)
        try:
            where = str(model.weights_dir) if side.hidden_states is None else model.path
            with progress.step("reference acceptance"):
                return measure_reference(ckpt, where, s.device, s.prompts, s.steps, passes=self.passes,
                                         new_tokens=s.continuation, hidden_states=side.hidden_states)
        except ReferenceUnavailable as exc:
            return str(exc)
        except ReferenceInputError as exc:
            return Finding("reference-input", str(exc), (Evidence("--eagle3-target / --eagle3-prompts", str(exc),
                                                                  "a loadable target and valid prompts"),),
                           "give a local transformers model directory; prompts one per line (JSON ids or text)")

    def reference_inputs(self, ckpt: Checkpoint, side: TargetSide) -> str | None:
        """Why the reference cannot run on this checkpoint and target (None when it can), checked in the order
        ``reference.acceptance`` reports them: the target, the files, the config, a mismatch, the weights."""
        if side.path is None:
            return NEEDS_TARGET
        try:
            require_tensors(ckpt)
            require_config(ckpt)
            mismatch = self.mismatch(ckpt, side)
            if mismatch:
                raise NotRun(f"not run: {mismatch}")
        except NotRun as exc:
            return str(exc)
        try:
            require_weights(ckpt)
        except NotRun as exc:
            return WeightsMissing(str(exc))
        model = self.target_model(side.path)
        if side.hidden_states is None and model.on_hub and model.no_weights:
            return WeightsMissing(f"not run: {model.no_weights}")
        if side.hidden_states is None and (model.weights_dir is None or Path(model.path).is_file()):
            return WeightsMissing(f"reference acceptance needs the target's weights: --eagle3-target={model.path} "
                                  "names only a config (give the model directory, or a dump with "
                                  "--eagle3-hidden-states=DIR)")
        if importlib.util.find_spec("transformers") is None:
            return "reference acceptance needs transformers (pip install 'pytest-eagle3[target]')"
        return None

    def target_use(self, ckpt: Checkpoint, side: TargetSide) -> TargetUse:
        """Step 1, and what the plans read of the target side (``side`` as :meth:`side_for` gives it): decided once
        per checkpoint and side, for every engine."""
        key = (str(ckpt.path), side)
        if key not in self._uses:
            self._uses[key] = self._target_use(ckpt, side)
        return self._uses[key]

    def _target_use(self, ckpt: Checkpoint, side: TargetSide) -> TargetUse:
        mismatch = self.mismatch(ckpt, side)
        if mismatch:  # judged as if no target were given; what the target would change is not run
            return TargetUse(side, None, mismatch)
        measured = self.measure(ckpt, side)
        model = self.target(side)
        if model is not None and self.at_floor(ckpt, side):  # its weights are no evidence: its config alone
            return TargetUse(side, model.config_only())
        return TargetUse(side, model, measured=measured)

    def _forecast(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide) -> Forecast:
        s = self.settings
        use = self.target_use(ckpt, side)
        plan = judged_plan(ckpt, engine, use.model, s.aux_convention, use.measured)
        if use.mismatch:
            return Forecast(engine, price_recorded(plan, s.max_loss), no_prediction=f"not run: {use.mismatch}",
                            target_mismatch=use.mismatch, target_areas=self._changed_by(ckpt, engine, side, plan),
                            side=side)
        simulation = self.simulation(ckpt, side)
        predictor = simulation.predictor
        if predictor is None:  # no simulation: a recorded cost prices what it covers
            return Forecast(engine, price_recorded(plan, s.max_loss), use.measured,
                            no_prediction=simulation.unavailable, side=side)
        plan = settle(plan, Settling(predictor, ckpt, self.target(side), s.engines or (engine,), s.aux_convention,
                                     use.measured, s.max_loss))
        return Forecast(engine, plan, use.measured, self._predictions(ckpt, side, plan, predictor), side=side)

    def _changed_by(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide, plan: LoadPlan) -> frozenset[str]:
        """The areas of ``plan`` (judged without the target) whose verdict the target given, another model than the
        draft's, would change: the only plan read with that target."""
        wrong = judged_plan(ckpt, engine, self.target(side), self.settings.aux_convention)
        areas = {i.area for i in (*plan.issues, *wrong.issues)} | set(plan.unknown) | set(wrong.unknown)
        return frozenset(a for a in areas if (plan.issues_for(a), plan.unknown.get(a))
                         != (wrong.issues_for(a), wrong.unknown.get(a)))

    def _predictions(self, ckpt: Checkpoint, side: TargetSide, plan: LoadPlan,
                     predictor: DraftPredictor) -> dict[str, Prediction]:
        """Step 4: the prediction, and under each plausible aux-id convention when neither the option nor the
        measurement decides it (``verdict.judge``)."""
        prediction = predictor.predict(plan)
        only = {prediction.training.source.split(":")[0]: prediction}
        conventions = list(dict.fromkeys(r.convention for r in plausible_readings(ckpt, self.settings.aux_convention)
                                         if r.convention))
        if prediction.acceptance is None or prediction.basis == MEASURED or self.settings.aux_convention is not None \
                or len(conventions) < 2 or not ckpt.config.aux.ids:
            return only
        readings: dict[str, Prediction] = {}
        for convention in conventions:
            other = self.simulation(ckpt, side, convention).predictor
            if other is None:
                return only
            try:
                readings[convention] = other.predict(plan)
            except PredictionUnavailable:  # a dump lacking one reading's states: the one prediction
                return only
        return readings


def pipeline_for(settings: RunSettings | None = None, session: PredictionSession | None = None) -> Pipeline:
    """The pipeline of one run with these settings (the defaults when None; the only place one is built): every
    entry, pytest's and each command's, holds one for its whole run so that the target is run once."""
    return Pipeline(settings or RunSettings(), session)


def forecast(checkpoint: Checkpoint, engine: EngineVersion, side: TargetSide | None = None,
            settings: RunSettings | None = None) -> Forecast:
    """The forecast of one engine version on one checkpoint (a fresh :class:`Pipeline`; hold one to share work)."""
    return pipeline_for(settings).forecast(checkpoint, engine, side or TargetSide())


def predict_acceptance(checkpoint: str | Path | Checkpoint, target: str | Path, engine: str | EngineVersion, *,
                       steps: int = DEFAULT_STEPS, continuation: int = DEFAULT_NEW_TOKENS,
                       prompts: str | None = None, device: str = "cpu",
                       session: PredictionSession | None = None, topk: int = 1,
                       draft_tokens: int | None = None) -> Prediction:
    """Predicted acceptance of ``checkpoint`` served with ``target`` by ``engine`` (e.g. ``"vllm==0.32.0"``):
    the draft run the way the pipeline's judged plan feeds it (no option, no measurement: the producer's
    declared convention).

    Raises :class:`~pytest_eagle3.reference.predict.PredictionUnavailable` when the reference forward cannot
    run the draft on this target; a plan the engine refuses gives a Prediction with ``acceptance=None``.
    ``topk`` > 1 (with ``draft_tokens``): SGLang's tree, for an engine that drafts one (a new session's setting).
    """
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else Checkpoint.open(str(checkpoint))
    version = engine if isinstance(engine, EngineVersion) else parse_selection(str(engine))[0]
    session = session or PredictionSession(device, steps, continuation, prompts,
                                           tree=DraftSetting(steps, topk, draft_tokens or 0))
    plan = pipeline_for(None, session).judge(ckpt, version, TargetSide(str(target)))
    with torch.no_grad():
        return session.predictor(ckpt, str(target)).predict(plan)
