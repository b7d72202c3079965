"""vLLM on TPU (``tpu-inference``, a vLLM platform plugin): the engine object, and its behaviour rows, every behaviour
from its first release on. Judged statically: it needs TPUs to run.

Read in the wheels of every final release on the index, 0.11.1-0.32.0 (all have the JAX EAGLE-3 path:
``models/jax/llama_eagle3.py`` EagleLlama3ForCausalLM, ``spec_decode/jax/eagle3.py`` Eagle3Proposer, and the aux
capture of ``models/jax/llama3.py``). ``vllm-tpu`` V pins ``tpu-inference==V`` (0.22.0 pins 0.22.1), so each release
runs with vLLM of its own number. The rows describe the JAX path (tpu-inference's own code): the draft class, its
loader's name map, the capture in the target, the proposer's embedding sharing. Where tpu-inference hands the
draft's config to vLLM (the speculative config, the architecture rewrite, the speculators reader, the context check)
the row is vLLM's rule at the release it pins, carried over (``origin="vllm"``, ``pinned`` that release): the code
that runs there is vLLM's at that release, so the row is evidence (``knowledge.table.Row.pinned``).

Not modelled: a draft architecture outside the JAX registry (SGLang's ``LlamaForCausalLMEagle3``) and targets run with
``MODEL_IMPL_TYPE=vllm`` (GptOss, Qwen3-MoE by default) fall back to vLLM's torch classes through torchax
(``models/common/model_loader.py get_model``), whose rules are vLLM's.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.draft_class import LLAMA, DraftClass
from pytest_eagle3.knowledge.engine import (
    BehaviourSpan,
    CaptureEntry,
    Confirmation,
    Engine,
    Loading,
    Serving,
    TableRow,
    Tables,
    spans,
)
from pytest_eagle3.knowledge.engines import vllm
from pytest_eagle3.knowledge.engines.shared import CAPTURES, NO, REFUSED, SEPARATE_POOL, FcAuxCount, Transform
from pytest_eagle3.knowledge.evidence import Cite

NAME = "tpu-inference"

#: Every final release on the index (0.11.1 is the first, and already has the JAX EAGLE-3 path), each wheel read.
RELEASES = ("0.11.1", "0.12.0", "0.13.2", "0.13.3", "0.18.0", "0.19.0", "0.20.0", "0.21.0", "0.22.1", "0.23.0",
            "0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")
FIRST, NEWEST = RELEASES[0], RELEASES[-1]

#: The vLLM release each one runs with: vllm-tpu V requires tpu-inference==V (requirements/tpu.txt); vllm-tpu 0.22.0
#: requires 0.22.1, and the 0.13 line is read as vLLM 0.13.0 (the only 0.13 release of vLLM read).
VLLM_PIN = {**{release: release for release in RELEASES}, "0.13.2": "0.13.0", "0.13.3": "0.13.0", "0.22.1": "0.22.0"}

EAGLE3 = "tpu_inference/models/jax/llama_eagle3.py"
LOADER = "tpu_inference/models/jax/utils/weight_utils.py"
TARGET = "tpu_inference/models/jax/llama3.py"
PROPOSER = "tpu_inference/spec_decode/jax/eagle3.py"
MODELS = "tpu_inference/models/common/model_loader.py"
TI = "tpu_inference models/jax/llama_eagle3.py"
MAP = f"{TI} EagleLlama3ForCausalLM.load_weights mappings"
CAPTURE = ("tpu_inference models/jax/llama3.py LlamaModel.get_eagle3_aux_hidden_state_layers: (2, L // 2, L - 3) of "
           "the target, whatever the draft's config; LlamaModel.__call__ appends x before layer i runs")
READ = f"{FIRST}-{NEWEST} read"

#: (behaviour, value, source, cites[, unmodelled]): tpu-inference's own rules, one row each from 0.11.1.
_ROWS: tuple[tuple[Any, ...], ...] = (
    ("key_prefix", "add-model-except-lm_head",
     (f"{MAP}: fc -> model.fc, norm -> model.norm, midlayer.* -> model.layers.0.*, lm_head -> lm_head, d2t -> "
      "draft_id_to_target_id (the names the loader knows)"),
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.load_weights"),)),
    ("first_layer", "midlayer", f"{MAP}: only 'midlayer.*' names map to the draft's one decoder layer",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.load_weights"),)),
    ("renames", (), f"{MAP}: no rename of layers.0.* (it is looked up as is, and no parameter has that path)",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.load_weights"),)),
    ("unknown_key", "raise-param-path",
     ("tpu_inference models/jax/utils/weight_utils.py get_param_and_sharding: ValueError('... is not a valid param "
      "path') for a name the map does not know (t2d and an unmapped lm_head are skipped)"),
     (Cite(LOADER, "get_param_and_sharding"),)),
    ("multi_layer", "refused",
     (f"{TI} Eagle3LlamaModel.__init__ builds one decoder layer whatever num_hidden_layers says; a checkpoint's "
      "layers.1.* has no param path (ValueError at load)"),
     (Cite(EAGLE3, "Eagle3LlamaModel.__init__"), Cite(LOADER, "get_param_and_sharding"))),
    ("later_layer_norm", "hidden_norm", f"{TI}: one layer only (no later layers)", (Cite(EAGLE3),)),
    ("d2t_present", "offsets", f"{TI} EagleLlama3ForCausalLM.compute_logits: targets = arange + draft_id_to_target_id",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.compute_logits"),)),
    ("d2t_absent", "crash",
     (f"{TI} EagleLlama3ForCausalLM.__init__: draft_id_to_target_id is a parameter of the abstract model "
      "(nnx.eval_shape) that only d2t fills; compute_logits reads it whatever the vocab sizes"),
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.__init__"), Cite(EAGLE3, "EagleLlama3ForCausalLM.compute_logits")),
     "whether check_all_loaded raises at load or the first step fails on the unfilled parameter"),
    ("d2t_full_vocab", "offsets", f"{TI} compute_logits: the map is applied whatever the vocab sizes",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.compute_logits"),)),
    ("draft_vocab_size_missing", "refused",
     f"{TI} EagleLlama3ForCausalLM.__init__: hf_config.draft_vocab_size (AttributeError on a config without it)",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.__init__"),)),
    ("draft_vocab_size_null", "refused", f"{TI} EagleLlama3ForCausalLM.__init__: nnx.Linear(hidden, None) fails",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.__init__"),)),
    ("aux_id_fields", (), f"{CAPTURE}: no draft field is read (hard-coded)",
     (Cite(TARGET, "LlamaModel.get_eagle3_aux_hidden_state_layers"),)),
    ("aux_id_fields_other_mode", None, "tpu-inference: one capture set (set once in LlamaModel.__init__)",
     (Cite(TARGET, "LlamaModel.__init__"),)),
    ("aux_transform_llama", Transform.AS_IS, CAPTURE, (Cite(TARGET, "LlamaModel.__call__"),)),
    ("aux_transform_deepseek", Transform.AS_IS,
     "tpu_inference models/jax/deepseek_v3.py: no EAGLE-3 capture (the proposer asserts aux hidden states)",
     (Cite("tpu_inference/models/jax/deepseek_v3.py"),),
     "no DeepSeek target captures on the JAX path: the value is never applied"),
    ("aux_transform_gpt_oss", Transform.AS_IS,
     f"tpu_inference {MODELS.removeprefix('tpu_inference/')}: GptOssForCausalLM runs vLLM's class (vllm impl preferred)",
     (Cite(MODELS),), "GptOss targets capture through vLLM's set_eagle3_aux_hidden_state_layers (vLLM's rule)"),
    ("capture_range", "inner",
     "tpu_inference models/jax/llama3.py LlamaModel.__call__: inputs of layers 0..L-1 (id 0: the embeddings); none after",
     (Cite(TARGET, "LlamaModel.__call__"),)),
    ("graph_mode_default_layers", False, "tpu-inference: the ids are set once, for every mode",
     (Cite(TARGET, "LlamaModel.get_eagle3_aux_hidden_state_layers"),)),
    ("fc_applied", "always",
     ("tpu_inference spec_decode/jax/eagle3.py Eagle3Proposer: the aux states are concatenated and run through "
      f"combine_hidden_states (fc) every step; {TI} Eagle3LlamaModel.__call__ asserts the width"),
     (Cite(PROPOSER), Cite(EAGLE3, "Eagle3LlamaModel.__call__"))),
    ("fc_aux_count", FcAuxCount.FIXED_3,
     f"{TI} Eagle3LlamaModel.__init__: fc in = target_hidden_size * 3 if the config has it, else hidden_size * 3",
     (Cite(EAGLE3, "Eagle3LlamaModel.__init__"),)),
    ("fc_bias", "none", f"{TI} Eagle3LlamaModel.__init__: nnx.Linear(use_bias=False)",
     (Cite(EAGLE3, "Eagle3LlamaModel.__init__"),)),
    ("use_aux_hidden_state", "ignored", f"{TI}: use_aux_hidden_state not read (grep)", (Cite(EAGLE3),)),
    ("norm_before_residual", "read",
     f"{TI} Eagle3LlamaDecoderLayer.__call__: getattr(self.config, 'norm_before_residual', False)",
     (Cite(EAGLE3, "Eagle3LlamaDecoderLayer.__call__"),)),
    ("norm_before_fc", "not-read", f"{TI}: no input_norm (grep)", (Cite(EAGLE3),)),
    ("fc_norm", "not-read", f"{TI}: no fc_norm (grep)", (Cite(EAGLE3),)),
    ("norm_output", "not-read", f"{TI}: no norm_output (grep)", (Cite(EAGLE3),)),
    ("draft_extend_logits_buffer", "none", "tpu-inference: no draft-extend logits buffer", (Cite(PROPOSER),)),
    ("draft_extend_graph_width", "target-hidden",
     "tpu_inference spec_decode/jax/eagle3.py: fc (combine_hidden_states) runs on the concatenated target states",
     (Cite(PROPOSER),)),
    ("embed_width_check", "target-width",
     "tpu_inference spec_decode/jax/eagle3.py Eagle3Proposer.load_model: the target's embedding replaces the draft's "
     "whatever its width", (Cite(PROPOSER, "Eagle3Proposer.load_model"),)),
    ("lm_head_source", "draft",
     f"{TI} EagleLlama3ForCausalLM.__init__: own lm_head (hidden, draft_vocab_size); nothing fills a missing one",
     (Cite(EAGLE3, "EagleLlama3ForCausalLM.__init__"),)),
    ("mla_rope", "as-configured", "tpu-inference: no MLA EAGLE-3 draft class (models/common/model_loader.py registry)",
     (Cite(MODELS),)),
    ("draft_rope", "config", f"{TI} Eagle3LlamaDecoderLayer(LlamaDecoderLayer): the draft config's rope (models/jax/llama3.py)",
     (Cite(EAGLE3, "Eagle3LlamaDecoderLayer"),)),
    ("first_layer_hidden_path", "hidden_norm",
     f"{TI} Eagle3LlamaDecoderLayer.__call__: input_layernorm on the embeddings, hidden_norm on the hidden states",
     (Cite(EAGLE3, "Eagle3LlamaDecoderLayer.__call__"),)),
    ("mlp_width", "intermediate_size", "tpu_inference models/jax/llama3.py LlamaDecoderLayer: config.intermediate_size",
     (Cite(TARGET, "LlamaDecoderLayer"),)),
    ("layer_bias", "none",
     f"tpu_inference models/jax/llama3.py LlamaAttention: q/k/v/o einsums without bias; {TI} rebuilds q/k/v without",
     (Cite(TARGET, "LlamaAttention"), Cite(EAGLE3, "Eagle3LlamaDecoderLayer.__init__"))),
    ("unset_bias", "empty", "tpu-inference: no bias parameter is built (layer_bias none)", (Cite(EAGLE3),)),
    ("unloaded_parameter", "refused",
     ("tpu_inference models/jax/utils/weight_utils.py load_hf_weights: the draft is an abstract model (nnx.eval_shape), "
      "only the checkpoint fills it; check_all_loaded, and the embedding alone is given zeros to be shared"),
     (Cite(LOADER, "load_hf_weights"), Cite(LOADER, "check_all_loaded"), Cite(EAGLE3)),
     "whether check_all_loaded raises at load or the first step fails on the unfilled parameter"),
    ("weight_files", "all-safetensors", "tpu_inference models/jax/utils/weight_utils.py get_model_weights_files: *.safetensors",
     (Cite(LOADER, "get_model_weights_files"),)),
    ("target_quantization", "none", f"{TI}: the draft class reads no quantization config", (Cite(EAGLE3),)),
    ("draft_sliding_window", "none", f"{TI}: no sliding_window read", (Cite(EAGLE3),)),
    ("draft_dtype", "target",
     (f"tpu_inference models/jax/utils/weight_utils.py load_hf_weights: every draft tensor but d2t is cast to "
      f"vllm_config.model_config.dtype (the target's); {TI} builds its parameters in bfloat16"),
     (Cite(LOADER, "load_hf_weights"), Cite(EAGLE3, "Eagle3LlamaModel.__init__")),
     "q/k/v and the norms compute in bfloat16 (dtype=jnp.bfloat16) whatever the target's dtype"),
    ("aux_default", "target-layers", CAPTURE, (Cite(TARGET, "LlamaModel.get_eagle3_aux_hidden_state_layers"),)),
)

SPANS: list[BehaviourSpan] = [BehaviourSpan(name, FIRST, NEWEST, value, f"{source} ({READ})", *more)
                              for name, value, source, *more in _ROWS]

# ---------------------------------------------------------------- embed_source: 0.12.0 maps embed_tokens
SPANS += spans("embed_source",
               ("0.11.1", "0.11.1", "target-always-key-raises",
                ("tpu_inference 0.11.1 spec_decode/jax/eagle3.py Eagle3Proposer.load_model: the draft's embed_tokens is "
                 "always replaced by the target's; models/jax/llama_eagle3.py maps no embed_tokens (a shipped one has "
                 "no param path: ValueError at load)"),
                (Cite(PROPOSER, "Eagle3Proposer.load_model"), Cite(EAGLE3, "EagleLlama3ForCausalLM.load_weights"))),
               ("0.12.0", NEWEST, "target-if-absent-or-equal",
                ("tpu_inference 0.12.0 models/jax/llama_eagle3.py maps embed_tokens ('Some checkpoints need this'); "
                 "spec_decode/jax/eagle3.py Eagle3Proposer.load_model: the target's when the draft's is all zeros (not "
                 "shipped) or equal, else the draft's own (0.12.0-0.32.0 read)"),
                (Cite(PROPOSER, "Eagle3Proposer.load_model"), Cite(EAGLE3, "EagleLlama3ForCausalLM.load_weights"))))

# ---------------------------------------------------------------- rules tpu-inference leaves to the vLLM it pins
#: Where tpu-inference hands the draft's config to vLLM: the place it reads vLLM's result (each carried row cites it).
_HANDOFF = {
    "arch_rewrite": ((Cite(MODELS, "_get_model_architecture"),),
                     "tpu-inference looks the architecture vLLM's EAGLEConfig wrote up in its registry"),
    "speculators_format": ((Cite(EAGLE3, "Eagle3LlamaModel.__init__"),),
                           "tpu-inference reads the hf_config vLLM's speculators reader built"),
    "speculators_model_types": ((Cite(EAGLE3, "Eagle3LlamaModel.__init__"),),
                                "tpu-inference reads the hf_config vLLM's speculators reader built"),
    "mtp_model_types": ((Cite(PROPOSER, "Eagle3Proposer.__init__"),),
                        "the speculative config (its method) is vLLM's"),
    "draft_positions": ((Cite(PROPOSER, "Eagle3Proposer.__init__"),),
                        "the draft's max_model_len is settled in vLLM's SpeculativeConfig"),
}


def _carried(behaviour: str) -> list[BehaviourSpan]:
    """``behaviour``'s vLLM rows at the vLLM release each tpu-inference release pins, carried over (``origin``
    vLLM, ``pinned`` the releases): consecutive releases with one vLLM row make one span."""
    rows = sorted((row for row in vllm.ENGINE.behaviour_rows if row.behaviour == behaviour),
                  key=lambda row: Version(row.since))
    cites, why = _HANDOFF[behaviour]
    runs: list[tuple[list[str], BehaviourSpan]] = []  # (tpu-inference releases, the vLLM row at their pins)
    for release in RELEASES:
        pin = Version(VLLM_PIN[release])
        row = next(row for row in reversed(rows) if Version(row.since) <= pin)
        if runs and runs[-1][1] is row:
            runs[-1][0].append(release)
        else:
            runs.append(([release], row))
    out = []
    for releases, row in runs:
        pins = sorted({VLLM_PIN[r] for r in releases}, key=Version)
        read = pins[0] if len(pins) == 1 else f"{pins[0]} up to {pins[-1]}"
        source = f"vLLM's rule at the release it pins ({read}; {why}): {row.source}"
        out.append(BehaviourSpan(behaviour, releases[0], releases[-1], row.value, source, cites, row.unmodelled,
                                 origin=vllm.NAME, pinned=read))
    return out


for _behaviour in _HANDOFF:
    SPANS += _carried(_behaviour)

# ---------------------------------------------------------------- its rows in the cross-engine tables
#: Its draft class (knowledge.draft_classes.CLASSES).
DRAFT_CLASSES = (
    DraftClass(NAME, "EagleLlama3ForCausalLM", LLAMA, (), (),
               (f"{TI} EagleLlama3ForCausalLM: one Eagle3LlamaDecoderLayer (q/k/v over 2 x hidden, gate/up/down, "
                "input_layernorm / hidden_norm / post_attention_layernorm), fc 3 x target_hidden_size, lm_head "
                f"draft_vocab_size ({READ})"), max_layers=1),
    DraftClass(NAME, "Eagle3LlamaForCausalLM", LLAMA, (), ("eagle_aux_hidden_state_layer_ids",),
               ("tpu_inference models/common/model_loader.py get_model: an architecture the JAX registry lacks "
                "(UnsupportedArchitectureError) falls back to vLLM's torch class through torchax "
                "(models/vllm/vllm_model_wrapper.py); vllm model_executor/models/llama_eagle3.py Eagle3LlamaForCausalLM "
                "(model. prefix, midlayer. -> layers.0.): vLLM's class, its rules read in vLLM"),
               renames=(("midlayer.", "layers.0."),), first_layer="layers"),
)
#: Which class each draft architecture builds (knowledge.draft_classes.REGISTRY).
REGISTRY_ROWS = (
    ("Eagle3LlamaForCausalLM", TableRow(FIRST, "EagleLlama3ForCausalLM",
                                        f"tpu_inference models/common/model_loader.py _MODEL_REGISTRY ({READ})",
                                        cites=(Cite(MODELS, "_get_model_architecture"),))),
    ("LlamaForCausalLMEagle3", TableRow("0.22.1", "Eagle3LlamaForCausalLM",
                                        ("tpu_inference models/common/model_loader.py get_model: not in _MODEL_REGISTRY, "
                                         "falls back to vLLM's class through torchax; spec_decode/jax/eagle3.py "
                                         "Eagle3Proposer.load_model looks the embeddings up by path, tolerating its "
                                         "state (0.22.1-0.32.0 read)"),
                                        cites=(Cite(MODELS, "get_model"), Cite(PROPOSER, "Eagle3Proposer.load_model")),
                                        unmodelled=("the proposer finds no embedding to share in a vLLM-built draft "
                                                    "beside a JAX target (its paths are the JAX state's): a draft "
                                                    "without embed_tokens may keep an unloaded one"))),
)
#: It reads architectures (knowledge.draft_classes.ARCHITECTURE_READ).
ARCHITECTURE_READ = (
    TableRow(FIRST, True, "tpu_inference models/common/model_loader.py _get_model_architecture: architectures select the class",
             cites=(Cite(MODELS, "_get_model_architecture"),)),
)
#: Its KV-cache grouping (knowledge.runtime.KV_TABLE).
KV_ROWS = (
    TableRow(FIRST, SEPARATE_POOL,
             (f"{TI} Eagle3LlamaModel.__call__: the draft writes kv_caches[-1], a cache of its own after the target's "
              f"({READ})"),
             cites=(Cite(EAGLE3, "Eagle3LlamaModel.__call__"),)),
)
#: How its facts are known (knowledge.confirmation).
CONFIRMATION = (
    Confirmation(NAME, f"{FIRST}-{NEWEST}", "every final release's wheel (tpu_inference)",
                 f"{NO}: JAX on TPU", f"{NO}: TPU only", f"{NO}: TPU only", "docs/engines.md (vLLM on TPU)"),
)
_NO_CAPTURE = ("tpu_inference models/jax/{}: no EAGLE-3 aux capture; spec_decode/jax/eagle3.py Eagle3Proposer asserts "
               f"'aux_hidden_states is not None and len(aux_hidden_states) > 0' at the first step ({READ})")
#: Its hand-read target capture rows (knowledge.capture_engines).
CAPTURE_ROWS: tuple[CaptureEntry, ...] = (
    CaptureEntry(NAME, FIRST, "llama", CAPTURES, f"{CAPTURE} ({READ})", ("LlamaForCausalLM",),
                 (Cite(TARGET, "LlamaModel.get_eagle3_aux_hidden_state_layers"), Cite(TARGET, "LlamaModel.__call__"))),
    CaptureEntry(NAME, FIRST, "llama", REFUSED, _NO_CAPTURE.format("qwen2.py / qwen3.py"),
                 ("Qwen2ForCausalLM", "Qwen3ForCausalLM"),
                 (Cite("tpu_inference/models/jax/qwen2.py"), Cite("tpu_inference/models/jax/qwen3.py"), Cite(PROPOSER))),
    CaptureEntry(NAME, FIRST, "deepseek", REFUSED, _NO_CAPTURE.format("deepseek_v3.py"), ("DeepseekV3ForCausalLM",),
                 (Cite("tpu_inference/models/jax/deepseek_v3.py"), Cite(PROPOSER))),
)

ENGINE = Engine(
    NAME, "tpu-inference", RELEASES, lineage="vllm", behaviour_rows=tuple(SPANS), rank=24,
    tables=Tables(
        draft_classes=DRAFT_CLASSES,
        registry_rows=REGISTRY_ROWS,
        architecture_read=ARCHITECTURE_READ,
        kv_rows=KV_ROWS,
        confirmation=CONFIRMATION,
        capture_rows=CAPTURE_ROWS,
    ),
    loading=Loading(
        draft_dtype_source=("tpu_inference models/jax/utils/weight_utils.py load_hf_weights: every draft tensor but d2t "
                            "is cast to the target's model_config.dtype"),
        dtype_when_absent="bfloat16",
        key_fix_renames_first_layer=True,
        missing_d2t_error="startup fails (draft_id_to_target_id is never filled)",
        flat_config_for="vLLM",
        one_layer_error="ValueError('layers.1... is not a valid param path')",
        load_assert=("tpu_inference models/jax/utils/weight_utils.py _load_and_shard_weight: assert the parameter's "
                     "shape equals the tensor's"),
        exact_shapes=True,
    ),
    serving=Serving(
        alternative="vllm",
    ),
)
