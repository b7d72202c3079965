"""With a target: the training layers measured by the reference forward, and the predicted acceptance per
engine before and after the fix (reference.predict; torch and transformers load only here)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_eagle3.progress import step
from pytest_eagle3.repair.solve import Trained

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.verdict import RunSettings


class Measurement:
    """One target run (or a dump of its side: ``hidden_states``) shared by the source's and the copy's predictors."""

    def __init__(self, target: str, hidden_states: str | None = None, settings: RunSettings | None = None) -> None:
        from pytest_eagle3.verdict import RunSettings, pipeline_for

        self.target = target
        self.pipeline = pipeline_for(settings or RunSettings())
        self.session = self.pipeline.session(hidden_states)
        self.predictors: dict[str, Any] = {}
        self.problems: dict[str, str] = {}
        #: What the layer search found where it settled nothing (no set beat the config's ids clearly), in words.
        self.undecided_search: str | None = None

    def predictor(self, path: Path, convention: str | None) -> Any:
        """The predictor of the checkpoint at ``path``, built once; None when it cannot be built (the problem is kept)."""
        from pytest_eagle3.checkpoint import Checkpoint
        from pytest_eagle3.reference.predict import PredictionUnavailable

        key = str(path)
        if key not in self.predictors and key not in self.problems:
            try:
                self.predictors[key] = self.session.predictor(Checkpoint.open(path), self.target, convention)
            except (PredictionUnavailable, OSError, ValueError, RuntimeError) as exc:
                self.problems[key] = str(exc)
        return self.predictors.get(key)

    def trained(self, path: Path, convention: str | None) -> Trained | None:
        """The measured training layer inputs: the layer set the search finds (``reference.layer_search``) where it
        beats every reading of the config's ids clearly, else the reading the measurement settles; None when
        neither settles them."""
        from pytest_eagle3.findings import MEASURED
        from pytest_eagle3.reference.layer_search import search_layers

        predictor = self.predictor(path, convention)
        if predictor is None:
            return None
        with step("searching the layer sets the draft could have been trained on"):
            search = search_layers(predictor)
        if search is not None and search.found:
            return Trained(search.inputs, f"measured: {search.words}", search.best.mean_acceptance_length)
        training = predictor.training
        if training.basis != MEASURED:
            self.undecided_search = search.words if search is not None else None
            return None
        words = training.source + (f"; {search.words}" if search is not None else "")
        return Trained(tuple(training.feed.indices), words, training.acceptance.mean_acceptance_length)

    def figure(self, path: Path, engine: EngineVersion, convention: str | None) -> str:
        """The predicted acceptance of the checkpoint at ``path`` on ``engine``, in words."""
        from pytest_eagle3.checkpoint import Checkpoint
        from pytest_eagle3.verdict import TargetSide

        predictor = self.predictor(path, convention)
        if predictor is None:
            return f"unavailable ({self.problems.get(str(path), 'no predictor')})"
        plan = self.pipeline.judge(Checkpoint.open(path), engine, TargetSide(self.target), convention=convention)
        prediction = predictor.predict(plan)
        if prediction.acceptance is None:
            return f"none ({prediction.unavailable})"
        return f"{prediction.acceptance.mean_acceptance_length:.2f}"


def predicted_lines(measurement: Measurement, source: Path, out: Path, engines: Sequence[EngineVersion],
                    convention: str | None, copy_convention: str | None, trained: Trained | None = None) -> list[str]:
    """'predicted acceptance, sglang==0.5.23: before none (refused ...), after 3.10 (as trained 3.12)'; the
    as-trained figure is the measured training layers' (``trained``), else the source's own reading."""
    predictor = measurement.predictor(source, convention)
    figure = (trained.acceptance if trained is not None and trained.acceptance is not None
              else predictor.training.acceptance.mean_acceptance_length if predictor is not None else None)
    lines = []
    for engine in engines:
        with step(f"predicting {engine.label}"):
            before = measurement.figure(source, engine, convention)
            after = measurement.figure(out, engine, copy_convention)
        as_trained = f" (as trained {figure:.2f})" if figure is not None else ""
        lines.append(f"predicted acceptance, {engine.label}: before {before}, after {after}{as_trained}")
    return lines
