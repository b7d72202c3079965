"""The fact sheet: what every engine area reads from the checkpoint and the target, extracted once.

``fact_sheet(ckpt, snapshot, target)`` flattens the draft config the way the snapshot's engine reads it
(vLLM converts a speculators config with ``speculators/algos.py update_eagle3``; SGLang reads the HF
config as it is), resolves the norm flags as the engine applies them, and reads every config field,
tensor shape and target property an area needs. Areas read the sheet, never the raw config.
The sheet holds plain values only, never the checkpoint or the target: tensor *contents* (d2t, a norm
weight, embeddings compared with the target's) come through ``sheet.contents`` (:class:`TensorContents`, below),
each read on an area's first question and kept, since they can be large and only some areas need them.
``producer`` reads the files as that producer writes them (``Checkpoint.as_read_by``: one reading of
``engines.readings``). Two target-and-config readings live with the sheet, since it is what reads them: the
target's KV layers (:func:`target_layers`) and the context length an engine derives, with the rope types
(:func:`context_length`, :func:`rope_types`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from pytest_eagle3.checkpoint import Checkpoint, CheckpointReadError, TargetModel
from pytest_eagle3.checkpoint.draft import NOT_DRAFT_WEIGHTS, SAFETENSORS_INDEX
from pytest_eagle3.checkpoint.tensorfiles import WeightsNotDownloaded, index_safetensors
from pytest_eagle3.engines.draft_geometry import draft_geometry
from pytest_eagle3.engines.frozen import FrozenDict, JsonValue, freeze, freeze_object
from pytest_eagle3.findings import Finding
from pytest_eagle3.knowledge.snapshot import AuxField, Engine, Snapshot, is_peagle
from pytest_eagle3.producers.formats import AuxLayers, default_aux_inputs, is_speculators, lookup
from pytest_eagle3.producers.habits import (
    Rope,
    RopeHabit,
    RopeKey,
    TrainedField,
    config_rope,
    served_rope,
    trained_rope,
    unread_fields,
)
from pytest_eagle3.rules.attention import ROUTE_CONFIG_CLASS, Geometry, derive
from pytest_eagle3.rules.draft_kind import classify_checkpoint, not_a_draft_finding
from pytest_eagle3.rules.quantized import is_packed

__all__ = ["EngineView", "FactSheet", "JsonValue", "TensorContents", "engine_view", "fact_sheet", "lookup"]

#: The norm flags an engine may read from the draft config.
NORM_FLAGS = ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output")


@dataclass(frozen=True)
class EngineView:
    """What the engine's draft class sees: a flat config, and the flags as it applies them."""

    config: Mapping[str, JsonValue]
    speculators: bool
    flags: Mapping[str, bool]
    flag_notes: Mapping[str, str]


@dataclass(frozen=True)
class FactSheet:
    """One checkpoint (and target) as one engine version reads them: every fact an area needs."""

    #: The flat config the engine's draft class reads, whether it came as a speculators config, and
    #: the norm flags as the engine applies them (with how it reads each).
    config: Mapping[str, JsonValue]
    speculators: bool
    flags: Mapping[str, bool]
    flag_notes: Mapping[str, str]
    #: Tensor values (d2t, a norm weight, a tensor compared with the target's), read on first use.
    contents: TensorContents
    #: A target was given, and its config could be read.
    target_given: bool
    target_usable: bool
    #: The draft config as written (empty without one).
    raw: Mapping[str, JsonValue]
    #: A speculators P-EAGLE config (``speculators_model_type: peagle``).
    peagle: bool
    #: Why this is not a draft at all (a target or another method's checkpoint), else None.
    not_a_draft: Finding | None
    # ---- the draft config, as the engine sees it
    architectures: JsonValue
    architecture: str
    model_type: str
    num_hidden_layers: int | None
    hidden_size: int | None
    #: target_hidden_size, else hidden_size.
    target_hidden_size: int | None
    vocab_size: int | None
    draft_vocab_present: bool
    draft_vocab_size: JsonValue
    #: The target's vocab (model_config.get_vocab_size()), else the draft config's vocab_size.
    reference_vocab: int | None
    #: The draft vocab is the target's (or unset): vLLM >= 0.30 then builds no d2t.
    full_vocab: bool
    tie_word_embeddings: bool
    use_aux_hidden_state: JsonValue
    bias: bool
    rope_scaling: JsonValue
    #: The norm flags written explicitly (top level or eagle_config), None where absent.
    explicit_norms: Mapping[str, bool | None]
    #: The attention the engine derives for the draft (rules.attention), None where the config cannot say.
    draft_geometry: Geometry | None
    #: Aux ids in each field the engine's resolvers read (this mode and the other), as written.
    aux_ids: Mapping[str, tuple[int, ...] | None]
    # ---- the checkpoint
    tensors: tuple[str, ...]
    shapes: Mapping[str, tuple[int, ...]]
    fc_width: int | None
    layer_count: int
    trained_norms: Mapping[str, bool]
    norm_sources: Mapping[str, str]
    producer: str
    format_label: str
    first_layer_prefix: str | None
    #: Weight files beside the draft's that are not the draft (adapters, optimizer state) with their tensor
    #: names, where no shard index lists the draft's files: an engine reading every *.safetensors reads them.
    stray_weight_files: tuple[tuple[str, tuple[str, ...]], ...]
    #: The aux ids the checkpoint's config names, their field and convention (checkpoint.config.aux).
    aux_written: AuxLayers | None
    #: The rope the engines build from config.json, the rope the producer trained with where it differs,
    #: and the trained fields no engine reads (producers.habits).
    served_rope: RopeKey
    config_rope: Rope
    trained_rope: tuple[Rope, RopeHabit] | None
    unread_fields: tuple[tuple[TrainedField, JsonValue], ...]
    # ---- the target
    target_layers: int | None
    target_architecture: str | None
    target_vocab: int | None
    #: The target's hidden size as it reports it, and where it is a positive number.
    target_hidden_reported: int | None
    target_width: int | None
    target_model_type: str
    #: The producers' default aux layers for the target's layer count (layer inputs).
    default_inputs: tuple[int, ...] | None
    #: The target's KV layers (below; area ``runtime`` reads them), None without a target geometry.
    target_kv: tuple[LayerKv, ...] | None
    # ---- serving beside the target (area ``runtime``)
    #: The context the engine derives from the draft config (its rotary table's rows) and from the target's
    #: (the served context without a flag), None where no key is written (below).
    draft_context: int | None = None
    target_context: int | None = None
    #: The draft's max_position_embeddings as written, and its rope types.
    draft_max_positions: int | None = None
    draft_rope_types: tuple[str, ...] = ("default",)
    #: quantization_config.quant_method of the target's and of the draft's config ("unnamed" without one).
    target_quantization: str | None = None
    draft_quantization: str | None = None
    #: The sliding-window fields of the draft config as the engine's draft class sees them.
    draft_layer_types: tuple[str, ...] | None = None
    draft_sliding_window: int | None = None
    draft_use_sliding_window: bool | None = None
    draft_interleaved_window: JsonValue | tuple[JsonValue, ...] = None
    #: The dtype each config declares (``dtype``, else ``torch_dtype``), None where absent.
    draft_dtype: str | None = None
    target_dtype: str | None = None
    #: The floating-point dtypes the draft's tensors are stored in (torch's names), each with its tensors.
    stored_dtypes: Mapping[str, tuple[str, ...]] = FrozenDict()


def _int(config: Mapping[str, object], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _explicit_flag(raw: Mapping[str, object], name: str) -> bool | None:
    for value in (raw.get(name), lookup(raw, f"eagle_config.{name}")):
        if isinstance(value, bool):
            return value
    return None


def _ids(value: object) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def _default_inputs(snapshot: Snapshot, target_layers: int | None, draft_layers: int | None) -> tuple[int, ...] | None:
    """The layer inputs the engine captures when the config names no ids (behaviour ``aux_default``): the
    target's [2, L//2, L-3]; or mlx-vlm's from the draft's own layer count, captured at max(id - 1, 0)'s output;
    or the layers TensorRT-LLM's launch setting names (``knowledge.launch_settings``)."""
    if snapshot.behaviours.aux_default == "draft-layers":
        n = draft_layers or 1
        return tuple(max(i, 1) for i in (2, n // 2, max(n - 3, 0)))
    if snapshot.behaviours.aux_default == "launch-setting":  # layer outputs, -1 the final state (L)
        launched = snapshot.launched_layers
        spec = snapshot.launch_layers
        shift, fewest = spec.default_input_shift, spec.fewest_layers
        if launched is None:  # the default raises below its fewest layers: nothing is captured
            if target_layers is None or target_layers < fewest:
                return None
            return tuple(i + shift for i in default_aux_inputs(target_layers))
        return tuple(sorted({i + 1 for i in launched if i >= 0} | ({target_layers} if -1 in launched and
                                                                    target_layers is not None else set())))
    return default_aux_inputs(target_layers) if target_layers is not None else None


def _aux_ids(config: Mapping[str, object], snapshot: Snapshot) -> dict[str, tuple[int, ...] | None]:
    """The ids in every field the snapshot's aux-id resolvers read (a shifted field: read at its path)."""
    fields = [*(snapshot.behaviours.aux_id_fields or ()), *(snapshot.behaviours.aux_id_fields_other_mode or ())]
    return {field.path: written_ids(config, field) for field in fields}


def written_ids(config: Mapping[str, object], field: AuxField) -> tuple[int, ...] | None:
    """The ids ``field`` holds in ``config``; for an exclusive field whose object exists without ids, ``()`` (the
    engine then reads no later field: ``aux_layers.first_ids``)."""
    ids = _ids(lookup(config, field.path))
    if ids is None and field.exclusive and lookup(config, field.parent) is not None:
        return ()
    return ids


def fact_sheet(ckpt: Checkpoint, snapshot: Snapshot, target: TargetModel | None = None,
               producer: str | None = None) -> FactSheet:
    """Read once what every area of ``snapshot``'s plan needs from ``ckpt`` and ``target`` (``producer``: read
    the files as it writes them; the detected producer without one)."""
    read = ckpt.as_read_by(producer or ckpt.format.producer)
    raw = ckpt.config_raw or {}
    view = engine_view(raw, snapshot)
    config = view.config
    archs = raw.get("architectures")
    hidden = _int(config, "hidden_size")
    written = _int(config, "target_hidden_size")
    # a packed quantized weight's saved shape is not its matrix's: no shape rule compares it (rules.quantized)
    shapes = FrozenDict({name: entry.shape for name, entry in ckpt.tensors.items()
                         if not is_packed(name, entry, ckpt.tensors)})
    fc_shape = shapes.get("fc.weight") or shapes.get("model.fc.weight")
    cfg = read.config if ckpt.config_raw is not None else None
    text = target.text_config if target is not None else {}
    layers = target.num_hidden_layers if target is not None else None
    target_vocab = target.vocab_size if target is not None else None
    vocab = _int(config, "vocab_size")
    reference_vocab = target_vocab if target_vocab is not None else vocab
    present = "draft_vocab_size" in config
    draft_vocab = config.get("draft_vocab_size") if present else "missing"
    reported = target.hidden_size if target is not None else None
    usable = target is not None and not target.problem
    producer = read.format.producer
    return FactSheet(
        config=config, speculators=view.speculators, flags=view.flags, flag_notes=view.flag_notes,
        contents=tensor_contents(ckpt, target), target_given=target is not None, target_usable=usable,
        raw=freeze_object(raw), peagle=is_peagle(raw),
        not_a_draft=not_a_draft_finding(classify_checkpoint(ckpt)),
        architectures=freeze(archs), architecture=str(archs[0]) if isinstance(archs, list) and archs else "",
        model_type=str(config.get("model_type") or ""),
        num_hidden_layers=_int(config, "num_hidden_layers"),
        hidden_size=hidden, target_hidden_size=written or hidden,
        vocab_size=vocab, draft_vocab_present=present, draft_vocab_size=config.get("draft_vocab_size"),
        reference_vocab=reference_vocab,
        full_vocab=draft_vocab in (None, "missing") or draft_vocab == reference_vocab,
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        use_aux_hidden_state=freeze(lookup(config, "eagle_config.use_aux_hidden_state")),
        bias=bool(config.get("bias", False)),
        rope_scaling=freeze(config.get("rope_scaling") or config.get("rope_parameters")),
        explicit_norms=FrozenDict({name: _explicit_flag(raw, name) for name in NORM_FLAGS}),
        draft_geometry=draft_geometry(snapshot.kind, config, view.speculators),
        aux_ids=FrozenDict(_aux_ids(config, snapshot)),
        tensors=tuple(ckpt.tensors), shapes=shapes,
        fc_width=fc_shape[1] if fc_shape and len(fc_shape) == 2 else None,
        layer_count=cfg.layer_count if cfg is not None else 1,
        trained_norms=FrozenDict(cfg.norm_flags if cfg is not None else {}),
        norm_sources=FrozenDict(cfg.sources if cfg is not None else {}),
        producer=producer, format_label=read.format.label,
        first_layer_prefix=cfg.first_layer_prefix if cfg is not None else None,
        stray_weight_files=_stray_weight_files(ckpt),
        aux_written=read.config.aux,
        served_rope=served_rope(raw).key(), config_rope=config_rope(config),
        trained_rope=trained_rope(producer, config),
        unread_fields=tuple((row, freeze(value)) for row, value in unread_fields(producer, raw)),
        target_layers=layers,
        target_architecture=target.architectures[0] if target is not None and target.architectures else None,
        target_vocab=target_vocab, target_hidden_reported=reported, target_width=reported or None,
        target_model_type=str(text.get("model_type") or ""),
        default_inputs=_default_inputs(snapshot, layers, _int(config, "num_hidden_layers")),
        target_kv=target_layers(text, derive(text, ROUTE_CONFIG_CLASS)) if usable else None,
        **_serving_facts(raw, config, text if usable else None,
                         target.config if target is not None else {}, snapshot.kind),
        stored_dtypes=stored_dtypes(ckpt),
    )


#: Safetensors' dtype codes of floating-point tensors, by torch's names (a quantized or integer tensor is not one).
FLOAT_CODES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}


def stored_dtypes(ckpt: Checkpoint) -> FrozenDict[str, tuple[str, ...]]:
    """The floating-point dtypes the tensors are stored in, each with its tensors (names sorted)."""
    found: dict[str, list[str]] = {}
    for name, entry in ckpt.tensors.items():
        code = str(entry.dtype).removeprefix("torch.")
        dtype = FLOAT_CODES.get(code.upper(), code if code in FLOAT_CODES.values() else None)
        if dtype is not None:
            found.setdefault(dtype, []).append(name)
    return FrozenDict({dtype: tuple(sorted(names)) for dtype, names in sorted(found.items())})


def _stray_weight_files(ckpt: Checkpoint) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The not-draft *.safetensors beside the draft's (none where a shard index lists the files)."""
    if (ckpt.root / SAFETENSORS_INDEX).is_file():
        return ()
    return tuple((path.name, tuple(entry.name for entry in index_safetensors(path, ckpt.source).entries))
                 for path in ckpt.source.glob(ckpt.root, "*.safetensors")
                 if ckpt.source.exists(path) and path.name.startswith(NOT_DRAFT_WEIGHTS))


def _quant_method(config: Mapping[str, object]) -> str | None:
    quant = config.get("quantization_config")
    if not isinstance(quant, dict):
        return None
    return str(quant.get("quant_method") or quant.get("quant_algo") or "unnamed")


def _dtype(config: Mapping[str, object]) -> str | None:
    value = config.get("dtype") or config.get("torch_dtype")
    return str(value).removeprefix("torch.") if isinstance(value, str) and value else None


class ServingFacts(TypedDict):
    """The serving fields of :class:`FactSheet`, as ``_serving_facts`` reads them."""

    draft_context: int | None
    target_context: int | None
    draft_max_positions: int | None
    draft_rope_types: tuple[str, ...]
    target_quantization: str | None
    draft_quantization: str | None
    draft_layer_types: tuple[str, ...] | None
    draft_sliding_window: int | None
    draft_use_sliding_window: bool | None
    draft_interleaved_window: JsonValue | tuple[JsonValue, ...]
    draft_dtype: str | None
    target_dtype: str | None


def _serving_facts(raw: Mapping[str, object], config: Mapping[str, JsonValue], text: Mapping[str, object] | None,
                   target_raw: Mapping[str, object], engine: Engine) -> ServingFacts:
    """What the runtime area's serving rules read: positions, quantization, sliding window, dtype of draft and target."""
    kinds = config.get("layer_types")
    window = config.get("sliding_window")
    use = config.get("use_sliding_window")
    interleaved = config.get("interleaved_sliding_window")
    return {
        "draft_context": context_length(config, engine),
        "target_context": context_length(text, engine) if text is not None else None,
        "draft_max_positions": _int(config, "max_position_embeddings"),
        "draft_rope_types": rope_types(config),
        "target_quantization": _quant_method(target_raw) or (_quant_method(text) if text is not None else None),
        "draft_quantization": _quant_method(raw) or _quant_method(config),
        "draft_layer_types": tuple(str(k) for k in kinds) if isinstance(kinds, list) else None,
        "draft_sliding_window": window if isinstance(window, int) and not isinstance(window, bool) else None,
        "draft_use_sliding_window": use if isinstance(use, bool) else None,
        "draft_interleaved_window": tuple(interleaved) if isinstance(interleaved, list) else interleaved,
        "draft_dtype": _dtype(config) or _dtype(raw),
        "target_dtype": _dtype(target_raw) or (_dtype(text) if text is not None else None),
    }


# -- The target's KV layers: each kind of attention layer the target has and its per-token KV width (elements;
#    dtype cancels), which area ``runtime`` compares with the draft's KV page.
FULL = "full"
SLIDING = "sliding"
MLA = "mla"
LINEAR = "linear"


@dataclass(frozen=True)
class LayerKv:
    """One kind of target attention layer and its per-token KV width (elements, dtype cancels)."""

    kind: str
    per_token: int


def target_layers(config: Mapping[str, Any], geometry: Geometry | None) -> tuple[LayerKv, ...] | None:
    """The target's KV layer kinds from its (text) config; None when the config cannot say."""
    latent, rope = _positive(config.get("kv_lora_rank")), _positive(config.get("qk_rope_head_dim"))
    if latent is not None:
        return (LayerKv(MLA, latent + (rope or 0)),)
    if geometry is None:
        return None
    per_token = 2 * geometry.kv_width
    kinds = config.get("layer_types")
    found = {FULL}
    if isinstance(kinds, list):
        found = {SLIDING if k == "sliding_attention" else LINEAR if k == "linear_attention" else FULL for k in kinds}
    return tuple(LayerKv(kind, per_token) for kind in sorted(found))


# -- The context length an engine derives from a config, and the rope types it builds.
#    Both engines size a model's context from its config alone when no flag says otherwise; the draft's
#    derived length is also the length of its rotary table (its ``cos_sin_cache`` rows), which is why a
#    draft config with a smaller ``max_position_embeddings`` than its target's context matters
#    (area ``runtime``).
#
#    * SGLang (``utils/hf_transformers/common.py`` ``get_context_length``, 0.4.4.post2-0.5.23 read): the
#      first of ``max_sequence_length``, ``seq_length``, ``max_seq_len``, ``model_max_length``,
#      ``max_position_embeddings``, times ``rope_scaling.factor`` unless the rope has
#      ``original_max_position_embeddings`` or is ``llama3``.
#    * vLLM (``config/model.py`` ``_get_and_verify_max_len``, 0.11.0 and 0.27.0 read): the smallest of its
#      possible keys, times the rope factor except for ``su`` / ``longrope`` / ``llama3``; ``yarn`` starts
#      from ``original_max_position_embeddings``.

_SGLANG_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
_VLLM_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
             "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
#: Rope types whose rotary table is sized by max_position_embeddings alone (vllm 0.33.0 config/speculative.py
#: _CACHE_ONLY_ROPE_TYPES): raising it changes nothing but the table's length.
CACHE_ONLY_ROPE_TYPES = frozenset({"default", "linear", "llama3", "ntk", "proportional"})


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _rope_parameters(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The rope parameter sets of a config (``rope_scaling`` or ``rope_parameters``, nested per layer type or not)."""
    rope = config.get("rope_scaling") or config.get("rope_parameters")
    if not isinstance(rope, Mapping) or not rope:
        return ()
    if all(isinstance(v, Mapping) for v in rope.values()):
        return tuple(rope.values())
    return (rope,)


def rope_types(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The rope type of each parameter set (``type`` in older configs); ``default`` without one."""
    found = tuple(str(p.get("rope_type") or p.get("type") or "default") for p in _rope_parameters(config))
    return found or ("default",)


def _factor(params: Mapping[str, Any]) -> float:
    factor = params.get("factor", 1)
    return float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0 else 1.0


def context_length(config: Mapping[str, Any], engine: Engine) -> int | None:
    """The context ``engine`` derives from ``config``; None when no key is written (the engine then takes a default)."""
    params = _rope_parameters(config)
    if engine.serving.context_rule == "first-key-scaled":
        base = next((v for v in (_positive(config.get(k)) for k in _SGLANG_KEYS) if v is not None), None)
        if base is None:
            return None
        first = params[0] if params else {}
        scale = 1.0 if (not first or "original_max_position_embeddings" in first
                        or first.get("rope_type") == "llama3") else _factor(first)
        return int(scale * base)
    present = [v for v in (_positive(config.get(k)) for k in _VLLM_KEYS) if v is not None]
    if not present:
        return None
    derived: float = min(present)
    for p in params:
        kind = str(p.get("rope_type") or p.get("type") or "default")
        if kind in ("su", "longrope", "llama3"):
            continue
        if kind == "yarn" and _positive(p.get("original_max_position_embeddings")) is not None:
            derived = p["original_max_position_embeddings"]
        derived *= _factor(p)
        break
    return int(derived)


def engine_view(raw: Mapping[str, object], snapshot: Snapshot) -> EngineView:
    """Flatten the config the way ``snapshot``'s engine does, and resolve the norm flags."""
    speculators = is_speculators(raw)
    reader = snapshot.kind.loading.speculators_reader
    config = (_speculators_own(raw) if reader == "own-config-class" else
              _speculators_merged(raw) if reader == "merged-over-top" else
              _speculators_to_eagle(raw, snapshot)) if speculators else dict(raw)
    flags, notes = _flags(raw, config, speculators, snapshot)
    return EngineView(freeze_object(config), speculators, FrozenDict(flags), FrozenDict(notes))


#: A drafter config class that reads a speculators config itself (speculators_reader own-config-class: mlx_vlm
#: drafters/eagle3/config.py Eagle3Config: the layer config, then its own top-level fields with its own defaults).
_OWN_FIELDS = {"draft_vocab_size": 32000, "norm_before_residual": False, "norm_before_fc": False,
               "tie_word_embeddings": False}
_OWN_OPTIONAL = ("target_hidden_size", "eagle_aux_hidden_state_layer_ids", "target_layer_ids", "capture_layer_ids")


def _speculators_own(raw: Mapping[str, object]) -> dict[str, object]:
    """mlx_vlm Eagle3Config.from_dict: transformer_layer_config, then the top-level fields it declares."""
    layer = raw.get("transformer_layer_config")
    config: dict[str, object] = dict(layer) if isinstance(layer, dict) else {}
    for name, default in _OWN_FIELDS.items():
        config[name] = raw.get(name, default)
    for name in _OWN_OPTIONAL:
        if name in raw:
            config[name] = raw[name]
    return config




def _speculators_merged(raw: Mapping[str, object]) -> dict[str, object]:
    """llama.cpp: ``{**config, **config["transformer_layer_config"]}``, every top-level field kept as written."""
    layer = raw.get("transformer_layer_config")
    return {**raw, **(layer if isinstance(layer, dict) else {})}


def _speculators_to_eagle(raw: Mapping[str, object], snapshot: Snapshot) -> dict[str, object]:
    """vLLM speculators/algos.py update_eagle3: the layer config plus the fields it copies (update_peagle for a
    P-EAGLE config: norm_before_residual defaults to False, fc_norm and norm_output are not copied)."""
    layer = raw.get("transformer_layer_config")
    config: dict[str, object] = dict(layer) if isinstance(layer, dict) else {}
    config["draft_vocab_size"] = raw.get("draft_vocab_size")
    for name in ("target_hidden_size",):
        if name in raw:
            config[name] = raw[name]
    peagle = is_peagle(raw) and snapshot.peagle == "parallel-drafting"
    config["norm_before_residual"] = raw.get("norm_before_residual", not peagle)
    copied = snapshot.speculators_copies
    if "norm_before_fc" in copied:
        config["norm_before_fc"] = raw.get("norm_before_fc", False)
    if "fc_norm" in copied and not peagle:
        config["fc_norm"] = raw.get("fc_norm", False)
        config["norm_output"] = raw.get("norm_output", False)
    if "eagle_aux_hidden_state_layer_ids" in copied and "eagle_aux_hidden_state_layer_ids" in raw:
        config["eagle_aux_hidden_state_layer_ids"] = raw["eagle_aux_hidden_state_layer_ids"]
    return config


def _flag(config: Mapping[str, object], *names: str) -> bool:
    for name in names:
        value = lookup(config, name)
        if value is not None:
            return bool(value)
    return False


def _flags(raw: Mapping[str, object], config: Mapping[str, object], speculators: bool,
           snapshot: Snapshot) -> tuple[dict[str, bool], dict[str, str]]:
    flags: dict[str, bool] = {}
    notes: dict[str, str] = {}
    rule = snapshot.behaviours.norm_before_residual
    if rule == "top-level":  # llama.cpp: the raw config.json's own field, default False in every format
        flags["norm_before_residual"] = bool(raw.get("norm_before_residual", False))
        notes["norm_before_residual"] = "read from config.json's top level (default False)"
    else:
        flags["norm_before_residual"] = bool(config.get("norm_before_residual", False)) if rule == "read" else False
        notes["norm_before_residual"] = (
            "read from the config" + (" (speculators P-EAGLE format: default False)" if is_peagle(raw) else
                                      " (speculators format: default True)" if speculators else " (default False)")
            if rule == "read" else "not read: the residual is always the raw fc output"
        )
    rule = snapshot.behaviours.norm_before_fc
    fields = {"read": ("eagle_config.norm_before_fc", "norm_before_fc"), "top-level": ("norm_before_fc",),
              "eagle-format-only": () if speculators else ("norm_before_fc",)}.get(rule, ())
    flags["norm_before_fc"] = bool(fields) and _flag(config, *fields)
    notes["norm_before_fc"] = (f"read from {' or '.join(fields)}" if fields else
                               "not propagated from a speculators config" if rule == "eagle-format-only"
                               else "not read: no input_norm")
    for name in ("fc_norm", "norm_output"):
        rule = snapshot.behaviours.fc_norm if name == "fc_norm" else snapshot.behaviours.norm_output
        reads = rule == "read" or (rule == "eagle-format-only" and not speculators)
        names = (name, *snapshot.kind.loading.fc_norm_aliases) if name == "fc_norm" else (name,)
        flags[name] = reads and _flag(config, *names)
        notes[name] = "read" if reads else (
            "not propagated from a speculators config in this version" if rule == "eagle-format-only" else "not read"
        )
    return flags, notes


# -- Tensor contents an engine area may need (d2t, a norm weight, a tensor compared with the target's).
#    They are read from disk on an area's first question and kept for the next, never before: a plan that does not
#    reach the area reads nothing, and the large tensors (embeddings) are read only where an engine's rule compares
#    them. The fact sheet holds the readers, never the checkpoint or the target.

#: The most d2t entries read (a larger or not 1-D d2t is not a vocab map the areas can follow).
D2T_LIMIT = 1 << 20


@dataclass(frozen=True, eq=False)
class TensorContents:
    """Typed readers of tensor values, each answer read once."""

    #: The offsets of the named d2t tensor; None where it cannot be read or is not one small 1-D tensor.
    d2t: Callable[[str], tuple[int, ...] | None]
    #: The smallest and largest magnitude of the named (norm) weight.
    magnitude_range: Callable[[str], tuple[float, float]]
    #: Whether the named draft tensor equals the target's (the first of the target names it holds);
    #: None when either side is unavailable.
    same_as_target: Callable[[str, tuple[str, ...]], bool | None]
    #: Whether the target stores the module of the named weights (the first it holds) only packed
    #: (``.weight_packed`` / ``.qweight``, no ``.weight``): a quantized layer with no weight tensor to compare;
    #: None without the target's weights.
    target_packed: Callable[[tuple[str, ...]], bool | None]


def tensor_contents(ckpt: Checkpoint, target: TargetModel | None) -> TensorContents:
    """Readers of ``ckpt``'s tensor values (and ``target``'s weights, where given), each cached."""
    return TensorContents(
        d2t=functools.cache(functools.partial(_d2t, ckpt)),
        magnitude_range=functools.cache(functools.partial(_magnitude_range, ckpt)),
        same_as_target=functools.cache(functools.partial(_same_as_target, ckpt, target)),
        target_packed=functools.cache(functools.partial(_target_packed, target)),
    )


#: The tensors a quantized layer stores in place of ``.weight`` (compressed-tensors, GPTQ / AWQ).
PACKED_WEIGHTS = (".weight_packed", ".qweight")


def _target_packed(target: TargetModel | None, weight_names: tuple[str, ...]) -> bool | None:
    weights = target.weights if target is not None else None
    if weights is None:
        return None
    if any(name in weights.tensors for name in weight_names):
        return False
    stems = [name.removesuffix(".weight") for name in weight_names]
    return any(stem + packed in weights.tensors for stem in stems for packed in PACKED_WEIGHTS)


def _d2t(ckpt: Checkpoint, name: str) -> tuple[int, ...] | None:
    try:
        tensor = ckpt.read(name)
    except CheckpointReadError:
        return None
    if tensor.ndim != 1 or tensor.numel() > D2T_LIMIT:
        return None
    import torch

    return tuple(int(v) for v in tensor.to(dtype=torch.int64).tolist())


def _magnitude_range(ckpt: Checkpoint, name: str) -> tuple[float, float]:
    weight = ckpt.read(name).float().abs()
    return float(weight.min()), float(weight.max())


def _same_as_target(ckpt: Checkpoint, target: TargetModel | None, draft_name: str,
                    target_names: tuple[str, ...]) -> bool | None:
    weights = target.weights if target is not None else None
    if weights is None:
        return None
    name = next((n for n in target_names if n in weights.tensors), None)
    if name is None or weights.shape(name) != ckpt.shape(draft_name):
        return None if name is None else False
    import torch

    try:
        for mine, theirs in zip(ckpt.chunks(draft_name), weights.chunks(name)):
            # Engines compare after loading both into the served dtype: compare in the draft's dtype.
            if mine.shape != theirs.shape or not torch.equal(mine, theirs.to(mine.dtype)):
                return False
    except WeightsNotDownloaded:  # a Hub id read by its headers: every byte of both is needed to decide
        return None
    return True
