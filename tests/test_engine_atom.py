"""ROCm ATOM (0.1.3-0.1.5, read per release tag of ROCm/ATOM): the verdicts and messages a user sees.

ATOM runs on ROCm only (aiter kernels), so no probe runs here: these tests hold the rows
(knowledge/engines/atom.py) to what ``plan`` and ``check`` print on the bundled drafts and on synthetic variants.
Boundary: 0.1.4 / 0.1.5 (EAGLE 3.1's fc_norm and norm_output, fc sized from the config, the MLA draft class).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, LOADS_WITH_LOSS, REFUSED, load_plan
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection
from pytest_eagle3.shell.cli import main
from pytest_eagle3.testing.layouts import SPECFORGE_HF
from pytest_eagle3.testing.synth import SynthSpec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEMO_TARGET = EXAMPLES / "demo-target" / "config.json"
NEWEST, BEFORE_31 = "atom==0.1.5", "atom==0.1.4"


def _plan(path: Path, spec: str, target: Path | None = DEMO_TARGET) -> tuple[str, dict[str, str]]:
    """(outcome, finding code -> summary) of one ATOM release's plan."""
    plan = load_plan(Checkpoint.open(path), parse_selection(spec)[0], TargetModel.open(target) if target else None)
    return plan.outcome, {i.finding.code: i.finding.summary for i in plan.issues if i.area != "producer"}


@pytest.fixture
def full_vocab(make_variant: Callable[..., Path]) -> Callable[..., Path]:
    """SpecForge's HF export (embed_tokens shipped) with a full vocab, edited by ``config``."""
    def make(config: Callable[[dict[str, object]], None] | None = None, **kw: object) -> Path:
        return make_variant(SynthSpec(producer=SPECFORGE_HF, draft_vocab_size=1024), config=config, name="atom", **kw)
    return make


@pytest.fixture
def gpt_oss(make_target: Callable[..., Path]) -> Path:
    """A target whose ATOM class captures aux states (GptOssForCausalLM.set_aux_hidden_state_layers)."""
    return make_target(architecture="GptOssForCausalLM") / "config.json"


def _without_eagle_config(config: dict[str, object]) -> None:
    config.pop("eagle_config", None)


def test_release_range() -> None:
    assert RELEASES["atom"] == ("0.1.3", "0.1.4", "0.1.5")
    with pytest.raises(EngineSelectionError, match="outside the known range 0.1.3"):
        parse_selection("atom==0.1.2")


def test_speculators_demo_draft_is_refused_at_the_newest_tag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(EXAMPLES / "demo-draft"), "--engine", NEWEST]) == 0
    out = capsys.readouterr().out
    assert ("[architecture/speculators-format] ROCm ATOM 0.1.5 cannot read a speculators-format config: startup fails "
            "('Unrecognized model ... Should have a model_type key')") in out
    assert "set architectures ['LlamaForCausalLMEagle3']" in out and "eagle_config.eagle_aux_hidden_state_layer_ids" in out


def test_sglang_demo_draft_fails_four_ways() -> None:
    """The SpecForge export beside the Llama demo target: the Llama class cannot capture, the 256-row head meets a
    vocab_size-row parameter in a loader thread whose error is dropped, no embed_tokens is shipped, and the
    eagle_config ids are read as layer inputs."""
    outcome, found = _plan(EXAMPLES / "demo-draft-sglang", NEWEST)
    assert outcome == REFUSED
    assert set(found) == {"target-no-capture", "lm-head-rows-dropped", "embed-uninitialised", "aux-layers"}
    assert found["target-no-capture"] == ("ROCm ATOM 0.1.5 cannot capture aux hidden states from target "
                                          "LlamaForCausalLM: startup fails")
    assert found["lm-head-rows-dropped"].startswith(
        "ROCm ATOM 0.1.5 builds lm_head with vocab_size (1024) rows; the checkpoint's has 256: loading it fails and "
        "with ATOM_LOADER_USE_THREADPOOL=1 (the default")
    assert "the parameter keeps its uninitialised torch.empty memory" in found["lm-head-rows-dropped"]
    assert "keeps its uninitialised (torch.empty) memory" in found["embed-uninitialised"]
    assert "uses [2, 4, 5] as-is -> captures inputs of layers [2, 4, 5]" in found["aux-layers"]


def test_check_verdict_rows_for_the_demo_pair(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(EXAMPLES / "demo-draft-sglang"), "--target", str(DEMO_TARGET), "--engine", NEWEST])
    out = capsys.readouterr().out
    assert code == 1
    assert "atom==0.1.5" in out and "FAIL" in out


def test_capturing_target_and_full_vocab_loads(full_vocab: Callable[..., Path], gpt_oss: Path) -> None:
    """Without eagle_config ATOM uses aux states and the target's defaults (2, L//2, L-3) as layer inputs: a full-vocab
    draft with its own embedding loads, on every tag."""
    draft = full_vocab(_without_eagle_config)
    for release in RELEASES["atom"]:
        assert _plan(draft, f"atom=={release}", gpt_oss) == (LOADS, {})


def test_eagle_config_ids_are_read_as_layer_inputs(full_vocab: Callable[..., Path], gpt_oss: Path) -> None:
    """SpecForge writes the outputs it trained on into eagle_config; ATOM captures the inputs of those layers."""
    outcome, found = _plan(full_vocab(), NEWEST, gpt_oss)
    assert outcome == LOADS_WITH_LOSS and set(found) == {"aux-layers"}
    assert found["aux-layers"].startswith("ROCm ATOM 0.1.5 uses [1, 3, 4] as-is -> captures inputs of layers [1, 3, 4]")


def test_layers_names_are_dropped_and_leave_the_layer_uninitialised(full_vocab: Callable[..., Path],
                                                                    gpt_oss: Path) -> None:
    draft = full_vocab(_without_eagle_config, rename=lambda k: k.replace("midlayer.", "layers.0."))
    outcome, found = _plan(draft, NEWEST, gpt_oss)
    assert outcome == LOADS_WITH_LOSS
    assert {"dropped", "uninitialised"} <= set(found)


def _with_fc_norm(config: dict[str, object]) -> None:
    _without_eagle_config(config)
    config["fc_norm"] = True


def test_fc_norm_read_from_0_1_5(full_vocab: Callable[..., Path], gpt_oss: Path, tmp_path: Path) -> None:
    """EAGLE 3.1's fc_norm: 0.1.4 builds no per-chunk norms (their tensors are dropped, the draft runs without
    them); 0.1.5 builds and loads them."""
    import torch
    from safetensors.torch import load_file, save_file

    draft = full_vocab(_with_fc_norm)
    tensors = load_file(str(draft / "model.safetensors"))
    width = int(json.loads((draft / "config.json").read_text())["hidden_size"])
    tensors.update({f"fc_norm.{i}.weight": torch.ones(width, dtype=torch.bfloat16) for i in range(3)})
    out = tmp_path / "fc-norm"
    shutil.copytree(draft, out)
    save_file(tensors, str(out / "model.safetensors"))
    assert _plan(out, NEWEST, gpt_oss) == (LOADS, {})
    outcome, found = _plan(out, BEFORE_31, gpt_oss)
    assert outcome == LOADS_WITH_LOSS and set(found) == {"dropped", "norm-flag"}
    assert found["dropped"] == ("ROCm ATOM 0.1.4 will drop 3 tensors: fc_norm.0.weight ... (3) (this release's "
                                "draft class builds no fc_norm; the loader skips it and warns after the load "
                                "(dropped_ckpt_keys))")
    assert found["norm-flag"] == ("ROCm ATOM 0.1.4 applies fc_norm=False, the draft was trained with fc_norm=True: the "
                                  "engine skips the per-chunk fc_norm; acceptance drops")


def test_an_eagle_config_without_use_aux_hidden_state_turns_aux_states_off(full_vocab: Callable[..., Path],
                                                                           gpt_oss: Path) -> None:
    """ATOM reads eagle_config.get('use_aux_hidden_state', False): the key missing, fc is skipped and the draft is fed
    the last hidden state; vLLM-style readers take a missing key as true."""
    def no_flag(config: dict[str, object]) -> None:
        eagle = config["eagle_config"]
        assert isinstance(eagle, dict)
        eagle.pop("use_aux_hidden_state")

    outcome, found = _plan(full_vocab(no_flag), NEWEST, gpt_oss)
    assert outcome == LOADS_WITH_LOSS
    assert found["fc-unused"].startswith(
        "eagle_config has no use_aux_hidden_state, which ROCm ATOM 0.1.5 reads as false (atom/config.py "
        "SpeculativeConfig.__post_init__: eagle_cfg.get('use_aux_hidden_state', False)), so ROCm ATOM 0.1.5 sends one "
        "64-wide hidden state and skips fc silently")
