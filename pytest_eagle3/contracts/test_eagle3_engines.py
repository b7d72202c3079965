"""Engine contracts: what each selected engine version will do with the draft (``--eagle3-engine``).

Each contract reads one area of the load plan (``pytest_eagle3.engines.plan``) and fails with what
the engine will do, the evidence, the fix, and the plan itself. The plan is frozen and shared: its
fixes were proven where it was built (``verdict.settle.settle``), so no contract changes it and the
verdicts do not depend on the order contracts run in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_eagle3.engines.plan_types import LoadPlan, describe_inputs
from pytest_eagle3.engines.serving import NOTE_PREFIX
from pytest_eagle3.findings import Finding
from pytest_eagle3.shell.contract import Eagle3Result, check_plan, contract_id, unknown
from pytest_eagle3.shell.options import UNKNOWN_FAIL, settings
from pytest_eagle3.shell.verdicts import require_matching_target, skip_for_target

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint


class TestEagle3Engine:
    @pytest.mark.eagle3_contract("engine.architecture")
    def test_architecture(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine builds an EAGLE-3 draft class from this config format and architecture."""
        plan = eagle3_load_plan
        _judge(request, plan, with_plan=False)
        eagle3_result.passed(f"{plan.engine.label} builds {plan.draft_class}")

    @pytest.mark.eagle3_contract("engine.keys")
    def test_keys(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """No checkpoint tensor dropped or refused, no engine parameter left uninitialised (unless the
        simulation shows the parameter's initial value costs nothing)."""
        plan = eagle3_load_plan
        _judge(request, plan, needs_class=True)
        loaded = sum(len(v) for v in plan.parameters.values())
        eagle3_result.measured(f"{plan.engine.test_id}.tensors_loaded", loaded)
        eagle3_result.passed(f"{plan.engine.label}: {loaded} tensors into {len(plan.parameters)} parameters, "
                             "none dropped, " + (plan.harmless or "none uninitialised"))

    @pytest.mark.eagle3_contract("engine.vocab")
    def test_vocab(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine reads the draft->target map the way it was written."""
        plan = eagle3_load_plan
        _judge(request, plan)
        eagle3_result.passed(f"{plan.engine.label}: {plan.map_reading}")

    @pytest.mark.eagle3_contract("engine.aux_layers")
    def test_aux_layers(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The target layers the engine feeds are the layers the draft was trained on."""
        plan = eagle3_load_plan
        eagle3_result.basis(plan.aux.basis)
        _judge(request, plan)
        aux = plan.aux
        if aux.captured is None:
            skip_for_target(request.config, _checkpoint(request),
                            f"{plan.engine.label} uses its default aux layers [2, L//2, L-3] or a rule that needs the "
                            "target's layer count: pass --eagle3-target=DIR")
        if aux.trained is None:
            pytest.skip(f"cannot tell which layers the draft was trained on ({aux.trained_from}); pass "
                        "--eagle3-aux-convention=input-of|output-of")
        eagle3_result.measured(f"{plan.engine.test_id}.captured_inputs_of", list(aux.captured))
        other = ""
        if aux.other_mode is not None and aux.other_mode != aux.captured:
            other = f"; the other runtime mode would feed {describe_inputs(aux.other_mode)}"
        eagle3_result.passed(f"{plan.engine.label} feeds {describe_inputs(aux.captured)} = training{other}"
                             + (f" ({plan.assumptions['aux_layers']})" if "aux_layers" in plan.assumptions else ""))

    @pytest.mark.eagle3_contract("engine.fc")
    def test_fc(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The concatenation the target sends matches what fc was trained on; fc is not bypassed."""
        plan = eagle3_load_plan
        _judge(request, plan)
        fc = plan.fc
        if fc.action == "unknown":
            skip_for_target(request.config, _checkpoint(request),
                            "how many states the target captures depends on its layer count and architecture: "
                            "pass --eagle3-target=DIR")
        eagle3_result.passed(f"{plan.engine.label}: {fc.states_sent} states, {fc.width_sent} wide -> fc ({fc.action})")

    @pytest.mark.eagle3_contract("engine.norms")
    def test_norms(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine applies the norms the draft was trained with."""
        plan = eagle3_load_plan
        _judge(request, plan)
        eagle3_result.passed(f"{plan.engine.label}: " + ", ".join(f"{k}={v}" for k, v in plan.norms.items())
                             + (f" ({plan.assumptions['norms']})" if "norms" in plan.assumptions else ""))

    @pytest.mark.eagle3_contract("engine.embeddings")
    def test_embeddings(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """embed_tokens and lm_head come from where the draft was trained with them."""
        plan = eagle3_load_plan
        _judge(request, plan)
        eagle3_result.passed(f"{plan.engine.label}: embed_tokens from {plan.embed_tokens}, lm_head from {plan.lm_head}")

    @pytest.mark.eagle3_contract("engine.layers")
    def test_layers(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                    request: pytest.FixtureRequest) -> None:
        """The engine builds as many draft layers as the checkpoint has."""
        plan = eagle3_load_plan
        _judge(request, plan)
        eagle3_result.passed(f"{plan.engine.label}: {plan.draft_layers} draft layer(s)")

    @pytest.mark.eagle3_contract("engine.geometry")
    def test_geometry(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                      request: pytest.FixtureRequest) -> None:
        """The attention the engine builds (heads, KV heads, head_dim as it derives them) fits the q/k/v/o tensors."""
        plan = eagle3_load_plan
        _judge(request, plan, needs_class=True)
        eagle3_result.passed(f"{plan.engine.label}: q/k/v/o fit the heads and head_dim it derives")

    @pytest.mark.eagle3_contract("engine.runtime")
    def test_runtime(self, eagle3_load_plan: LoadPlan, eagle3_result: Eagle3Result,
                     request: pytest.FixtureRequest) -> None:
        """Draft and target can run together: the draft's KV pages fit the engine's KV-cache manager, its position
        range covers the target's context, and its quantization, sliding window and dtype are the ones it was
        trained with (engines.serving)."""
        plan = eagle3_load_plan
        _judge(request, plan)
        verdict = plan.runtime
        if verdict is None:
            skip_for_target(request.config, _checkpoint(request),
                            "the KV-cache check needs the target's attention geometry: pass --eagle3-target=DIR")
        if verdict.status == "unknown":
            unknown_finding = _runtime_unknown(plan)
            unknown(unknown_finding, settings(request.config).unknown == UNKNOWN_FAIL)
        serving = [n.removeprefix(NOTE_PREFIX) for n in plan.notes if n.startswith(NOTE_PREFIX)]
        eagle3_result.passed(f"{plan.engine.label}: {verdict.message}" + "".join(f"; {n}" for n in serving))

    @pytest.mark.eagle3_contract("engine.producer")
    def test_producer(self, eagle3_load_plan: LoadPlan, eagle3_checkpoint: Checkpoint, eagle3_result: Eagle3Result,
                      request: pytest.FixtureRequest) -> None:
        """What the producer trained with reaches the engine: fields it never reads, the rope it builds from the
        config, and the files beside the weights that its loader reads."""
        plan = eagle3_load_plan
        _judge(request, plan)
        fmt = eagle3_checkpoint.format
        extra = [n for n in plan.notes if "drops its" in n]
        what = (f"nothing {fmt.label} is known to train with is lost (fields, rope, norms)" if fmt.producer != "unknown"
                else "producer unknown: only the files beside the weights are checked")
        priced = f"; {'; '.join(plan.priced)}" if plan.priced else ""
        eagle3_result.passed(f"{plan.engine.label}: {what}" + (f"; {'; '.join(extra)}" if extra else "") + priced)


def _judge(request: pytest.FixtureRequest, plan: LoadPlan, **how: bool) -> None:
    """Fail with the plan's findings for the contract's area; then skip (fail with --eagle3-unknown=fail)
    where the profiles cannot judge the area, or its verdict depends on an undecided reading."""
    __tracebackhide__ = True
    area = contract_id(request.node).removeprefix("engine.")
    require_matching_target(request.config, _checkpoint(request), area, plan.engine)
    check_plan(request, plan, **how)
    if area in plan.unknown:
        unknown(plan.unknown[area], settings(request.config).unknown == UNKNOWN_FAIL)


def _checkpoint(request: pytest.FixtureRequest) -> Checkpoint:
    ckpt: Checkpoint = request.getfixturevalue("eagle3_checkpoint")
    return ckpt


def _runtime_unknown(plan: LoadPlan) -> Finding:
    verdict = plan.runtime
    return Finding("runtime-unknown", f"{plan.engine.label}: {verdict.message}", fix="", details=(f"rule: {verdict.source}",))
