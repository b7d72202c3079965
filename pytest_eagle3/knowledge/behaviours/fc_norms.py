"""Behaviour rows: fc and the norm flags.

One ``(since, read_to, value, source)`` span per engine range; each holds until the next starts.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.common import SG_EAGLE3, VL_EAGLE3, Span, spans
from pytest_eagle3.knowledge.behaviours.kinds import FcAuxCount
from pytest_eagle3.knowledge.releases import SGLANG, VLLM

SPANS: list[Span] = []
# ---------------------------------------------------------------- fc_applied
SPANS += spans(SGLANG, "fc_applied",
               ("0.4.4.post2", None, "when-width-differs",
                f"sglang {SG_EAGLE3} LlamaModel.forward: if hidden_states.shape[-1] != embeds.shape[-1]"))
SPANS += spans(VLLM, "fc_applied",
               ("0.8.5", "0.8.5", "when-width-differs",
                f"vllm 0.8.5 {VL_EAGLE3} LlamaModel.forward: if hidden_states.shape[-1] != input_embeds.shape[-1]"),
               ("0.9.0", None, "always", f"vllm 0.9.0 {VL_EAGLE3} combine_hidden_states; forward asserts the width (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"))
# ---------------------------------------------------------------- fc_aux_count
SPANS += spans(SGLANG, "fc_aux_count",
               ("0.4.4.post2", "0.5.11", FcAuxCount.FIXED_3, f"sglang {SG_EAGLE3} LlamaModel.__init__ fc = Linear(target_hidden * 3)"),
               ("0.5.12", None, FcAuxCount.FROM_CONFIG, f"sglang {SG_EAGLE3} LlamaModel.__init__ num_aux_hidden_states (v0.5.12)"))
SPANS += spans(VLLM, "fc_aux_count",
               ("0.8.5", "0.21.0", FcAuxCount.FIXED_3, f"vllm 0.11.0 {VL_EAGLE3} fc = Linear(target_hidden_size * 3) (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
               ("0.22.0", None, FcAuxCount.FROM_CONFIG,
                f"vllm 0.22.0 {VL_EAGLE3} num_aux_hidden_states, else len(eagle_config ids), else 3 (vllm#54598)"))
# ---------------------------------------------------------------- fc_bias
SPANS += spans(SGLANG, "fc_bias",
               ("0.4.4.post2", "0.4.8", "always", f"sglang v0.4.4.post2 {SG_EAGLE3} fc = nn.Linear(...) (bias=True default)"),
               ("0.4.9", None, "config.bias", f"sglang v0.4.9 {SG_EAGLE3} fc bias=getattr(config, 'bias', False)"))
SPANS += spans(VLLM, "fc_bias",
               ("0.8.5", None, "none", f"vllm 0.8.5 {VL_EAGLE3} fc = nn.Linear(..., bias=False); ReplicatedLinear later"))
# ---------------------------------------------------------------- use_aux_hidden_state
SPANS += spans(SGLANG, "use_aux_hidden_state",
               ("0.4.4.post2", "0.5.7", "ignored", "sglang: eagle_config.use_aux_hidden_state read from v0.5.8"),
               ("0.5.8", None, "honoured",
                "sglang 0.5.8 model_executor/model_runner.py eagle_use_aux_hidden_state (3dfff6ae3c)"))
SPANS += spans(VLLM, "use_aux_hidden_state",
               ("0.8.5", "0.11.2", "ignored", "vllm < 0.12: use_aux_hidden_state not read"),
               ("0.12.0", None, "honoured",
                f"vllm 0.12.0 {VL_EAGLE3}: fc dropped at load, combine_hidden_states returns its input (CPU run 0.32.0)"))
# ---------------------------------------------------------------- norm_before_residual
SPANS += spans(SGLANG, "norm_before_residual",
               ("0.4.4.post2", None, "not-read", f"sglang {SG_EAGLE3} LlamaDecoderLayer.forward: residual = hidden_states"))
SPANS += spans(VLLM, "norm_before_residual",
               ("0.8.5", "0.10.0", "not-read", f"vllm 0.8.5 {VL_EAGLE3} LlamaDecoderLayer.forward: residual = hidden_states (0.9.0.1, 0.9.1, 0.9.2, 0.10.0 read)"),
               ("0.10.1", None, "read", f"vllm 0.10.1 {VL_EAGLE3} getattr(config, 'norm_before_residual', False)"))
# ---------------------------------------------------------------- norm_before_fc
SPANS += spans(SGLANG, "norm_before_fc",
               ("0.4.4.post2", "0.5.16", "not-read", f"sglang {SG_EAGLE3}: no input_norm before v0.5.17"),
               ("0.5.17", None, "read", f"sglang {SG_EAGLE3} LlamaModel.__init__ input_norm (v0.5.17)"))
SPANS += spans(VLLM, "norm_before_fc",
               ("0.8.5", "0.17.0", "not-read", "vllm < 0.18: no input_norm (vllm#38111)"),
               ("0.18.0", "0.18.0", "eagle-format-only",
                f"vllm 0.18.0 {VL_EAGLE3} input_norm (top-level norm_before_fc); speculators/algos.py drops it"),
               ("0.19.0", "0.21.0", "top-level", "vllm 0.19.0 speculators/algos.py update_eagle3 copies norm_before_fc"),
               ("0.22.0", None, "read", f"vllm 0.22.0 {VL_EAGLE3} also reads eagle_config.norm_before_fc"))
# ---------------------------------------------------------------- fc_norm
SPANS += spans(SGLANG, "fc_norm",
               ("0.4.4.post2", "0.5.11", "not-read", f"sglang {SG_EAGLE3}: no fc_norm before v0.5.12"),
               ("0.5.12", None, "read", f"sglang {SG_EAGLE3} LlamaModel.__init__ fc_norm / use_aux_norm (v0.5.12)"))
SPANS += spans(VLLM, "fc_norm",
               ("0.8.5", "0.21.0", "not-read", "vllm < 0.22: no fc_norm"),
               ("0.22.0", "0.24.0", "eagle-format-only", f"vllm 0.22.0 {VL_EAGLE3} fc_norm; speculators/algos.py drops it"),
               ("0.25.0", None, "read", "vllm 0.25.0 speculators/algos.py update_eagle3 propagates fc_norm"))
# ---------------------------------------------------------------- norm_output
SPANS += spans(SGLANG, "norm_output",
               ("0.4.4.post2", "0.5.11", "not-read", f"sglang {SG_EAGLE3}: pre-norm state fed back before v0.5.12"),
               ("0.5.12", None, "read", f"sglang {SG_EAGLE3} LlamaModel.forward norm_output (v0.5.12)"))
SPANS += spans(VLLM, "norm_output",
               ("0.8.5", "0.21.0", "not-read", "vllm < 0.22: pre-norm state fed back"),
               ("0.22.0", "0.24.0", "eagle-format-only", f"vllm 0.22.0 {VL_EAGLE3} norm_output; speculators/algos.py drops it"),
               ("0.25.0", None, "read", "vllm 0.25.0 speculators/algos.py update_eagle3 propagates norm_output"))
