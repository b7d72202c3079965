"""Hand-read capture rows of the engines beyond vLLM and SGLang (no wheel scan covers them).

Each entry: (engine, since, family, support, source, target architectures). ``knowledge/capture.py``
reads them into its capture tables; an architecture no entry names is unknown for these engines.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.releases import LLAMACPP, MLX_VLM, TOKENSPEED

CAPTURES, REFUSED = "captures", "refused"
TS_BASE = ("tokenspeed runtime/models/base/causal_lm.py BaseCausalLM.set_eagle3_layers_to_capture, inherited; "
           "runtime/execution/model_executor.py (0.1.0; factory.py 0.1.1) calls it when the target has it")
MLX_CAPTURE = "mlx_vlm models/{}/language.py forward(capture_layer_ids): h appended after each captured layer"
MLX_NONE = ("mlx_vlm models/{}: the language model takes no capture_layer_ids; speculative/eagle3.py "
            "_eagle3_verify_target passes it: TypeError on the first verify step (0.6.0-0.7.10 read)")

LC_CAPTURE = ("llama.cpp src/models/{}: t_layer_inp[il] = inpL, extracted when common/speculative.cpp sets "
              "llama_set_embeddings_layer_inp (b9625, b11312 read)")
LC_NONE = ("llama.cpp src/models/{}: no t_layer_inp; llama-graph.cpp GGML_ASSERT 'layer input tensor is null' "
           "aborts the first target pass (b9625, b11312 read)")

ENTRIES: tuple[tuple[str, str, str, str, str, tuple[str, ...]], ...] = (
    (TOKENSPEED, "0.1.0", "llama", CAPTURES, f"{TS_BASE} (llama.py, qwen2.py, qwen3.py)",
     ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")),
    (TOKENSPEED, "0.1.0", "gpt_oss", CAPTURES, f"{TS_BASE} (gpt_oss.py)", ("GptOssForCausalLM",)),
    (TOKENSPEED, "0.1.0", "deepseek", CAPTURES,
     "tokenspeed runtime/models/deepseek_v3.py set_eagle3_layers_to_capture (val + 1)",
     ("DeepseekV3ForCausalLM",)),
    (MLX_VLM, "0.6.0", "llama", CAPTURES, MLX_CAPTURE.format("qwen3_5") + " (0.6.0-0.7.10 read)",
     ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")),
    (MLX_VLM, "0.6.0", "llama", CAPTURES, MLX_CAPTURE.format("gemma4") + " (0.6.0-0.7.10 read)",
     ("Gemma4ForConditionalGeneration",)),
    (MLX_VLM, "0.7.0", "llama", CAPTURES, MLX_CAPTURE.format("nemotron_h") + " (0.7.0; absent 0.6.17)",
     ("NemotronHForCausalLM",)),
    (MLX_VLM, "0.6.0", "llama", REFUSED, MLX_NONE.format("llama"), ("LlamaForCausalLM",)),
    (MLX_VLM, "0.6.0", "llama", REFUSED, MLX_NONE.format("qwen2 / qwen3 / qwen3_moe"),
     ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")),
    (LLAMACPP, "9625", "llama", CAPTURES, LC_CAPTURE.format("llama.cpp, qwen3.cpp, qwen3moe.cpp"),
     ("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")),
    (LLAMACPP, "9625", "gpt_oss", CAPTURES, LC_CAPTURE.format("openai-moe.cpp"), ("GptOssForCausalLM",)),
    (LLAMACPP, "9625", "llama", REFUSED, LC_NONE.format("qwen2.cpp"), ("Qwen2ForCausalLM",)),
)
