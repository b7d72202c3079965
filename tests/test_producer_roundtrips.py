"""Producers' own classes write tiny drafts; the contracts judge them (and probes load them).

Runs in the ``producers`` tox env (speculators 0.9.0, specforge 0.2.0); skips, naming the missing
package, elsewhere. Each draft is built and saved with the producer's code only: speculators'
``Eagle3SpeculatorConfig`` / ``Eagle3DraftModel`` / ``build_vocab_mappings_from_distribution`` /
``save_pretrained``; SpecForge's ``AutoDraftModelConfig`` / ``AutoDraftModel`` /
``process_token_dict_to_mappings`` / ``export_to_sglang`` / ``export_to_hf``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.probes.run import find_engine_python, run_probe
from pytest_eagle3.synth import SynthSpec, write_target

# Imported before any test: pytester restores sys.modules after each in-process contract run, and
# datasets / pyarrow cannot be imported twice in one process (conftest.py has the same reason).
for _module in ("transformers", "datasets", "speculators.models.eagle3", "speculators.train.vocab_mapping",
                "specforge.modeling.auto", "specforge.data.preprocessing", "specforge.export.to_sglang",
                "specforge.export.to_hf"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_module)

VOCAB, DRAFT_VOCAB, HIDDEN = 1024, 256, 64
#: Token frequencies: every third id seen, the lower ids more often (a reduced-vocab selection).
FREQUENCIES = {i: 2000 - i for i in range(0, VOCAB, 3)}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_target(SynthSpec(), tmp_path_factory.mktemp("producers") / "target")


def _llama_layer_config() -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=HIDDEN, intermediate_size=128, num_attention_heads=2, num_key_value_heads=1,
                       head_dim=32, num_hidden_layers=1, vocab_size=VOCAB, max_position_embeddings=2048,
                       rms_norm_eps=1e-6, tie_word_embeddings=False)


# -- speculators --------------------------------------------------------------------------------
def _speculators_draft(out: Path, target: Path, load_verifier: bool) -> Path:
    pytest.importorskip("speculators", reason="speculators not installed (tox -e producers)")
    from speculators.config import SpeculatorsConfig, VerifierConfig
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig
    from speculators.train.vocab_mapping import build_vocab_mappings_from_distribution

    config = Eagle3SpeculatorConfig(
        transformer_layer_config=_llama_layer_config(),
        draft_vocab_size=DRAFT_VOCAB,
        eagle_aux_hidden_state_layer_ids=[2, 4, 5],
        speculators_config=SpeculatorsConfig(
            algorithm="eagle3",
            proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=3)],
            default_proposal_method="greedy",
            verifier=VerifierConfig(name_or_path=str(target), architectures=["LlamaForCausalLM"]),
        ),
    )
    torch.manual_seed(0)
    model = Eagle3DraftModel(config)
    d2t, t2d = build_vocab_mappings_from_distribution(FREQUENCIES, DRAFT_VOCAB, VOCAB)
    model.load_vocab_mappings(t2d, d2t)
    if load_verifier:
        model.load_verifier_weights()
    model.save_pretrained(str(out))
    return out


#: The producers' drafts here are untrained: their reference acceptance is ~1 by construction, not a defect.
UNTRAINED = ("--eagle3-min-acceptance=0",)


def test_speculators_draft_passes(tmp_path: Path, target: Path, run_contracts: Callable[..., Any]) -> None:
    draft = _speculators_draft(tmp_path / "speculators", target, load_verifier=True)
    run = run_contracts([draft], *UNTRAINED, target=target)
    assert run.verdict(draft) == "pass", run.output
    assert json.loads((draft / "config.json").read_text())["architectures"] == ["Eagle3DraftModel"]


def test_speculators_nan_lm_head_before_verifier_weights(tmp_path: Path, target: Path,
                                                         run_contracts: Callable[..., Any]) -> None:
    """Saved before load_verifier_weights(): lm_head / embed_tokens are the NaN init."""
    draft = _speculators_draft(tmp_path / "speculators-nan", target, load_verifier=False)
    run = run_contracts([draft], *UNTRAINED, target=target)
    outcome, message = run.outcomes(draft)["weights.finite"]
    assert outcome == "failed" and "speculators-nan-init" in message, message


# -- SpecForge ----------------------------------------------------------------------------------
def _specforge_config(folder: Path) -> Path:
    config = _llama_layer_config().to_dict() | {
        "architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": DRAFT_VOCAB,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 4], "use_aux_hidden_state": True},
    }
    path = folder / "draft_config.json"
    path.write_text(json.dumps(config))
    return path


#: Where the vocab map enters: loaded into the model before training (as the trainer does), only
#: handed to the exporter (``vocab_mapping_path``), or nowhere.
TRAINED, AT_EXPORT, NO_MAP = "trained", "at-export", "none"


def _specforge_export(folder: Path, target: Path, to: str, vocab_map: str) -> Path:
    pytest.importorskip("specforge", reason="specforge not installed (tox -e producers)")
    from specforge.data.preprocessing import process_token_dict_to_mappings
    from specforge.modeling.auto import AutoDraftModel, AutoDraftModelConfig

    folder.mkdir(parents=True, exist_ok=True)
    config_path = _specforge_config(folder)
    d2t, t2d = process_token_dict_to_mappings(Counter(FREQUENCIES), DRAFT_VOCAB, VOCAB)
    mapping = folder / "vocab_mapping.pt"
    torch.save({"d2t": torch.as_tensor(d2t), "t2d": torch.as_tensor(t2d)}, mapping)
    torch.manual_seed(0)
    model = AutoDraftModel.from_config(AutoDraftModelConfig.from_file(str(config_path)), torch_dtype=torch.bfloat16)
    if vocab_map == TRAINED:
        model.load_vocab_mapping(str(mapping))
    state = {k: v for k, v in model.state_dict().items() if "embed" not in k}
    training_state = folder / "training_state.pt"
    torch.save({"strategy": "eagle3", "draft_state_dict": state}, training_state)  # the trainer's layout
    at_export = str(mapping) if vocab_map == AT_EXPORT else None
    out = folder / f"export-{to}"
    if to == "sglang":
        from specforge.export.to_sglang import export_to_sglang

        export_to_sglang(str(training_state), str(config_path), str(out), vocab_mapping_path=at_export)
    else:
        from specforge.export.to_hf import export_to_hf

        export_to_hf(str(training_state), str(config_path), str(out), vocab_mapping_path=at_export,
                     embedding_source=str(target))
    return out


@pytest.mark.parametrize("to", ["sglang", "hf"])
def test_specforge_export_of_a_trained_map_passes(tmp_path: Path, target: Path, to: str,
                                                  run_contracts: Callable[..., Any]) -> None:
    draft = _specforge_export(tmp_path / "specforge", target, to, TRAINED)
    run = run_contracts([draft], *UNTRAINED, target=target)
    assert run.outcomes(draft)["vocab.map"][0] == "passed", run.output
    assert run.verdict(draft) == "pass", run.output
    names = set(Checkpoint.open(draft).tensors)
    assert ("embed_tokens.weight" in names) == (to == "hf"), "the SGLang export drops embed_tokens, HF keeps it"


@pytest.mark.parametrize(("to", "diagnosis"), [("sglang", None), ("hf", "defaults-never-replaced")])
def test_specforge_map_given_only_at_export(tmp_path: Path, target: Path, to: str, diagnosis: str | None,
                                            run_contracts: Callable[..., Any]) -> None:
    """Training state with the default buffers, map passed to the exporter: export_to_sglang saves
    the refreshed buffers; export_to_hf lets the training state's keys win (to_hf.py
    ``full_state.update(state["draft_state_dict"])``) and ships t2d all True, d2t zeros."""
    draft = _specforge_export(tmp_path / "specforge-late-map", target, to, AT_EXPORT)
    outcome, message = run_contracts([draft], *UNTRAINED, target=target).outcomes(draft)["vocab.map"]
    if diagnosis is None:
        assert outcome == "passed", message
    else:
        assert outcome == "failed" and diagnosis in message, message


def test_specforge_default_t2d_without_vocab_map(tmp_path: Path, target: Path,
                                                 run_contracts: Callable[..., Any]) -> None:
    """No vocab map loaded: SpecForge's default buffers (t2d all True, d2t zeros) are exported."""
    draft = _specforge_export(tmp_path / "specforge-default", target, "sglang", NO_MAP)
    outcome, message = run_contracts([draft], *UNTRAINED, target=target).outcomes(draft)["vocab.map"]
    assert outcome == "failed" and "defaults-never-replaced" in message, message


# -- the same folders through the engines ---------------------------------------------------------
@pytest.mark.engine
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_producer_drafts_in_engines(engine: str, tmp_path: Path, target: Path) -> None:
    python = find_engine_python(engine)
    if python is None:
        pytest.skip(f"no {engine} interpreter: set EAGLE3_{engine.upper()}_PYTHON")
    speculators = _speculators_draft(tmp_path / "speculators", target, load_verifier=True)
    result = run_probe(engine, python, speculators, target)
    if engine == "sglang":
        assert result["outcome"] == "refused" and result["stage"] == "config"
    else:
        assert result["outcome"] == "loaded", result["error"]
        assert result["dropped"] == ["t2d"] and result["uninitialised"] == []
    specforge = _specforge_export(tmp_path / "specforge", target, "sglang", TRAINED)
    result = run_probe(engine, python, specforge, target)
    assert result["outcome"] == "loaded", result["error"]
    assert result["dropped"] == ["t2d"] and result["embed_tokens"] == "target"
