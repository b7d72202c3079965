"""config.json of a synthetic draft as each producer writes it, and of its Llama target."""

from __future__ import annotations

from typing import Any

from pytest_eagle3.producers.formats import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS
from pytest_eagle3.testing.layouts import SPECFORGE_HF
from pytest_eagle3.testing.spec import SynthSpec


def llama_fields(spec: SynthSpec) -> dict[str, Any]:
    """The Llama decoder fields every layout writes (speculators: inside transformer_layer_config)."""
    return {
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads,
        "head_dim": spec.head_dim,
        "num_hidden_layers": spec.draft_layers,
        "vocab_size": spec.vocab_size,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
    }


def draft_config(spec: SynthSpec) -> dict[str, Any]:
    """config.json as this producer writes it (producers.md §1.4, §2.4, §3.3, §4.1, §4.2)."""
    ids = list(spec.aux_ids) if spec.write_aux_ids else None
    if spec.producer == SPECULATORS:
        return {
            "architectures": ["Eagle3DraftModel"],
            "speculators_model_type": "eagle3",
            "speculators_version": "0.9.0",
            "draft_vocab_size": spec.draft_vocab_size,
            "eagle_aux_hidden_state_layer_ids": ids,
            "norm_before_residual": False,
            "norm_before_fc": False,
            "fc_norm": False,
            "norm_output": False,
            "target_hidden_size": None,
            "tie_word_embeddings": False,
            "transformer_layer_config": llama_fields(spec),
            "speculators_config": {
                "algorithm": "eagle3",
                "default_proposal_method": "greedy",
                "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                "verifier": {"name_or_path": None, "architectures": ["LlamaForCausalLM"]},
            },
        }
    config = llama_fields(spec) | {"draft_vocab_size": spec.draft_vocab_size, "torch_dtype": spec.dtype}
    if spec.producer in (SPECFORGE, SPECFORGE_HF):
        config["architectures"] = ["LlamaForCausalLMEagle3"]
        if ids is not None:
            config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}
    elif spec.producer == EAGLE:
        config["architectures"] = ["LlamaForCausalLM"]
        config["torch_dtype"] = "float16"
    elif spec.producer == MODELOPT:
        config["architectures"] = ["LlamaForCausalLMEagle3"]
        config["eagle_config"] = {
            "eagle_aux_hidden_state_layer_ids": ids,
            "use_aux_hidden_state": True,
            "use_input_layernorm_in_first_layer": True,
            "use_last_layernorm": True,
            "use_mtp_layernorm": False,
            "next_layer_regular": True,
            "parallel_draft_step": 1,
            "parallel_draft_heads_num_layers": 1,
        }
        if ids is None:
            del config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    elif spec.producer == ANGELSLIM:
        config["architectures"] = ["Eagle3LlamaForCausalLM"]
        config["target_model_type"] = "llama"
    return config


def target_config(spec: SynthSpec) -> dict[str, Any]:
    """A Llama target (verifier) matching the draft."""
    return llama_fields(spec) | {
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": spec.target_layers,
        "torch_dtype": "float32",
    }
