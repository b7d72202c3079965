"""llama.cpp: the engine object, and its behaviour rows (its EAGLE-3 path, the HF -> GGUF converter and the
runtime), from its first build read on.

llama.cpp serves a GGUF: the draft is converted first (``convert_hf_to_gguf.py DRAFT --target-model-dir TARGET``),
so what the converter reads from the draft config and which tensors it keeps are this engine's load plan.
Read in the trees the llama-cpp-python sdists vendor (``knowledge/llamacpp_builds.py``): b9625 (0.3.29), b9837,
b9976, b10454 (0.3.35), b11312 (0.3.36): ``conversion/llama.py`` LlamaModel (``__init__``, ``index_tensors``,
``modify_tensors``, ``prepare_tensors``), ``src/models/eagle3.cpp``, ``common/speculative.cpp``
(common_speculative_impl_draft_eagle3). The b11312 converter is run on CPU (``pytest_eagle3/probes``, tox env
llamacpp11312).
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.draft_class import LLAMA, DraftClass
from pytest_eagle3.knowledge.engine import (
    BehaviourSpan,
    CaptureEntry,
    Confirmation,
    Engine,
    Interpreter,
    Live,
    Loading,
    Probe,
    Scans,
    Serving,
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines.shared import (
    CAPTURES,
    MIDLAYER_RENAMES,
    NO,
    REFUSED,
    SEPARATE_POOL,
    TOP_FIELD,
    FcAuxCount,
    Transform,
)

NAME = "llamacpp"

#: Build numbers (tag bNNNN, kept without the b), the builds the llama-cpp-python sdists read vendor
#: (knowledge/llamacpp_builds.py): b9625 the first with src/models/eagle3.cpp (#18039; b9553 has none), b9976 the
#: last with hard-coded aux ids, b10454 the first reading the config's (#25794), b11312 the newest vendored
#: (llama-cpp-python 0.3.36).
RELEASES = ("9625", "9837", "9976", "10454", "11312")

CONV = "llama.cpp conversion/llama.py LlamaModel"
MODEL = "llama.cpp src/models/eagle3.cpp llama_model_eagle3"
SPEC = "llama.cpp common/speculative.cpp common_speculative_impl_draft_eagle3"
DETECT = "'draft_vocab_size' in hparams and num_hidden_layers == 1"

#: (behaviour, value, source): one row each from b9625, read to b11312.
_ROWS: tuple[tuple[str, Any, str], ...] = (
    ("arch_rewrite", "none", f"{CONV}: registered under its HF architecture names; EAGLE-3 detected by {DETECT}"),
    ("speculators_format", True,
     f"{CONV}.index_tensors: transformer_layer_config merged into hparams (Eagle3Speculator nested config)"),
    ("speculators_model_types", ("*",), f"{CONV}: transformer_layer_config.model_type not checked"),
    ("key_prefix", "optional-model",
     "llama.cpp gguf-py tensor_mapping.py: model.embed_tokens / embed_tokens, model.norm / norm, lm_head all map"),
    ("first_layer", "layers", f"{CONV}.index_tensors: midlayer.* and layers.0.* renamed to model.layers.0.*"),
    ("renames", MIDLAYER_RENAMES, f"{CONV}.index_tensors: name.startswith('midlayer.') -> 'model.layers.0.'"),
    ("unknown_key", "raise-can-not-map", "llama.cpp conversion/base.py map_tensor_name: ValueError 'Can not map tensor'"),
    ("multi_layer", "refused",
     (f"{CONV}.__init__: EAGLE-3 only when num_hidden_layers == 1 (else a plain llama GGUF: fc.weight cannot be "
      f"mapped); {MODEL} graph: GGML_ASSERT(n_layer == 1)")),
    ("later_layer_norm", "hidden_norm", f"{MODEL}: one layer only (no later layers)"),
    ("d2t_present", "offsets-checked",
     (f"{CONV}.prepare_tensors: d2t + arange written as ABSOLUTE int64 ids (range check against the target "
      "vocab, duplicate check: ValueError); the graph scatters logits through them; t2d skipped")),
    ("d2t_absent", "crash",
     (f"{MODEL}.load_arch_tensors: no d2t -> output sized to the vocab ({{arch}}.vocab_size); a reduced lm_head "
      "fails check_tensor_dims 'wrong shape' (libllama b11312 loading the converted probe case)")),
    ("d2t_full_vocab", "offsets", f"{CONV}.prepare_tensors: d2t converted and written whatever the vocab sizes"),
    ("draft_vocab_size_missing", "refused",
     f"{CONV}.__init__: no draft_vocab_size -> not detected as EAGLE-3; a plain llama conversion cannot map fc.weight"),
    ("draft_vocab_size_null", "vocab_size",
     f"{CONV}.__init__: only the key's presence is read; the draft vocab is d2t's length, else the target's"),
    ("aux_id_fields_other_mode", None, "llama.cpp: one aux-id path"),
    ("aux_transform_llama", Transform.AS_IS,
     f"{SPEC}: llama_set_embeddings_layer_inp(ctx_tgt, id): the INPUT of layer id (t_layer_inp[il] = inpL)"),
    ("aux_transform_deepseek", Transform.AS_IS, f"{SPEC}: the same for every target"),
    ("aux_transform_gpt_oss", Transform.AS_IS, f"{SPEC}: the same for every target"),
    ("capture_range", "all",
     (f"{SPEC}: id < n_layer -> layer input; from b10454 id == n_layer -> the final hidden state "
      "(llama_set_embeddings_nextn), larger ids GGML_ABORT")),
    ("graph_mode_default_layers", False, "llama.cpp: the ids are set once, for every mode"),
    ("fc_applied", "always", f"{MODEL} graph<true>: build_lora_mm(model.fc, cur) always"),
    ("fc_aux_count", FcAuxCount.FIXED_3,
     (f"{MODEL}.load_arch_hparams: 'EAGLE3 requires exactly 3 entries in extract_layers'; "
      f"{SPEC}: 'expected 3 extract layers'; fc = 3 x target_hidden_size")),
    ("fc_bias", "none",
     (f"{MODEL}.load_arch_tensors: fc weight only; the converter writes a shipped fc.bias, and "
      "llama-model-loader.cpp done_getting_tensors refuses it ('wrong number of tensors')")),
    ("use_aux_hidden_state", "ignored", f"{CONV}: use_aux_hidden_state not read"),
    ("norm_before_residual", "top-level",
     (f"{CONV}.__init__: eagle3_raw_config.get('norm_before_residual', False) (the raw config's top level); "
      f"{MODEL} graph<false>: inpSA = norm_before_residual ? g_norm : inpL")),
    ("fc_norm", "not-read", f"{CONV}: no fc_norm"),
    ("norm_output", "not-read", f"{CONV}: no norm_output"),
    ("embed_source", "target-if-absent",
     f"{MODEL}.load_arch_tensors: token_embd optional; graph<false>: the target's tok_embd when the draft has none"),
    ("draft_extend_logits_buffer", "none", "llama.cpp: no CUDA-graph draft-extend buffer"),
    ("draft_extend_graph_width", "target-hidden", f"{MODEL}: n_embd_inp_enc = 3 x target_hidden_size"),
    ("embed_width_check", "uninitialised",
     f"{MODEL}: a draft without token_embd takes the target's; widths are not modelled further"),
    ("lm_head_source", "target-if-absent",
     f"{MODEL}.load_arch_tensors: output TENSOR_NOT_REQUIRED; graph<false>: the target's output when absent"),
    ("mtp_model_types", (), "llama.cpp: MTP drafts are their own architectures"),
    ("mla_rope", "as-configured", "llama.cpp: no MLA EAGLE-3 draft"),
    ("draft_rope", "config", f"{CONV}.generate_extra_tensors: rope_freqs from the draft config (llama3 scaling)"),
    ("first_layer_hidden_path", "hidden_norm", f"{MODEL} graph<false>: attn_norm_2 (hidden_norm) on inp_g"),
    ("mlp_width", "intermediate_size", f"{CONV}: feed_forward_length from intermediate_size"),
    ("layer_bias", "o_proj", f"{MODEL}.load_arch_tensors: no bias tensors (a bias cannot be mapped: refused)"),
    ("unset_bias", "zeros", "llama.cpp: no bias parameter exists"),
    ("unloaded_parameter", "refused", "llama.cpp llama_model_loader create_tensor: a required tensor missing fails the load"),
    ("weight_files", "all-safetensors", "llama.cpp conversion/base.py index_tensors: *.safetensors, else pytorch_model*.bin"),
    ("draft_positions", "unbounded", f"{MODEL}: ggml_rope_ext computes every position (no table)"),
    ("target_quantization", "none", "llama.cpp: the GGUF's own tensor types (the converter's --outtype)"),
    ("draft_sliding_window", "none", f"{MODEL}: no sliding window"),
    ("draft_dtype", "gguf-f32",
     (f"llama.cpp convert_hf_to_gguf.py --outtype (auto: the checkpoint's dtype) sets the GGUF's tensor types; {MODEL}: "
      "the fc is a ggml_mul_mat of the draft's weights by the target's F32 hidden states (ggml activations are F32)")),
    ("aux_default", "target-layers",
     f"{CONV}.__init__: [2, L // 2, L - 3] with L the TARGET's num_hidden_layers (--target-model-dir config.json)"),
)

SPANS: list[BehaviourSpan] = [span for name, value, source in _ROWS
                     for span in spans(name, ("9625", "11312", value, source))]
# ---------------------------------------------------------------- the #25794 boundary (b9976 -> b10454)
SPANS += spans("aux_id_fields",
               ("9625", "9976", (),
                f"{CONV}.__init__: target_layers = [2, L // 2, L - 3] of the target, always (no config field read)"),
               ("10454", "11312", (TOP_FIELD,),
                (f"{CONV}.__init__: eagle3_raw_config.get('eagle_aux_hidden_state_layer_ids') (top level only; "
                 "eagle_config's ids ignored), else the default (#25794)")))
SPANS += spans("norm_before_fc",
               ("9625", "9976", "not-read", f"{CONV}: no norm_before_fc; input_norm.weight cannot be mapped"),
               ("10454", "11312", "top-level",
                f"{CONV}.__init__: eagle3_raw_config.get('norm_before_fc', False); input_norm -> enc_output_norm"))

# ---------------------------------------------------------------- its rows in the cross-engine tables
_LC = "llama.cpp conversion/llama.py @ModelBase.register on LlamaModel; EAGLE-3 when draft_vocab_size and one layer"
#: Registry rows: from ``since``, the engine maps the draft architecture to the class named by the value.
LC_CAPTURE = ("llama.cpp src/models/{}: t_layer_inp[il] = inpL, extracted when common/speculative.cpp sets "
              "llama_set_embeddings_layer_inp (b9625, b11312 read)")
LC_NONE = ("llama.cpp src/models/{}: no t_layer_inp; llama-graph.cpp GGML_ASSERT 'layer input tensor is null' "
           "aborts the first target pass (b9625, b11312 read)")
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "LlamaModel", LLAMA, (), (),
        ("llama.cpp conversion/llama.py LlamaModel (EAGLE-3 by hparams) -> GGUF arch eagle3, src/models/eagle3.cpp "
         "(q/k/v/o, gate/up/down, attn_norm + attn_norm_2 (hidden_norm), one layer)"), max_layers=1),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS: tuple[tuple[str, TableRow], ...] = (
    *((arch, TableRow("9625", "LlamaModel", f"{_LC} (b9625-b11312 read)"))
      for arch in ("LlamaForCausalLM", "LlamaForCausalLMEagle3", "Eagle3Speculator", "Eagle3DraftModel")),
    ("Eagle3LlamaForCausalLM", TableRow("9837", "LlamaModel", f"{_LC} (b9837; absent b9625, #24977)")),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("9625", True, "llama.cpp convert_hf_to_gguf.py: the architecture selects the converter class"),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("9625", SEPARATE_POOL,
        "llama.cpp common/speculative.cpp: the draft has its own llama_context (ctx_dft) and KV cache (b9625-b11312 read)"),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "b9625-b11312", "5 builds (llama-cpp-python 0.3.29-0.3.36)",
                 "convert_hf_to_gguf.py of b9976 and b11312, GGUFs loaded by libllama b11312",
                 "llama-server b11312 (CPU build): ten drafts equal the prediction to 4 decimals, the 2-layer "
                 "draft refused by the converter as planned",
                 f"{NO}: the same fixture with --eagle3-device=cuda needs a CUDA build of llama-server",
                 "tox -e llamacpp11312,llamacpp11312live; tests/test_live_llamacpp.py; docs/live.md"),
)
#: Its hand-read target capture rows (knowledge.capture_engines).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "9625", "llama", CAPTURES, LC_CAPTURE.format("llama.cpp, qwen3.cpp, qwen3moe.cpp"),
     ("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")),
    CaptureEntry(NAME, "9625", "gpt_oss", CAPTURES, LC_CAPTURE.format("openai-moe.cpp"), ("GptOssForCausalLM",)),
    CaptureEntry(NAME, "9625", "llama", REFUSED, LC_NONE.format("qwen2.cpp"), ("Qwen2ForCausalLM",)),
)

ENGINE = Engine(
    NAME, "llama.cpp", RELEASES, lineage=NAME, release_prefix="b", behaviour_rows=tuple(SPANS), rank=70,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        draft_dtype_source="llama.cpp convert_hf_to_gguf.py --outtype: the GGUF's tensor types",
        d2t_is_converted_tensor=True,
        missing_d2t_error="without d2t the output is sized to the target vocab ({vocab}); the draft's lm_head has "
                           "{draft_vocab} rows: the load fails (check_tensor_dims 'wrong shape')",
        speculators_reader="merged-over-top",
        speculators_class="LlamaModel",
        load_assert="llama.cpp src/llama-model.cpp create_tensor: the GGUF tensor's shape must equal the one "
                     "the hparams give (llama_model_loader check_tensor_dims)",
        exact_shapes=True,
    ),
    serving=Serving(
        converts_checkpoint=True,
    ),
    live=Live(
        server_binary=True,
        live_client="llama-server-completion",
        live_acceptance="llama-server-counters",
    ),
    interpreter=Interpreter(
        probe=Probe("llamacpp_converter.py", "convert_hf_to_gguf", ("llama-cpp-python",)),
    ),
    scans=Scans(
        capture_scan="graphs",
    ),
)
