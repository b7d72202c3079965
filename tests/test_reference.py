"""Reference acceptance: exact constructed cases, the demo pair, and the contracts as users run them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.releases import RELEASES
from tests.conftest import ContractRun
from tests.reference_cases import (
    EXAMPLES,
    demo_variant,
    write_constant_draft,
    write_constant_target,
)

#: The newest vLLM read (the default a bare "vllm" selects).
NEWEST_VLLM = RELEASES["vllm"][-1]

pytest.importorskip("transformers", reason="reference acceptance needs transformers (pip install -e '.[target]')")

DEMO_TARGET = EXAMPLES / "demo-target"
DEMO_DRAFT = EXAMPLES / "demo-draft"
DEMO_SGLANG = EXAMPLES / "demo-draft-sglang"


@pytest.fixture(scope="module")
def constant_pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("constant")
    return {
        "target": write_constant_target(root / "target"),
        "draft": write_constant_draft(root / "draft"),
        "absolute": write_constant_draft(root / "absolute", d2t_reading="absolute"),
        "shuffled": write_constant_draft(root / "shuffled", d2t_reading="shuffled"),
    }


def _measure(draft: Path, target: Path) -> object:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.readings import measure_reference

    return measure_reference(Checkpoint.open(draft), str(target))


def test_a_draft_that_always_proposes_the_targets_token_is_always_accepted(constant_pair: dict[str, Path]) -> None:
    from pytest_eagle3.reference.readings import (
        ReferenceResult,
        acceptance_findings,
        convention_findings,
    )

    result = _measure(constant_pair["draft"], constant_pair["target"])
    assert isinstance(result, ReferenceResult)
    assert result.measured.per_position == (1.0, 1.0, 1.0)
    assert result.measured.mean_acceptance_length == 4.0
    # every layer of this target carries the same state: all aux readings tie, none is blamed
    aux_readings = [a for a in result.inference.results if a.reading.d2t == "offsets"]
    assert len(aux_readings) == 3 and all(a.mean_acceptance_length == 4.0 for a in aux_readings)
    assert acceptance_findings(result, 1.3) == [] and convention_findings(result) == []


def test_absolute_id_d2t_is_never_accepted_and_is_named(constant_pair: dict[str, Path]) -> None:
    from pytest_eagle3.reference.readings import (
        ReferenceResult,
        acceptance_findings,
        convention_findings,
    )

    result = _measure(constant_pair["absolute"], constant_pair["target"])
    assert isinstance(result, ReferenceResult)
    assert result.measured.per_position == (0.0, 0.0, 0.0)
    assert result.measured.mean_acceptance_length == 1.0
    assert result.inference.best.reading.d2t == "absolute"
    assert result.inference.best.mean_acceptance_length == 4.0
    (low,) = acceptance_findings(result, 1.3)
    assert low.code == "low-acceptance" and "1.00 < 1.3" in low.summary
    (finding,) = convention_findings(result)
    assert finding.code == "d2t-absolute"
    assert "acceptance 1.00 as declared vs 4.00 (drop 3.00) when read as absolute ids" in finding.summary


def test_a_shuffled_d2t_is_never_accepted_and_no_reading_rescues_it(constant_pair: dict[str, Path]) -> None:
    from pytest_eagle3.reference.readings import (
        ReferenceResult,
        acceptance_findings,
        convention_findings,
    )

    result = _measure(constant_pair["shuffled"], constant_pair["target"])
    assert isinstance(result, ReferenceResult)
    assert all(a.mean_acceptance_length == 1.0 for a in result.inference.results)
    (low,) = acceptance_findings(result, 1.3)
    assert "1.00 < 1.3" in low.summary and "retrain" in low.fix
    assert convention_findings(result) == []


def test_the_walk_matches_a_token_by_token_replay(constant_pair: dict[str, Path]) -> None:
    """The batched proposals equal drafting from one position at a time with a growing context."""
    import torch

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.acceptance import load_target, run_target
    from pytest_eagle3.reference.draft import ReferenceDraft

    draft = ReferenceDraft.from_checkpoint(Checkpoint.open(DEMO_DRAFT))
    target = load_target(str(DEMO_TARGET))
    (run,) = run_target(target, [[5], [77]], new_tokens=12)
    aux = torch.cat([run.states[i] for i in (2, 4, 5)], dim=-1)[:, :9]
    embed = draft.weights["embed_tokens.weight"]
    batched, _ = draft.propose(aux, run.sequences[:, 1:10], 3, embed)
    for position in range(9):  # the engine: context up to `position`, then 3 chained steps
        alone, _ = draft.propose(aux[:, : position + 1], run.sequences[:, 1: position + 2], 3, embed)
        assert torch.equal(alone[:, position], batched[:, position])


@pytest.fixture(scope="module")
def demo_variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not (DEMO_TARGET / "model.safetensors").is_file():
        pytest.skip("the demo pair is not built: python examples/build_demo_pair.py")
    root = tmp_path_factory.mktemp("variants")
    return {
        # the config names the layer after each trained one (input-of [3,5,6] instead of [2,4,5])
        "shifted": demo_variant("demo-draft", root / "shifted", config={"eagle_aux_hidden_state_layer_ids": [3, 5, 6]}),
        "absolute": demo_variant("demo-draft", root / "absolute", d2t="absolute"),
        "shuffled": demo_variant("demo-draft", root / "shuffled", d2t="shuffled"),
        # trained on outputs of [2,4,5] (SpecForge), repackaged as an EAGLE-format draft without ids:
        # engines then use their default input-of (2, N//2, N-3) = [2,4,5], one layer early
        "repackaged": demo_variant("demo-draft-sglang", root / "repackaged",
                                   config={"architectures": ["LlamaForCausalLM"]}, drop_config=("eagle_config",)),
    }


def test_demo_pair_as_users_run_it(run_contracts: Callable[..., ContractRun], demo_variants: dict[str, Path]) -> None:
    run = run_contracts([DEMO_DRAFT, DEMO_SGLANG, *demo_variants.values()], target=DEMO_TARGET)
    assert "Traceback" not in run.output
    ref = {c["path"]: c.get("reference") for c in run.report["checkpoints"]}
    good, sglang = ref[str(DEMO_DRAFT)], ref[str(DEMO_SGLANG)]
    assert good is not None and sglang is not None
    # drafts trained each way: the declared convention is the inferred one, and clearly ahead
    assert (good["convention"], good["inferred"]["convention"]) == ("input-of", "input-of")
    assert (sglang["convention"], sglang["inferred"]["convention"]) == ("output-of", "output-of")
    for figures in (good, sglang):
        assert figures["mean_acceptance_length"] > 3.0 and figures["inferred"]["margin"] > 0.5
        assert figures["mean_acceptance_length"] == pytest.approx(1 + sum(figures["per_position"]), abs=1e-3)
    for path in (DEMO_DRAFT, DEMO_SGLANG):
        assert run.verdict(path) == "pass"
        outcome, message = run.outcomes(path)["reference.acceptance"]
        assert outcome == "passed" and message.startswith("mean acceptance length")
    run.result.stdout.fnmatch_lines([
        (f"reference acceptance {DEMO_DRAFT}: {good['mean_acceptance_length']:.2f} at k=3 (per position *) "
         "with aux ids read as input-of; inferred convention input-of, d2t as offsets*"),
    ])

    # a config that misdeclares its layers: the measurement settles the reading, every engine
    # contract judges against it, and the fix that reaches the trained figure is printed with it
    shifted = ref[str(demo_variants["shifted"])]
    outcome, message = run.outcomes(demo_variants["shifted"])["reference.convention"]
    declared = shifted["mean_acceptance_length"]
    best = shifted["inferred"]["mean_acceptance_length"]
    assert outcome == "passed" and declared < 1.5 and best > 2.5
    assert message.startswith("config declares input-of [3,5,6]") and "basis: measured" in message
    outcome, message = run.outcomes(demo_variants["shifted"])["reference.acceptance"]
    assert outcome == "failed" and f"reference mean acceptance length {declared:.2f} < 1.3" in message
    aux = run.engine_outcomes(demo_variants["shifted"], f"vllm=={NEWEST_VLLM}")["engine.aux_layers"]
    assert aux[0] == "failed" and "the draft was trained on outputs of layers [1, 3, 4]" in aux[1]
    run.result.stdout.fnmatch_lines([("*fix: write [[]2, 4, 5[]] into eagle_aux_hidden_state_layer_ids "
                                      f"(for vLLM {NEWEST_VLLM}): predicted 3.*")])

    repackaged = ref[str(demo_variants["repackaged"])]
    outcome, message = run.outcomes(demo_variants["repackaged"])["reference.convention"]
    assert outcome == "passed" and "measurement settles it" in message
    assert repackaged["inferred"]["convention"] == "output-of"
    aux = run.engine_outcomes(demo_variants["repackaged"], f"vllm=={NEWEST_VLLM}")["engine.aux_layers"]
    assert aux[0] == "failed" and "uses its defaults" in aux[1] and "trained on outputs of layers [2, 4, 5]" in aux[1]

    absolute = ref[str(demo_variants["absolute"])]
    outcome, message = run.outcomes(demo_variants["absolute"])["reference.convention"]
    assert outcome == "passed" and "d2t as absolute ids" in message
    assert absolute["mean_acceptance_length"] < 1.1 and absolute["inferred"]["d2t"] == "absolute"
    assert run.outcomes(demo_variants["absolute"])["vocab.map"][0] == "failed"
    outcome, message = run.engine_outcomes(demo_variants["absolute"], f"vllm=={NEWEST_VLLM}")["engine.acceptance"]
    assert outcome == "failed" and "d2t read as offsets: -2." in run.output

    shuffled = ref[str(demo_variants["shuffled"])]
    assert shuffled["mean_acceptance_length"] < 1.1
    outcome, message = run.outcomes(demo_variants["shuffled"])["reference.acceptance"]
    assert outcome == "failed" and message.startswith("reference.acceptance [low-acceptance]")


def test_min_acceptance_option_env_and_ini(
    run_contracts: Callable[..., ContractRun], constant_pair: dict[str, Path], pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draft, target = constant_pair["draft"], constant_pair["target"]
    run = run_contracts([draft], "--eagle3-min-acceptance=4.5", "-p", "no:randomly", target=target)
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--eagle3-min-acceptance: '4.5' is not a mean acceptance length" in run.result.stderr.str()
    monkeypatch.setenv("EAGLE3_MIN_ACCEPTANCE", "3.9")
    assert run_contracts([draft], target=target).outcomes(draft)["reference.acceptance"][0] == "passed"
    monkeypatch.delenv("EAGLE3_MIN_ACCEPTANCE")
    pytester.makeini("[pytest]\neagle3_min_acceptance = nan\n")
    run = run_contracts([draft], target=target)
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR and "'nan'" in run.result.stderr.str()


def test_without_target_or_weights_the_reference_skips_naming_what_is_missing(
    run_contracts: Callable[..., ContractRun], constant_pair: dict[str, Path]
) -> None:
    draft = constant_pair["draft"]
    outcome, message = run_contracts([draft]).outcomes(draft)["reference.acceptance"]
    assert outcome == "skipped" and "--eagle3-target" in message
    config_only = constant_pair["target"] / "config.json"
    outcome, message = run_contracts([draft], target=config_only).outcomes(draft)["reference.acceptance"]
    assert outcome == "skipped" and "needs the target's weights" in message


def test_prompts_file_and_bad_prompts_get_a_verdict(
    run_contracts: Callable[..., ContractRun], constant_pair: dict[str, Path], tmp_path: Path
) -> None:
    draft, target = constant_pair["draft"], constant_pair["target"]
    good = tmp_path / "prompts.txt"
    good.write_text("[1, 2, 3]\n\n[7]\n")
    run = run_contracts([draft], f"--eagle3-prompts={good}", target=target)
    assert run.report["checkpoints"][0]["reference"]["prompts"] == f"{good} (2 prompts)"
    bad = tmp_path / "bad.txt"
    bad.write_text("[1, 2]\nhello there\n")
    run = run_contracts([draft], f"--eagle3-prompts={bad}", target=target)
    outcome, message = run.outcomes(draft)["reference.acceptance"]
    assert outcome == "failed" and "line 2: text, but the target has no tokenizer" in message
    assert "Traceback" not in run.output
    bad.write_text("[1, 9999]\n")
    outcome, message = run_contracts([draft], f"--eagle3-prompts={bad}", target=target).outcomes(draft)[
        "reference.acceptance"]
    assert outcome == "failed" and "outside the target vocab [0, 64)" in message


def test_a_target_transformers_cannot_load_is_a_verdict(
    run_contracts: Callable[..., ContractRun], constant_pair: dict[str, Path], tmp_path: Path
) -> None:
    import json
    import shutil

    draft = constant_pair["draft"]
    target = tmp_path / "target"
    shutil.copytree(constant_pair["target"], target)
    config = json.loads((target / "config.json").read_text())
    config.update(model_type="no_such_model", architectures=["NoSuchModelForCausalLM"])  # no transformers class
    (target / "config.json").write_text(json.dumps(config))
    run = run_contracts([draft], target=target)
    outcome, message = run.outcomes(draft)["reference.acceptance"]
    assert outcome == "failed" and "transformers cannot load the target" in message
    assert "Traceback" not in run.output
    as_target = run_contracts([draft], target=draft)  # a draft directory given as the target: a usage error
    assert as_target.result.ret == pytest.ExitCode.USAGE_ERROR and "is an EAGLE-3 draft" in as_target.result.stderr.str()
