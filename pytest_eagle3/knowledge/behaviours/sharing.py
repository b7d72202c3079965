"""Behaviour rows: embed_tokens / lm_head sharing, CUDA-graph buffers, MTP model types.

One ``(since, read_to, value, source)`` span per engine range; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.common import SG_EAGLE3, Span, spans
from pytest_eagle3.knowledge.releases import SGLANG, VLLM

SPANS: list[Span] = []
# ---------------------------------------------------------------- embed_source
SPANS += spans(SGLANG, "embed_source",
               ("0.4.4.post2", None, "target-unless-hidden-differs",
                ("sglang speculative/eagle_worker.py __init__ (eagle_worker_v2.py init_lm_head from 0.5.8) set_embed; "
                 "models/llama.py set_embed skips when target_hidden_size != hidden_size")))
SPANS += spans(VLLM, "embed_source",
               ("0.8.5", "0.8.5", "target-if-absent", "vllm 0.8.5 v1/spec_decode/eagle.py load_model"),
               ("0.9.0", "0.9.0.1", "target-always-key-raises",
                ("vllm 0.9.0 llama_eagle3.py: no embed_tokens module when PP == 1 (vllm#18906 KeyError); 0.9.0.1 "
                 "v1/spec_decode/eagle.py load_model the same (0.9.0, 0.9.0.1 read)")),
               ("0.9.1", "0.11.0", "target-if-same-shape",
                "vllm 0.9.1-0.11.0 v1/spec_decode/eagle.py load_model: shared when the shapes match"),
               ("0.11.1", None, "target-if-absent-or-equal",
                ("vllm 0.11.1 v1/spec_decode/eagle.py load_model has_own_embed_tokens (vllm#28549; CPU run 0.11.1); "
                 "0.33 _maybe_share_embeddings")))
# ---------------------------------------------------------------- draft_extend_logits_buffer
SPANS += spans(SGLANG, "draft_extend_logits_buffer",
               ("0.4.4.post2", "0.4.10", "none",
                "sglang speculative/eagle_draft_extend_cuda_graph_runner.py: no logits buffer (0.4.8, 0.4.10 read)"),
               ("0.5.1", "0.5.14", "draft-vocab",
                ("sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__: "
                 "next_token_logits_buffer = zeros(max_bs, draft_vocab_size); layers/logits_processor.py "
                 "_copy_logits_to_buffer copies the ParallelLMHead output (draft_vocab_size padded to 64) into it "
                 "(0.5.1, 0.5.2, 0.5.7, 0.5.11, 0.5.14 read; sgl-project/sglang#10106)")),
               ("0.5.15", None, "shape-checked",
                ("sglang 0.5.15 layers/logits_processor.py _copy_logits_to_buffer: the buffer is skipped when its shape "
                 "differs (0.5.15-0.5.23 read)")))
SPANS += spans(VLLM, "draft_extend_logits_buffer",
               ("0.8.5", None, "none", "vllm v1/spec_decode/eagle.py: logits are not copied into a CUDA-graph buffer"))
# ---------------------------------------------------------------- draft_extend_graph_width
SPANS += spans(SGLANG, "draft_extend_graph_width",
               ("0.4.4.post2", "0.4.9", "draft-hidden",
                ("sglang speculative/eagle_draft_extend_cuda_graph_runner.py EAGLEDraftExtendCudaGraphRunner.__init__: "
                 "hidden_states = zeros(max_num_token, hidden_size * 3) (0.4.7, 0.4.8, 0.4.9 read)")),
               ("0.4.10", "0.5.11", "target-hidden",
                ("sglang 0.4.10 eagle_draft_extend_cuda_graph_runner.py: target_hidden_size * 3 when the config has it "
                 "(sgl-project/sglang#8163, fixes #7011; 0.5.11 read)")),
               ("0.5.12", "0.5.14", "target-config-x3",
                ("sglang 0.5.12 speculative/eagle_info.py EagleDraftExtendInput.hidden_size_for: num_aux and "
                 "target_hidden_size read from worker.target_worker.model_runner.model_config.hf_config (the TARGET's "
                 "config, which has neither: 3 x its hidden_size); eagle_draft_extend_cuda_graph_runner.py __init__ "
                 "sizes hidden_states with it, while llama_eagle3.py fc takes num_aux_hidden_states states "
                 "(0.5.12, 0.5.13, 0.5.13.post1, 0.5.14 read)")),
               ("0.5.15", None, "draft-aux-count",
                ("sglang 0.5.15 speculative/eagle_utils.py get_draft_input_from_target_hidden_dim: target_hidden_size x "
                 "num_aux_hidden_states (else len(eagle_config ids), else 3) of the draft model_runner's config "
                 "(0.5.15, 0.5.23 read)")))
SPANS += spans(VLLM, "draft_extend_graph_width",
               ("0.8.5", None, "target-hidden",
                ("vllm v1/spec_decode/eagle.py EagleProposer: fc (combine_hidden_states) runs before the draft-width "
                 "buffers (0.9.2-0.32.0 read)")))
# ---------------------------------------------------------------- embed_width_check
SPANS += spans(SGLANG, "embed_width_check",
               ("0.4.4.post2", None, "uninitialised",
                "sglang models/llama.py LlamaForCausalLM.set_embed returns when target_hidden_size != hidden_size"))
SPANS += spans(VLLM, "embed_width_check",
               ("0.8.5", "0.9.0.1", "target-width",
                ("vllm 0.8.5 v1/spec_decode/eagle.py load_model: the target's embed_tokens when the checkpoint has "
                 "none, whatever the width; 0.9.0, 0.9.0.1: the target's always at PP == 1 (vllm#18906: assert "
                 "hidden_states.shape[-1] == input_embeds.shape[-1]) (0.8.5, 0.8.5.post1, 0.9.0, 0.9.0.1 read)")),
               ("0.9.1", "0.11.0", "uninitialised",
                ("vllm 0.9.1 v1/spec_decode/eagle.py load_model: shared only when the embed_tokens.weight shapes match; "
                 "llama_eagle3.py load_weights skip_substrs 'embed_tokens' when the checkpoint has none, so a draft of "
                 "another width keeps a random one (0.9.1, 0.9.2, 0.10.0, 0.10.1, 0.10.1.1, 0.10.2, 0.11.0 read)")),
               ("0.11.1", "0.24.0", "target-width",
                ("vllm 0.24.0 v1/spec_decode/llm_base_proposer.py _maybe_share_embeddings: shared whenever the checkpoint "
                 "has no embed_tokens, whatever the width (0.11.0 eagle.py load_model: by shape)")),
               ("0.25.0", None, "uninitialised",
                ("vllm 0.25.0 llm_base_proposer.py _maybe_share_embeddings: 'Target embedding dim (%d) differs from "
                 "draft embedding dim (%d). Keeping separate embedding weights.' (0.25.0-0.32.0 read)")))
# ---------------------------------------------------------------- lm_head_source
SPANS += spans(SGLANG, "lm_head_source",
               ("0.4.4.post2", None, "draft", f"sglang {SG_EAGLE3}: own lm_head [draft_vocab_size, hidden]"))
SPANS += spans(VLLM, "lm_head_source",
               ("0.8.5", "0.10.2", "draft", "vllm 0.10.1 v1/spec_decode/eagle.py load_model: lm_head not shared for eagle3 (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
               ("0.11.0", "0.11.0", "target-if-same-shape",
                "vllm 0.11.0 v1/spec_decode/eagle.py load_model: target lm_head when the shapes match"),
               ("0.11.1", None, "target-if-absent-or-equal",
                ("vllm 0.11.1 v1/spec_decode/eagle.py load_model has_own_lm_head (vllm#28549; CPU run 0.11.1); 0.33 "
                 "llm_base_proposer._maybe_share_lm_head")))
# ---------------------------------------------------------------- mtp_model_types
SPANS += spans(SGLANG, "mtp_model_types",
               ("0.4.4.post2", None, (),
                "sglang configs/model_config.py rewrites MTP/NextN draft architectures by name, never by model_type"))
SPANS += spans(VLLM, "mtp_model_types",
               ("0.8.5", None, ("deepseek_v3", "deepseek_v32", "glm_moe_dsa"),
                ("vllm config/speculative.py SpeculativeConfig.hf_config_override: model_type deepseek_v3 / deepseek_v32 "
                 "/ glm_moe_dsa -> deepseek_mtp, architectures DeepSeekMTPModel, whatever the method (0.18.0, 0.22.0, "
                 "0.28.0, 0.32.0 read, earlier assumed; CPU run 0.24.0: \"Model architectures ['Eagle3DeepSeekMTPModel'] "
                 "are not supported\")")))
