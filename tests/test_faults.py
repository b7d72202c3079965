"""Every producer's good checkpoint passes; every synthetic fault is caught by its contract.

One pytester run per producer checks all of that producer's fault checkpoints at once (the
plugin takes many ``--eagle3-ckpt``); mismatches are collected and reported together.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.producers.formats import ANGELSLIM, EAGLE, SPECFORGE, SPECULATORS
from pytest_eagle3.testing.synth import FAULTS, PRODUCERS, SPECFORGE_HF, SynthSpec

#: The newest vLLM read (the default a bare "vllm" selects).
NEWEST_VLLM = RELEASES["vllm"][-1]

ALL_CONTRACTS = (
    "checkpoint.readable", "config.parseable", "format.detected", "config.shapes",
    "target.consistent", "vocab.map", "weights.finite", "weights.initialised",
)

#: Contracts that must stay green when a fault targets another contract (no over-reporting).
#: Applies to every vocab.map and weights.* fault.
QUIET_FOR = {
    "vocab.map": ("checkpoint.readable", "config.parseable", "format.detected", "config.shapes",
                  "target.consistent", "weights.finite", "weights.initialised"),
    "weights.finite": ("checkpoint.readable", "config.parseable", "format.detected", "config.shapes",
                       "target.consistent", "vocab.map", "weights.initialised"),
    "weights.initialised": ("checkpoint.readable", "config.parseable", "format.detected", "config.shapes",
                            "target.consistent", "vocab.map", "weights.finite"),
}


def expected_label_ok(producer: str, label: str) -> bool:
    if producer in (SPECFORGE, SPECFORGE_HF):
        return label.startswith("specforge (")
    return label == producer


def faults_for(producer: str) -> list[str]:
    return [name for name, fault in FAULTS.items() if producer in fault.producers]


def test_a_fault_that_does_not_fit_the_layout_is_refused() -> None:
    """EAGLE writes pytorch_model.bin: a safetensors-header fault cannot silently yield a good file."""
    with pytest.raises(ValueError, match="do not apply to the eagle layout"):
        SynthSpec(producer=EAGLE).with_faults("header-length-lie")


#: Good drafts the newest engines still refuse: SGLang reads neither the speculators format nor
#: the architectures EAGLE (LlamaForCausalLM) and AngelSlim (Eagle3LlamaForCausalLM) write.
REFUSED_BY_NEWEST = {("sglang==0.5.23", SPECULATORS), ("sglang==0.5.23", EAGLE), ("sglang==0.5.23", ANGELSLIM)}


def test_good_checkpoints_pass(
    run_contracts: Callable[..., Any], make_checkpoint: Callable[..., Path], synth_target: Path
) -> None:
    """Every producer's good checkpoint (plain, sharded, 2-layer) passes every engine-independent contract,
    and the newest engines judge it as their profiles say."""
    cases: dict[Path, str] = {}
    for producer in PRODUCERS:
        cases[make_checkpoint(SynthSpec(producer=producer))] = producer
        if producer != EAGLE:  # EAGLE writes one pytorch_model.bin; sharded=True does not apply
            cases[make_checkpoint(SynthSpec(producer=producer, sharded=True))] = producer
    cases[make_checkpoint(SynthSpec(producer=SPECULATORS, draft_layers=2))] = SPECULATORS

    # random weights: acceptance ~1, so no minimum; the reference forward still loads every layout
    run = run_contracts(list(cases), "--eagle3-min-acceptance=0", target=synth_target)

    problems: list[str] = []
    labels: dict[str, str] = {}
    for path, producer in cases.items():
        name = path.name
        verdict = run.verdict(path)
        if verdict != "pass":
            problems.append(f"{name}: verdict {verdict!r}")
        outcomes = run.outcomes(path)
        for contract in (*ALL_CONTRACTS, "reference.acceptance", "reference.convention"):
            outcome, message = outcomes.get(contract, ("absent", ""))
            if outcome != "passed":
                problems.append(f"{name}: {contract} {outcome}: {message}")
        entry = next(c for c in run.report["checkpoints"] if c["path"] == str(path))
        label = entry["format"]
        labels[name] = label
        if not expected_label_ok(producer, label):
            problems.append(f"{name}: format {label!r}, expected producer {producer!r}")
        if producer in (SPECFORGE, SPECFORGE_HF):
            labels.setdefault(producer, label)
        for engine in ("sglang==0.5.23", f"vllm=={NEWEST_VLLM}"):
            expected = "fail" if (engine, producer) in REFUSED_BY_NEWEST else "pass"
            if (engine, producer) == (f"vllm=={NEWEST_VLLM}", ANGELSLIM):  # no ids, AngelSlim's releases' defaults disagree
                expected = "not judged"  # and a random draft measures nothing: the aux layers are undecided
            got = run.engine_entry(path, engine)
            if got["verdict"] != expected:
                problems.append(f"{name}: {engine} {got['verdict']} ({got['failing']}), expected {expected}")
    # the two SpecForge exports are told apart (SGLang export vs --to hf with embed_tokens)
    if labels.get(SPECFORGE) == labels.get(SPECFORGE_HF):
        problems.append(f"specforge and specforge-hf share the label {labels.get(SPECFORGE)!r}")
    assert not problems, "good checkpoints misjudged:\n  " + "\n  ".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("producer", PRODUCERS)
def test_faults_caught(
    producer: str,
    run_contracts: Callable[..., Any],
    make_checkpoint: Callable[..., Path],
    synth_target: Path,
) -> None:
    """Each fault fails its contract with its diagnosis code; vocab/weight faults fire nothing else."""
    cases = {name: make_checkpoint(SynthSpec(producer=producer).with_faults(name)) for name in faults_for(producer)}
    assert cases, producer
    run = run_contracts(list(cases.values()), target=synth_target / "config.json")
    assert run.result.ret == 1, run.output[-3000:]
    assert "INTERNALERROR" not in run.output

    problems: list[str] = []
    for name, path in cases.items():
        fault = FAULTS[name]
        verdict = run.verdict(path)
        if verdict != "fail":
            problems.append(f"{name}: verdict {verdict!r}, expected 'fail'")
        outcomes = run.outcomes(path)
        outcome, message = outcomes.get(fault.contract, ("absent", ""))
        prefix = f"{fault.contract} [{fault.diagnosis}]"
        if outcome != "failed" or not message.startswith(prefix):
            problems.append(f"{name}: {fault.contract} {outcome}: {message!r}, expected it to start with {prefix!r}")
        for quiet in QUIET_FOR.get(fault.contract, ()):
            q_outcome, q_message = outcomes.get(quiet, ("absent", ""))
            if q_outcome != "passed":
                problems.append(f"{name}: over-reporting, {quiet} {q_outcome}: {q_message!r}")
    assert not problems, f"{producer}: {len(problems)} fault checks went wrong:\n  " + "\n  ".join(problems)
