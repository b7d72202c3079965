"""A draft for a multimodal target, through vLLM's real loader: a tiny Qwen2.5-VL target (random weights, written
here) and the SpecForge probe draft sized for its decoder.

vLLM on CPU builds it in language-model-only mode (``EngineArgs.language_model_only``: the multimodal processor
needs a tokenizer and torchvision's image ops, which a CPU env lacks; the decoder, the drafter, the embedding
sharing and the aux layers are the same code either way). The loader's facts bound the plan as for every probe case
(tests/test_false_alarms.py), and the plan agrees with them fact by fact (tests/test_profiles_vs_engines.py).

vLLM 0.28.0 to 0.31.x build the image processor even in language-model-only mode, for the device-side input norm
(``mm_device_do_normalize``, on by default for Qwen2.5-VL: ``supports_mm_device_do_normalize = True``) passed to
the vision tower that is then not built: 0.29.0 ``models/qwen2_5_vl.py:1364`` ``FusedInputNorm.from_model_config``
-> ``models/vision.py:672`` ``get_processor(model, ...)`` (0.28.0 and 0.30.0 the same), 0.31.0
``models/qwen2_5_vl.py:1439`` ``build_mm_input_norm`` -> ``layers/fusion/mm_input_norm.py:156``
``cached_get_processor(...)``; the processor needs ``preprocessor_config.json`` and then torchvision. The probe
turns the option off wherever ``EngineArgs`` has it (0.28.0 on): both builders then return the identity norm before
any processor is touched (0.29.0 ``vision.py:656``, 0.31.0 ``mm_input_norm.py:353``).
Before 0.17.0 ``EngineArgs`` has no ``language_model_only``: the test skips there, naming why (tox -e vllm0110).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LOADS, load_plan
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.probes.cases import CASES_BY_NAME, write_case
from pytest_eagle3.probes.compare import differences
from pytest_eagle3.probes.record import outcome_word
from pytest_eagle3.probes.run import engine_version, env_variable, find_engine_python, run_probe
from pytest_eagle3.testing.synth import SynthSpec
from pytest_eagle3.verdict.judge import judged_plan

#: The first vLLM release whose ``EngineArgs`` has ``mm_device_do_normalize`` (module docstring).
DEVICE_NORM_OPTION = Version("0.28.0")
#: The first vLLM release whose ``EngineArgs`` has ``language_model_only`` (0.17.0 ``engine/arg_utils.py:475``).
LANGUAGE_MODEL_ONLY = Version("0.17.0")


def no_language_model_only(version: str | None) -> str | None:
    """Why the installed vLLM cannot load the tiny Qwen2.5-VL target on CPU, or None when it can."""
    if version is None or Version(version) >= LANGUAGE_MODEL_ONLY:
        return None
    return (f"vLLM {version} has no EngineArgs.language_model_only (from {LANGUAGE_MODEL_ONLY}): it builds the vision "
            "tower and the multimodal processor, which need torchvision and a tokenizer this CPU env lacks; up to "
            "0.11.2 it also refuses the config transformers 5 writes (transformers_utils/config.py "
            "patch_rope_scaling_dict: rope_type=default beside type=mrope, accepted from 0.12.0)")


def write_qwen25_vl_target(out: Path, spec: SynthSpec | None = None) -> Path:
    """A Qwen2.5-VL checkpoint whose decoder has the synthetic target's sizes (random bf16 weights)."""
    spec = spec or SynthSpec()
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    text = {"vocab_size": spec.vocab_size, "hidden_size": spec.hidden_size, "intermediate_size": spec.intermediate_size,
            "num_hidden_layers": spec.target_layers, "num_attention_heads": spec.num_attention_heads,
            "num_key_value_heads": spec.num_key_value_heads, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
            "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]}, "tie_word_embeddings": False,
            "bos_token_id": None, "eos_token_id": None}
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": spec.hidden_size,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
              "fullatt_block_indexes": [1], "in_chans": 3}
    config = AutoConfig.for_model("qwen2_5_vl", text_config=text, vision_config=vision, image_token_id=1000,
                                  video_token_id=1001, vision_start_token_id=1002, vision_end_token_id=1003)
    torch.manual_seed(spec.seed)
    model = AutoModelForImageTextToText.from_config(config).to(torch.bfloat16)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def vl_probe(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    python = find_engine_python("vllm")
    if python is None:
        pytest.skip(f"no vllm interpreter: set {env_variable('vllm')} or run tox -e vllm0320")
    reason = no_language_model_only(engine_version("vllm", python))
    if reason is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("multimodal")
    target = write_qwen25_vl_target(root / "target")
    draft = write_case(CASES_BY_NAME["specforge"], root / "draft")
    return target, draft, run_probe("vllm", python, draft, target, timeout=600)


@pytest.mark.engine
def test_vllm_loads_a_draft_for_a_multimodal_target_as_the_plan_says(vl_probe: tuple[Path, Path, dict[str, Any]]) -> None:
    target, draft, probe = vl_probe
    assert probe["outcome"] == "loaded", probe.get("error") or probe.get("stderr_tail")
    assert "multimodal target: language_model_only=True (vision tower not built)" in probe["notes"]
    normalize_off = "multimodal target: mm_device_do_normalize=False (no image processor built)"
    assert (normalize_off in probe["notes"]) == (Version(probe["version"]) >= DEVICE_NORM_OPTION), probe["notes"]
    assert outcome_word("vllm", probe, reduced_vocab=True) == "loads"
    assert probe["embed_tokens"] == "target" and probe["captured_inputs_of"]  # the language model's, unwrapped
    engine = EngineVersion("vllm", Version(probe["version"]))
    ckpt, model = Checkpoint.open(draft), TargetModel.open(target)
    plan = judged_plan(ckpt, engine, model)
    assert plan.outcome == LOADS and not plan.issues, [i.finding.summary for i in plan.issues]
    assert differences(load_plan(ckpt, engine, model), probe) == []
