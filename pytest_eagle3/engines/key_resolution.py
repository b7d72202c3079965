"""Key resolution: which engine parameter each checkpoint tensor lands in, as the engine's loader does it.

The parameter set and the name rules follow the Llama EAGLE-3 draft class of each engine
(``LlamaForCausalLMEagle3`` in SGLang, ``Eagle3LlamaForCausalLM`` in vLLM); which rule applies
comes from the profile (behaviours ``key_prefix``, ``first_layer``, ``renames``, ``unknown_key``), or from the draft
class's own rows where it has them (``DraftShape``: its renames, first layer, fused tensors and unknown-key rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_eagle3.knowledge.snapshot import LLAMA_ATTENTION, Snapshot

#: Checkpoint sub-names stacked into one engine parameter, with the shard they fill.
#: Source: sglang llama_eagle3.py / vllm llama_eagle3.py stacked_params_mapping.
STACKED = (
    (".q_proj", ".qkv_proj", "q"),
    (".k_proj", ".qkv_proj", "k"),
    (".v_proj", ".qkv_proj", "v"),
    (".gate_proj", ".gate_up_proj", "gate"),
    (".up_proj", ".gate_up_proj", "up"),
)
LAYER_PARAMS = (
    "mlp.gate_up_proj.weight",
    "mlp.down_proj.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
)
#: Shards a fused parameter needs before it counts as loaded.
SHARDS = {".qkv_proj.": ("q", "k", "v"), ".gate_up_proj.": ("gate", "up"), ".fused_qkv_a_proj.": ("q_a", "kv_a"),
          ".fused_qkv_a_proj_with_mqa.": ("q_a", "kv_a")}
D2T_PARAM = "draft_id_to_target_id"
ALWAYS_DROPPED = ("rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached", "mask_hidden")


@dataclass(frozen=True)
class DraftShape:
    """What the engine builds, from the config as the engine reads it."""

    layers: int
    norm_before_fc: bool
    fc_norm_count: int
    fc_bias: bool
    has_fc: bool
    has_lm_head: bool
    has_embed: bool
    has_d2t: bool
    #: Per-layer parameters the engine's draft class adds to the Llama layer (draft_classes.py).
    extra_layer_params: tuple[str, ...] = ()
    #: The class's attention parameters, fused tensors, renames and first-layer module (draft_classes.py).
    attention: tuple[str, ...] = LLAMA_ATTENTION
    stacked: tuple[tuple[str, str, str], ...] = ()
    renames: tuple[tuple[str, str], ...] | None = None
    first_layer: str | None = None
    #: Per-layer bias parameters the config asks for, with the field that does (behaviour layer_bias, bias.py).
    layer_bias: tuple[tuple[str, str], ...] = ()
    #: The source line where the class builds fc as a plain torch Linear, never quantized (draft_classes.py).
    plain_fc: str | None = None
    #: Whether the class's loader skips input_norm.* when it builds no input_norm (its class row,
    #: knowledge.draft_class_rows); None: the profile's norm_before_fc row says.
    input_norm_skipped: bool | None = None
    #: The class's own loader rule for a tensor no parameter has, and its source (its class row,
    #: knowledge.draft_class_rows ``unknown_key``); None: the profile's ``unknown_key`` row says.
    unknown_key: tuple[str, str] | None = None


@dataclass
class KeyResolution:
    """Where every checkpoint tensor went."""

    loaded: dict[str, list[str]] = field(default_factory=dict)  # engine parameter -> checkpoint names
    shards: dict[str, set[str]] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (checkpoint name, why)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # read and ignored by design (t2d)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (checkpoint name, the engine's error)
    d2t_name: str | None = None


def engine_parameters(profile: Snapshot, shape: DraftShape) -> set[str]:
    """The parameter names the engine's draft module has."""
    first_layer = shape.first_layer or profile.behaviours.first_layer
    params = {"model.norm.weight"}
    if shape.has_embed:
        params.add("model.embed_tokens.weight")
    if shape.has_fc:
        params.add("model.fc.weight")
        if shape.fc_bias:
            params.add("model.fc.bias")
    if shape.norm_before_fc:
        params.add("model.input_norm.weight")
    params |= {f"model.fc_norm.{i}.weight" for i in range(shape.fc_norm_count)}
    if shape.has_lm_head:
        params.add("lm_head.weight")
    if shape.has_d2t and profile.kind.d2t_is_parameter:
        params.add(D2T_PARAM)
    for index in range(shape.layers):
        prefix = "model.midlayer." if first_layer == "midlayer" else f"model.layers.{index}."
        params |= {prefix + name for name in shape.attention + LAYER_PARAMS + shape.extra_layer_params}
        params |= {prefix + name for name, _ in shape.layer_bias}
        params.add(prefix + "hidden_norm.weight")  # every layer has one; see unused_parameters
    return params


def never_read(name: str) -> bool:
    """Whether a draft parameter is built but never read: ``hidden_norm`` of layers >= 1, in an engine whose
    later layers apply input_layernorm only (vllm llama_eagle3.py LlamaDecoderLayer.forward, 0.11.1-0.32.0)."""
    return ".hidden_norm." in name and not name.startswith(("model.layers.0.", "model.midlayer."))


def unused_parameters(profile: Snapshot, shape: DraftShape) -> set[str]:
    """Parameters the engine builds but never uses (see :func:`never_read`)."""
    if profile.behaviours.later_layer_norm != "input_layernorm" or profile.behaviours.first_layer == "midlayer":
        return set()
    return {name for name in engine_parameters(profile, shape) if never_read(name)}


def resolve_keys(profile: Snapshot, names: list[str], params: set[str], shape: DraftShape | None = None) -> KeyResolution:
    """Send each checkpoint name through the engine's loader rules (the draft class's, where ``shape`` has them)."""
    out = KeyResolution()
    skipped = shape.input_norm_skipped if shape is not None else None
    own = shape.unknown_key if shape is not None else None
    rules = _ClassRules(STACKED + (shape.stacked if shape else ()),
                        shape.renames if shape and shape.renames is not None else profile.behaviours.renames,
                        profile.behaviours.norm_before_fc != "not-read" if skipped is None else skipped,
                        own[0] if own else profile.behaviours.unknown_key)
    resolver = _RESOLVERS[profile.kind.key_resolver]
    for name in sorted(names):
        resolver(profile, rules, name, params, out)
    return out


@dataclass(frozen=True)
class _ClassRules:
    stacked: tuple[tuple[str, str, str], ...]
    renames: tuple[tuple[str, str], ...]
    #: The loader skips input_norm.* when the class builds none (vLLM's skip_substrs, where the class reads it).
    input_norm_skipped: bool = True
    #: What the class's loader does with a tensor no parameter has (the profile's value set).
    unknown_key: str = "raise"

    def stack(self, name: str) -> tuple[str, str | None]:
        for weight, param, shard in self.stacked:
            if weight + "." in name:
                return name.replace(weight + ".", param + "."), shard
        return name, None

    def rename(self, name: str) -> str:
        for old, new in self.renames:
            name = name.replace(old, new)
        return name


def _load(out: KeyResolution, param: str, source: str, shard: str | None) -> None:
    out.loaded.setdefault(param, []).append(source)
    if shard:
        out.shards.setdefault(param, set()).add(shard)


def _sglang_name(profile: Snapshot, rules: _ClassRules, name: str, params: set[str], out: KeyResolution) -> None:
    if profile.behaviours.key_prefix == "add-model":
        _sglang_legacy_name(rules, name, params, out)
        return
    renamed = rules.rename(name)
    if _vocab_map_tensor(name, renamed, out):
        return
    stacked, shard = rules.stack(renamed)
    for candidate in (stacked, "model." + stacked):
        if candidate in params:
            _load(out, candidate, name, shard)
            return
    out.dropped.append((name, _why_dropped(renamed, params, profile)))


def _vocab_map_tensor(name: str, matched: str, out: KeyResolution) -> bool:
    """SGLang matches d2t / t2d as substrings: d2t becomes hot_token_id, t2d is skipped."""
    if "d2t" in matched:
        out.d2t_name = name
        return True
    if "t2d" in matched:
        out.ignored.append((name, "t2d is skipped by the loader (never used)"))
        return True
    return False


def _sglang_legacy_name(rules: _ClassRules, name: str, params: set[str], out: KeyResolution) -> None:
    if _vocab_map_tensor(name, name, out):
        return
    prefixed = name if "lm_head" in name else "model." + name
    stacked, shard = rules.stack(prefixed)
    if stacked in params:
        _load(out, stacked, name, shard)
    elif shard:
        out.refused.append((name, f"KeyError: '{stacked}'"))
    else:
        out.dropped.append((name, f"no parameter {prefixed} (logged 'Parameter {prefixed} not found in params_dict')"))


def _vllm_name(profile: Snapshot, rules: _ClassRules, name: str, params: set[str], out: KeyResolution) -> None:
    if "t2d" in name:
        out.ignored.append((name, "t2d is skipped by the loader (never used)"))
        return
    if "d2t" in name:
        out.d2t_name = name
        param = name.replace("d2t", D2T_PARAM)
        if param in params:
            _load(out, param, name, None)
        return  # no parameter (full vocab, vLLM >= 0.30): the vocab area reports the refusal
    prefixed = name if "lm_head" in name else "model." + name
    if any(part in prefixed for part in ALWAYS_DROPPED):
        out.dropped.append((name, "rotary caches and mask_hidden are always skipped"))
        return
    if prefixed.startswith("model.fc.") and "model.fc.weight" not in params:
        out.dropped.append((name, "fc is skipped when eagle_config.use_aux_hidden_state is false"))
        return
    if prefixed.startswith("model.input_norm.") and "model.input_norm.weight" not in params \
            and rules.input_norm_skipped:
        out.dropped.append((name, "input_norm is skipped when norm_before_fc is false"))
        return
    renamed = rules.rename(prefixed)
    stacked, shard = rules.stack(renamed)
    if stacked in params:
        _load(out, stacked, name, shard)
        return
    if rules.unknown_key == "drop":
        out.dropped.append((name, _why_dropped(renamed, params, profile)))
        return
    if rules.unknown_key == "raise-except-bias" and name.endswith(".bias"):
        out.dropped.append((name, "unexpected *.bias tensors are ignored (debug log only)"))
        return
    error = {"raise-except-bias": "ValueError: There is no module or parameter named",
             "raise-strict": "ValueError: Received parameters not in model:"}.get(rules.unknown_key, "KeyError:")
    out.refused.append((name, f"{error} '{stacked}'"))


#: Each key resolver (the engine's ``key_resolver``), as its loader matches names.
_RESOLVERS = {"as-named-or-model-prefixed": _sglang_name, "model-prefixed": _vllm_name}


def _why_dropped(renamed: str, params: set[str], profile: Snapshot) -> str:
    if renamed.startswith(("layers.", "model.layers.")) and profile.behaviours.first_layer == "midlayer":
        return "the first draft layer is model.midlayer.* in this version; layers.* names match nothing"
    if "q_norm." in renamed or "k_norm." in renamed:
        return "this engine's draft class has no per-head q/k norm (a Llama layer): the attention runs without it"
    if renamed.startswith("model.model."):
        return "a doubled model. prefix matches nothing"
    if renamed.startswith("model.fc_norm.") and not any(p.startswith("model.fc_norm.") for p in params):
        return "this release's draft class builds no fc_norm; the loader skips it without a log"
    return "no parameter has this name; the loader skips it without a log"


def fused_complete(param: str, shards: set[str]) -> bool:
    """Whether a fused parameter (qkv, gate_up) has every shard it needs among ``shards``; an unfused one always has."""
    for marker, needed in SHARDS.items():
        if marker in param:
            return set(needed) <= shards
    return True


@dataclass(frozen=True)
class KeyLoad:
    """The class's parameters, those the loader must fill, where each tensor went, and fused parameters
    left with a shard missing."""

    params: frozenset[str]
    required: frozenset[str]
    resolution: KeyResolution
    incomplete: tuple[str, ...]


def load_keys(profile: Snapshot, names: list[str], shape: DraftShape) -> KeyLoad:
    """Everything key resolution says about ``names`` for the class ``shape`` describes, in one call."""
    params = engine_parameters(profile, shape)
    res = resolve_keys(profile, names, params, shape)
    incomplete = tuple(p for p, shards in res.shards.items() if not fused_complete(p, shards))
    return KeyLoad(frozenset(params), frozenset(params - unused_parameters(profile, shape)), res, incomplete)
