"""Hand-read capture rows of the engines beyond vLLM and SGLang.

Each entry: a :class:`~pytest_eagle3.knowledge.engine.CaptureEntry` (engine, since, family, support, source, target
architectures, cites). ``knowledge/capture.py``
reads them into its capture tables ahead of the source scans (TokenSpeed, mlx-vlm, LMDeploy, llama.cpp: a test
checks that each agrees with its engine's scan); TensorRT-LLM has no scan, and an architecture no entry names is
unknown there.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.engine import CaptureEntry
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.engines.shared import CAPTURES, REFUSED, SILENT
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import LLAMACPP, LMDEPLOY, MLX_VLM, TRTLLM

MLX_CAPTURE = "mlx_vlm models/{}/language.py forward(capture_layer_ids): h appended after each captured layer"
MLX_NONE = ("mlx_vlm models/{}: the language model takes no capture_layer_ids; speculative/eagle3.py "
            "_eagle3_verify_target passes it: TypeError on the first verify step (0.6.0-0.7.10 read)")
LMD_LLAMA = ("lmdeploy pytorch/configurations/llama.py LlamaModelConfigBuilder.build (architectures[0] == "
             "'LlamaForCausalLM' under spec method eagle3) sets aux_hidden_state_layers; models/llama.py LlamaModel.forward "
             "captures hidden_states + residual before those layers (0.11.0-0.18.0 read)")
LMD_NONE = ("lmdeploy pytorch/models/{}: no EAGLE-3 aux capture (aux_hidden_state_layers is set only by the Llama and "
            "Kimi-K2 config builders; 0.18.0's spec_model_ctx ids are DFlash's only): the target sends its final hidden "
            "state, as wide as the draft's embeddings, so fc is skipped (eager reading; 0.11.0-0.18.0 read)")

TRT_CAPTURE = ("tensorrt_llm _torch/models/{}: spec_metadata.maybe_capture_hidden_states(layer_idx, hidden_states, "
               "residual) after each decoder layer (main read; the first release with the class not read)")

LC_CAPTURE = ("llama.cpp src/models/{}: t_layer_inp[il] = inpL, extracted when common/speculative.cpp sets "
              "llama_set_embeddings_layer_inp (b9625, b11312 read)")
LC_NONE = ("llama.cpp src/models/{}: no t_layer_inp; llama-graph.cpp GGML_ASSERT 'layer input tensor is null' "
           "aborts the first target pass (b9625, b11312 read)")

_CENTRAL: tuple[CaptureEntry, ...] = (
    CaptureEntry(MLX_VLM, "0.6.0", "llama", CAPTURES, MLX_CAPTURE.format("qwen3_5") + " (0.6.0-0.7.10 read)",
     ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"),
     (Cite("mlx_vlm/models/qwen3_5/language.py"),)),
    CaptureEntry(MLX_VLM, "0.6.0", "llama", CAPTURES, MLX_CAPTURE.format("gemma4") + " (0.6.0-0.7.10 read)",
     ("Gemma4ForConditionalGeneration",),
     (Cite("mlx_vlm/models/gemma4/language.py"),)),
    CaptureEntry(MLX_VLM, "0.7.0", "llama", CAPTURES, MLX_CAPTURE.format("nemotron_h") + " (0.7.0; absent 0.6.17)",
     ("NemotronHForCausalLM",),
     (Cite("mlx_vlm/models/nemotron_h/language.py"),)),
    CaptureEntry(MLX_VLM, "0.6.0", "llama", REFUSED, MLX_NONE.format("llama"), ("LlamaForCausalLM",),
     (Cite("mlx_vlm/speculative/eagle3.py", "_eagle3_verify_target"),)),
    CaptureEntry(MLX_VLM, "0.6.0", "llama", REFUSED, MLX_NONE.format("qwen2 / qwen3 / qwen3_moe"),
     ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
     (Cite("mlx_vlm/speculative/eagle3.py", "_eagle3_verify_target"),)),
    CaptureEntry(TRTLLM, "0.19.0", "llama", CAPTURES, TRT_CAPTURE.format("modeling_llama.py LlamaDecoderLayer"),
     ("LlamaForCausalLM", "MistralForCausalLM")),
    CaptureEntry(TRTLLM, "0.19.0", "llama", CAPTURES, TRT_CAPTURE.format("modeling_qwen3.py / modeling_qwen3_moe.py"),
     ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")),
    CaptureEntry(TRTLLM, "0.19.0", "deepseek", CAPTURES, TRT_CAPTURE.format("modeling_deepseekv3.py DeepseekV3DecoderLayer"),
     ("DeepseekV3ForCausalLM",)),
    CaptureEntry(TRTLLM, "0.19.0", "gpt_oss", CAPTURES, TRT_CAPTURE.format("modeling_gpt_oss.py"), ("GptOssForCausalLM",)),
    CaptureEntry(LMDEPLOY, "0.11.0", "llama", CAPTURES, LMD_LLAMA, ("LlamaForCausalLM",),
     (Cite("lmdeploy/pytorch/configurations/llama.py", "LlamaModelConfigBuilder.build"),
      Cite("lmdeploy/pytorch/models/llama.py", "LlamaModel.forward"),)),
    CaptureEntry(LMDEPLOY, "0.11.0", "llama", SILENT, LMD_NONE.format("qwen2.py / qwen3.py / qwen3_moe.py"),
     ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
     (Cite("lmdeploy/pytorch/models/qwen2.py"),
      Cite("lmdeploy/vl/model/qwen3.py"),
      Cite("lmdeploy/pytorch/models/qwen3_moe.py"),)),
    CaptureEntry(LMDEPLOY, "0.12.3", "llama", SILENT, LMD_NONE.format("qwen3_5.py / qwen3_5_moe.py") + " (absent 0.12.2)",
     ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"),
     (Cite("lmdeploy/pytorch/models/qwen3_5.py"), Cite("lmdeploy/pytorch/models/qwen3_5_moe.py"),)),
    CaptureEntry(LMDEPLOY, "0.11.0", "deepseek", REFUSED,
     ("lmdeploy pytorch/configurations/deepseek_v2.py DeepseekV2ModelConfigBuilder.build: assert spec_method == "
      "'deepseek_mtp' for model_type deepseek_v2 / deepseek_v3: AssertionError at startup (0.11.0-0.18.0 read)"),
     ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"),
     (Cite("lmdeploy/pytorch/configurations/deepseek_v2.py", "DeepseekV2ModelConfigBuilder.build"),)),
    CaptureEntry(LMDEPLOY, "0.17.0", "deepseek", CAPTURES,
     ("lmdeploy pytorch/configurations/kimi_k2.py KimiK2ModelConfigBuilder.build (via kimi_k25.py): "
      "aux_hidden_state_layers = (2, L // 2, L - 3), at least 5 layers; models/kimi_k2_language.py forward captures "
      "the residual entering those layers (0.17.0; absent 0.16.0)"),
     ("KimiK25ForConditionalGeneration", "Kimi_K25ForConditionalGeneration"),
     (Cite("lmdeploy/pytorch/configurations/kimi_k2.py", "KimiK2ModelConfigBuilder.build"),
      Cite("lmdeploy/pytorch/models/kimi_k2_language.py"))),
    CaptureEntry(LLAMACPP, "9625", "llama", CAPTURES, LC_CAPTURE.format("llama.cpp, qwen3.cpp, qwen3moe.cpp"),
     ("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")),
    CaptureEntry(LLAMACPP, "9625", "gpt_oss", CAPTURES, LC_CAPTURE.format("openai-moe.cpp"), ("GptOssForCausalLM",)),
    CaptureEntry(LLAMACPP, "9625", "llama", REFUSED, LC_NONE.format("qwen2.cpp"), ("Qwen2ForCausalLM",)),
)
#: Every hand-read capture row: the engines' own (``Engine.capture_rows``, in the registry's order), then those
#: still filed here.
ENTRIES: tuple[CaptureEntry, ...] = (*(row for engine in REGISTRY for row in engine.capture_rows), *_CENTRAL)
