"""vLLM-Ascend (0.11.0-0.23.0.post1): the plans and messages a user sees, where its own code departs from the vLLM
release it pins, and where it runs vLLM's code at that release (the rows carried over: evidence, as for vLLM).

It needs NPUs, so no probe runs here: these tests hold the rows (knowledge/engines/vllm_ascend.py) to what
``load_plan`` and ``plan`` print. Boundaries: 0.18.0 / 0.23.0 (its model runner reads the draft's aux ids from
0.23.0 on; before, the target's defaults) and 0.11.0 / 0.13.0 (the target's embed_tokens replaces the draft's).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import BORROWED, load_plan
from pytest_eagle3.engines.plan_types import LoadPlan
from pytest_eagle3.knowledge.behaviours import TABLES
from pytest_eagle3.knowledge.engines.vllm_ascend import INIT_PATCH
from pytest_eagle3.knowledge.learned import KNOWLEDGE_DIR_ENV, learned_release
from pytest_eagle3.knowledge.releases import RELEASES
from pytest_eagle3.knowledge.selection import EngineSelectionError, parse_selection
from pytest_eagle3.knowledge.snapshot import snapshot_of
from pytest_eagle3.scanners import learn
from pytest_eagle3.shell.cli import main
from pytest_eagle3.testing.layouts import SPECFORGE_HF
from pytest_eagle3.testing.synth import SynthSpec
from pytest_eagle3.verdict import resting

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_TARGET = EXAMPLES / "demo-target"
NEWEST = "vllm-ascend==0.23.0.post1"


def _plan(path: Path, spec: str, target: Path = DEMO_TARGET) -> LoadPlan:
    return load_plan(Checkpoint.open(path), parse_selection(spec)[0], TargetModel.open(target))


def test_releases_are_those_with_an_eagle3_path() -> None:
    assert RELEASES["vllm-ascend"] == ("0.11.0", "0.13.0", "0.18.0", "0.23.0", "0.23.0.post1")
    with pytest.raises(EngineSelectionError, match="outside the known range 0.11.0"):
        parse_selection("vllm-ascend==0.9.1")


@pytest.mark.parametrize("release", ["0.11.0", "0.13.0", "0.18.0"])
def test_before_0_23_its_runner_feeds_the_targets_defaults_whatever_the_draft_says(release: str) -> None:
    """Its NPUModelRunner.load_model sets the target's default aux layers (vLLM 0.13.0 and 0.18.0, which it pins,
    read the draft's top-level ids): the SGLang-exported demo draft, trained on outputs of [2, 4, 5], is fed
    inputs of [2, 4, 5]."""
    plan = _plan(EXAMPLES / "demo-draft-sglang", f"vllm-ascend=={release}")
    (issue,) = plan.issues_for("aux_layers")
    assert issue.summary.startswith(f"vLLM-Ascend {release} hard-codes the aux layers (no draft config "
                                            "field is read): inputs of layers 2, L//2, L-3 = outputs of layers "
                                            "[1, 3, 4]; the draft was trained on outputs of layers [2, 4, 5]")
    assert "serve with vLLM-Ascend >= 0.23.0, which reads configured aux ids" in issue.fix
    assert any("NPUModelRunner.load_model" in d for d in issue.details)


def test_from_0_23_the_ids_are_read_by_vllms_inherited_method_carried_over() -> None:
    plan = _plan(EXAMPLES / "demo-draft", NEWEST)
    assert not plan.issues_for("aux_layers") and "aux_layers" not in plan.unknown
    assert plan.aux.captured == (2, 4, 5)
    snapshot = snapshot_of(parse_selection(NEWEST)[0])
    assert snapshot.read_in("aux_id_fields") == "vLLM"
    assert snapshot.source("aux_id_fields").startswith("vllm-ascend 0.23.0 vllm_ascend/worker/model_runner_v1.py "
                                                       "NPUModelRunner.load_model")


def test_a_rule_carried_over_from_the_pinned_vllm_fails_the_draft_as_vllm_does() -> None:
    """The SGLang-exported demo draft (output-of ids in eagle_config) on the newest release: its model runner calls
    vLLM 0.23.0's own reading of the ids (the code that runs), which feeds layers the draft was not trained on: a
    failure, with vLLM's rule and the vLLM-Ascend call that hands it over, as on vLLM 0.23.0 itself."""
    plan = _plan(EXAMPLES / "demo-draft-sglang", NEWEST)
    assert "aux_layers" not in plan.unknown
    (issue,) = plan.issues_for("aux_layers")
    assert issue.code == "aux-layers"
    assert "the draft sees the wrong layers" in issue.summary
    assert any(d.startswith("rule: as vLLM 0.23.0 (pinned by vllm-ascend 0.23.0.post1") or "NPUModelRunner.load_model"
               in d for d in issue.details), issue.details
    vllm = _plan(EXAMPLES / "demo-draft-sglang", "vllm==0.23.0")
    assert [i.code for i in vllm.issues_for("aux_layers")] == ["aux-layers"]


def test_carried_rows_name_the_pinned_vllm_release() -> None:
    snapshot = snapshot_of(parse_selection(NEWEST)[0])
    assert snapshot.read_in("key_prefix") == "vLLM"
    assert snapshot.source("key_prefix").startswith("as vLLM 0.23.0 (pinned by vllm-ascend 0.23.0.post1; its "
                                                    "vllm_ascend/spec_decode/llm_base_proposer.py:"
                                                    "AscendSpecDecodeBaseProposer._get_model builds the draft")
    assert snapshot.read_in("lm_head_source") == "vLLM-Ascend"


@pytest.mark.parametrize(("release", "embed"), [("0.11.0", "target"), ("0.13.0", "draft")])
def test_0_11_replaces_the_drafts_own_embedding_with_the_targets(
        release: str, embed: str, make_variant: Callable[..., Path]) -> None:
    path = make_variant(SynthSpec(producer=SPECFORGE_HF), name="ascend-embed")
    assert Checkpoint.open(path).shape("embed_tokens.weight") is not None
    assert _plan(path, f"vllm-ascend=={release}").embed_tokens.startswith(embed)


def test_plan_prints_the_newest_release_for_the_demo_pair(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", NEWEST, str(EXAMPLES / "demo-draft")])
    out = capsys.readouterr().out
    assert code == 0
    assert "load plan, vLLM-Ascend 0.23.0.post1 (Eagle3LlamaForCausalLM): loads" in out
    assert "lm_head from:         draft" in out


# ---------------------------------------------------------------- learn
@pytest.fixture
def knowledge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    where = tmp_path / "knowledge"
    monkeypatch.setenv(KNOWLEDGE_DIR_ENV, str(where))
    resting.forget()
    yield where
    resting.forget()


def test_learn_of_the_newest_release_says_it_is_bundled_without_downloading(
        knowledge: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """0.23.0.post1 is on the index only as an sdist, which pip cannot download without building it (torch-npu,
    CANN): a bundled release is answered without a download."""
    def no_download(*args: object, **kw: object) -> Path:
        raise AssertionError("a bundled release needs no download")
    monkeypatch.setattr(learn, "download", no_download)
    assert learn.main([NEWEST]) == 0
    assert capsys.readouterr().out.strip() == ("vLLM-Ascend 0.23.0.post1 is bundled: its own rows judge it, "
                                               "nothing to learn")


PATCH = '''
class Eagle3LlamaForCausalLM:
    pass


def _patched_eagle3_llama_init(self, *, vllm_config, prefix=""):
    self.config = vllm_config.speculative_config.draft_model_config.hf_config
    if getattr(self.config, "draft_vocab_size", None) is None:
        self.config.draft_vocab_size = getattr(self.config, "vocab_size", None)
'''


def test_learn_reads_an_unpacked_sdist_by_its_pkg_info_and_scans_its_eagle3_patches(
        knowledge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "vllm_ascend-0.24.0"
    (tree / "vllm_ascend/patch/worker").mkdir(parents=True)
    (tree / "vllm_ascend/patch/worker/patch_eagle3_init.py").write_text(PATCH, encoding="utf-8")
    (tree / "PKG-INFO").write_text("Metadata-Version: 2.4\nName: vllm_ascend\nVersion: 0.24.0\n\nThe plugin.\n",
                                   encoding="utf-8")
    assert learn.main([str(tree)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("learned vLLM-Ascend 0.24.0 from ")
    assert ("config fields read that no coverage entry classifies (scanners/field_coverage.py): draft_vocab_size "
            "(draft), vocab_size (draft)") in out
    assert ("not carried over: aux_id_fields: vllm_ascend/worker/model_runner_v1.py:NPUModelRunner.load_model "
            "changed in 0.24.0 (read up to 0.23.0.post1)") in out
    record = learned_release("vllm-ascend", Version("0.24.0"))
    assert record is not None
    assert record.fingerprints[f"{INIT_PATCH}:_patched_eagle3_llama_init"] is not None


def _plan_json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["plan", "--engine", NEWEST, "--target", str(DEMO_TARGET), str(EXAMPLES / "demo-draft-sglang"),
                 "--json"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    row: dict[str, Any] = json.loads(out[out.index("{"):])
    return row


@pytest.mark.slow  # the reference forward and the simulation on the demo target: ~18 s on 2 cores
def test_the_demo_pair_on_the_newest_release_fails_on_the_layers_vllm_feeds(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The SGLang-exported demo pair on the newest release: vLLM 0.23.0's reading of the aux ids, which vLLM-Ascend's
    runner calls, feeds layers the draft was not trained on: 2.68 against 3.67 as trained, a failure."""
    row = _plan_json(capsys)
    contracts = {c["id"]: c for c in row["contracts"]}
    assert row["verdict"] == "fail"
    (finding,) = contracts["engine.acceptance"]["findings"]
    assert finding["summary"].startswith("vLLM-Ascend 0.23.0.post1 will reach 2.68 mean acceptance length"), finding


@pytest.mark.slow  # as above
def test_a_loss_predicted_on_a_rule_read_by_analogy_is_not_judged_never_a_failure(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rows read in vLLM by analogy (no pinned release): the prediction rests on vLLM's reading of the aux
    ids, so engine.acceptance is not judged, and says whose rule it rests on."""
    for name in ("aux_id_fields", "aux_transform_llama"):
        table = TABLES[name]
        monkeypatch.setitem(TABLES, name, dataclasses.replace(table, rows=tuple(
            dataclasses.replace(r, pinned=None) if r.engine == "vllm-ascend" else r for r in table.rows)))
    snapshot_of.cache_clear()
    try:
        row = _plan_json(capsys)
    finally:
        monkeypatch.undo()
        snapshot_of.cache_clear()
    contracts = {c["id"]: c for c in row["contracts"]}
    assert row["verdict"] == "not judged"
    (finding,) = contracts["engine.acceptance"]["findings"]
    assert finding["code"] == BORROWED
    assert finding["summary"].startswith("not judged: vLLM-Ascend 0.23.0.post1 will reach 2.68 mean acceptance length")
    assert finding["summary"].endswith("the plan it predicts rests on vLLM's rule (aux_id_fields, aux_transform_llama), "
                                       "not read in vLLM-Ascend's own source")


def _target(root: Path, architecture: str, model_type: str, text_model_type: str | None = None) -> Path:
    """A target config.json of ``architecture`` sized for the speculators demo spec (nested in ``text_config`` where
    the real one is a multimodal wrapper)."""
    from pytest_eagle3.testing.synth import target_config

    fields = target_config(SynthSpec(producer="speculators", target_layers=40)) | {
        "architectures": [architecture], "model_type": model_type}
    if text_model_type is not None:
        text = {k: v for k, v in fields.items() if k != "architectures"} | {"model_type": text_model_type}
        fields = {"architectures": [architecture], "model_type": model_type, "text_config": text}
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(fields), encoding="utf-8")
    return root


@pytest.fixture
def speculators_draft(tmp_path: Path) -> Path:
    from pytest_eagle3.testing.synth import write_checkpoint

    return write_checkpoint(SynthSpec(producer="speculators", target_layers=40), tmp_path / "draft")


def test_a_qwen3_moe_target_captures_from_0_13_and_refuses_on_0_11s_pinned_vllm(
        speculators_draft: Path, tmp_path: Path) -> None:
    """Its runner calls set_aux_hidden_state_layers on vLLM's Qwen3MoeForCausalLM: present in the vLLM 0.13.0 and
    0.23.0 it pins, absent in 0.11.0's (an AttributeError at startup)."""
    target = _target(tmp_path / "qwen3-moe", "Qwen3MoeForCausalLM", "qwen3_moe")
    assert not _plan(speculators_draft, "vllm-ascend==0.13.0", target).issues_for("aux_layers")
    assert not _plan(speculators_draft, "vllm-ascend==0.23.0", target).issues_for("aux_layers")
    (issue,) = _plan(speculators_draft, "vllm-ascend==0.11.0", target).issues_for("aux_layers")
    assert (issue.code, issue.summary) == ("target-no-capture", "vLLM-Ascend 0.11.0 cannot capture aux hidden states "
                                           "from target Qwen3MoeForCausalLM: startup fails")


@pytest.mark.parametrize("release", ["0.23.0", "0.23.0.post1"])
def test_a_gemma4_target_fails_its_own_proposers_image_token_mapping(
        speculators_draft: Path, tmp_path: Path, release: str) -> None:
    """Its AscendSpecDecodeBaseProposer.load_model reads image_token_index from a multimodal target outside its list;
    Gemma4's config has only image_token_id: the drafter never loads, whatever vLLM's Gemma4 class captures."""
    target = _target(tmp_path / "gemma4", "Gemma4ForConditionalGeneration", "gemma4", "gemma4_text")
    (issue,) = _plan(speculators_draft, f"vllm-ascend=={release}", target).issues_for("aux_layers")
    assert issue.code == "target-no-capture" and issue.summary.endswith("Gemma4ForConditionalGeneration: startup fails")
    assert any("image_token_index" in line and "llm_base_proposer.py" in line for line in issue.details)
