"""The engine contracts as a user meets them: each real incident from the reference notes,
reproduced with a synthetic checkpoint, judged per engine version, with the message checked."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.testing.synth import MODELOPT, SPECFORGE, SPECULATORS, SynthSpec
from tests.conftest import ContractRun, config_variant

#: The vLLM a bare "vllm" (and the default selection) judges: the newest release read.
NEWEST = RELEASES["vllm"][-1]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

Run = Callable[..., ContractRun]


def _eagle_config(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config.setdefault("eagle_config", {}).update(values)
    return edit


def test_kimi_seed_layers0_keys_dropped_by_sglang_before_0_5_12(run_contracts: Run,
                                                                make_checkpoint: Callable[..., Path]) -> None:
    """The seed incident: a draft saved with layers.0.* keys served by SGLang 0.5.11 runs with a random layer."""
    draft = make_checkpoint(SynthSpec(producer=MODELOPT))
    run = run_contracts([draft], "--eagle3-engine=sglang==0.5.11,sglang==0.5.12")
    old = run.engine_outcomes(draft, "sglang==0.5.11")["engine.keys"]
    assert old[0] == "failed"
    assert re.match(r"engine\.keys \[dropped\]: SGLang 0\.5\.11 will silently drop 10 tensors: layers\.0\.", old[1])
    assert "rename layers.0.* -> midlayer.*" in run.output and "SGLang >= 0.5.12" in run.output
    assert "load plan, SGLang 0.5.11" in run.output
    assert run.engine_outcomes(draft, "sglang==0.5.12")["engine.keys"][0] == "passed"


def test_d2t_corruption_fails_every_engine(run_contracts: Run, make_checkpoint: Callable[..., Path],
                                           synth_target: Path) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECULATORS).with_faults("d2t-absolute"))
    run = run_contracts([draft], "--eagle3-engine=vllm==0.11.0,vllm", target=synth_target / "config.json")
    assert run.verdict(draft) == "fail"
    for engine in ("vllm==0.11.0", f"vllm=={NEWEST}"):
        entry = run.engine_entry(draft, engine)
        assert entry["verdict"] == "fail" and "vocab.map" in entry["failing"]
        assert entry["contracts"] and all(c["id"].startswith(("engine.", "probe.")) for c in entry["contracts"])
    assert re.search(rf"vllm=={re.escape(NEWEST)}\s+FAIL\s+-\s+vocab\.map", run.output)  # predicted: - (no target weights)


def test_kimi_aux_ids_shifted_by_sglang_plus_one(run_contracts: Run, make_checkpoint: Callable[..., Path],
                                                 make_target: Callable[..., Path]) -> None:
    """[2, 30, 58] trained as layer inputs; SGLang before #25454 adds +1 -> [3, 31, 59] (sglang#25454)."""
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 30, 58), target_layers=61))
    target = make_target(61, "KimiK25ForConditionalGeneration")
    run = run_contracts([draft], "--eagle3-engine=sglang==0.5.12,sglang==0.5.13", "--eagle3-aux-convention=input-of",
                        target=target)
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.12")["engine.aux_layers"]
    assert outcome == "failed"
    assert ("SGLang 0.5.12 adds +1 to [2, 30, 58] -> captures inputs of layers [3, 31, 59] = outputs of layers "
            "[2, 30, 58]") in message
    assert "trained on outputs of layers [1, 29, 57]" in message
    assert run.engine_outcomes(draft, "sglang==0.5.13")["engine.aux_layers"][0] == "passed"


def test_single_hidden_state_bypasses_fc_silently(run_contracts: Run, make_variant: Callable[..., Path],
                                                  synth_target: Path) -> None:
    """use_aux_hidden_state: false sends one hidden-size state: SGLang skips fc without an error."""
    draft = make_variant(SynthSpec(producer=SPECFORGE), config=_eagle_config(use_aux_hidden_state=False))
    run = run_contracts([draft], "--eagle3-engine=sglang,vllm", target=synth_target)
    sglang = run.engine_outcomes(draft, "sglang==0.5.23")["engine.fc"]
    assert sglang[0] == "failed"
    assert "SGLang 0.5.23 sends one 64-wide hidden state and skips fc silently" in sglang[1]
    assert "drops fc at load" in run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.fc"][1]


def test_missing_aux_ids_rest_on_the_producer_default_vllm_50170(run_contracts: Run,
                                                                 make_checkpoint: Callable[..., Path],
                                                                 synth_target: Path) -> None:
    """No ids in a ModelOpt draft: ModelOpt's default (1, N//2-1, N-4 as layer outputs) is what vLLM feeds, so the
    contract passes marked assumed, naming the ids that pin it; one real head trained on other layers (vllm#50170)
    is the measurement's to find, with a target with weights."""
    draft = make_checkpoint(SynthSpec(producer=MODELOPT, write_aux_ids=False))
    run = run_contracts([draft], "--eagle3-engine=vllm", target=synth_target / "config.json")
    outcome, message = run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.aux_layers"]
    assert outcome == "passed", message
    assert "assumed: no ids in config.json; the default of modelopt" in message
    assert "pin them: write [2, 4, 5] into eagle_aux_hidden_state_layer_ids" in message


def test_sglang_trained_draft_on_vllm_is_one_layer_off_vllm_43671(run_contracts: Run,
                                                                  make_checkpoint: Callable[..., Path],
                                                                  synth_target: Path) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 4, 5)))
    run = run_contracts([draft], "--eagle3-engine=vllm==0.22.0,vllm,sglang", target=synth_target / "config.json")
    outcome, message = run.engine_outcomes(draft, "vllm==0.22.0")["engine.aux_layers"]
    assert outcome == "failed"
    assert "vLLM 0.22.0 uses [2, 4, 5] as-is -> captures inputs of layers [2, 4, 5]" in message
    outcome, message = run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.aux_layers"]
    assert outcome == "failed" and f"vLLM {NEWEST} reads aux ids from eagle_aux_hidden_state_layer_ids and 5 other " \
        "fields; none there, so it uses its defaults" in message
    assert f"aux-id fields vLLM {NEWEST} reads, in order: eagle_aux_hidden_state_layer_ids, dflash_config." \
        "target_layer_ids (+1), dspark_target_layer_ids (+1), target_layer_ids (+1), dflash_config.layer_ids, " \
        "eagle_config.layer_ids" in run.output
    assert "fix: write [3, 5, 6] into eagle_aux_hidden_state_layer_ids" in run.output
    assert run.engine_outcomes(draft, "sglang==0.5.23")["engine.aux_layers"][0] == "passed"


def test_gpt_oss_boundary_ids_sglang_32334(run_contracts: Run, make_checkpoint: Callable[..., Path],
                                           make_target: Callable[..., Path]) -> None:
    """gpt-oss [24, 30, 36] (36 layers): +1 makes 37, which never fires; fc gets 2 states, not 3."""
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE, aux_layer_ids=(24, 30, 36), target_layers=36))
    target = make_target(36, "GptOssForCausalLM")
    run = run_contracts([draft], "--eagle3-engine=sglang==0.5.16,sglang==0.5.17", "--eagle3-aux-convention=input-of",
                        target=target)
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.16")["engine.fc"]
    assert outcome == "failed"
    assert "SGLang 0.5.16 concatenates 2 captured states (128 wide) but fc expects 3 (192)" in message
    assert run.engine_outcomes(draft, "sglang==0.5.17")["engine.fc"][0] == "passed"
    assert run.engine_outcomes(draft, "sglang==0.5.17")["engine.aux_layers"][0] == "passed"


def test_four_top_level_aux_ids_vllm_54598(run_contracts: Run, make_checkpoint: Callable[..., Path],
                                           synth_target: Path) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECULATORS, aux_layer_ids=(1, 2, 4, 5)))
    run = run_contracts([draft], "--eagle3-engine=vllm", target=synth_target / "config.json")
    outcome, message = run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.fc"]
    assert outcome == "failed"
    assert f"vLLM {NEWEST} builds fc for 3 aux states (192 wide) but the checkpoint's fc takes 256" in message
    assert "fix: write num_aux_hidden_states: 4 into config.json" in run.output


def test_missing_lm_head_stays_random_sglang_27829(run_contracts: Run, make_variant: Callable[..., Path],
                                                   synth_target: Path) -> None:
    draft = make_variant(SynthSpec(producer=SPECFORGE), drop=("lm_head.weight",))
    run = run_contracts([draft], "--eagle3-engine=sglang", target=synth_target)
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.23")["engine.embeddings"]
    assert outcome == "failed" and "it stays randomly initialised (sglang#27829" in message
    assert "draft_vocab_size: null" in run.output


def test_random_embed_kept_by_vllm_torchspec_38(run_contracts: Run, tmp_path: Path) -> None:
    """A trained draft whose saved embed_tokens is noise (the rest trained with the target's frozen embedding): the
    reference measures it working with the target's embedding, and the newest vLLM keeps the draft's own."""
    import shutil

    from safetensors.torch import load_file, save_file

    draft = tmp_path / "demo-draft-noise-embed"
    shutil.copytree(EXAMPLES / "demo-draft", draft)
    weights = load_file(draft / "model.safetensors")
    noise = torch.randn(weights["embed_tokens.weight"].shape, generator=torch.Generator().manual_seed(7))
    weights["embed_tokens.weight"] = noise.to(weights["embed_tokens.weight"].dtype)
    save_file(weights, draft / "model.safetensors")
    run = run_contracts([draft], "--eagle3-engine=vllm==0.11.0,vllm", target=EXAMPLES / "demo-target")
    outcome, message = run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.embeddings"]
    assert outcome == "failed" and "keeps the draft's own embed_tokens" in message and "TorchSpec#38" in message
    assert run.engine_outcomes(draft, "vllm==0.11.0")["engine.embeddings"][0] == "passed"


def test_good_drafts_pass_and_report_per_engine(run_contracts: Run, make_checkpoint: Callable[..., Path],
                                                synth_target: Path, tmp_path: Path) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE))
    run = run_contracts([draft], target=synth_target / "config.json")
    assert run.result.ret == 0
    engines = [(e["engine"], e["version"], e["verdict"], e["not_judged"], e.get("unmeasured", [])[-1:])
               for e in run.report["checkpoints"][0]["engines"]]
    # the target's config only: every static contract passes, the acceptance is unmeasured (no weights): PASS (static)
    assert engines == [("any", None, "pass", [], ["reference.convention"]),
                       ("sglang", "0.5.23", "pass", [], ["engine.acceptance"]),
                       ("vllm", NEWEST, "pass", [], ["engine.acceptance"])]
    passed = run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.aux_layers"]
    # 0.34.0 removed model runner V1: no other runtime mode to report
    assert passed == ("passed", f"vLLM {NEWEST} feeds outputs of layers [1, 3, 4] = training")


def test_without_target_layer_dependent_contracts_skip(run_contracts: Run,
                                                       make_checkpoint: Callable[..., Path]) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECULATORS))
    run = run_contracts([draft], "--eagle3-engine=vllm==0.11.0")
    outcome, message = run.engine_outcomes(draft, "vllm==0.11.0")["engine.aux_layers"]
    assert outcome == "skipped" and "--eagle3-target" in message


def test_aux_convention_option_overrides_the_producer(run_contracts: Run, make_checkpoint: Callable[..., Path],
                                                      synth_target: Path) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 4, 5)))
    run = run_contracts([draft], "--eagle3-engine=sglang", "--eagle3-aux-convention=input-of", target=synth_target)
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.23")["engine.aux_layers"]
    assert outcome == "failed" and "SGLang 0.5.23 adds +1 to [2, 4, 5]" in message
    assert "input-of (--eagle3-aux-convention)" in run.output


@pytest.mark.parametrize(("option", "message"), [
    ("--eagle3-engine=vllm==0.7.0", f"vLLM 0.7.0 is outside the known range 0.8.5 to {NEWEST}"),
    ("--eagle3-engine=tgi", "unknown engine 'tgi'"),
    ("--eagle3-aux-convention=sideways", "'sideways' is not one of input-of, output-of"),
    ("--eagle3-device=tpu", "--eagle3-device: 'tpu' is not a device the reference runs on"),
    ("--eagle3-ckpt=does-not-exist", "--eagle3-ckpt: does-not-exist does not exist"),
    ("--eagle3-target=does-not-exist", "--eagle3-target: does-not-exist does not exist"),
])
def test_bad_engine_options_are_usage_errors(pytester: pytest.Pytester, make_checkpoint: Callable[..., Path],
                                             option: str, message: str) -> None:
    result = pytester.runpytest(f"--eagle3-ckpt={make_checkpoint(SynthSpec())}", option, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_engine_selection_from_env_and_ini(pytester: pytest.Pytester, make_checkpoint: Callable[..., Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE))
    report = pytester.path / "r.json"
    pytester.makeini("[pytest]\neagle3_engines = sglang==0.5.11\n")
    pytester.runpytest(f"--eagle3-ckpt={draft}", f"--eagle3-report={report}", "-p", "no:cacheprovider")
    engines = {e["engine"] + str(e["version"]) for e in json.loads(report.read_text())["checkpoints"][0]["engines"]}
    assert engines == {"anyNone", "sglang0.5.11"}
    monkeypatch.setenv("EAGLE3_ENGINES", "vllm==0.12.0")
    result = pytester.runpytest(f"--eagle3-ckpt={draft}", f"--eagle3-report={report}", "-p", "no:cacheprovider")
    engines = {e["engine"] + str(e["version"]) for e in json.loads(report.read_text())["checkpoints"][0]["engines"]}
    assert engines == {"anyNone", "vllm0.12.0"}
    assert "eagle3: engine=vllm==0.12.0 (from env EAGLE3_ENGINES)" in result.stdout.str()


def test_output_of_ids_under_target_layer_ids_are_read_plus_one_by_vllm_v2_from_0_25(
        run_contracts: Run, tmp_path: Path) -> None:
    """DeepSpec writes its output-of ids to a top-level ``target_layer_ids``: vLLM's model runner V2 reads that
    field, adding 1, from 0.25 (eagle3_utils.py); 0.24 does not, and V1 (the other mode) never does."""
    def move_ids(config: dict[str, Any]) -> None:
        config["target_layer_ids"] = config["eagle_config"].pop("eagle_aux_hidden_state_layer_ids")  # output-of

    examples = Path(__file__).resolve().parents[1] / "examples"
    draft = config_variant(examples / "demo-draft-sglang", tmp_path / "ids-as-target-layer-ids", move_ids)
    run = run_contracts([draft], "--eagle3-engine=vllm==0.24.0,vllm==0.25.0,vllm==0.33.0,vllm", "-k", "aux_layers",
                        target=examples / "demo-target")
    outcome, message = run.engine_outcomes(draft, "vllm==0.24.0")["engine.aux_layers"]
    assert outcome == "failed" and "vLLM 0.24.0 reads aux ids from eagle_aux_hidden_state_layer_ids or " \
        "dflash_config.target_layer_ids (+1); none there, so it uses its defaults" in message
    assert "fix: write [3, 5, 6] into eagle_aux_hidden_state_layer_ids (for vLLM 0.24.0): predicted 3.67" in run.output
    for newer in ("vllm==0.25.0", "vllm==0.33.0"):
        outcome, message = run.engine_outcomes(draft, newer)["engine.aux_layers"]
        assert outcome == "passed" and message.endswith(
            "feeds outputs of layers [2, 4, 5] = training; the other runtime mode would feed outputs of layers [1, 3, 4]")
    outcome, message = run.engine_outcomes(draft, f"vllm=={NEWEST}")["engine.aux_layers"]
    assert outcome == "passed" and message.endswith("feeds outputs of layers [2, 4, 5] = training"), message


def test_draft_vocab_not_a_multiple_of_64_fails_sglang_cuda_graph_capture_sglang_10106(
        run_contracts: Run, make_checkpoint: Callable[..., Path]) -> None:
    """SGLang 0.5.1-0.5.14 copy the 64-padded draft logits into a draft_vocab_size-wide CUDA-graph buffer."""
    draft = make_checkpoint(SynthSpec(producer=SPECFORGE, draft_vocab_size=250))
    run = run_contracts([draft], "--eagle3-engine=sglang==0.5.11,sglang==0.5.23", "-k", "runtime")
    outcome, message = run.engine_outcomes(draft, "sglang==0.5.11")["engine.runtime"]
    assert outcome == "failed" and message.startswith(
        "engine.runtime [graph-logits]: SGLang 0.5.11 copies the draft's logits (256 wide: draft_vocab_size 250 "
        "padded to a multiple of 64) into a CUDA-graph buffer 250 wide"), message
    assert "fix: serve with SGLang >= 0.5.15, launch with --disable-cuda-graph" in run.output
    assert "sgl-project/sglang#10106" in run.output
    assert run.engine_outcomes(draft, "sglang==0.5.23")["engine.runtime"][0] != "failed"
