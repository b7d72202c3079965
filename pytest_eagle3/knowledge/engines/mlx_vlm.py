"""mlx-vlm: the engine object, and its behaviour rows (its EAGLE-3 drafter), every behaviour from its first
release (0.6.0) on.

Read in the wheels: ``speculative/drafters/eagle3/config.py`` and ``eagle3.py`` are the same file in every
release from 0.6.0 to 0.7.10 (0.5.0 has no EAGLE-3 path); ``utils.py`` load_model changes at 0.6.14
(``_drop_modules_without_weights``: a top-level module the checkpoint has no tensor for is set to None
instead of failing the strict load). The loader is probed on CPU (``pytest_eagle3/probes``, tox env mlxvlm0710).
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
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines.shared import (
    CAPTURES,
    NO,
    REFUSED,
    SEPARATE_POOL,
    TOP_FIELD,
    AuxField,
    FcAuxCount,
    Transform,
)
from pytest_eagle3.knowledge.evidence import Cite

NAME = "mlx-vlm"

#: 0.6.0 is the first with speculative/drafters/eagle3 (0.5.0 has none); wheels read 0.6.0, 0.6.5, 0.6.10, 0.6.12,
#: 0.6.13, 0.6.14, 0.6.17, 0.7.0-0.7.10 (0.7.7 is not on the index).
RELEASES = ("0.6.0", "0.6.1", "0.6.2", "0.6.3", "0.6.4", "0.6.5", "0.6.6", "0.6.7", "0.6.8", "0.6.9", "0.6.10",
            "0.6.12", "0.6.13", "0.6.14", "0.6.15", "0.6.16", "0.6.17", "0.7.0", "0.7.1", "0.7.2", "0.7.3", "0.7.4",
            "0.7.5", "0.7.6", "0.7.8", "0.7.9", "0.7.10")

MX = "mlx_vlm speculative/drafters/eagle3/eagle3.py"
CFG = "mlx_vlm speculative/drafters/eagle3/config.py"
LOAD = "mlx_vlm utils.py load_model"
READ = "0.6.0-0.7.10 read"

#: (behaviour, value, source, cites[, unmodelled]): one row each from 0.6.0 (the drafter files never changed up to 0.7.10).
_ROWS: tuple[tuple[Any, ...], ...] = (
    ("arch_rewrite", "none", f"{LOAD}: architectures are not read for EAGLE-3; model_type / speculators_model_type is",
     (Cite("mlx_vlm/utils.py", "load_model"),)),
    ("speculators_format", True,
     (f"{LOAD} get_model_type: model_type or speculators_model_type 'eagle3' -> drafters/eagle3; a flat config's "
      "model_type ('llama') builds mlx_vlm.models.llama, and the strict load refuses the draft's tensors"),
     (Cite("mlx_vlm/utils.py", "load_model"), Cite("mlx_vlm/speculative/drafters/eagle3/__init__.py"),)),
    ("speculators_model_types", ("*",), f"{CFG} TextConfig: transformer_layer_config.model_type not checked",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py", "TextConfig"),)),
    ("key_prefix", "as-is", f"{MX} Eagle3DraftModel: parameters at the top level (embed_tokens, fc, layers.N, norm, lm_head, d2t)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel"),)),
    ("first_layer", "layers", f"{MX} Eagle3DraftModel.__init__: self.layers = [Eagle3FirstLayer, DecoderLayer...]",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel.__init__"),)),
    ("renames", (), f"{MX} sanitize: no rename (midlayer.* is not a parameter: 'Received parameters not in model')",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel.sanitize"),)),
    ("unknown_key", "raise-strict", f"{LOAD} model.load_weights(strict=True): ValueError 'Received parameters not in model'",
     (Cite("mlx_vlm/utils.py", "load_model"),)),
    ("multi_layer", "supported", f"{MX} __init__: DecoderLayer for range(1, num_hidden_layers)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("later_layer_norm", "input_layernorm", f"{MX} DecoderLayer: input_layernorm only (no hidden_norm)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "DecoderLayer"),)),
    ("d2t_present", "offsets", f"{MX} _draft_to_target: draft_ids + d2t[draft_ids]; sanitize casts d2t to int32",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel._draft_to_target"),)),
    ("d2t_absent", "crash", f"{MX} __init__: d2t is a parameter when draft vocab != vocab: strict load 'Missing parameters: d2t'",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("d2t_full_vocab", "refused", f"{MX} __init__: d2t = None when draft_vocab_size == vocab_size: a shipped d2t is 'not in model'",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("draft_vocab_size_missing", "refused",
     f"{CFG} Eagle3Config: draft_vocab_size defaults to 32000: lm_head [32000, hidden] fails the strict load's shape check",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py", "Eagle3Config"),)),
    ("draft_vocab_size_null", "refused", f"{MX} __init__: int(config.draft_vocab_size): TypeError for null",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("aux_id_fields", (AuxField("capture_layer_ids", 1), AuxField("target_layer_ids"), TOP_FIELD),
     (f"{CFG} Eagle3Config.__post_init__: capture_layer_ids (layer outputs) if given, else target_layer_ids, else "
      "eagle_aux_hidden_state_layer_ids, else the default (aux_default); capture = max(id - 1, 0)"),
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py", "Eagle3Config.__post_init__"),)),
    ("aux_id_fields_other_mode", None, "mlx_vlm: one aux-id resolver",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py", "Eagle3Config"),)),
    ("aux_transform_llama", Transform.AS_IS_AT_LEAST_1,
     f"{CFG} __post_init__: capture_layer_ids = [max(id - 1, 0)], the output of that layer = input max(id, 1)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py", "Eagle3Config.__post_init__"),)),
    ("aux_transform_deepseek", Transform.AS_IS_AT_LEAST_1, f"{CFG}: the same rule for every target",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py"),)),
    ("aux_transform_gpt_oss", Transform.AS_IS_AT_LEAST_1, f"{CFG}: the same rule for every target",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py"),)),
    ("capture_range", "all",
     "mlx_vlm models/qwen3_5/language.py forward: h appended after layer i for i in capture_set (outputs 0..L-1)",
     (Cite("mlx_vlm/models/qwen3_5/language.py"),)),
    ("graph_mode_default_layers", False, "mlx_vlm: no CUDA graphs", (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel"),)),
    ("fc_applied", "when-width-differs", f"{MX} _prepare_target_hidden: returns hidden when its width == hidden_size",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel._prepare_target_hidden"),)),
    ("fc_aux_count", FcAuxCount.FIXED_3, f"{MX} __init__: fc = Linear(3 * target_hidden_size, hidden_size)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("fc_bias", "none", f"{MX} __init__: fc bias=False",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("use_aux_hidden_state", "ignored", f"{CFG}: use_aux_hidden_state not a field",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py"),)),
    ("norm_before_residual", "read", f"{MX} Eagle3FirstLayer: residual = hidden_normed if norm_before_residual",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3FirstLayer"),)),
    ("norm_before_fc", "read", f"{MX} __init__: input_norm over 3 x target_hidden_size if norm_before_fc",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("fc_norm", "not-read", f"{CFG}: no fc_norm field",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py"),)),
    ("norm_output", "not-read", f"{CFG}: no norm_output field",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py"),)),
    ("embed_source", "target-if-same-shape-required",
     (f"{MX} bind: the target's embed_tokens replaces the draft's when the shapes match; the draft must ship one "
      "(0.6.0-0.6.13 strict load 'Missing parameters'; from 0.6.14 the module is set to None and bind raises)"),
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel.bind"),)),
    ("draft_extend_logits_buffer", "none", "mlx_vlm: no CUDA graphs", (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel"),)),
    ("draft_extend_graph_width", "target-hidden", "mlx_vlm: no CUDA graphs", (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel"),)),
    ("embed_width_check", "uninitialised", f"{MX} bind: shared only when the shapes match",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel.bind"),)),
    ("mtp_model_types", (), "mlx_vlm: model_type eagle3 is its own drafter",
     (Cite("mlx_vlm/utils.py", "load_model"),)),
    ("mla_rope", "as-configured", "mlx_vlm: no MLA EAGLE-3 drafter",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("draft_rope", "config", f"{MX} Attention: nn.RoPE(base=rope_theta) (rope scaling not applied: not modelled)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Attention"),)),
    ("first_layer_hidden_path", "hidden_norm", f"{MX} Eagle3FirstLayer: hidden_norm(hidden), input_layernorm(embeds)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3FirstLayer"),)),
    ("mlp_width", "intermediate_size", f"{MX} MLP: config.intermediate_size",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "MLP"),)),
    ("layer_bias", "qkv+o_proj", f"{MX} Attention: q/k/v/o_proj bias=attention_bias; MLP without bias",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Attention"),)),
    ("unset_bias", "zeros", f"{LOAD} strict load: an unfilled bias is refused, never left unset",
     (Cite("mlx_vlm/utils.py", "load_model"), Cite("mlx_vlm/utils.py", "load"),)),
    ("unloaded_parameter", "refused", f"{LOAD} model.load_weights(strict=True): 'Missing parameters'",
     (Cite("mlx_vlm/utils.py", "load_model"),)),
    ("weight_files", "all-safetensors", f"{LOAD}: the index's shards, else *.safetensors except consolidated.safetensors",
     (Cite("mlx_vlm/utils.py", "load_model"),)),
    ("draft_positions", "unbounded", f"{MX} Attention: nn.RoPE computes every position (no table)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Attention"),)),
    ("target_quantization", "draft", f"{LOAD}: the drafter's own config quantization",
     (Cite("mlx_vlm/utils.py", "load_model"),)),
    ("draft_sliding_window", "none", f"{MX}: no sliding window",
     (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
    ("draft_dtype", "promoted",
     (f"{LOAD}: the checkpoint's tensors as stored; {MX} Eagle3 fc is an mlx nn.Linear, and MLX promotes a float16 x "
      "bfloat16 matmul to float32 (mlx 0.32.4, run on CPU: no error)"),
     (Cite("mlx_vlm/utils.py", "load_model"), Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"))),
    ("aux_default", "draft-layers",
     f"{CFG} __post_init__: [2, n // 2, max(n - 3, 0)] with n the DRAFT's num_hidden_layers ([2, 0, 0] for one layer)",
     (Cite("mlx_vlm/speculative/drafters/eagle3/config.py", "Eagle3Config.__post_init__"),)),
)

SPANS: list[BehaviourSpan] = [BehaviourSpan(name, "0.6.0", "0.7.10", value, source, *more)
                              for name, value, source, *more in _ROWS]
# ---------------------------------------------------------------- lm_head_source: the 0.6.14 boundary
SPANS += spans("lm_head_source",
               ("0.6.0", "0.6.13", "draft", f"{MX} __init__: own lm_head; strict load refuses a draft without one (0.6.0-0.6.13 read)",
                (Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py"),)),
               ("0.6.14", "0.7.10", "draft-else-embed",
                (f"{LOAD} _drop_modules_without_weights (0.6.14; text-only configs, every config from 0.6.16): no "
                 "lm_head.weight -> lm_head = None -> _logits uses embed_tokens.as_linear (the target's, after bind)"),
                (Cite("mlx_vlm/utils.py", "load_model"), Cite("mlx_vlm/utils.py", "_drop_modules_without_weights"),)))

# ---------------------------------------------------------------- its rows in the cross-engine tables
MLX_CAPTURE = "mlx_vlm models/{}/language.py forward(capture_layer_ids): h appended after each captured layer"
MLX_NONE = ("mlx_vlm models/{}: the language model takes no capture_layer_ids; speculative/eagle3.py "
            "_eagle3_verify_target passes it: TypeError on the first verify step (0.6.0-0.7.10 read)")
#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(
        NAME, "Eagle3DraftModel", LLAMA, (), (),
        ("mlx_vlm speculative/drafters/eagle3/eagle3.py Eagle3DraftModel (q/k/v/o, gate/up/down, three norms on "
         "layer 0, input_layernorm on later layers)")),
)
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow("0.6.0", True,
        ("mlx_vlm utils.py get_model_type: only speculators_model_type 'eagle3' reaches the drafter; a flat config "
         "builds mlx_vlm.models.<model_type>, which refuses the draft's tensors (no flat architecture builds it; "
         "0.6.0-0.7.10 read)"),
        cites=(Cite("mlx_vlm/utils.py"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow("0.6.0", SEPARATE_POOL,
        "mlx_vlm speculative/drafters/eagle3/eagle3.py make_cache: one KVCache per draft layer, its own "
        "(0.6.0-0.7.10 read)",
        cites=(Cite("mlx_vlm/speculative/drafters/eagle3/eagle3.py", "Eagle3DraftModel.make_cache"),)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "0.6.0-0.7.10", "every release's drafter and model files",
                 "0.7.10 (mlx-cpu): strict load, bind, first fc; the drafter's own fc path, logits and d2t against "
                 "the reference (behaviour probe); the capture scan against its 123 imported model packages",
                 "0.7.10 (mlx-cpu, its generate loop, -m engine --eagle3-engine=mlx-vlm): three drafts on a "
                 "Qwen3.5 target equal the prediction to 4 decimals (one near-tie: 0.002); the Llama demo target "
                 "stops where the plan says",
                 f"{NO}: mlx runs on Apple GPUs, none here",
                 "tox -e mlxvlm0710; tests/test_mlx_probe.py, tests/test_behaviour_probes.py, "
                 "tests/test_mlx_capture_scan.py, tests/test_live_mlx.py; docs/live.md"),
)
#: Its hand-read target capture rows (knowledge.capture_engines).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, "0.6.0", "llama", CAPTURES, MLX_CAPTURE.format("qwen3_5") + " (0.6.0-0.7.10 read)",
     ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"),
     (Cite("mlx_vlm/models/qwen3_5/language.py"),)),
    CaptureEntry(NAME, "0.6.0", "llama", CAPTURES, MLX_CAPTURE.format("gemma4") + " (0.6.0-0.7.10 read)",
     ("Gemma4ForConditionalGeneration",),
     (Cite("mlx_vlm/models/gemma4/language.py"),)),
    CaptureEntry(NAME, "0.7.0", "llama", CAPTURES, MLX_CAPTURE.format("nemotron_h") + " (0.7.0; absent 0.6.17)",
     ("NemotronHForCausalLM",),
     (Cite("mlx_vlm/models/nemotron_h/language.py"),)),
    CaptureEntry(NAME, "0.6.0", "llama", REFUSED, MLX_NONE.format("llama"), ("LlamaForCausalLM",),
     (Cite("mlx_vlm/speculative/eagle3.py", "_eagle3_verify_target"),)),
    CaptureEntry(NAME, "0.6.0", "llama", REFUSED, MLX_NONE.format("qwen2 / qwen3 / qwen3_moe"),
     ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
     (Cite("mlx_vlm/speculative/eagle3.py", "_eagle3_verify_target"),)),
)

ENGINE = Engine(
    NAME, "mlx-vlm", RELEASES, lineage=NAME, behaviour_rows=tuple(SPANS), rank=40,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
        matrix_target="Qwen3_5ForConditionalGeneration",
    ),
    loading=Loading(
        draft_dtype_source="mlx_vlm utils.py load_model: the drafter's tensors as stored",
        speculators_reader="own-config-class",
        speculators_class="Eagle3DraftModel",
        load_assert="mlx nn.Module.load_weights(strict=True): every tensor's shape must equal its parameter's",
        exact_shapes=True,
    ),
    # live: mlx_vlm.generate.ar.generate_step with the EAGLE-3 drafter (pytest_eagle3/live/mlx_generate.py); the
    # acceptance is the drafter's accept_lens (speculative/common.py _record_speculative_round)
    live=Live(
        live_client="generate-loop",
        live_acceptance="drafter-rounds",
    ),
    interpreter=Interpreter(
        # the behaviour probe's cases: the speculators format only (a flat config builds the plain model)
        probe=Probe("mlx_loader.py", "mlx_vlm", ("mlx-vlm",), behaviour_script="mlx_behaviour.py",
                    forward_script="mlx_forward.py",
                    behaviour_cases=("speculators", "speculators-norm-before-fc", "speculators-full-vocab")),
        python_option="eagle3_mlx_vlm_python",
    ),
    scans=Scans(
        draft_class_scan=True,
        capture_scan="wheels",
    ),
)
