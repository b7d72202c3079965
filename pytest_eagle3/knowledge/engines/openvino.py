"""OpenVINO GenAI: the engine object, and its behaviour rows (an EAGLE-3 draft exported by optimum-intel, run by
``openvino_genai.LLMPipeline(target, "CPU", draft_model=openvino_genai.draft_model(draft, "CPU"))``).

Two released pieces decide what a draft becomes. The exporter, optimum-intel 2.2.0 (``optimum-cli export openvino
-m DRAFT OUT --task=text-generation-with-past --trust-remote-code``), builds ``architectures[0]``'s class from
``_CUSTOM_DRAFT_MODEL_MAP`` (``optimum/exporters/openvino/__main__.py``): ``LlamaForCausalLMEagle3`` and
``Eagle3LlamaForCausalLM`` become ``model_patcher.py``'s ``LlamaEagle3ForCausalLM`` (one ``midlayer``, ``fc`` over
3 x target_hidden_size, ``d2t`` / ``t2d`` buffers, its own ``lm_head``) loaded by transformers' ``from_pretrained``;
without ``--trust-remote-code`` the plain ``LlamaForCausalLM`` is built and refuses the draft's shapes. The runtime,
openvino-genai 2026.4.1.0 (C++ in ``src/cpp/src/speculative_decoding/``; the 2026.4.1.0 tag is not in the source
snapshot read, its HEAD of 2026-08-21 and tag 2026.3.0.0 are, and the wheel's messages quote the same file and line),
never reads the draft config's aux ids: ``eagle3_model_transforms.cpp extract_eagle3_info_from_config`` takes
``hidden_layers_list`` from the draft's properties (the draft IR's rt_info, ``apply_eagle3_rt_info``), else
``{2, L/2, L-3}`` of the TARGET's ``num_hidden_layers``, asserting ``L >= 10``; ``transform_hidden_state`` takes the
output of each of those decoder layers (the MLP residual Add in ``layers.N/``). ``share_vocabulary`` replaces the
draft's embedding by the target's; ``move_fc_from_draft_to_main`` runs ``fc`` in the target's graph; d2t is read as
offsets (``sampling/sampler.cpp``: ``m_index + d2t[m_index]``). Confirmed by running both on CPU (tox env
openvino20264, ``tests/test_live_openvino.py``).
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
    LaunchLayers,
    Loading,
    Serving,
    TableRow,
    Tables,
)
from pytest_eagle3.knowledge.engines.shared import CAPTURES, NO, SEPARATE_POOL, FcAuxCount, Transform
from pytest_eagle3.knowledge.evidence import Cite

NAME = "openvino"

#: openvino-genai releases read (with optimum-intel 2.2.0 as the exporter).
RELEASES = ("2026.4.1.0",)

MAIN = "optimum/exporters/openvino/__main__.py"
PATCHER = "optimum/exporters/openvino/model_patcher.py"
EXPORT = f"optimum-intel 2.2.0 {MAIN} main_export (_CUSTOM_DRAFT_MODEL_MAP)"
MODEL = f"optimum-intel 2.2.0 {PATCHER} LlamaEagle3Model"
LAYER = f"optimum-intel 2.2.0 {PATCHER} LlamaEagle3DecoderLayer"
HF_LOAD = "transformers 5.5.4 from_pretrained (optimum-intel's loader): a missing tensor is MISSING and newly initialised"
TRANSFORMS = "openvino.genai src/cpp/src/speculative_decoding/eagle3_model_transforms.cpp"
OUTPUTS = (f"{TRANSFORMS} transform_hidden_state: the residual Add of 'layers.N/' fed by the MLP's down_proj, i.e. the "
           "OUTPUT of decoder layer N = the input of layer N + 1")

_MAP = (Cite(MAIN, "main_export"), Cite(MAIN, "update_config_for_custom_draft_model"))
_MODEL = (Cite(PATCHER, "LlamaEagle3Model.__init__"),)
_FORWARD = (Cite(PATCHER, "LlamaEagle3Model.forward"),)
_LAYER = (Cite(PATCHER, "LlamaEagle3DecoderLayer.forward"),)

#: (behaviour, value, source, cites[, unmodelled]): one row each at 2026.4.1.0 (exported by optimum-intel 2.2.0).
_ROWS: tuple[tuple[Any, ...], ...] = (
    ("arch_rewrite", "none", f"{EXPORT}: architectures[0] picks the class; no rewrite", _MAP),
    ("speculators_format", False,
     (f"{EXPORT}: AutoConfig.from_pretrained of a speculators config: ValueError 'Unrecognized model ... Should have a "
      "`model_type` key in its config.json' (run on CPU)"), _MAP),
    ("speculators_model_types", (), "optimum-intel 2.2.0: no speculators reader", _MAP),
    ("key_prefix", "optional-model",
     f"{MODEL}: the parameters under LlamaEagle3ForCausalLM.model; {HF_LOAD} adds the base prefix 'model.'", _MODEL),
    ("first_layer", "midlayer", f"{MODEL}.__init__: self.midlayer = LlamaEagle3DecoderLayer(config)", _MODEL),
    ("renames", (), f"{MODEL}: no rename (layers.0.* is no parameter: UNEXPECTED, dropped)", _MODEL),
    ("unknown_key", "drop", f"{HF_LOAD}; a tensor no parameter names is UNEXPECTED and ignored (run on CPU)", _MODEL),
    ("multi_layer", "one-layer", f"{MODEL}.__init__: one midlayer whatever num_hidden_layers says", _MODEL),
    ("later_layer_norm", "hidden_norm", f"{MODEL}: no later layers are built", _MODEL),
    ("d2t_present", "offsets",
     (f"{MODEL}.__init__ registers d2t; LlamaEagle3ForCausalLM.forward returns it as an output; openvino.genai "
      "src/cpp/src/sampling/sampler.cpp: m_index + d2t[m_index]"), (Cite(PATCHER, "LlamaEagle3ForCausalLM.forward"),)),
    ("d2t_absent", "zeros", f"{MODEL}.__init__: d2t = torch.zeros(draft_vocab_size) unless the checkpoint fills it", _MODEL),
    ("d2t_full_vocab", "offsets", f"{MODEL}.__init__: d2t buffer of draft_vocab_size whatever its size", _MODEL),
    ("draft_vocab_size_missing", "refused",
     f"{MODEL}.__init__: nn.Linear(hidden_size, config.draft_vocab_size): AttributeError without the field", _MODEL),
    ("draft_vocab_size_null", "refused", f"{MODEL}.__init__: nn.Linear(hidden_size, None): TypeError", _MODEL),
    ("aux_id_fields", (),
     (f"{TRANSFORMS} extract_eagle3_info_from_config: hidden_layers_list from the draft's properties (its IR "
      "rt_info), else a default from the target; the draft config's aux ids are never read"), _MAP),
    ("aux_id_fields_other_mode", None, f"{TRANSFORMS}: one resolver for the stateful and the batching pipeline", _MAP),
    ("aux_transform_llama", Transform.PLUS_1, OUTPUTS, _MAP),
    ("aux_transform_deepseek", Transform.PLUS_1, OUTPUTS, _MAP),
    ("aux_transform_gpt_oss", Transform.PLUS_1, OUTPUTS, _MAP),
    ("capture_range", "outputs", f"{TRANSFORMS} find_decoder_layer_hidden_state_outputs: decoder layers 0..L-1", _MAP),
    ("graph_mode_default_layers", False, "openvino.genai: one hidden_layers_list for every pipeline", _MAP),
    ("fc_applied", "always",
     (f"{MODEL}.forward: fc when the width differs from the embeddings' (traced with 3 x target_hidden_size, so "
      f"always in the IR); {TRANSFORMS} move_fc_from_draft_to_main runs it on the target's concat"), _FORWARD),
    ("fc_aux_count", FcAuxCount.FIXED_3,
     f"{MODEL}.__init__: fc = Linear(target_hidden_size * 3, hidden_size); {TRANSFORMS}: exactly three layers", _MODEL),
    ("fc_bias", "none", f"{MODEL}.__init__: fc bias=False", _MODEL),
    ("use_aux_hidden_state", "ignored", f"{MODEL}: use_aux_hidden_state not read", _MODEL),
    ("norm_before_residual", "not-read", f"{LAYER}.forward: residual = hidden_states before hidden_norm", _LAYER),
    ("norm_before_fc", "not-read", f"{MODEL}: no norm before fc", _MODEL),
    ("fc_norm", "not-read", f"{MODEL}: no fc_norm", _MODEL),
    ("norm_output", "not-read", f"{MODEL}: norm on the output always, no norm_output field", _MODEL),
    ("embed_source", "target-if-same-shape",
     (f"{TRANSFORMS} share_vocabulary: the draft's embedding Gather weight is replaced by a copy of the target's "
      "(found by vocab > 1000 or a name with embed_tokens)"), _MODEL,
     "a draft embedding of another shape than the target's (the graph then fails) is not modelled"),
    ("draft_extend_logits_buffer", "none", "openvino.genai: no CUDA graphs", _MODEL),
    ("draft_extend_graph_width", "target-hidden", "openvino.genai: no CUDA graphs", _MODEL),
    ("embed_width_check", "uninitialised", f"{TRANSFORMS} share_vocabulary: no width check", _MODEL),
    ("lm_head_source", "draft", f"{MODEL}.__init__: own lm_head of draft_vocab_size rows", _MODEL,
     "a draft without lm_head.weight exports with a newly initialised head (not modelled)"),
    ("mtp_model_types", (), "optimum-intel 2.2.0: no MTP rewrite", _MAP),
    ("mla_rope", "as-configured", "optimum-intel 2.2.0: no MLA EAGLE-3 class", _MODEL),
    ("draft_rope", "config", f"{MODEL}.__init__: LlamaRotaryEmbedding(config) (mrope: Qwen3VLTextRotaryEmbedding)", _MODEL),
    ("first_layer_hidden_path", "hidden_norm", f"{LAYER}.forward: hidden_norm(hidden), input_layernorm(embeds)", _LAYER),
    ("mlp_width", "intermediate_size", f"{LAYER}: LlamaMLP(config)", (Cite(PATCHER, "LlamaEagle3DecoderLayer.__init__"),)),
    ("layer_bias", "o_proj+mlp",
     f"{PATCHER} LlamaEagle3Attention: q/k/v bias=False, o_proj attention_bias; LlamaMLP mlp_bias",
     (Cite(PATCHER, "LlamaEagle3Attention.__init__"),)),
    ("unset_bias", "zeros", f"{HF_LOAD} (transformers _init_weights zeroes biases)", _MODEL),
    ("unloaded_parameter", "kept",
     f"{HF_LOAD}: the export goes on (run on CPU: a SpecForge draft's model.embed_tokens.weight MISSING)", _MODEL),
    ("weight_files", "all-safetensors", f"{HF_LOAD}: the index's shards or model.safetensors", _MODEL),
    ("draft_positions", "unbounded", f"{MODEL}: rope computed per position", _MODEL),
    ("target_quantization", "none", "optimum-cli export openvino --weight-format: the exporter's choice, not the target's",
     _MAP),
    ("draft_sliding_window", "none", f"{MODEL}: no sliding window", _MODEL),
    ("draft_dtype", "draft-config", f"{EXPORT}: the draft's dtype unless --weight-format says otherwise", _MAP),
    ("aux_default", "launch-setting",
     (f"{TRANSFORMS} extract_eagle3_info_from_config: hidden_layers_list = {{2, L/2, L-3}} of the target's "
      "num_hidden_layers (text_config.num_hidden_layers), OPENVINO_ASSERT L >= 10 ('num_decoder_layers must be at "
      "least 10 for automatic hidden layer selection'; run on CPU: line 57 of the 2026.4.1.0 build)"), _MAP),
)

SPANS: list[BehaviourSpan] = [BehaviourSpan(name, RELEASES[0], RELEASES[-1], value, source, *more)
                              for name, value, source, *more in _ROWS]

#: Its draft classes (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES: tuple[DraftClass, ...] = (
    DraftClass(NAME, "LlamaEagle3ForCausalLM", LLAMA, (), (),
               f"{MODEL}: midlayer (q/k/v over 2 x hidden, o, gate/up/down, hidden_norm, input_layernorm, "
               "post_attention_layernorm), fc, norm, lm_head, d2t, t2d"),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS: tuple[tuple[str, TableRow], ...] = tuple(
    (arch, TableRow(RELEASES[0], "LlamaEagle3ForCausalLM", f"{EXPORT}: {arch!r} -> LlamaEagle3ForCausalLM",
                    cites=_MAP))
    for arch in ("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM"))
#: Whether it reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ: tuple[TableRow, ...] = (
    TableRow(RELEASES[0], True,
             f"{EXPORT}: only architectures[0] in the map builds the draft class (with --trust-remote-code)",
             cites=_MAP),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS: tuple[TableRow, ...] = (
    TableRow(RELEASES[0], SEPARATE_POOL,
             "openvino.genai src/cpp/src/speculative_decoding/continuous_batching/eagle3_strategy.cpp: the draft "
             "pipeline has its own paged KV cache", cites=_MAP),
)
#: Its hand-read target capture rows (knowledge.capture_engines.ENTRIES).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, RELEASES[0], "llama", CAPTURES,
                 (f"{TRANSFORMS} transform_hidden_state: any IR whose decoder layers are named 'layers.N/' (optimum-intel's "
                  "export of LlamaForCausalLM; run on CPU)"),
                 ("LlamaForCausalLM",), _MAP),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION: tuple[Confirmation, ...] = (
    Confirmation(NAME, "2026.4.1.0", "optimum-intel 2.2.0 (wheel) and openvino.genai's C++ (HEAD 2026-08-21, tag "
                 "2026.3.0.0; the 2026.4.1.0 tag not in the snapshot)",
                 "optimum-cli export openvino on the bundled drafts (CPU): SpecForge format exports, speculators "
                 "format refused",
                 "2026.4.1.0 (CPU, LLMPipeline with draft_model): the demo pair served with hidden_layers_list in "
                 "the draft IR; its reported accepted / draft token counts against the prediction",
                 f"{NO}: run on CPU only",
                 "tox -e openvino20264; tests/test_live_openvino.py"),
)

ENGINE = Engine(
    NAME, "OpenVINO GenAI", RELEASES, lineage=NAME, behaviour_rows=tuple(SPANS), rank=75,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        key_resolver="as-named-or-model-prefixed",
        d2t_is_parameter=False,
        speculators_error="ValueError('Unrecognized model ... Should have a `model_type` key in its config.json')",
        flat_config_for="optimum-intel (SpecForge layout)",
        draft_dtype_source=f"{EXPORT}: the draft's own dtype (--weight-format)",
        load_assert=f"{HF_LOAD}; another shape: RuntimeError 'You set `ignore_mismatched_sizes` to `False`'",
        exact_shapes=True,
    ),
    serving=Serving(
        launch_settings=("hidden_layers_list",),
        launch_layers=LaunchLayers(
            "hidden_layers_list", "hidden_layers_list",
            "the converted draft IR's rt_info 'hidden_layers_list' (openvino.Model.set_rt_info, space-separated ids)",
            "{2, L/2, L - 3} of the target (layer outputs)", 1, 10,
            "RuntimeError 'num_decoder_layers must be at least 10 for automatic hidden layer selection'"),
        converts_checkpoint=True,
    ),
    interpreter=Interpreter(python_option="eagle3_openvino_python"),
)
