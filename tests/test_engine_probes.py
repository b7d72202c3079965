"""Probes: the real engines' loaders on synthetic drafts, on CPU, against what we know they do.

Each engine interpreter (``EAGLE3_VLLM_PYTHON`` / ``EAGLE3_SGLANG_PYTHON``, or the tox env's own
when the engine is importable there) probes every case of ``probe_cases.CASES`` once per
session, in one process. Tests skip, naming the missing interpreter, when an engine is absent.
Facts that changed between releases are asserted on both sides of their boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from packaging.version import Version

from pytest_eagle3.probes.cases import CASES

pytestmark = pytest.mark.engine

Results = dict[str, dict[str, Any]]


@pytest.fixture(params=["vllm", "sglang"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _version(results: Results) -> Version:
    return Version(next(iter(results.values()))["version"])


def _checkpoint_d2t(drafts: dict[str, Path], name: str) -> list[int]:
    from safetensors.torch import load_file

    d2t = load_file(str(drafts[name] / "model.safetensors"))["d2t"]
    return [int(i) for i in torch.arange(d2t.numel()) + d2t]


def _loaded(result: dict[str, Any]) -> None:
    assert result["outcome"] == "loaded", f"{result['stage']}: {result['error']}"


# -- every engine ------------------------------------------------------------------------------
def test_every_case_probed_without_probe_errors(engine: str, engine_results: Callable[[str], Results]) -> None:
    results = engine_results(engine)
    assert set(results) == {c.name for c in CASES}
    broken = {n: (r["error"], r.get("stderr_tail", "")[-500:]) for n, r in results.items() if r["outcome"] == "probe-error"}
    assert not broken
    for result in results.values():
        assert result["engine"] == engine and result["outcome"] in ("loaded", "refused")
        assert (result["stage"] is None) == (result["outcome"] == "loaded")


def test_specforge_layout_loads_every_tensor_exactly(engine: str, engine_results: Callable[[str], Results]) -> None:
    result = engine_results(engine)["specforge"]
    _loaded(result)
    assert result["draft_class"] in ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3")
    assert all(p["equal"] for p in result["parameters"].values()), result["parameters"]
    params = result["parameters"]  # model.layers.0.* (SGLang before 0.5.12: model.midlayer.*)
    qkv = next(p["sources"] for n, p in params.items() if n.endswith(("layers.0.self_attn.qkv_proj.weight", "midlayer.self_attn.qkv_proj.weight")))
    assert qkv == [f"midlayer.self_attn.{x}_proj.weight" for x in "qkv"]
    gate_up = next(p["sources"] for n, p in params.items() if n.endswith(("layers.0.mlp.gate_up_proj.weight", "midlayer.mlp.gate_up_proj.weight")))
    assert gate_up == ["midlayer.mlp.gate_proj.weight", "midlayer.mlp.up_proj.weight"]
    assert result["dropped"] == ["t2d"], "t2d is never used by either engine"
    assert result["uninitialised"] == ["model.embed_tokens.weight"], "a SpecForge SGLang export has no embed_tokens"
    assert result["embed_tokens"] == "target"
    assert result["lm_head"] == "draft"
    assert result["fc_input_width"] == 3 * 64 and result["fc_applied"] is True


def test_d2t_read_as_offsets(engine: str, engine_results: Callable[[str], Results],
                             probe_cases: tuple[Path, dict[str, Path]]) -> None:
    """Both engines map draft i to i + d2t[i]: an absolute-id d2t is served as offsets."""
    results = engine_results(engine)
    _, drafts = probe_cases
    for name in ("specforge", "specforge-d2t-absolute"):
        _loaded(results[name])
        assert results[name]["draft_to_target"] == _checkpoint_d2t(drafts, name)
    # the absolute ids the producer meant are not what is served
    meant = results["specforge"]["draft_to_target"]
    served = results["specforge-d2t-absolute"]["draft_to_target"]
    assert served[0] == meant[0] and all(s > m for s, m in zip(served[1:], meant[1:]))


def test_reduced_vocab_without_d2t_is_identity(engine: str, engine_results: Callable[[str], Results]) -> None:
    result = engine_results(engine)["specforge-d2t-missing"]
    _loaded(result)
    assert result["draft_to_target"] is None, "draft id i is served as target id i"
    assert result["dropped"] == []


def test_missing_lm_head_loads_silently(engine: str, engine_results: Callable[[str], Results]) -> None:
    result = engine_results(engine)["specforge-no-lm-head"]
    _loaded(result)
    assert "lm_head.weight" in result["uninitialised"]


#: First release that builds fc_norm / norm_output from the config (earlier: fc_norm.* unknown keys).
FC_NORM_SINCE = {"vllm": Version("0.22"), "sglang": Version("0.5.12")}


def test_norm_flags_resolved(engine: str, engine_results: Callable[[str], Results]) -> None:
    results = engine_results(engine)
    plain = results["specforge"]["norms"]
    assert plain["fc_norm"] is False and plain["norm_output"] is False and plain["norm_before_fc"] is False
    result = results["specforge-norm-flags"]
    if _version(results) >= FC_NORM_SINCE[engine]:
        _loaded(result)
        assert result["norms"]["fc_norm"] is True and result["norms"]["norm_output"] is True
        assert all(result["parameters"][f"model.fc_norm.{i}.weight"]["equal"] for i in range(3))
    elif engine == "vllm":
        assert result["outcome"] == "refused" and "fc_norm.0.weight" in result["error"], "unknown key"
    else:
        _loaded(result)
        assert result["norms"]["fc_norm"] is False
        assert {f"fc_norm.{i}.weight" for i in range(3)} <= set(result["dropped"]), "dropped silently"


# -- vLLM ----------------------------------------------------------------------------------------
def test_vllm_speculators_layout(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("vllm")
    result = results["speculators"]
    _loaded(result)
    assert result["draft_class"] == "Eagle3LlamaForCausalLM"
    assert result["parameters"]["model.layers.0.self_attn.qkv_proj.weight"]["sources"] == [
        f"layers.0.self_attn.{x}_proj.weight" for x in "qkv"]
    assert result["uninitialised"] == [] and result["dropped"] == ["t2d"]
    assert result["aux_layer_ids"] == [2, 4, 5] == result["captured_inputs_of"]
    # speculators' norm_before_residual is read from the config (False here), defaults to True when absent
    assert result["norms"]["norm_before_residual"] is False
    assert results["speculators-norm-before-fc"]["norms"]["norm_before_residual"] is True


def test_vllm_architecture_name_is_ignored_for_eagle3(engine_results: Callable[[str], Results]) -> None:
    """method eagle3 builds the EAGLE-3 Llama draft for LlamaForCausalLM / Eagle3LlamaForCausalLM too."""
    for name in ("eagle", "angelslim"):
        result = engine_results("vllm")[name]
        _loaded(result)
        assert result["draft_class"] == "Eagle3LlamaForCausalLM"


def test_vllm_aux_ids_as_configured_or_default(engine_results: Callable[[str], Results]) -> None:
    """Configured ids are honoured from 0.11.1 (top level), eagle_config fallback from 0.22; no +1."""
    results = engine_results("vllm")
    version = _version(results)
    top, nested = results["specforge-ids-top-level"], results["specforge-ids-126"]
    _loaded(top)
    _loaded(nested)
    if version >= Version("0.11.1"):
        assert top["aux_layer_ids"] == [1, 2, 6] == top["captured_inputs_of"]
    else:
        assert top["aux_layer_ids"] == [2, 4, 5], "before 0.11.1 the draft config's ids are ignored"
    if version >= Version("0.22"):
        assert nested["aux_layer_ids"] == [1, 2, 6]
    else:
        assert nested["aux_layer_ids"] == [2, 4, 5]


def test_vllm_runner_v2_ignores_eagle_config_ids(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("vllm")
    nested = results["specforge-ids-126"]
    if nested["aux_layer_ids_other_mode"] is None:
        pytest.skip(f"vLLM {_version(results)} has no Model Runner V2 aux-layer resolver")
    assert nested["aux_layer_ids"] == [1, 2, 6]
    assert nested["aux_layer_ids_other_mode"] == [2, 4, 5], "V2 reads eagle_config['layer_ids'], not ...layer_ids"
    assert results["specforge-ids-top-level"]["aux_layer_ids_other_mode"] == [1, 2, 6]


def test_vllm_full_vocab_d2t(engine_results: Callable[[str], Results]) -> None:
    """From 0.30 a d2t shipped with draft vocab = vocab has no parameter to load into."""
    results = engine_results("vllm")
    result = results["specforge-full-vocab-d2t"]
    if _version(results) >= Version("0.30"):
        assert result["outcome"] == "refused" and result["stage"] == "load"
        assert "no module or parameter named 'draft_id_to_target_id'" in result["error"]
    else:
        _loaded(result)
        assert result["draft_to_target"] is None
    _loaded(results["speculators-full-vocab"])
    assert results["speculators-full-vocab"]["draft_to_target"] is None


def test_vllm_embed_and_lm_head_sharing(engine_results: Callable[[str], Results]) -> None:
    """0.11.1+: the draft's own tensors are kept when they differ; before, shared whenever shapes match."""
    results = engine_results("vllm")
    own, full, headless = results["speculators-random-embed"], results["speculators-full-vocab"], results["specforge-no-lm-head"]
    frozen = results["speculators"]  # embed_tokens is the target's own, as producers save it
    assert frozen["embed_tokens"] == "target"
    if _version(results) >= Version("0.11.1"):
        assert (own["embed_tokens"], own["lm_head"]) == ("draft", "draft")
        assert full["lm_head"] == "draft"
        assert headless["lm_head"] == "target", "no lm_head in the checkpoint: the target's is shared"
    else:
        assert own["embed_tokens"] == "target", "same shape: the trained embedding is replaced"
        assert full["lm_head"] == "target", "full vocab: the trained lm_head is replaced by the target's"
        assert own["lm_head"] == "draft", "reduced vocab: shapes differ, kept"
        assert headless["lm_head"] == "draft", "reduced vocab, no lm_head: the random one is kept"


def test_vllm_llama_draft_sizes_fc_without_top_level_ids(engine_results: Callable[[str], Results]) -> None:
    """Eagle3LlamaForCausalLM counts aux states from num_aux_hidden_states / eagle_config only:
    4 top-level ids and a 4H-wide fc are refused at load (fc built 3H wide)."""
    result = engine_results("vllm")["speculators-4-aux"]
    assert result["outcome"] == "refused" and result["stage"] == "load"
    assert "[64, 256]" in result["error"] and "[64, 192]" in result["error"]


def test_vllm_multi_layer(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("vllm")
    for name in ("speculators-2-layers", "specforge-2-layers"):
        result = results[name]
        if _version(results) >= Version("0.11.1"):
            _loaded(result)
            assert result["draft_layers"] == 2
            # layers >= 1 have a hidden_norm parameter that no checkpoint fills and no forward uses
            assert "model.layers.1.hidden_norm.weight" in result["uninitialised"]
        else:
            assert result["outcome"] == "refused" and "layers.1" in result["error"]


def test_vllm_use_aux_hidden_state_false(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("vllm")
    result = results["specforge-no-aux"]
    _loaded(result)
    if _version(results) >= Version("0.12"):
        assert "fc.weight" in result["dropped"]
        assert result["fc_applied"] is False and result["aux_layer_ids"] == []
    else:
        assert result["parameters"]["model.fc.weight"]["equal"] is True, "flag not read before 0.12"
        assert result["fc_applied"] is True and result["aux_layer_ids"] == [2, 4, 5]


def test_vllm_norm_before_fc(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("vllm")
    result = results["speculators-norm-before-fc"]
    if _version(results) < Version("0.18"):
        assert result["outcome"] == "refused" and "input_norm.weight" in result["error"], "unknown key"
        return
    _loaded(result)
    assert result["norms"]["norm_before_fc"] is True
    assert result["parameters"]["model.input_norm.weight"] == {"sources": ["input_norm.weight"], "equal": True}
    assert results["specforge-norm-flags"]["norms"]["norm_before_residual"] is True


# -- SGLang --------------------------------------------------------------------------------------
def test_sglang_refuses_speculators_format(engine_results: Callable[[str], Results]) -> None:
    for name in ("speculators", "speculators-2-layers", "speculators-full-vocab"):
        result = engine_results("sglang")[name]
        assert result["outcome"] == "refused" and result["stage"] == "config", result
        assert "Unrecognized model" in result["error"]


def test_sglang_refuses_other_architecture_names(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("sglang")
    eagle = results["eagle"]  # LlamaForCausalLM: the plain Llama class, vocab rows mismatch
    assert eagle["outcome"] == "refused" and eagle["stage"] == "load" and "org_vocab_size" in eagle["error"]
    angelslim = results["angelslim"]  # Eagle3LlamaForCausalLM: not registered in SGLang
    assert angelslim["outcome"] == "refused" and "Eagle3LlamaForCausalLM" in angelslim["error"]


def test_sglang_aux_ids_plus_one_from_eagle_config_only(engine_results: Callable[[str], Results]) -> None:
    results = engine_results("sglang")
    assert results["specforge-ids-126"]["aux_layer_ids"] == [2, 3, 7]
    assert results["specforge"]["aux_layer_ids"] == [2, 4, 5]  # (1, 3, 4) + 1
    assert results["specforge-ids-top-level"]["aux_layer_ids"] == [2, 4, 5], "top-level ids ignored: default"
    assert results["specforge-no-aux"]["aux_layer_ids"] == []
    assert results["specforge-no-aux"]["fc_applied"] is False, "one hidden state of width H: fc bypassed"


def test_sglang_always_uses_the_target_embedding(engine_results: Callable[[str], Results]) -> None:
    result = engine_results("sglang")["specforge-hf"]
    _loaded(result)
    assert result["parameters"]["model.embed_tokens.weight"]["equal"] is True
    assert result["embed_tokens"] == "target"


def test_sglang_layers_0_keys_and_multi_layer(engine_results: Callable[[str], Results]) -> None:
    """Before 0.5.12 layers.0.* keys are dropped silently and multi-layer drafts are refused."""
    results = engine_results("sglang")
    modelopt, multi = results["modelopt"], results["specforge-2-layers"]
    _loaded(modelopt)
    if _version(results) >= Version("0.5.12"):
        assert modelopt["uninitialised"] == ["model.embed_tokens.weight"]
        assert all(p["equal"] for p in modelopt["parameters"].values())
        _loaded(multi)
        assert multi["draft_layers"] == 2
        assert "model.layers.1.hidden_norm.weight" in multi["uninitialised"]
    else:
        assert any(n.startswith("layers.0.") for n in modelopt["dropped"])
        assert any(".midlayer." in n or n.startswith("model.midlayer.") for n in modelopt["uninitialised"])
        assert multi["outcome"] == "refused" and "1 layer" in multi["error"]


def test_unexpected_bias_key(engine: str, engine_results: Callable[[str], Results]) -> None:
    """An fc.bias no parameter takes: SGLang and vLLM 0.25+ drop it silently, older vLLM refuses."""
    results = engine_results(engine)
    result = results["specforge-extra-bias"]
    if engine == "vllm" and _version(results) < Version("0.25"):
        assert result["outcome"] == "refused" and result["stage"] == "load" and "fc.bias" in result["error"]
        return
    _loaded(result)
    assert result["dropped"] == ["fc.bias", "t2d"]
