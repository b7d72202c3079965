"""Run a target class's own forward with EAGLE-3 capture on, in mlx-vlm, on CPU, and write which states reach the draft.

    python mlx_forward.py --jobs JOBS.json

Run it with mlx-vlm's interpreter; it is never imported into the plugin's process. A job is ``{"architecture",
"draft", "layers", "out"}``. For each:

1. A tiny target of the architecture: transformers' config class for its model type, defaults shrunk to ``layers``
   decoder layers, hidden 64 and a tiny vocabulary (``vllm_forward.SIZES``, the same sizes as the vLLM probe), built
   by load_model's own lines (utils.py: get_model_and_args, ModelConfig.from_dict, update_module_configs,
   apply_generation_config_defaults, ``Model(config)``) with mlx's random initial weights.
2. The tiny EAGLE-3 draft is loaded by ``mlx_vlm.utils.load_model`` and checked against the target by
   ``speculative.drafters.validate_drafter_compatibility`` (as generate/ar.py does).
3. The language model the loop calls (``model.language_model``, else the model: speculative/eagle3.py
   _eagle3_rounds) runs on 8 tokens with a fresh prompt cache (models/cache.py make_prompt_cache): ``off`` without
   capture (a failure there has nothing to do with capture: "not run on CPU"); once per layer input k = 1..L
   requested alone (``capture_layer_ids=[k - 1]``, the output of layer k - 1: the layer input its state equals,
   matched bit for bit with the outputs each decoder layer returned, ``silent``, or the words it raises; index 0 is
   no capture id: config.py maps aux id 0 to capture id 0, layer input 1); ``draft`` with the draft's own
   capture ids as generate/ar.py's prefill step passes them, ``speculative_hidden_state`` (the concatenation) and the
   drafter's ``_prepare_target_hidden`` (its fc); then one round of the loop itself (``_eagle3_rounds``: draft block,
   the target's verify forward with capture, commit).

The result has the fields of ``vllm_forward.py``'s (outcome ``delivered``, ``under-delivered``, ``raised``, ``not run
on CPU``; ``error``, ``stage``, ``requested``, ``delivered``, ``shapes``, ``per_id``, ``fired``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes import harness as common
    from pytest_eagle3.probes.vllm_forward import LAYER_FIELDS, SIZES, TOKEN_FIELDS
else:  # run by path in mlx-vlm's interpreter: the files next to this one
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness as common  # type: ignore[import-not-found,no-redef]
    from vllm_forward import LAYER_FIELDS, SIZES, TOKEN_FIELDS  # type: ignore[import-not-found,no-redef]

SCHEMA = "pytest-eagle3/forward/1"
ENGINE = "mlx-vlm"
TOKENS = 8
#: Fields a null leaves alone (a null there means "off"), as in the vLLM probe.
NULL_MEANS_OFF = ("q_lora_rank", "sliding_window", "partial_rotary_factor")
_MROPE = {"type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0, "mrope_section": [3, 3, 2],
          "mrope_interleaved": True}
_LFM2 = {"block_dim": 64, "block_ff_dim": 128, "conv_L_cache": 3, "conv_bias": False, "norm_eps": 1e-5,
         "layer_types": ["conv", "full_attention", "conv", "full_attention"], "full_attn_idxs": [1, 3]}
#: model type -> fields a released checkpoint's config carries that transformers' defaults lack or name otherwise,
#: at the tiny sizes (set on the text config where the config has one): mlx-vlm's config classes require them.
COMPLETIONS: dict[str, dict[str, Any]] = {
    # qwen3_5/config.py TextConfig.__post_init__: rope_parameters needs mrope_section (rotary dim 16 / 2 = 3 + 3 + 2)
    "qwen3_5": {"rope_parameters": _MROPE}, "qwen3_5_moe": {"rope_parameters": _MROPE},
    # nemotron_h/config.py: the block pattern in its own letters (mamba, attention, mlp, moe)
    "nemotron_h": {"hybrid_override_pattern": "M*-E", "layers_block_type": None, "mtp_layers_block_type": None},
    # lfm2/config.py ModelConfig: the conv blocks' fields (LFM2's released config.json); lfm2_vl's text model is one
    "lfm2": _LFM2, "lfm2_vl": _LFM2, "lfm2_moe": _LFM2,
    # qwen4_exp/config.py __post_init__: its full-attention layers written as full_attention (transformers' default
    # names them indexed_attention, which 0.7.10 refuses)
    "qwen4_exp": {"layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention"],
                  "output_gate_type": "sigmoid", "rope_parameters": _MROPE},
    # minicpmv4_7/language.py get_rope_index compares the tokens with the image and video token ids (None by default)
    "minicpmv4_7": {"image_token_id": 500, "video_token_id": 501},
    # deepseek_v4/config.py: the output projection's groups at 4 heads (its default 8 leaves none per group)
    "deepseek_v4": {"o_groups": 2, "o_lora_rank": 32},
    # glm_moe_dsa/config.py ModelConfig: the router fields GLM's released config.json writes
    "glm_moe_dsa": {"topk_method": "noaux_tc", "scoring_func": "sigmoid", "moe_layer_freq": 1},
}
#: Model types whose completions are written at the top level of the config too.
TOP_LEVEL = ("minicpmv4_7",)
#: Model types whose transformers config writes None for fields mlx-vlm's config class defaults (the default kept).
NONE_IS_UNSET = ("qwen4_exp",)
#: Per-id entry of layer input 0: mlx-vlm has no capture id for it.
ZERO = "not probed: no capture id is layer input 0 (speculative/drafters/eagle3/config.py maps aux id 0 to capture 0)"


def _model_types(architecture: str) -> list[str]:
    """The model types transformers' auto mappings give the architecture."""
    return common.transformers_model_types(architecture)


def _shrink(config: dict[str, Any], layers: int) -> None:
    """Shrink one config dict in place: sizes, layer count, per-layer lists cut to ``layers``; a rope dict written
    with transformers 5's ``rope_type`` also gets the ``type`` mlx-vlm's configs read."""
    before = next((config[f] for f in LAYER_FIELDS if isinstance(config.get(f), int)), None)
    for key, value in SIZES.items():
        if key in config and not (config[key] is None and key in NULL_MEANS_OFF):
            config[key] = value
    for field in LAYER_FIELDS:
        if isinstance(config.get(field), int):
            config[field] = layers
    for index, field in enumerate(TOKEN_FIELDS):
        if isinstance(config.get(field), int) and config[field] >= SIZES["vocab_size"]:
            config[field] = index
    for key, value in list(config.items()):
        if isinstance(value, list) and before and len(value) == before and before != layers:
            config[key] = value[:layers]
        if isinstance(value, dict) and key.endswith("_config") and key != "quantization_config":
            _shrink(value, layers)
        if isinstance(value, dict) and key in ("rope_parameters", "rope_scaling") and "rope_type" in value:
            value.setdefault("type", value["rope_type"])


def tiny_config(architecture: str, layers: int) -> dict[str, Any]:
    """A tiny config dict of ``architecture``; ValueError where none can be made."""
    from transformers import CONFIG_MAPPING

    tried = []
    for model_type in _model_types(architecture):
        if model_type not in CONFIG_MAPPING:
            tried.append(f"{model_type}: no config class")
            continue
        try:
            config: dict[str, Any] = CONFIG_MAPPING[model_type]().to_dict()
        except Exception as exc:
            tried.append(f"{model_type}: {common.error_text(exc)[:200]}")
            continue
        _shrink(config, layers)
        text: dict[str, Any] = config["text_config"] if isinstance(config.get("text_config"), dict) else config
        text.update(COMPLETIONS.get(model_type, {}))
        if model_type in TOP_LEVEL:
            config.update(COMPLETIONS[model_type])
        if model_type in NONE_IS_UNSET:
            for key in [k for k, v in text.items() if v is None]:
                del text[key]
        config.update(architectures=[architecture], model_type=model_type)
        return config
    raise ValueError(f"no config class for {architecture} ({'; '.join(tried) or 'no model type maps to it'})")


def build(config: dict[str, Any]) -> Any:
    """The target, built by load_model's own lines (utils.py) without weights: mlx's random initial ones."""
    from mlx_vlm.utils import apply_generation_config_defaults, get_model_and_args, update_module_configs

    model_class, _ = get_model_and_args(config=config)
    config.setdefault("text_config", config.pop("llm_config", {}))
    for part in ("vision_config", "audio_config"):  # transformers writes None where mlx-vlm builds the tower anyway
        if config.get(part) is None:
            config[part] = {}
    model_config = model_class.ModelConfig.from_dict(config)
    model_config = update_module_configs(model_config, model_class, config,
                                         ["text", "vision", "perceiver", "projector", "audio"])
    model_config = apply_generation_config_defaults(model_config, config)
    return model_class.Model(model_config)


def _decoder_layers(lm: Any) -> list[Any] | None:
    """The decoder layers the language model's loop walks (``model.layers``, or ``layers``)."""
    for owner in (getattr(lm, "model", None), lm, getattr(getattr(lm, "model", None), "language_model", None)):
        layers = getattr(owner, "layers", None) if owner is not None else None
        if isinstance(layers, list) and layers:
            return layers
    return None


class _Taps:
    """The hidden state each decoder layer returned during one forward (layer input k + 1 for layer k), taken by
    wrapping the layers' classes' ``__call__`` while the forward runs."""

    def __init__(self, layers: list[Any], hidden: int) -> None:
        self.index = {id(layer): k for k, layer in enumerate(layers)}
        self.hidden = hidden
        self.states: dict[int, list[Any]] = {}
        self.classes = {type(layer) for layer in layers}
        self.saved: dict[type, Any] = {}

    def __enter__(self) -> _Taps:
        import numpy as np

        self.states.clear()
        for cls in self.classes:
            original = cls.__call__
            self.saved[cls] = original

            def call(layer: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                out = _original(layer, *args, **kwargs)
                k = self.index.get(id(layer))
                if k is not None:
                    values = out if isinstance(out, tuple) else (out,)
                    self.states.setdefault(k + 1, [np.asarray(v.astype(_float32())).reshape(-1, self.hidden)
                                                   for v in values if _is_state(v, self.hidden)])
                return out
            cls.__call__ = call
        return self

    def __exit__(self, *exc: Any) -> None:
        for cls, original in self.saved.items():
            cls.__call__ = original  # type: ignore[method-assign]
        self.saved.clear()

    def match(self, state: Any) -> int | None:
        """The one layer input one of whose states equals ``state`` bit for bit; None where none or several do."""
        import numpy as np

        flat = np.asarray(state.astype(_float32())).reshape(-1, self.hidden)
        hits = [k for k, found in self.states.items()
                if any(s.shape == flat.shape and np.array_equal(s, flat, equal_nan=True) for s in found)]
        return hits[0] if len(hits) == 1 else None


def _float32() -> Any:
    import mlx.core as mx

    return mx.float32


def _is_state(value: Any, hidden: int) -> bool:
    import mlx.core as mx

    return isinstance(value, mx.array) and value.ndim >= 2 and value.shape[-1] == hidden \
        and mx.issubdtype(value.dtype, mx.floating)


def _call(lm: Any, capture: list[int] | None, **extra: Any) -> Any:
    """The language model on the probe tokens with a fresh prompt cache (generate/ar.py _step's call)."""
    import mlx.core as mx
    from mlx_vlm.models import cache

    ids = mx.array([[(7 * i + 3) % SIZES["vocab_size"] for i in range(TOKENS)]])
    kwargs: dict[str, Any] = dict(extra)
    if capture is not None:
        kwargs["capture_layer_ids"] = capture
    out = lm(ids, cache=cache.make_prompt_cache(lm), **kwargs)
    mx.eval(out.logits, *(getattr(out, "hidden_states", None) or []))
    return out


def _one_id(lm: Any, k: int, taps: _Taps | None) -> int | str:
    """What requesting layer input ``k`` alone (capture id k - 1) delivers."""
    try:
        if taps is not None:
            with taps:
                out = _call(lm, [k - 1])
        else:
            out = _call(lm, [k - 1])
    except Exception as exc:
        return f"raises: {common.error_text(exc)[:300]}"
    states = list(getattr(out, "hidden_states", None) or [])
    if not states:
        return "silent"
    if len(states) > 1:
        return "several"
    found = taps.match(states[0]) if taps is not None else None
    return found if found is not None else "unmatched"


def forward(job: dict[str, Any]) -> dict[str, Any]:
    """The job's result (module docstring); never raises for the engine's answer, only for a probe bug."""
    import importlib.metadata

    common.offline_environment()
    import mlx.core as mx

    arch, layers = job["architecture"], int(job["layers"])
    result: dict[str, Any] = {"schema": SCHEMA, "engine": ENGINE, "version": importlib.metadata.version("mlx-vlm"),
                              "architecture": arch, "layers": layers, "model_type": None, "outcome": None,
                              "stage": None, "error": None, "requested": None, "delivered": None, "shapes": None,
                              "fired": None, "per_id": None, "notes": []}
    mx.random.seed(0)
    try:
        config = tiny_config(arch, layers)
        result["model_type"] = config["model_type"]
        model = build(config)
    except Exception as exc:
        result.update(outcome="not run on CPU", stage="config", error=f"no tiny config: {common.error_text(exc)}")
        return result
    from mlx_vlm.speculative.drafters import validate_drafter_compatibility
    from mlx_vlm.utils import load_model

    draft = load_model(Path(job["draft"]))
    try:
        validate_drafter_compatibility(model, draft, "eagle3")
    except Exception as exc:
        result.update(outcome="raised", stage="compatibility", error=common.error_text(exc))
        return result
    _run(result, model, draft)
    return result


def _run(result: dict[str, Any], model: Any, draft: Any) -> None:
    import mlx.core as mx
    from mlx_vlm.speculative.eagle3 import _eagle3_capture_layer_ids, _eagle3_rounds
    from mlx_vlm.speculative.utils import speculative_hidden_state

    lm = model.language_model if hasattr(model, "language_model") else model
    capture = _eagle3_capture_layer_ids(draft)
    requested = sorted({int(c) + 1 for c in capture})
    result["requested"] = requested
    try:
        _call(lm, None)
    except Exception as exc:
        result.update(outcome="not run on CPU", stage="forward without capture", error=common.error_text(exc))
        return
    decoder_layers = _decoder_layers(lm)
    hidden = int(draft.target_hidden_size)
    taps = _Taps(decoder_layers, hidden) if decoder_layers is not None else None
    count = len(decoder_layers) if decoder_layers is not None else int(result["layers"])
    per_id: dict[str, int | str] = {"0": ZERO}
    per_id.update({str(k): _one_id(lm, k, taps) for k in range(1, count + 1)})
    result["per_id"] = per_id
    values = [v for k, v in per_id.items() if k != "0"]
    result["fired"] = sorted(v for v in values if isinstance(v, int)) \
        if all(isinstance(v, int) or v == "silent" for v in values) else None
    try:  # generate/ar.py _step: the prefill with the draft's capture ids, then speculative_hidden_state
        out = _call(lm, capture, logits_to_keep=1)
        states = list(getattr(out, "hidden_states", None) or [])
        result["delivered"] = len(states)
        result["shapes"] = [list(s.shape) for s in states]
        target_hidden = speculative_hidden_state("eagle3", out)
        mx.eval(draft._prepare_target_hidden(target_hidden))
    except Exception as exc:
        short = result["delivered"] is not None and result["delivered"] < len(capture)
        result.update(outcome="under-delivered" if short else "raised", stage="forward with capture",
                      error=common.error_text(exc))
        return
    if result["delivered"] < len(capture):
        result.update(outcome="under-delivered", stage="forward with capture",
                      error=f"{result['delivered']} of {len(capture)} requested states reached the fc")
        return
    try:  # one round of the loop itself: draft block, verify forward with capture, commit
        from mlx_vlm.models import cache

        prompt_cache = cache.make_prompt_cache(lm)
        ids = mx.array([[(7 * i + 3) % SIZES["vocab_size"] for i in range(TOKENS)]])
        prefill = lm(ids, cache=prompt_cache, capture_layer_ids=capture)
        hidden_states = speculative_hidden_state("eagle3", prefill)
        bonus = int(mx.argmax(prefill.logits[0, -1]).item())
        rounds = _eagle3_rounds(model, draft, prompt_cache, hidden_states, prompt_tokens=ids, first_bonus=bonus,
                                max_tokens=3, sampler=lambda x: mx.argmax(x, axis=-1), greedy_sampling=True)
        next(rounds, None)
    except Exception as exc:
        result.update(outcome="raised", stage="speculative round", error=common.error_text(exc))
        return
    result["outcome"] = "delivered"


def main(argv: list[str] | None = None) -> int:
    """The command line: ``--jobs JOBS.json``, each job's result written to its ``out``."""
    return common.forward_main(forward, SCHEMA, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
