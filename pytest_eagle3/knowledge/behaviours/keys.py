"""Behaviour rows: architecture names, speculators configs, key names, unknown keys, layer count.

One ``(since, read_to, value, source)`` span per engine range; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.common import (
    MIDLAYER_RENAMES,
    SG_EAGLE3,
    SGLANG_LEGACY_RENAMES,
    VL_EAGLE3,
    Span,
    spans,
)
from pytest_eagle3.knowledge.releases import SGLANG, VLLM

SPANS: list[Span] = []
# ---------------------------------------------------------------- arch_rewrite
SPANS += spans(SGLANG, "arch_rewrite",
               ("0.4.4.post2", None, "none", "sglang configs/model_config.py rewrites only MTP/NextN architectures"))
SPANS += spans(VLLM, "arch_rewrite",
               ("0.8.5", "0.8.5", "none", "vllm 0.8.5: the architecture field is not read for eagle3"),
               ("0.9.0", "0.10.0", "prefix-unless-starts",
                "vllm 0.9.0 transformers_utils/configs/eagle.py: names not starting with Eagle3 become Eagle3X (0.9.0, 0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
               ("0.10.1", None, "prefix-unless-starts-or-ends",
                "vllm 0.10.1 transformers_utils/configs/eagle.py: keeps names starting or ending with Eagle3"))
# ---------------------------------------------------------------- speculators_format
SPANS += spans(SGLANG, "speculators_format",
               ("0.4.4.post2", None, False,
                ("sglang: no speculators_model_type handling in any release; config loading raises "
                 "'Unrecognized model' (CPU run 0.5.11, 0.5.23)")))
SPANS += spans(VLLM, "speculators_format",
               ("0.8.5", "0.10.0", False, "vllm 0.10.0: no transformers_utils/configs/speculators"),
               ("0.10.1", None, True, "vllm 0.10.1 transformers_utils/configs/speculators/algos.py update_eagle3"))
# ---------------------------------------------------------------- speculators_model_types
SPANS += spans(SGLANG, "speculators_model_types", ("0.4.4.post2", None, (), "sglang: speculators format unsupported"))
SPANS += spans(VLLM, "speculators_model_types",
               ("0.8.5", "0.10.0", (), "vllm 0.10.0: speculators format unsupported"),
               ("0.10.1", "0.23.0", ("*",), "vllm 0.10.1 speculators/algos.py: always Eagle3LlamaForCausalLM"),
               ("0.24.0", None, ("llama", "qwen3"), "vllm 0.24.0 speculators/algos.py update_eagle3: else ValueError"))
# ---------------------------------------------------------------- key_prefix
SPANS += spans(SGLANG, "key_prefix",
               ("0.4.4.post2", "0.4.8", "add-model",
                "sglang v0.4.5 llama_eagle3.py load_weights prefixes model. and delegates to LlamaForCausalLM"),
               ("0.4.9", None, "optional-model",
                f"sglang {SG_EAGLE3} load_weights: name as-is if a parameter, else model.+name (v0.4.9 886d344964)"))
SPANS += spans(VLLM, "key_prefix",
               ("0.8.5", None, "add-model-except-lm_head",
                f"vllm {VL_EAGLE3} Eagle3LlamaForCausalLM.load_weights: 'model.' + name unless 'lm_head' in name"))
# ---------------------------------------------------------------- first_layer
SPANS += spans(SGLANG, "first_layer",
               ("0.4.4.post2", "0.5.11", "midlayer", f"sglang {SG_EAGLE3} module attribute self.midlayer"),
               ("0.5.12", None, "layers", f"sglang {SG_EAGLE3} self.layers ModuleList (v0.5.12 a75b79e03b)"))
SPANS += spans(VLLM, "first_layer", ("0.8.5", None, "layers", f"vllm {VL_EAGLE3} LlamaModel.layers ModuleList"))
# ---------------------------------------------------------------- renames
SPANS += spans(SGLANG, "renames",
               ("0.4.4.post2", "0.5.11", (), f"sglang {SG_EAGLE3} load_weights: no rename before v0.5.12"),
               ("0.5.12", None, SGLANG_LEGACY_RENAMES,
                f"sglang {SG_EAGLE3} load_weights legacy_name_map (str.replace anywhere in the name)"))
SPANS += spans(VLLM, "renames",
               ("0.8.5", None, MIDLAYER_RENAMES, f"vllm {VL_EAGLE3} LlamaModel.load_weights: 'midlayer.' -> 'layers.0.'"))
# ---------------------------------------------------------------- unknown_key
SPANS += spans(SGLANG, "unknown_key",
               ("0.4.4.post2", "0.4.8", "warn-or-raise-stacked",
                "sglang v0.4.5 models/llama.py load_weights: warning for unknown names, KeyError for stacked ones"),
               ("0.4.9", None, "drop",
                f"sglang {SG_EAGLE3} load_weights: a name not in params_dict is skipped, no log (L352-367)"))
SPANS += spans(VLLM, "unknown_key",
               ("0.8.5", "0.24.0", "raise", f"vllm {VL_EAGLE3} LlamaModel.load_weights params_dict[name]: KeyError"),
               ("0.25.0", None, "raise-except-bias",
                "vllm 0.25.0 model_executor/models/utils.py AutoWeightsLoader: ValueError; *.bias ignored"))
# ---------------------------------------------------------------- multi_layer
SPANS += spans(SGLANG, "multi_layer",
               ("0.4.4.post2", "0.5.11", "refused",
                f"sglang {SG_EAGLE3} __init__: ValueError('EAGLE3 currently only supports 1 layer') (CPU run 0.5.11)"),
               ("0.5.12", None, "supported", f"sglang {SG_EAGLE3} num_hidden_layers layers (v0.5.12 a75b79e03b)"))
SPANS += spans(VLLM, "multi_layer",
               ("0.8.5", "0.11.0", "one-layer",
                f"vllm 0.11.0 {VL_EAGLE3}: one layer built; layers.1.* raises KeyError (CPU run 0.11.0; 0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
               ("0.11.1", None, "supported",
                f"vllm 0.11.1 {VL_EAGLE3} LlamaModel.__init__: range(config.num_hidden_layers) layers (CPU run 0.11.1)"))
# ---------------------------------------------------------------- later_layer_norm
SPANS += spans(SGLANG, "later_layer_norm",
               ("0.4.4.post2", None, "hidden_norm",
                f"sglang {SG_EAGLE3} LlamaDecoderLayer: layers >= 1 use hidden_norm (CPU run 0.5.23)"))
SPANS += spans(VLLM, "later_layer_norm",
               ("0.8.5", None, "input_layernorm", f"vllm {VL_EAGLE3}: layers >= 1 are standard decoder layers"))
