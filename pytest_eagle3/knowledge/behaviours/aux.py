"""Behaviour rows: aux layer ids: the fields read, the transforms, the capture range.

One ``(since, read_to, value, source)`` span per engine range; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.common import (
    ALL_FIELDS,
    TOP_FIELD,
    V2_FIELDS,
    V2_FIELDS_0_24,
    V2_FIELDS_0_25,
    Span,
    spans,
)
from pytest_eagle3.knowledge.releases import SGLANG, VLLM

SPANS: list[Span] = []
# ---------------------------------------------------------------- aux_id_fields
SPANS += spans(SGLANG, "aux_id_fields",
               ("0.4.4.post2", "0.4.8", (), "sglang v0.4.5 set_eagle3_layers_to_capture() takes no ids"),
               ("0.4.9", None, ("eagle_config.eagle_aux_hidden_state_layer_ids",),
                ("sglang 0.4.9 model_executor/model_runner.py ModelRunner.initialize (from 0.5.16 "
                 "model_runner_components/spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state)")))
SPANS += spans(VLLM, "aux_id_fields",
               ("0.8.5", "0.11.0", (), ("vllm 0.11.0: no code reads eagle_aux_hidden_state_layer_ids (CPU run 0.11.0); v1/worker/gpu_model_runner.py "
                 "set_aux_hidden_state_layers(get_eagle3_aux_hidden_state_layers()), the target's defaults (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)")),
               ("0.11.1", "0.19.1", (TOP_FIELD,),
                "vllm 0.11.1 v1/worker/gpu_model_runner.py _get_eagle3_aux_layers_from_config (CPU run 0.11.1)"),
               ("0.20.0", "0.21.0", (TOP_FIELD, "dflash_config.target_layer_ids"),
                "vllm 0.20.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config: dflash_config.target_layer_ids as-is"),
               ("0.22.0", "0.22.1", ALL_FIELDS,
                ("vllm 0.22.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1, still the "
                 "default for Llama targets): dflash_config.target_layer_ids + 1, eagle_config fallback")),
               ("0.23.0", "0.23.0", (TOP_FIELD,),
                ("vllm 0.23.0 config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES adds LlamaForCausalLM; model runner "
                 "V2 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config reads the top "
                 "level only")),
               ("0.24.0", "0.24.0", V2_FIELDS_0_24,
                "vllm 0.24.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py adds dflash_config.target_layer_ids + 1"),
               ("0.25.0", "0.26.0", V2_FIELDS_0_25,
                ("vllm 0.25.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py adds top-level dspark_target_layer_ids "
                 "+ 1 and target_layer_ids + 1 (dense DSpark)")),
               ("0.27.0", None, V2_FIELDS,
                ("vllm 0.27.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config adds "
                 "dflash_config.layer_ids and eagle_config.layer_ids (model runner V2: the GPU default when Triton is "
                 "present; from 0.30.0 dspark ids are as-is for model_type deepseek_v41)")))
# ---------------------------------------------------------------- aux_id_fields_other_mode
SPANS += spans(SGLANG, "aux_id_fields_other_mode", ("0.4.4.post2", None, None, "sglang spec_aux_hidden_state.py: one aux-id resolver for every runtime mode"))
SPANS += spans(VLLM, "aux_id_fields_other_mode",
               ("0.8.5", "0.21.0", None, "vllm < 0.22: one model runner reads aux ids"),
               ("0.22.0", "0.22.1", (TOP_FIELD,),
                "vllm 0.22.0 v1/worker/gpu/spec_decode/eagle/eagle3_utils.py (model runner V2, opt-in): top level only"),
               ("0.23.0", None, ALL_FIELDS,
                ("vllm 0.23.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1: the CPU "
                 "backend, no Triton, or VLLM_USE_V2_MODEL_RUNNER=0) (CPU run 0.32.0); an eagle_config without ids "
                 "there voids dflash_config's")))
# ---------------------------------------------------------------- aux_transform_llama
SPANS += spans(SGLANG, "aux_transform_llama",
               ("0.4.4.post2", None, "+1", "sglang models/llama.py LlamaForCausalLM.set_eagle3_layers_to_capture"))
SPANS += spans(VLLM, "aux_transform_llama",
               ("0.8.5", None, "as-is",
                ("vllm models/llama.py set_aux_hidden_state_layers (interfaces.py SupportsEagle3 from 0.10.1): "
                 "id k = input of layer k")))
# ---------------------------------------------------------------- aux_transform_deepseek
SPANS += spans(SGLANG, "aux_transform_deepseek",
               ("0.4.4.post2", "0.5.12", "+1", "sglang models/deepseek_v2.py set_eagle3_layers_to_capture"),
               ("0.5.13", None, "+1-if-first-is-1",
                "sglang models/deepseek_v2.py set_eagle3_layers_to_capture (v0.5.13 f5049709b3, #25454)"))
SPANS += spans(VLLM, "aux_transform_deepseek", ("0.8.5", None, "as-is", "vllm: the same rule for every target"))
# ---------------------------------------------------------------- aux_transform_gpt_oss
SPANS += spans(SGLANG, "aux_transform_gpt_oss",
               ("0.4.4.post2", "0.5.16", "+1", "sglang models/gpt_oss.py set_eagle3_layers_to_capture"),
               ("0.5.17", None, "+1-unless-max-is-L",
                "sglang models/gpt_oss.py set_eagle3_layers_to_capture boundary rule (v0.5.17 5df193b4ac, #32334)"))
SPANS += spans(VLLM, "aux_transform_gpt_oss", ("0.8.5", None, "as-is", "vllm: the same rule for every target"))
# ---------------------------------------------------------------- capture_range
SPANS += spans(SGLANG, "capture_range",
               ("0.4.4.post2", None, "inner",
                "sglang models/llama.py LlamaModel.forward: captures before layer i for i in range(L)"))
SPANS += spans(VLLM, "capture_range",
               ("0.8.5", "0.17.0", "inner",
                "vllm 0.17.0 models/llama.py LlamaModel.forward: capture before layer idx in range(L)"),
               ("0.18.0", None, "all",
                "vllm 0.18.0 EagleModelMixin._maybe_add_hidden_state: id 0 = embeddings, id L = final pre-norm"))
# ---------------------------------------------------------------- graph_mode_default_layers
SPANS += spans(SGLANG, "graph_mode_default_layers",
               ("0.4.4.post2", "0.4.8", False, "sglang v0.4.5: configured ids not read at all"),
               ("0.4.9", "0.5.10", True,
                ("sglang model_executor/cuda_graph_runner.py set_eagle3_layers_to_capture() before the configured ids "
                 "(fixed v0.5.11 43925d179d, #22836)")),
               ("0.5.11", None, False, "sglang v0.5.11 43925d179d (#22836)"))
SPANS += spans(VLLM, "graph_mode_default_layers", ("0.8.5", None, False, "vllm: one capture set for every mode"))
# ---------------------------------------------------------------- aux_default
SPANS += spans(SGLANG, "aux_default",
               ("0.4.4.post2", None, "target-layers",
                "sglang models/llama.py set_eagle3_layers_to_capture(None): [2, L // 2, L - 3] of the target"))
SPANS += spans(VLLM, "aux_default",
               ("0.8.5", None, "target-layers",
                "vllm models/llama.py get_eagle3_aux_hidden_state_layers: (2, L // 2, L - 3) of the target"))
