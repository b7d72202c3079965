"""Behaviour rows: d2t and draft_vocab_size.

One ``(since, read_to, value, source)`` span per engine range; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.common import SG_EAGLE3, VL_EAGLE3, Span, spans
from pytest_eagle3.knowledge.releases import SGLANG, VLLM

SPANS: list[Span] = []
# ---------------------------------------------------------------- d2t_present
SPANS += spans(SGLANG, "d2t_present",
               ("0.4.4.post2", None, "offsets",
                f"sglang {SG_EAGLE3} load_weights: hot_token_id = d2t + arange (substring 'd2t')"))
SPANS += spans(VLLM, "d2t_present",
               ("0.8.5", "0.8.5", "offsets", f"vllm 0.8.5 {VL_EAGLE3} compute_logits: arange + draft_id_to_target_id"),
               ("0.9.0", "0.9.0.1", "discarded",
                (f"vllm 0.9.0 {VL_EAGLE3} load_weights: 'd2t' not in loaded_weights (renamed) -> map set to None; "
                 "compute_logits then asserts logits.shape[1] == vocab_size (0.9.0, 0.9.0.1 read)")),
               ("0.9.1", None, "offsets", f"vllm {VL_EAGLE3} compute_logits: arange + draft_id_to_target_id"))
# ---------------------------------------------------------------- d2t_absent
SPANS += spans(SGLANG, "d2t_absent",
               ("0.4.4.post2", "0.4.8", "crash",
                f"sglang 0.4.8 {SG_EAGLE3} never sets hot_token_id without d2t: AttributeError in eagle_worker.py"),
               ("0.4.9", None, "identity",
                f"sglang 0.4.9 {SG_EAGLE3} hot_token_id = None; speculative/eagle_worker.py checks 'is not None'"))
SPANS += spans(VLLM, "d2t_absent",
               ("0.8.5", "0.8.5.post1", "identity",
                f"vllm 0.8.5 {VL_EAGLE3} compute_logits: draft_id_to_target_id stays zeros (target = draft id)"),
               ("0.9.0", "0.9.0.1", "crash",
                (f"vllm 0.9.0 {VL_EAGLE3} load_weights: no d2t -> draft_id_to_target_id = None; compute_logits "
                 "asserts logits.shape[1] == vocab_size (0.9.0, 0.9.0.1 read)")),
               ("0.9.1", None, "identity",
                (f"vllm 0.9.1 {VL_EAGLE3} load_weights skip_substrs 'draft_id_to_target_id': the map stays zeros "
                 "(target = draft id) (0.9.1, 0.9.2, 0.10.0 read)")))
# ---------------------------------------------------------------- d2t_full_vocab
SPANS += spans(SGLANG, "d2t_full_vocab",
               ("0.4.4.post2", None, "offsets", f"sglang {SG_EAGLE3} load_weights: d2t always read"))
SPANS += spans(VLLM, "d2t_full_vocab",
               ("0.8.5", "0.29.0", "offsets", f"vllm 0.29.0 {VL_EAGLE3}: map always a parameter"),
               ("0.30.0", None, "refused",
                (f"vllm 0.30.0 {VL_EAGLE3} and model_executor/models/deepseek_eagle3.py (the MLA class, an "
                 "unconditional map parameter before 0.30.0): draft_id_to_target_id = None when draft vocab == vocab; "
                 "a shipped d2t raises 'There is no module or parameter named draft_id_to_target_id' (CPU run 0.32.0)")))
# ---------------------------------------------------------------- draft_vocab_size_missing
SPANS += spans(SGLANG, "draft_vocab_size_missing",
               ("0.4.4.post2", "0.5.4.post1", "vocab_size-if-tied",
                (f"sglang {SG_EAGLE3} LlamaForCausalLMEagle3.__init__ reads config.draft_vocab_size only when "
                 "tie_word_embeddings is false (tied: lm_head = embed_tokens, LogitsProcessor(config) over "
                 "vocab_size); the transformers config raises AttributeError for the absent key "
                 "(0.4.4.post2, 0.4.9, 0.5.2, 0.5.4.post1 read)")),
               ("0.5.4.post2", None, "refused",
                (f"sglang 0.5.4.post2 {SG_EAGLE3} __init__: config_.vocab_size = config_.draft_vocab_size whatever "
                 "tie_word_embeddings: AttributeError (0.5.4.post2, 0.5.11, 0.5.12, 0.5.23 read)")))
SPANS += spans(VLLM, "draft_vocab_size_missing",
               ("0.8.5", "0.10.2", "refused", f"vllm 0.10.1 {VL_EAGLE3} __init__: self.config.draft_vocab_size (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
               ("0.11.0", None, "vocab_size",
                f"vllm 0.11.0 {VL_EAGLE3} __init__: draft_vocab_size defaults to vocab_size"))
# ---------------------------------------------------------------- draft_vocab_size_null
SPANS += spans(SGLANG, "draft_vocab_size_null",
               ("0.4.4.post2", "0.5.1", "refused", f"sglang {SG_EAGLE3} __init__: lm_head rows = None"),
               ("0.5.2", None, "target-lm_head",
                f"sglang {SG_EAGLE3} __init__: load_lm_head_from_target (v0.5.2 aee094e430)"))
SPANS += spans(VLLM, "draft_vocab_size_null",
               ("0.8.5", "0.10.2", "refused", f"vllm 0.10.1 {VL_EAGLE3} __init__: ParallelLMHead(None)"),
               ("0.11.0", None, "vocab_size", f"vllm 0.11.0 {VL_EAGLE3}: getattr(config, 'draft_vocab_size', None) is None"))
