"""Engine contracts: what each selected engine version will do with the draft (``--eagle3-engine``).

Each contract reads one area of the load plan (``pytest_eagle3.engines.plan``) and fails with what the engine will
do, the evidence, the fix, and the plan itself. The plan is frozen and shared: its fixes were proven where it was
built (``verdict.settle.settle``), so no contract changes it and the verdicts do not depend on the order contracts
run in. Each asserts on the run's judgement (``verdict.assess_engine`` judges it, once, for every command).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.shell.contract import Eagle3Result, assert_outcome
from pytest_eagle3.verdict.judgement import Judgement

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion


class TestEagle3Engine:
    """The engine contracts: what one engine version does with the draft when it loads it."""
    @pytest.mark.eagle3_contract("engine.architecture")
    def test_architecture(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine builds an EAGLE-3 draft class from this config format and architecture."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.keys")
    def test_keys(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """No checkpoint tensor dropped or refused, no engine parameter left uninitialised (unless the
        simulation shows the parameter's initial value costs nothing)."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.vocab")
    def test_vocab(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine reads the draft->target map the way it was written."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.aux_layers")
    def test_aux_layers(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The target layers the engine feeds are the layers the draft was trained on."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.fc")
    def test_fc(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The concatenation the target sends matches what fc was trained on; fc is not bypassed."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.norms")
    def test_norms(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine applies the norms the draft was trained with."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.embeddings")
    def test_embeddings(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """embed_tokens and lm_head come from where the draft was trained with them."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.layers")
    def test_layers(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine builds as many draft layers as the checkpoint has."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.geometry")
    def test_geometry(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The attention the engine builds (heads, KV heads, head_dim as it derives them) fits the q/k/v/o tensors."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.runtime")
    def test_runtime(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """Draft and target can run together: the draft's KV pages fit the engine's KV-cache manager, its
        position range covers the target's context, and its quantization, sliding window and dtype are the ones it
        was trained with (engines.runtime)."""
        assert_outcome(request, eagle3_result, eagle3_judgement)

    @pytest.mark.eagle3_contract("engine.producer")
    def test_producer(self, eagle3_engine: EngineVersion, eagle3_judgement: Judgement, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """What the producer trained with reaches the engine: fields it never reads, the rope it builds from
        the config, and the files beside the weights that its loader reads."""
        assert_outcome(request, eagle3_result, eagle3_judgement)
