"""Reference acceptance (with --eagle3-target): run the real target, feed the draft what its config
declares, count the draft tokens a greedy engine would accept, and try the other readings of the
aux ids and of d2t to tell which one the draft was trained with."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_eagle3 import progress
from pytest_eagle3.checkpoint import Checkpoint, TargetModel
from pytest_eagle3.shell.contract import Eagle3Result, require_config, require_tensors, require_weights
from pytest_eagle3.findings import Evidence, Finding, check
from pytest_eagle3.shell.options import settings
from pytest_eagle3.shell.verdicts import pipeline, require_matching_target

if TYPE_CHECKING:
    from pytest_eagle3.reference.readings import ReferenceResult

@pytest.fixture(scope="session")
def eagle3_reference(
    request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint, eagle3_target: TargetModel
) -> ReferenceResult | Finding:
    """The measured reference for this checkpoint, or the finding that says why it could not run."""
    require_tensors(eagle3_checkpoint)
    require_config(eagle3_checkpoint)
    require_matching_target(request.config, eagle3_checkpoint)
    require_weights(eagle3_checkpoint)
    options = settings(request.config)
    dump = options.hidden_states
    if dump is None and eagle3_target.on_hub and eagle3_target.no_weights:
        pytest.skip(f"not run: {eagle3_target.no_weights}")
    if dump is None and (eagle3_target.weights_dir is None or Path(eagle3_target.path).is_file()):
        pytest.skip(f"reference acceptance needs the target's weights: --eagle3-target={eagle3_target.path} "
                    "names only a config (give the model directory, or a dump with --eagle3-hidden-states=DIR)")
    pytest.importorskip("transformers", reason="reference acceptance needs transformers "
                        "(pip install 'pytest-eagle3[target]')")
    from pytest_eagle3.reference.acceptance import ReferenceInputError
    from pytest_eagle3.reference.readings import ReferenceUnavailable, measure_reference

    try:  # the pipeline's target pass: the one the predictions use, cut to the reference's length
        where = str(eagle3_target.weights_dir) if dump is None else eagle3_target.path
        with progress.step("reference acceptance"):
            return measure_reference(eagle3_checkpoint, where, options.device, options.prompts, options.steps,
                                     passes=pipeline(request.config).passes, new_tokens=options.continuation,
                                     hidden_states=dump)
    except ReferenceUnavailable as exc:
        pytest.skip(str(exc))
    except ReferenceInputError as exc:
        return Finding("reference-input", str(exc), (Evidence("--eagle3-target / --eagle3-prompts", str(exc),
                                                              "a loadable target and valid prompts"),),
                       "give a local transformers model directory; prompts one per line (JSON ids or text)")


class TestEagle3ReferenceAcceptance:
    @pytest.mark.eagle3_contract("reference.acceptance")
    def test_reference_acceptance(
        self, eagle3_reference: ReferenceResult | Finding, eagle3_result: Eagle3Result, request: pytest.FixtureRequest
    ) -> None:
        """Mean acceptance length (greedy, k draft steps, bonus token counted) reaches the minimum."""
        from pytest_eagle3.reference.readings import acceptance_findings, summary

        if isinstance(eagle3_reference, Finding):
            check([eagle3_reference])
            return
        minimum = settings(request.config).min_acceptance
        data = eagle3_reference.to_json()
        eagle3_result.reference(eagle3_reference)
        eagle3_result.measured("reference_mean_acceptance_length", data["mean_acceptance_length"])
        eagle3_result.measured("reference_per_position", data["per_position"])
        eagle3_result.measured("reference_convention", data["convention"])
        check(acceptance_findings(eagle3_reference, minimum))
        eagle3_result.passed(summary(eagle3_reference))

    @pytest.mark.eagle3_contract("reference.convention")
    def test_reference_convention(
        self, eagle3_reference: ReferenceResult | Finding, eagle3_result: Eagle3Result
    ) -> None:
        """The aux-id convention and d2t reading the config declares are the ones the draft was trained with."""
        from pytest_eagle3.reference.evidence import decide

        if isinstance(eagle3_reference, Finding):
            pytest.skip(f"no reference measured: {eagle3_reference.summary}")
        best = eagle3_reference.inference.best
        decision = decide(eagle3_reference.inference.results)
        eagle3_result.measured("reference_inferred", best.reading.label)
        eagle3_result.measured("reference_margin", round(eagle3_reference.inference.margin, 4))
        eagle3_result.basis("measured" if decision.confirmed else "assumed")
        declared = eagle3_reference.inference.declared
        if not decision.confirmed:
            eagle3_result.passed(f"{decision.words}; every verdict keeps its assumption (basis: assumed)")
        elif declared is None:
            eagle3_result.passed(f"nothing declared; measured {decision.words}")
        elif best is declared:
            eagle3_result.passed(f"declared {declared.reading.label} confirmed: {decision.words}")
        else:
            eagle3_result.passed(f"config declares {declared.reading.label} ({declared.mean_acceptance_length:.2f}) "
                                 f"but the measurement settles it: {decision.words}; every engine contract judges against the "
                                 "measured reading (basis: measured)")
