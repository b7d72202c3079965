"""Verdicts judged under every plausible reading (``pytest_eagle3/verdict/judge.py``): when neither the
aux-id convention nor the producer is decided by evidence, each engine contract is judged under every
candidate reading; a failure under all of them stands ("whatever the convention"), a disagreement is
undecided and says what decides it. Synthetic drafts whose configs are edited into the ambiguous cases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.producers.formats import INPUT_OF, OUTPUT_OF, UNKNOWN
from pytest_eagle3.producers.names import EAGLE, SPECFORGE, SPECULATORS
from pytest_eagle3.producers.records import RECORDS
from pytest_eagle3.testing.synth import SynthSpec
from pytest_eagle3.verdict.judge import Reading, plausible_readings
from tests.conftest import ContractRun

VLLM = "vllm==0.32.0"
SGLANG = "sglang==0.5.23"


def _top_level_ids(ids: list[int]) -> Callable[[dict[str, Any]], None]:
    """SpecForge's layout with the ids moved to the top level, where SpecForge never writes them: the
    producer, and so the convention, is unknown."""
    def edit(config: dict[str, Any]) -> None:
        config.pop("eagle_config", None)
        config["eagle_aux_hidden_state_layer_ids"] = ids
    return edit


def test_records_say_which_signals_are_unique() -> None:
    """Uniqueness is data: every signal names the producers sharing it, SpecForge's layout signals name EAGLE."""
    specforge = RECORDS[SPECFORGE].signals
    assert all(s.shared_with == (EAGLE,) and not s.unique and s.shared_source for s in specforge)
    assert all(s.unique for s in RECORDS[SPECULATORS].signals)


def test_unknown_producer_is_read_both_ways(make_variant: Callable[..., Path]) -> None:
    draft = make_variant(SynthSpec(producer="specforge"), name="readings-toplevel", config=_top_level_ids([2, 4, 5]))
    ckpt = Checkpoint.open(draft)
    assert ckpt.format.producer == UNKNOWN
    assert plausible_readings(ckpt) == (Reading(INPUT_OF, UNKNOWN), Reading(OUTPUT_OF, UNKNOWN))
    assert plausible_readings(ckpt, convention=OUTPUT_OF) == (Reading(OUTPUT_OF, UNKNOWN),)


def test_fails_under_every_convention(make_variant: Callable[..., Path], run_contracts: Callable[..., ContractRun],
                                      synth_target: Path) -> None:
    """SGLang reads no top-level ids and feeds its defaults, the inputs of layers [2, 4, 5]: neither reading of
    [2, 4, 8] (inputs [2, 4, 8] or [3, 5, 9]) is what it feeds."""
    draft = make_variant(SynthSpec(producer="specforge"), name="readings-both-fail",
                         config=_top_level_ids([2, 4, 8]))
    run = run_contracts([draft], f"--eagle3-engine={SGLANG}", target=synth_target / "config.json")
    outcome, message = run.engine_outcomes(draft, SGLANG)["engine.aux_layers"]
    assert outcome == "failed" and "[aux-layers]" in message, message
    assert "the draft sees the wrong layers, acceptance drops (whatever the convention)" in run.output
    assert "judged under every plausible reading: input-of, producer unknown, output-of, producer unknown" in run.output


def test_disagreeing_readings_are_undecided(make_variant: Callable[..., Path],
                                            run_contracts: Callable[..., ContractRun], synth_target: Path) -> None:
    """vLLM uses [2, 4, 5] as-is: right if they are input-of ids, one layer early if output-of. Undecided
    (skipped, naming the option that decides it; a failure with --eagle3-unknown=fail); stated, it is judged."""
    draft = make_variant(SynthSpec(producer="specforge"), name="readings-split", config=_top_level_ids([2, 4, 5]))
    target = synth_target / "config.json"
    run = run_contracts([draft], f"--eagle3-engine={VLLM}", target=target)
    outcome, message = run.engine_outcomes(draft, VLLM)["engine.aux_layers"]
    assert outcome == "skipped" and "the verdict depends on how the checkpoint is read" in message, message
    run = run_contracts([draft], f"--eagle3-engine={VLLM}", "--eagle3-unknown=fail", target=target)
    outcome, message = run.engine_outcomes(draft, VLLM)["engine.aux_layers"]
    assert outcome == "failed" and "[reading-undecided]" in message, message
    (finding,) = [f for c in run.engine_entry(draft, VLLM)["contracts"] if c["id"] == "engine.aux_layers"
                  for f in c["findings"]]
    assert finding["readings"] == [{"reading": "input-of, producer unknown", "outcome": "passes"},
                                   {"reading": "output-of, producer unknown", "outcome": "fails"}]
    assert "fix: state the convention with --eagle3-aux-convention=input-of|output-of" in run.output
    assert "under output-of, producer unknown vLLM 0.32.0 fails" in run.output
    for convention, expected in ((INPUT_OF, "passed"), (OUTPUT_OF, "failed")):
        run = run_contracts([draft], f"--eagle3-engine={VLLM}", f"--eagle3-aux-convention={convention}",
                            target=target)
        outcome, message = run.engine_outcomes(draft, VLLM)["engine.aux_layers"]
        assert outcome == expected, message
        assert "whatever the" not in message


def test_shared_layout_gets_per_producer_readings(make_variant: Callable[..., Path]) -> None:
    """midlayer.* keys with LlamaForCausalLMEagle3 and no eagle_config: SpecForge's export, or an EAGLE-trained
    draft republished under that name (sglang#33966); each brings its own convention."""
    draft = make_variant(SynthSpec(producer="specforge", write_aux_ids=False), name="readings-shared")
    ckpt = Checkpoint.open(draft)
    assert ckpt.format.producer == SPECFORGE and not ckpt.candidates.identified
    assert plausible_readings(ckpt) == (Reading(OUTPUT_OF, SPECFORGE), Reading(INPUT_OF, EAGLE))
    assert ckpt.as_read_by(EAGLE).config.norm_flags["norm_output"] is False
    assert ckpt.config.norm_flags["norm_output"] is True
    # an eagle_config (which the EAGLE code never writes) rules EAGLE out
    written = make_variant(SynthSpec(producer="specforge"), name="readings-specforge")
    assert plausible_readings(Checkpoint.open(written)) == (Reading(OUTPUT_OF, SPECFORGE),)


def test_shared_layout_verdicts(make_variant: Callable[..., Path], run_contracts: Callable[..., ContractRun],
                               synth_target: Path) -> None:
    """Without ids both engines feed their defaults, right for either producer: the verdict stands. A
    rope_theta of 500000 is what SpecForge trains with, but the EAGLE code builds rope with base 10000 whatever
    the config says: the producer decides, so engine.producer is undecided and names each producer's mark."""
    target = synth_target / "config.json"
    draft = make_variant(SynthSpec(producer="specforge", write_aux_ids=False), name="readings-shared-run")
    run = run_contracts([draft], f"--eagle3-engine={VLLM}", target=target)
    outcomes = run.engine_outcomes(draft, VLLM)
    assert all(o == "passed" for cid, (o, _) in outcomes.items() if cid != "engine.acceptance"), outcomes
    draft = make_variant(SynthSpec(producer="specforge", write_aux_ids=False), name="readings-shared-rope",
                         config=lambda c: c.update(rope_theta=500000.0))
    run = run_contracts([draft], f"--eagle3-engine={VLLM}", "--eagle3-unknown=fail", target=target)
    outcome, message = run.engine_outcomes(draft, VLLM)["engine.producer"]
    assert outcome == "failed" and "[reading-undecided]" in message, message
    assert "(output-of, specforge / input-of, eagle)" in run.output
    assert "identify the producer by a field or file only it writes (specforge: nothing unique on record; " \
           "eagle: plain LlamaForCausalLM architecture with draft_vocab_size and midlayer.* keys)" in run.output
    assert run.engine_outcomes(draft, VLLM)["engine.aux_layers"][0] == "passed"


def test_prediction_fails_under_every_convention(make_variant: Callable[..., Path],
                                                 run_contracts: Callable[..., ContractRun], synth_target: Path) -> None:
    """An untrained draft of unknown producer, with the target's weights: the measurement cannot tell the
    readings apart, and the prediction is low under both: engine.acceptance fails whatever the convention."""
    draft = make_variant(SynthSpec(producer="specforge"), name="readings-predicted", config=_top_level_ids([2, 4, 5]))
    run = run_contracts([draft], f"--eagle3-engine={VLLM}", target=synth_target)
    outcome, message = run.engine_outcomes(draft, VLLM)["engine.acceptance"]
    assert outcome == "failed" and "[predicted-low]" in message, message
    assert "(whatever the convention)" in run.output
    assert "judged under every plausible reading: input-of, output-of" in run.output


def _prediction(mean: float, trained: float) -> Any:
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.reference.acceptance import Acceptance
    from pytest_eagle3.reference.acceptance import Reading as Fed
    from pytest_eagle3.reference.evidence import decide
    from pytest_eagle3.reference.predict import Prediction, Training
    from pytest_eagle3.reference.simulate import Feed

    def acc(m: float) -> Acceptance:
        return Acceptance(Fed((2, 4, 5), 0), m, (m - 1.0,), 100)

    training = Training(Feed((2, 4, 5)), acc(trained), "assumed", "assumed: test", decide([acc(trained)]))
    from packaging.version import Version

    return Prediction(EngineVersion("vllm", Version("0.32.0")), acc(mean), training)


def test_disagreeing_predictions_are_undecided() -> None:
    """Read one way the engine feeds the trained layers (no loss), read the other it does not: undecided."""
    from pytest_eagle3.reference.prediction_findings import judged_findings

    findings, undecided = judged_findings({INPUT_OF: _prediction(1.9, 1.9), OUTPUT_OF: _prediction(1.2, 1.9)}, 1.3)
    assert findings == [] and undecided is not None and undecided.code == "reading-undecided"
    assert undecided.fix == "state the convention with --eagle3-aux-convention=input-of|output-of"
    findings, undecided = judged_findings({INPUT_OF: _prediction(1.2, 1.9), OUTPUT_OF: _prediction(1.1, 1.9)}, 1.3)
    assert undecided is None and findings[0].summary.endswith("(whatever the convention)")
