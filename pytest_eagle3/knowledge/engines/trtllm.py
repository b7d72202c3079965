"""TensorRT-LLM: the engine object, and its behaviour rows (its PyTorch backend, ``Eagle3ForCausalLM``), every
behaviour from 0.19.0 on.

No wheel is on PyPI (each release's index package is a stub that fetches NVIDIA's own wheel) and no snapshot of the
repository with its tags could be brought here (the git directory is over 2 GB). ``RELEASE_COMMITS`` pins each
release to a commit with the evidence found: the submodule pointer of tensorrtllm_backend's release tag or release
commit (its Dockerfile's ``TENSORRTLLM_VER``). The public source index stores the engine's files at a few commits
only, none of them a release tag: the one dated read is ``_torch/models/modeling_speculative.py`` at b35ac1b6,
where ``tensorrt_llm/version.py`` says ``__version__ = "1.2.0rc2"`` (between 1.1.0 and 1.2.0). ``READ_AT_1_2_0RC2``
lists what that read shows; rows it settles name it, the rest still come from main-branch versions of the files
(``_torch/speculative/eagle3.py`` f933a608, ``llmapi/llm_args.py`` fcd3f316, both undated) and from the pull requests
that changed them, and say so (``MAIN``). Modelled: the default one-model path (``eagle3_one_model``). EAGLE 3.1's
``fc_norm`` / ``norm_output`` (TensorRT-LLM#14988, 2026-06) and ``eagle_config.norm_before_fc`` (#12561, merged
2026-03-27) landed on main after release/1.2: not in 1.2.1. No final 1.3.0 exists (PyPI: 1.3.0rc29 and 1.4.0rc1 the
newest, 2026-07), so 1.2.1 is the newest release.
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.draft_class import LLAMA, DraftClass
from pytest_eagle3.knowledge.engine import (
    BehaviourSpan,
    CaptureEntry,
    Confirmation,
    Engine,
    LaunchLayers,
    Loading,
    Serving,
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines.shared import CAPTURES, MIDLAYER_RENAMES, NO, SEPARATE_POOL, FcAuxCount, Transform

NAME = "trtllm"

#: 0.19.0 first with Eagle3ForCausalLM; 1.2.1 the newest final release (no 1.3.0 final yet).
RELEASES = ("0.19.0", "0.20.0", "0.21.0", "1.0.0", "1.1.0", "1.2.0", "1.2.1")

BACKEND = "triton-inference-server/tensorrtllm_backend"
#: release -> (TensorRT-LLM commit, evidence). No version.py at these commits is in the source index (read_file:
#: "stored, but not at that commit"): the pins rest on the backend's pointer, not on a version.py line.
RELEASE_COMMITS: dict[str, tuple[str | None, str]] = {
    "0.19.0": ("c6f7d423354214df818e206e87680fb2d513a718", f"{BACKEND} tag v0.19.0: submodule tensorrt_llm"),
    "0.20.0": ("7965842954628b0b5456a2f7d59786d3dcd41647", f"{BACKEND} tag v0.20.0: submodule tensorrt_llm"),
    "0.21.0": ("b4b1185af320f109f4cb73b1505832dbc63042d7", f"{BACKEND} tag v0.21.0: submodule tensorrt_llm"),
    "1.0.0": ("ae8270b713446948246f16fadf4e2a32e35d0f62", f"{BACKEND} tag v1.0.0: submodule tensorrt_llm"),
    "1.1.0": ("48b7b5d8b7ed1e6bff57aecc6ff7d1533288bed8",
              f"{BACKEND} 4688330a 'TensorRT-LLM Backend v1.1.0 release' (2025-12-19): submodule tensorrt_llm "
              "(NVIDIA/TensorRT-LLM)"),
    "1.2.0": (None, f"not pinned: {BACKEND} went from TENSORRTLLM_VER=1.2.0rc8 (1da8cc72, 2026-03-13) to 1.2.1"),
    "1.2.1": ("376f7e1bd8ed543f75014309e3fd4b237e9b0e73",
              f"{BACKEND} f8541434 (2026-04-16): Dockerfile TENSORRTLLM_REPO_TAG=release/1.2.1, TENSORRTLLM_VER=1.2.1; "
              "submodule from triton-inference-server/TensorRT-LLM (a fork carrying the release)"),
}

#: The one dated source read: NVIDIA/TensorRT-LLM b35ac1b64368513d215c57d2ed01d62d910df8da, where version.py
#: ends ``__version__ = "1.2.0rc2"``. fact -> what tensorrt_llm/_torch/models/modeling_speculative.py shows there.
READ_AT_1_2_0RC2: dict[str, str] = {
    "Eagle3ForCausalLM.__init__": "draft_vocab_size = vocab_size; replaced by config.draft_vocab_size when that "
                                  "is not None (a null falls back to vocab_size; a config without the field: "
                                  "AttributeError)",
    "Eagle3DraftModel.__init__ d2t": "d2t Parameter when draft_vocab_size is not None and != vocab_size",
    "Eagle3DraftModel.__init__ fc": "fc = Linear(hidden_size_in * spec_config.num_capture_layers, hidden_size, "
                                    "bias=getattr(config, 'bias', False)) only when num_capture_layers > 1",
    "Eagle3DraftModel.__init__ midlayer": "ModuleList of num_hidden_layers Eagle3DecoderLayer when > 1, else one",
    "Eagle3DecoderLayer.__init__": "every layer builds input_layernorm, hidden_norm, post_attention_layernorm and a "
                                   "2*hidden qkv_proj (later layers also concatenate the embeddings)",
    "Eagle3DraftModel.forward": "later layers get hidden_states + residual of the layer before",
    "Eagle3ForCausalLM.load_weights": "'model.' + name unless 'lm_head' in it; no layers.N -> midlayer rename",
    "Eagle3ForCausalLM.apply_eagle3_fc": "fc only when hidden_states.shape[-1] != hidden_size",
    "Eagle3Attention": "rope_gpt_neox, RopeParams.from_config(draft config), bias=config.attention_bias; no MLA "
                       "draft class (no Eagle3MLAttention)",
    "SpecDecOneEngineForCausalLM.__init__": "draft ModelConfig.from_pretrained(speculative_model_dir); "
                                            "Eagle3ForCausalLM(draft_config, target num_hidden_layers)",
}
D = "1.2.0rc2 read (b35ac1b6) differs: "
R2 = "read at 1.2.0rc2 (b35ac1b6; the 1.2.0 / 1.2.1 tags not readable)"

SPEC = "tensorrt_llm _torch/models/modeling_speculative.py"
META = "tensorrt_llm _torch/speculative/eagle3.py"
ARGS = "tensorrt_llm llmapi/llm_args.py EagleDecodingConfig"
LOADER = "tensorrt_llm _torch/models/modeling_utils.py _load_weights_impl (module by module)"
MAIN = "main read, undated; no release tag readable"
AFTER_1_2 = "added on main after release/1.2 (not in 0.19.0-1.2.1)"
CAPTURE = (f"{META} maybe_capture_hidden_states: hidden_states + residual saved after decoder layer "
           "layer_id, i.e. the OUTPUT of layer id = the input of layer id + 1")

#: (behaviour, value, source): one row each from 0.19.0, read to 1.2.1.
_ROWS: tuple[tuple[str, Any, str], ...] = (
    ("arch_rewrite", "none", f"{SPEC} _build_eagle3_one_model_draft: architectures not read ({MAIN})"),
    ("speculators_format", False,
     f"{SPEC} SpecDecOneEngineForCausalLM: ModelConfig.from_pretrained of the draft dir reads a flat HF config; no "
     f"speculators_model_type / transformer_layer_config handling ({MAIN})"),
    ("speculators_model_types", (), "tensorrt_llm: speculators format unsupported"),
    ("key_prefix", "add-model-except-lm_head",
     f"{SPEC} Eagle3ForCausalLM.load_weights: 'model.' + name unless 'lm_head' in name"),
    ("first_layer", "layers",
     (f"{SPEC} Eagle3ForCausalLM.load_weights: re.sub('^layers\\.0\\.', 'midlayer.') for one layer, "
      "'^layers\\.(\\d+)\\.' -> 'midlayer.\\1.' for more: modelled as layers.N with midlayer. -> layers.0. "
      f"({MAIN}; {D}no rename there, only midlayer.* names load)")),
    ("renames", MIDLAYER_RENAMES, f"{SPEC} Eagle3ForCausalLM.load_weights: midlayer.* and layers.N.* both load"),
    ("unknown_key", "drop", f"{LOADER}: parameters are looked up per module; a tensor no module names is never read"),
    ("multi_layer", "supported", f"{SPEC} Eagle3DraftModel.__init__: midlayer = ModuleList(...) when num_layers > 1"),
    ("later_layer_norm", "hidden_norm",
     f"{SPEC} Eagle3DecoderLayer: later layers (next_layer_regular) have no input_layernorm; hidden_norm only "
     f"({MAIN}; {D}every layer builds input_layernorm and concatenates the embeddings)"),
    ("d2t_present", "offsets", f"{META} Eagle3OneModelWorker: draft tokens + d2t[draft tokens]"),
    ("d2t_absent", "crash", f"{SPEC} Eagle3DraftModel.__init__: d2t Parameter when draft_vocab_size != vocab_size; "
                            f"{LOADER} copies module_weights['d2t']: KeyError without one"),
    ("d2t_full_vocab", "ignored",
     f"{SPEC} Eagle3DraftModel.__init__: no d2t Parameter when draft_vocab_size == vocab_size: a shipped d2t is unread"),
    ("aux_id_fields", (),
     (f"{ARGS}.eagle3_layers_to_capture (a launch setting) and {META} Eagle3OneModelSpecMetadata.__post_init__: the "
      "draft config's eagle_aux_hidden_state_layer_ids are never read")),
    ("aux_id_fields_other_mode", None, f"{META} Eagle3SpecMetadata (two-model): the same layers_to_capture"),
    ("aux_transform_llama", Transform.PLUS_1, CAPTURE + " (modeling_llama.py)"),
    ("aux_transform_deepseek", Transform.PLUS_1, CAPTURE + " (modeling_deepseekv3.py)"),
    ("aux_transform_gpt_oss", Transform.PLUS_1, CAPTURE + " (modeling_gpt_oss.py)"),
    ("capture_range", "outputs",
     f"{META}: ids are decoder layer indices 0..L-1 (outputs, inputs 1..L); -1 is the final post-norm state"),
    ("graph_mode_default_layers", False, f"{META}: one layers_to_capture for every mode"),
    ("fc_applied", "when-width-differs",
     f"{SPEC} Eagle3ForCausalLM.apply_eagle3_fc: fc only if hidden_states.shape[-1] != hidden_size"),
    ("fc_aux_count", FcAuxCount.FIXED_3,
     (f"{SPEC} Eagle3DraftModel.__init__: fc = Linear(target_hidden_size x num_capture_layers); "
      f"{ARGS}.num_capture_layers: len(eagle3_layers_to_capture), else 3 (another count: not modelled); {R2}: "
      "fc built only when num_capture_layers > 1")),
    ("fc_bias", "config.bias", f"{SPEC} Eagle3DraftModel.__init__: fc bias=getattr(config, 'bias', False)"),
    ("use_aux_hidden_state", "ignored", "tensorrt_llm: use_aux_hidden_state not read"),
    ("norm_before_residual", "not-read",
     f"{SPEC} Eagle3DecoderLayer.forward: residual = hidden_states before hidden_norm"),
    ("norm_before_fc", "not-read", f"{SPEC}: eagle_config.norm_before_fc (#12561) {AFTER_1_2}"),
    ("fc_norm", "not-read", f"{SPEC}: fc_norm (TensorRT-LLM#14988) {AFTER_1_2}"),
    ("norm_output", "not-read", f"{SPEC}: top-level norm_output (TensorRT-LLM#14988) {AFTER_1_2}"),
    ("embed_source", "target-unless-hidden-differs",
     f"{SPEC} Eagle3DraftModel.__init__: embed_tokens = None (shared with the target) unless target_hidden_size "
     "!= hidden_size; load_weights_from_target_model"),
    ("draft_extend_logits_buffer", "none", "tensorrt_llm: no draft-extend logits buffer"),
    ("draft_extend_graph_width", "draft-aux-count",
     f"{META} Eagle3OneModelSpecMetadata: hidden_states buffer hidden_size x len(layers_to_capture)"),
    ("embed_width_check", "uninitialised",
     f"{SPEC} Eagle3DraftModel.__init__: a draft of another width builds its own embed_tokens (never the target's)"),
    ("lm_head_source", "target-if-absent",
     f"{SPEC} Eagle3ForCausalLM.load_weights: load_lm_head_from_target unless a tensor name has 'lm_head'"),
    ("mtp_model_types", (), "tensorrt_llm: MTP is its own decoding_type"),
    ("mla_rope", "forced-yarn",
     f"{SPEC} Eagle3MLAttention: PositionEmbeddingType.yarn for an MLA draft (kv_lora_rank set; not modelled; "
     f"{MAIN}, TensorRT-LLM#9971 merged 2025-12; {D}no MLA draft class)"),
    ("draft_rope", "config", f"{SPEC} Eagle3Attention: RopeParams.from_config(draft config)"),
    ("first_layer_hidden_path", "hidden_norm",
     f"{SPEC} Eagle3DecoderLayer.forward: hidden_norm(hidden), input_layernorm(embeds), concatenated"),
    ("mlp_width", "intermediate_size_mlp-if-llama4_text",
     f"{SPEC} Eagle3DecoderLayer.__init__: intermediate_size_mlp if model_type == 'llama4_text'"),
    ("layer_bias", "qkv+o_proj+mlp",
     f"{SPEC} Eagle3Attention: bias=config.attention_bias (qkv and o_proj); GatedMLP bias=mlp_bias"),
    ("unset_bias", "zeros", f"{LOADER}: a bias the checkpoint lacks fails the load before it is used"),
    ("unloaded_parameter", "refused", f"{LOADER}: module_weights[name] for every parameter: KeyError when absent"),
    ("weight_files", "all-safetensors", "tensorrt_llm _torch/models/checkpoints/hf/weight_loader.py: *.safetensors"),
    ("draft_positions", "unbounded",
     f"{SPEC} Eagle3Attention: rope_gpt_neox computed in the attention kernel (not verified on a GPU)"),
    ("target_quantization", "draft",
     f"{SPEC} Eagle3DraftModel: quant_config=model_config.get_quant_config() of the draft's own ModelConfig"),
    ("draft_sliding_window", "none", f"{SPEC} Eagle3Attention: no sliding window"),
    ("draft_dtype", "cast-to-draft",
     (f"{SPEC} Eagle3DraftModel: dtype=config.torch_dtype (the draft's); Eagle3ForCausalLM.apply_eagle3_fc: "
      "hidden_states.to(self.model.dtype) before self.model.fc")),
    ("aux_default", "launch-setting",
     (f"{ARGS}.eagle3_layers_to_capture (Set[int], 'Defaults to {{1, num_layers//2-1, num_layers-4}}'); "
      f"{META} __post_init__: layers_to_capture = (1, L // 2 - 1, L - 4) when unset, ValueError 'Not enough hidden "
      "layers for default EAGLE3 capture' when L <= 5")),
)

SPANS: list[BehaviourSpan] = [span for name, value, source in _ROWS
                     for span in spans(name, ("0.19.0", "1.2.1", value, source))]
# ---------------------------------------------------------------- draft_vocab_size_missing: TensorRT-LLM#10124
SPANS += spans("draft_vocab_size_missing",
               ("0.19.0", "1.1.0", "refused",
                f"{SPEC} Eagle3ForCausalLM.__init__: vocab_size=config.draft_vocab_size: AttributeError without the "
                "field (before TensorRT-LLM#10124)"),
               ("1.2.0", "1.2.1", "vocab_size",
                f"{SPEC} _ensure_draft_vocab_size (TensorRT-LLM#10124, merged 2025-12/2026-01 before 1.2.0): warns "
                "'Missing draft_vocab_size ... defaulting to vocab_size' (the 1.2.0 tag not read)"))

# ---------------------------------------------------------------- draft_vocab_size_null
SPANS += spans("draft_vocab_size_null",
               ("0.19.0", "1.1.0", "refused",
                (f"{SPEC} Eagle3ForCausalLM.__init__: vocab_size=config.draft_vocab_size (None): startup fails "
                 f"({MAIN}: not read at these releases; the only dated read, 1.2.0rc2, falls back)")),
               ("1.2.0", "1.2.1", "vocab_size",
                (f"{SPEC} Eagle3ForCausalLM.__init__: draft_vocab_size = vocab_size unless config.draft_vocab_size "
                 f"is not None ({R2}; main also replaces null)")))

# ---------------------------------------------------------------- its rows in the cross-engine tables
TRT_CAPTURE = ("tensorrt_llm _torch/models/{}: spec_metadata.maybe_capture_hidden_states(layer_idx, hidden_states, "
               "residual) after each decoder layer (main read; the first release with the class not read)")
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "Eagle3LlamaForCausalLM", LLAMA, (), (),
        ("tensorrt_llm _torch/models/modeling_speculative.py Eagle3ForCausalLM (registered EAGLE3LlamaForCausalLM; "
         "q/k/v fused into qkv_proj, gate/up into gate_up_proj; midlayer, or midlayer.N for N > 1 layers)")),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("0.19.0", False,
        ("tensorrt_llm _torch/models/modeling_speculative.py _build_eagle3_one_model_draft: eagle3_model_arch llama3 "
         "builds Eagle3ForCausalLM whatever architectures says (two-model mode: 'EAGLE3' + the name without 'Eagle3', "
         "when draft_vocab_size is set; modeling_auto.py _resolve_class) (main read)")),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("0.19.0", SEPARATE_POOL,
        "tensorrt_llm _torch/models/modeling_speculative.py SpecDecOneEngineForCausalLM: "
        "should_use_separate_draft_kv_cache; two-model mode: the draft's own engine and KV cache manager (main read; "
        "a one-model draft in the target's manager with its own per-layer head count: not modelled)"),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "0.19.0-1.2.1",
                 "releases pinned to commits (6 of 7, via tensorrtllm_backend); modeling_speculative.py read at "
                 "1.2.0rc2 (b35ac1b6), the rest main-branch files (no wheel or tag readable)", f"{NO}: CUDA only",
                 f"{NO}: CUDA only", f"{NO}: no GPU fixture", "docs/engines.md (TensorRT-LLM)"),
)
#: Its hand-read target capture rows (knowledge.capture_engines).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "0.19.0", "llama", CAPTURES, TRT_CAPTURE.format("modeling_llama.py LlamaDecoderLayer"),
     ("LlamaForCausalLM", "MistralForCausalLM")),
    CaptureEntry(NAME, "0.19.0", "llama", CAPTURES, TRT_CAPTURE.format("modeling_qwen3.py / modeling_qwen3_moe.py"),
     ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")),
    CaptureEntry(NAME, "0.19.0", "deepseek", CAPTURES, TRT_CAPTURE.format("modeling_deepseekv3.py DeepseekV3DecoderLayer"),
     ("DeepseekV3ForCausalLM",)),
    CaptureEntry(NAME, "0.19.0", "gpt_oss", CAPTURES, TRT_CAPTURE.format("modeling_gpt_oss.py"), ("GptOssForCausalLM",)),
)

ENGINE = Engine(
    NAME, "TensorRT-LLM", RELEASES, lineage=NAME, behaviour_rows=tuple(SPANS), rank=50,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        draft_dtype_source="tensorrt_llm _torch/models/modeling_speculative.py Eagle3DraftModel: dtype=config.torch_dtype (the "
                           "draft's)",
        mla_unmodelled="tensorrt_llm _torch/models/modeling_speculative.py Eagle3ForCausalLM: _use_mla when "
                        "kv_lora_rank is set, Eagle3MLAttention, weights through DeepseekV3WeightLoader (main read)",
        load_assert="tensorrt_llm _torch/modules/linear.py load_weight_shard, then param.data.copy_: another shape raises "
                     "(one tensor-parallel rank; main read)",
        exact_shapes=True,
    ),
    serving=Serving(
        launch_settings=("speculative_config.eagle3_layers_to_capture",),
        launch_layers=LaunchLayers(
            "eagle3_layers_to_capture", "speculative_config.eagle3_layers_to_capture",
            "trtllm-serve --extra_llm_api_options FILE", "{1, L//2 - 1, L - 4} (layer outputs)", 0, 6,
            "ValueError 'Not enough hidden layers for default EAGLE3 capture'"),
    ),
)
