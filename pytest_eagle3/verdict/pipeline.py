"""The one verdict pipeline: checkpoint x engine version x target side -> a frozen :class:`Verdict`.

Four steps, always in this order and nowhere else:

1. **measure**: with the target's weights (or a dump of its side), the reference forward settles which
   layers (and embedding) the draft was trained with (:class:`~pytest_eagle3.engines.plan_types.Measured`);
2. **judge**: the engine's load plan under every plausible reading, joined area by area
   (:mod:`pytest_eagle3.verdict.judge`);
3. **settle**: with a predictor, assumed losses priced, config fixes proven, harmless uninitialised
   parameters dropped (:mod:`pytest_eagle3.verdict.settle`);
4. **predict**: the draft run the way the settled plan feeds it, under each plausible aux-id reading
   when nothing decided it.

The contracts' fixture, ``check``, ``plan``, ``fix``, the live expectation and ``probe.load`` all ask a
:class:`Pipeline`; nothing else builds a load plan. A pipeline caches what it computed (the target run,
each draft's predictor, each verdict) for the life of one run: the target's config is opened once, and the
target is run once (:attr:`Pipeline.passes`, at the longest length any consumer needs) for the reference
measurement, the predictions, the fix proofs and every checkpoint.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_eagle3 import progress
from pytest_eagle3.reference.defaults import DEFAULT_MAX_LOSS, DEFAULT_NEW_TOKENS, DEFAULT_STEPS

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.plan_types import LoadPlan, Measured
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.reference.predict import DraftPredictor, Prediction, PredictionSession
    from pytest_eagle3.reference.targets.passes import TargetPasses

@dataclass(frozen=True)
class TargetSide:
    """What the verdict knows of the target: its config (None when not given), where its weights are, a dump.

    ``path`` is what the user gave (a model directory or its ``config.json``); ``hidden_states`` a dump of
    the target's side (``python -m pytest_eagle3 capture``) used in place of running it here.
    """

    path: str | None = None
    hidden_states: str | None = None

    @property
    def given(self) -> bool:
        return self.path is not None


@dataclass(frozen=True)
class VerdictSettings:
    """The options a verdict depends on (the pytest options of the same names)."""

    #: Every engine version judged in this run: a fix is proven against all of them.
    engines: tuple[EngineVersion, ...] = ()
    aux_convention: str | None = None
    max_loss: float = DEFAULT_MAX_LOSS
    device: str = "cpu"
    steps: int = DEFAULT_STEPS
    continuation: int = DEFAULT_NEW_TOKENS
    prompts: str | None = None


@dataclass(frozen=True)
class Verdict:
    """What one engine version will do with one checkpoint, and what it is predicted to reach.

    ``plan`` is the judged and settled load plan every engine contract reads; ``predictions`` the
    prediction under each plausible aux-id reading (label -> prediction, the reported one first; empty
    without a predictor, and ``no_prediction`` says why).
    """

    engine: EngineVersion
    plan: LoadPlan
    measured: Measured | None = None
    predictions: dict[str, Prediction] = field(default_factory=dict)
    no_prediction: str = ""
    #: Why the given target is not this draft's (target.consistent's rule), "" when it is or none was given:
    #: the plan was then judged as if no target were given.
    target_mismatch: str = ""
    #: With a mismatched target: the plan areas whose verdict the target would have changed (not run).
    target_areas: frozenset[str] = frozenset()

    @property
    def prediction(self) -> Prediction | None:
        """The reported prediction (the first reading's), or None."""
        return next(iter(self.predictions.values()), None)

    @property
    def outcome(self) -> str:
        return self.plan.outcome


class Pipeline:
    """One run's verdicts: the target measured and run once, each draft's predictor built once."""

    def __init__(self, settings: VerdictSettings, session: PredictionSession | None = None) -> None:
        self.settings = settings
        self._session = session
        self._passes: TargetPasses | None = None
        self._targets: dict[str, TargetModel] = {}
        self._predictors: dict[tuple[str, str | None, str | None], DraftPredictor | str] = {}
        self._verdicts: dict[tuple[str, str, TargetSide], Verdict] = {}

    # -- the target side ---------------------------------------------------------------------------
    def target_model(self, path: str) -> TargetModel:
        """The target at ``path`` as opened (once per run; ``problem`` set when it cannot be read)."""
        from pytest_eagle3.checkpoint import TargetModel

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
        from pytest_eagle3.reference.targets.passes import TargetPasses

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
        from pytest_eagle3.rules.shapes import target_findings

        model = self.target(side)
        if model is None or ckpt.config_raw is None:
            return ""
        findings = [f for f in target_findings(ckpt, model) if f.code == "target-mismatch"]
        if not findings:
            return ""
        what = "; ".join(f"{e.key.split(' (')[0]}: {e.obtained} vs {e.expected}" for f in findings for e in f.evidence)
        return f"the target does not match the draft ({what or findings[0].summary}): see target.consistent"

    def session(self, hidden_states: str | None = None) -> PredictionSession:
        """The prediction session: one target run shared by every engine and checkpoint."""
        from pytest_eagle3.reference.predict import PredictionSession

        if self._session is None:
            s = self.settings
            self._session = PredictionSession(s.device, s.steps, s.continuation, s.prompts,
                                              hidden_states=hidden_states, passes=self.passes)
        return self._session

    def predictor(self, ckpt: Checkpoint, side: TargetSide, convention: str | None = None,
                  *, use_option: bool = True) -> DraftPredictor | str:
        """The draft's predictor against the target's weights (or its dump), or why there is none.

        ``convention`` defaults to ``--eagle3-aux-convention`` (``use_option``)."""
        given = convention if convention is not None or not use_option else self.settings.aux_convention
        key = (str(ckpt.path), side.path, given)
        if key not in self._predictors:
            self._predictors[key] = self._build_predictor(ckpt, side, given)
        return self._predictors[key]

    def _build_predictor(self, ckpt: Checkpoint, side: TargetSide, convention: str | None) -> DraftPredictor | str:
        model = self.target(side)
        if model is not None and not ckpt.weights_local:
            from pytest_eagle3.checkpoint.hub import NOT_DOWNLOADED

            return NOT_DOWNLOADED
        if model is not None and side.hidden_states is None and model.on_hub and model.no_weights:
            return f"not run: {model.no_weights}"
        if model is None or (side.hidden_states is None and (model.weights_dir is None or Path(model.path).is_file())):
            return ("needs the target's weights: pass --eagle3-target=DIR (the model directory), or a dump of its "
                    "hidden states with --eagle3-hidden-states=DIR")
        if importlib.util.find_spec("transformers") is None:
            return "needs transformers (pip install 'pytest-eagle3[target]')"
        from pytest_eagle3.reference.acceptance import ReferenceInputError
        from pytest_eagle3.reference.predict import PredictionUnavailable

        try:
            where = str(model.weights_dir) if side.hidden_states is None else model.path
            return self.session(side.hidden_states).predictor(ckpt, where, convention)
        except (PredictionUnavailable, ReferenceInputError) as exc:
            return str(exc)

    # -- the steps ---------------------------------------------------------------------------------
    def measure(self, ckpt: Checkpoint, side: TargetSide) -> Measured | None:
        """Step 1: the training layers (and embedding) when the reference measurement settles them."""
        from pytest_eagle3.engines.plan_types import Measured

        predictor = self.predictor(ckpt, side)
        if isinstance(predictor, str) or predictor.training.basis != "measured":
            return None
        feed = predictor.training.feed
        return Measured(feed.indices, predictor.training.source,
                        feed.embed if feed.embed in ("draft", "target") else None)

    def judge(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide = TargetSide(),
              measured: Measured | None = None, convention: str | None = None,
              *, use_option: bool = True) -> LoadPlan:
        """Step 2: the load plan under every plausible reading, joined area by area (no simulation).

        ``convention`` defaults to ``--eagle3-aux-convention`` (``use_option``)."""
        from pytest_eagle3.verdict.judge import judged_plan

        given = convention if convention is not None or not use_option else self.settings.aux_convention
        return judged_plan(ckpt, engine, self.target(side), given, measured)

    def verdict(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide = TargetSide()) -> Verdict:
        """Every step: measure, judge, settle, predict (cached per checkpoint, engine and target side)."""
        key = (str(ckpt.path), engine.spec, side)
        if key not in self._verdicts:
            with progress.step(f"predicting {engine.label}"):  # the long part: the target run, the readings
                self._verdicts[key] = self._verdict(ckpt, engine, side)
        return self._verdicts[key]

    def _verdict(self, ckpt: Checkpoint, engine: EngineVersion, side: TargetSide) -> Verdict:
        from pytest_eagle3.verdict.settle import settle

        s = self.settings
        mismatch = self.mismatch(ckpt, side)
        if mismatch:  # judged as if no target were given; what the target would change is not run
            plan, wrong = self.judge(ckpt, engine), self.judge(ckpt, engine, side)
            areas = {i.area for i in (*plan.issues, *wrong.issues)} | set(plan.unknown) | set(wrong.unknown)
            changed = frozenset(a for a in areas if (plan.issues_for(a), plan.unknown.get(a))
                                != (wrong.issues_for(a), wrong.unknown.get(a)))
            return Verdict(engine, plan, no_prediction=f"not run: {mismatch}", target_mismatch=mismatch,
                           target_areas=changed)
        measured = self.measure(ckpt, side)
        plan = self.judge(ckpt, engine, side, measured)
        predictor = self.predictor(ckpt, side)
        if isinstance(predictor, str):
            return Verdict(engine, plan, measured, no_prediction=predictor)
        engines = s.engines or (engine,)
        plan = settle(plan, predictor, ckpt, self.target(side), engines, s.aux_convention, measured, s.max_loss)
        return Verdict(engine, plan, measured, self._predictions(ckpt, side, plan, predictor))

    def _predictions(self, ckpt: Checkpoint, side: TargetSide, plan: LoadPlan,
                     predictor: DraftPredictor) -> dict[str, Prediction]:
        """Step 4: the prediction, and under each plausible aux-id convention when neither the option nor the
        measurement decides it (``verdict.judge``)."""
        from pytest_eagle3.reference.predict import PredictionUnavailable
        from pytest_eagle3.verdict.judge import plausible_readings

        prediction = predictor.predict(plan)
        only = {prediction.training.source.split(":")[0]: prediction}
        conventions = list(dict.fromkeys(r.convention for r in plausible_readings(ckpt, self.settings.aux_convention)
                                         if r.convention))
        if prediction.acceptance is None or prediction.basis == "measured" or self.settings.aux_convention is not None \
                or len(conventions) < 2 or not ckpt.config.aux.ids:
            return only
        readings: dict[str, Prediction] = {}
        for convention in conventions:
            other = self.predictor(ckpt, side, convention)
            if isinstance(other, str):
                return only
            try:
                readings[convention] = other.predict(plan)
            except PredictionUnavailable:  # a dump lacking one reading's states: the one prediction
                return only
        return readings


def verdict(checkpoint: Checkpoint, engine: EngineVersion, side: TargetSide = TargetSide(),
            settings: VerdictSettings = VerdictSettings()) -> Verdict:
    """The verdict of one engine version on one checkpoint (a fresh :class:`Pipeline`; hold one to share work)."""
    return Pipeline(settings).verdict(checkpoint, engine, side)


def predict_acceptance(checkpoint: str | Path | Checkpoint, target: str | Path, engine: str | EngineVersion, *,
                       steps: int = DEFAULT_STEPS, continuation: int = DEFAULT_NEW_TOKENS,
                       prompts: str | None = None, device: str = "cpu",
                       session: PredictionSession | None = None) -> Prediction:
    """Predicted acceptance of ``checkpoint`` served with ``target`` by ``engine`` (e.g. ``"vllm==0.32.0"``):
    the draft run the way the pipeline's judged plan feeds it (no option, no measurement: the producer's
    declared convention).

    Raises :class:`~pytest_eagle3.reference.predict.PredictionUnavailable` when the reference forward cannot
    run the draft on this target; a plan the engine refuses gives a Prediction with ``acceptance=None``.
    """
    import torch

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.reference.predict import PredictionSession

    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else Checkpoint.open(str(checkpoint))
    version = engine if isinstance(engine, EngineVersion) else parse_selection(str(engine))[0]
    session = session or PredictionSession(device, steps, continuation, prompts)
    plan = Pipeline(VerdictSettings(), session).judge(ckpt, version, TargetSide(str(target)))
    with torch.no_grad():
        return session.predictor(ckpt, str(target)).predict(plan)
