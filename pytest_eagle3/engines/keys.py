"""Area ``keys``: where every checkpoint tensor lands in the engine's draft class, and what the load leaves.

A pure function of the fact sheet, the profile and the draft's shape (the
:class:`~pytest_eagle3.engines.layers.DraftShape` area ``layers`` found the class builds). Read top-down:

1. :func:`plan_keys`, the area: the class's parameters, each checkpoint name through the loader, then what is
   refused, silently dropped or left uninitialised, each filed under ``keys`` with its fix.
2. The class's parameters: the Llama EAGLE-3 draft class of each engine (``LlamaForCausalLMEagle3`` in SGLang,
   ``Eagle3LlamaForCausalLM`` in vLLM) as ``DraftShape`` sizes it, less those built and never read.
3. Key resolution (:func:`resolve_keys`): the loader's name rules: stacked (fused) tensors, renames, the first
   layer's module, a tensor no parameter has; from the profile (behaviours ``key_prefix``, ``first_layer``,
   ``renames``, ``unknown_key``) or the draft class's own rows where it has them.
4. What the load leaves: quantization companions, unset biases, a bypassed fc; the messages and fixes.
5. :func:`plan_mlp`: a llama4_text draft's MLP tensors against the width the engine builds (``mlp_width``).
6. :func:`plan_unreached`: weights of a module the class loads and its forward path never reaches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.layers import ClassFlags, DraftShape, field_of, is_layer_bias
from pytest_eagle3.engines.param_shapes import D2T_PARAM, mlp_width, parameter_shapes
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.engines.runtime import draft_built_with
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.knowledge.snapshot import VLLM, Snapshot
from pytest_eagle3.rules.quantized import PACKED_SUFFIX, is_scale, not_modelled
from pytest_eagle3.rules.vocab_map import ACCEPTANCE_NOTE
from pytest_eagle3.words import plural


# ---------------------------------------------------------------- the area
@dataclass(frozen=True)
class Keys:
    """Tensor -> parameter, what is dropped and left uninitialised, and the class's parameters and shapes."""

    #: Every parameter the class builds (a set: what key resolution matches against).
    params: frozenset[str]
    parameters: FrozenDict[str, tuple[str, ...]]
    dropped: FrozenDict[str, str]
    uninitialised: tuple[str, ...]
    #: The checkpoint's d2t tensor as the loader found it, None when there is none.
    d2t_name: str | None
    built: tuple[str, ...]
    shapes: FrozenDict[str, tuple[int, ...]]
    filed: Filed = Filed()


#: The buffer vLLM 0.22-0.33 registers for a P-EAGLE draft under parallel drafting (llama_eagle3.py).
_MASK_BUFFER = "mask_hidden"


def plan_keys(sheet: FactSheet, snapshot: Snapshot, shape: DraftShape, fc_states: int) -> Keys:
    """Resolve the checkpoint's tensor names against the parameters ``shape``'s class builds."""
    out = Filing()
    load = _load_keys(snapshot, list(sheet.tensors), shape)
    params, required, res = load.params, load.required, load.resolution
    loaded = {k: tuple(v) for k, v in res.loaded.items()}
    if sheet.peagle and snapshot.peagle == "parallel-drafting":
        # llama_eagle3.py load_weights under parallel drafting: mask_hidden is copied into its buffer
        masks = [(n, why) for n, why in res.dropped if "mask_hidden" in n]
        res.dropped[:] = [d for d in res.dropped if d not in masks]
        if masks:
            loaded[_MASK_BUFFER] = tuple(n for n, _ in masks)
    parameters = FrozenDict(dict(sorted(loaded.items())))
    shared = {"model.embed_tokens.weight", "lm_head.weight"}
    missing = [p for p in sorted(required) if p not in res.loaded and p not in shared and p != "draft_id_to_target_id"]
    uninitialised = tuple(missing) + load.incomplete
    refused, dropped, packed = _quantized_keys(out, sheet, snapshot, list(res.refused), list(res.dropped), shape.plain_fc)
    if packed:  # the scheme's parameters replace the weights': what stays unset is not simulated either
        missing, uninitialised = [], ()
    bypassed = _fc_bypassed(out, sheet, snapshot, uninitialised)
    uninitialised = tuple(p for p in uninitialised if p not in bypassed)
    unset_bias = tuple(p for p in uninitialised if is_layer_bias(p))
    if unset_bias:  # filed on their own (their fix is the config flag); still in Keys.uninitialised
        _file_unset_bias(out, snapshot, unset_bias, dict(shape.layer_bias))
    others = tuple(p for p in uninitialised if p not in unset_bias)
    if snapshot.behaviours.unloaded_parameter == "refused" and not packed:  # the strict check counts every parameter
        others += tuple(p for p in sorted(required & (shared | {D2T_PARAM}))
                        if p not in res.loaded and not _not_required(sheet, snapshot, p))
    for name, error in refused:
        out.refuse("keys", Finding(
            "key-refused",
            f"{snapshot.label} refuses tensor {name} at load: {error}",
            (Evidence(name, "no matching draft parameter", "names the loader maps to a parameter"),),
            _key_fix(snapshot, [name]),
            (_unknown_key_rule(snapshot, shape), f"rule: {snapshot.source('key_prefix')}"),
        ))
    lost = {n: why for n, why in dropped if not _harmless_drop(n, why)}
    if lost:
        names = sorted(lost)
        out.lose("keys", Finding(
            "dropped",
            f"{snapshot.label} will {'silently ' if snapshot.kind.loading.drop_logged is None else ''}drop "
            f"{plural(len(names), 'tensor')}: {names[0]}"
            + (f" ... ({len(names)})" if len(names) > 1 else "") + f" ({lost[names[0]]})",
            (Evidence("dropped", short(names), "every tensor loaded into a parameter"),),
            _key_fix(snapshot, names),
            (_unknown_key_rule(snapshot, shape), f"rule: {snapshot.source('first_layer')}"),
        ))
    if others:
        strict = snapshot.behaviours.unloaded_parameter == "refused"
        (out.refuse if strict else out.lose)("keys", Finding(
            "not-initialised" if strict else "uninitialised",
            _unloaded_message(snapshot, others),
            (Evidence("uninitialised", short(others), "every parameter loaded from the checkpoint"),),
            _key_fix(snapshot, sorted(lost)) if lost else _unset_fix(sheet, snapshot, others),
            (f"rule: {snapshot.source('first_layer')}", f"rule: {snapshot.source('unloaded_parameter')}"),
        ))
    shapes = parameter_shapes(snapshot.kind, sheet.config, sheet.speculators, params, fc_states or 3,
                              sheet.draft_geometry, snapshot.behaviours.mlp_width)
    return Keys(params, parameters, FrozenDict(dict(res.dropped)), uninitialised, res.d2t_name,
                tuple(sorted(params)), FrozenDict(shapes), out.filed())


# ---------------------------------------------------------------- the class's parameters
_LAYER_PARAMS = (
    "mlp.gate_up_proj.weight",
    "mlp.down_proj.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
)
#: Shards a fused parameter needs before it counts as loaded.
_SHARDS = {".qkv_proj.": ("q", "k", "v"), ".gate_up_proj.": ("gate", "up"), ".fused_qkv_a_proj.": ("q_a", "kv_a"),
           ".fused_qkv_a_proj_with_mqa.": ("q_a", "kv_a")}


@dataclass(frozen=True)
class _KeyLoad:
    """The class's parameters, those the loader must fill, where each tensor went, and fused parameters
    left with a shard missing."""

    params: frozenset[str]
    required: frozenset[str]
    resolution: KeyResolution
    incomplete: tuple[str, ...]


def _load_keys(profile: Snapshot, names: list[str], shape: DraftShape) -> _KeyLoad:
    """Everything key resolution says about ``names`` for the class ``shape`` describes, in one call."""
    params = _engine_parameters(profile, shape)
    res = resolve_keys(profile, names, params, shape)
    incomplete = tuple(p for p, shards in res.shards.items() if not _fused_complete(p, shards))
    return _KeyLoad(frozenset(params), frozenset(params - _unused_parameters(profile, shape)), res, incomplete)


def _engine_parameters(profile: Snapshot, shape: DraftShape) -> set[str]:
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
    if shape.has_d2t and profile.kind.loading.d2t_is_parameter:
        params.add(D2T_PARAM)
    for index in range(shape.layers):
        prefix = "model.midlayer." if first_layer == "midlayer" else f"model.layers.{index}."
        params |= {prefix + name for name in shape.attention + _LAYER_PARAMS + shape.extra_layer_params}
        params |= {prefix + name for name, _ in shape.layer_bias}
        params.add(prefix + "hidden_norm.weight")  # every layer has one; see _unused_parameters
    return params


def never_read(name: str) -> bool:
    """Whether a draft parameter is built but never read: ``hidden_norm`` of layers >= 1, in an engine whose
    later layers apply input_layernorm only (vllm llama_eagle3.py LlamaDecoderLayer.forward, 0.11.1-0.32.0)."""
    return ".hidden_norm." in name and not name.startswith(("model.layers.0.", "model.midlayer."))


def _unused_parameters(profile: Snapshot, shape: DraftShape) -> set[str]:
    """Parameters the engine builds but never uses (see :func:`never_read`)."""
    if profile.behaviours.later_layer_norm != "input_layernorm" or profile.behaviours.first_layer == "midlayer":
        return set()
    return {name for name in _engine_parameters(profile, shape) if never_read(name)}


def _fused_complete(param: str, shards: set[str]) -> bool:
    """Whether a fused parameter (qkv, gate_up) has every shard it needs among ``shards``; an unfused one always has."""
    for marker, needed in _SHARDS.items():
        if marker in param:
            return set(needed) <= shards
    return True


# ---------------------------------------------------------------- key resolution: the loader's name rules
#: Checkpoint sub-names stacked into one engine parameter, with the shard they fill.
#: Source: sglang llama_eagle3.py / vllm llama_eagle3.py stacked_params_mapping.
_STACKED = (
    (".q_proj", ".qkv_proj", "q"),
    (".k_proj", ".qkv_proj", "k"),
    (".v_proj", ".qkv_proj", "v"),
    (".gate_proj", ".gate_up_proj", "gate"),
    (".up_proj", ".gate_up_proj", "up"),
)
_ALWAYS_DROPPED = ("rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached", "mask_hidden")


@dataclass
class KeyResolution:
    """Where every checkpoint tensor went."""

    loaded: dict[str, list[str]] = field(default_factory=dict)  # engine parameter -> checkpoint names
    shards: dict[str, set[str]] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (checkpoint name, why)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # read and ignored by design (t2d)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (checkpoint name, the engine's error)
    d2t_name: str | None = None


def resolve_keys(profile: Snapshot, names: list[str], params: set[str], shape: DraftShape | None = None) -> KeyResolution:
    """Send each checkpoint name through the engine's loader rules (the draft class's, where ``shape`` has them)."""
    out = KeyResolution()
    skipped = shape.input_norm_skipped if shape is not None else None
    own = shape.unknown_key if shape is not None else None
    rules = _ClassRules(_STACKED + (shape.stacked if shape else ()),
                        shape.renames if shape and shape.renames is not None else profile.behaviours.renames,
                        profile.behaviours.norm_before_fc != "not-read" if skipped is None else skipped,
                        own[0] if own else profile.behaviours.unknown_key)
    resolver = _RESOLVERS[profile.kind.loading.key_resolver]
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
    if any(part in prefixed for part in _ALWAYS_DROPPED):
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
    words = REFUSAL_WORDS.get(rules.unknown_key, "KeyError: '{param}'")
    out.refused.append((name, words.format(param=stacked, tensor=name)))


#: The words each loader refuses an unknown tensor with (``unknown_key`` -> template; KeyError otherwise), naming
#: the parameter it looked for (``param``) or the checkpoint's tensor (``tensor``) as that loader does.
REFUSAL_WORDS = {"raise-except-bias": "ValueError: There is no module or parameter named '{param}'",
                 "raise-strict": "ValueError: Received parameters not in model: '{param}'",
                 "raise-param-path": "ValueError: '{param}' is not a valid param path",
                 "raise-can-not-map": "ValueError: Can not map tensor '{tensor}'"}


#: Each key resolver (the engine's ``key_resolver``), as its loader matches names.
_RESOLVERS = {"as-named-or-model-prefixed": _sglang_name, "model-prefixed": _vllm_name}


def _why_dropped(renamed: str, params: set[str], profile: Snapshot) -> str:
    if renamed.startswith(("layers.", "model.layers.")) and profile.behaviours.first_layer == "midlayer":
        return "the first draft layer is model.midlayer.* in this version; layers.* names match nothing"
    if "q_norm." in renamed or "k_norm." in renamed:
        return "this engine's draft class has no per-head q/k norm (a Llama layer): the attention runs without it"
    if renamed.startswith("model.model."):
        return "a doubled model. prefix matches nothing"
    skipped = profile.kind.loading.drop_logged or "the loader skips it without a log"
    if renamed.removeprefix("model.").startswith("fc_norm.") and not any(
            p.removeprefix("model.").startswith("fc_norm.") for p in params):
        return f"this release's draft class builds no fc_norm; {skipped}"
    return f"no parameter has this name; {skipped}"


# ---------------------------------------------------------------- what the load leaves, filed
def _not_required(sheet: FactSheet, snapshot: Snapshot, name: str) -> bool:
    """A parameter a strict loader does not demand from the checkpoint: the target's is used (lm_head when
    absent; embed_tokens when absent, or always when the widths agree), no d2t means the identity, or llama.cpp's
    d2t is a tensor, not a parameter (engine.vocab says what its absence costs). Behaviours lm_head_source,
    embed_source, d2t_absent."""
    b = snapshot.behaviours
    if name == D2T_PARAM:
        return snapshot.kind.loading.d2t_is_converted_tensor or b.d2t_absent == "identity"
    if name == "lm_head.weight":
        return b.lm_head_source == "target-if-absent"
    return name == "model.embed_tokens.weight" and (b.embed_source in ("target-if-absent", "target-if-absent-or-equal") or (
        b.embed_source == "target-unless-hidden-differs" and sheet.target_hidden_size == sheet.hidden_size))


def _fc_bypassed(out: Filing, sheet: FactSheet, snapshot: Snapshot, unset: tuple[str, ...]) -> tuple[str, ...]:
    """fc parameters a release builds but never runs: ``use_aux_hidden_state: false`` honoured by a release that
    still builds fc (SGLang: the target sends one hidden state, fc is skipped by the width check), so their initial
    values cost nothing. A release that ignores the flag runs fc (engine.fc says so)."""
    if sheet.use_aux_hidden_state is not False or snapshot.behaviours.use_aux_hidden_state != "honoured":
        return ()
    fc = tuple(p for p in unset if p.removeprefix("model.").startswith("fc."))
    if fc:
        out.note(f"{snapshot.label} builds {', '.join(fc)} with no checkpoint tensor, but use_aux_hidden_state: false "
                 f"sends one hidden state and fc is never run (rule: {snapshot.source('use_aux_hidden_state')}; "
                 f"{snapshot.source('fc_applied')})")
    return fc


def _unset_fix(sheet: FactSheet, snapshot: Snapshot, unset: tuple[str, ...]) -> str:
    if sheet.use_aux_hidden_state is False and any(p.removeprefix("model.").startswith("fc.") for p in unset):
        return ("the draft says use_aux_hidden_state: false and has no fc; serve with "
                f"{snapshot.serve_with('use_aux_hidden_state', lambda v: v == 'honoured')}, which honours it")
    return "ship the missing tensors under the names the engine expects"


def _quantized(name: str) -> bool:
    return is_scale(name) or name.endswith(PACKED_SUFFIX)


def _quantized_keys(out: Filing, sheet: FactSheet, snapshot: Snapshot, refused: list[tuple[str, str]],
                    dropped: list[tuple[str, str]], plain_fc: str | None = None,
                    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], bool]:
    """Scale tensors where the engine builds the draft with its own quantization_config (``draft_built_with``, the
    rule engine.runtime reads too): their parameters are the scheme's (static or dynamic input scales, the modules
    it ignores), which the key map does not simulate: not modelled. Where it builds the draft unquantized or with
    the target's quantization, they stay refused or dropped as resolved (engine.runtime refuses the draft too).
    The flag: packed weights (``weight_packed``) replace the weights' parameters, so no parameter left unset is
    judged either."""
    built = draft_built_with(snapshot, sheet)
    if built is None or built != sheet.draft_quantization:
        return refused, dropped, False
    fc = _plain_fc_loss(out, snapshot, [n for n, _ in refused + dropped if _quantized(n)], plain_fc)
    refused, dropped = [(n, e) for n, e in refused if n not in fc], [(n, w) for n, w in dropped if n not in fc]
    scales = sorted({n for n, _ in refused + dropped if _quantized(n)})
    if scales:
        out.unknown("keys", not_modelled(
            f"the key plan of {snapshot.label}", scales,
            f"probe.load with {snapshot.label} installed (--eagle3-{snapshot.engine}-python)",
            f"it builds the draft's layers with the draft's own quantization_config ({built}), whose method declares "
            f"the scale parameters (rule: {snapshot.source('target_quantization')})"))
    return ([(n, e) for n, e in refused if not _quantized(n)], [(n, w) for n, w in dropped if not _quantized(n)],
            any(n.endswith(PACKED_SUFFIX) for n in scales))


def _plain_fc_loss(out: Filing, snapshot: Snapshot, quantized: list[str], plain_fc: str | None) -> set[str]:
    """fc's quantization companions where the class builds fc as a plain torch Linear (``DraftClass.plain_fc``):
    no parameter takes them, and fc.weight is copied in as if it were unquantized. Filed as a loss; returned."""
    if plain_fc is None:
        return set()
    fc = sorted(n for n in quantized if n.removeprefix("model.").startswith("fc."))
    if fc:
        out.lose("keys", Finding(
            "fc-quantized",
            f"{snapshot.label} builds fc as a plain torch Linear, never quantized: {short(fc, 2)} get no parameter and "
            "are skipped, and the quantized fc.weight is copied in without its scale",
            (Evidence("fc quantization tensors", short(fc), "an unquantized fc (no scale tensors)"),),
            "keep fc unquantized: add it to the quantization config's ignored layers and save fc.weight in the "
            f"draft's float dtype, or serve with {snapshot.serve_with('target_quantization', lambda v: v == 'draft', engine=VLLM)}, "
            "which builds fc with the draft's quantization_config",
            (f"rule: {plain_fc}", f"rule: {snapshot.source('target_quantization')}"),
        ))
    return set(fc)


def _unloaded_message(snapshot: Snapshot, names: tuple[str, ...]) -> str:
    if snapshot.behaviours.unloaded_parameter == "refused":
        return (f"{snapshot.label} refuses the draft: {len(names)} draft parameters get no checkpoint tensor ({names[0]}, "
                "...): ValueError 'Following weights were not initialized from checkpoint' at startup")
    return f"{snapshot.label} leaves {len(names)} draft parameters at their initial values ({names[0]}, ...): {ACCEPTANCE_NOTE}"


def _file_unset_bias(out: Filing, snapshot: Snapshot, names: tuple[str, ...], fields: dict[str, str]) -> None:
    """Bias parameters the config asks for (attention_bias / bias / mlp_bias) and the checkpoint does not fill."""
    field = field_of(names[0], fields)
    asked = sorted({field_of(n, fields) for n in names})
    flags = " and ".join(f"{f}: true" for f in asked)
    fix = (f"set {' and '.join(asked)} to false in the draft's config.json (the draft was trained without these "
           f"biases), or ship the bias tensors ({names[0].removeprefix('model.')}, ...)")
    evidence = (Evidence(f"config.json {field}", "true", "false, or the bias tensors in the checkpoint"),
                Evidence("bias parameters without a tensor", short(names), "none"))
    sources = (f"rule: {snapshot.source('layer_bias')}", f"rule: {snapshot.source('unset_bias')}",
               f"rule: {snapshot.source('unloaded_parameter')}")
    if snapshot.behaviours.unloaded_parameter == "refused":
        out.refuse("keys", Finding(
            "not-initialised",
            f"{snapshot.label} builds {len(names)} bias parameters because config.json sets {flags}, and the checkpoint "
            f"has none ({names[0]}, ...): ValueError 'Following weights were not initialized from checkpoint' at startup",
            evidence, fix, sources))
    elif snapshot.behaviours.unset_bias == "zeros":
        out.note(f"{snapshot.label} builds {len(names)} bias parameters for {flags} ({names[0]}, ...) that no tensor fills: "
                 "they stay zero, the same as no bias")
    else:
        out.lose("keys", Finding(
            "bias-unset",
            f"{snapshot.label} builds {len(names)} bias parameters because config.json sets {flags}, and the checkpoint "
            f"has none ({names[0]}, ...): they keep torch.empty memory (arbitrary values) added to every "
            f"projection: {ACCEPTANCE_NOTE}",
            evidence, fix, sources))


def _unknown_key_rule(snapshot: Snapshot, shape: DraftShape) -> str:
    """The rule for a tensor no parameter has: the draft class's own loader row where it has one."""
    return f"rule: {shape.unknown_key[1]}" if shape.unknown_key else f"rule: {snapshot.source('unknown_key')}"


def _harmless_drop(name: str, why: str) -> bool:
    return "rotary" in why or "mask_hidden" in why or "use_aux_hidden_state is false" in why


def _is_fc_norm(name: str) -> bool:
    return name.removeprefix("model.").startswith("fc_norm.")


def _key_fix(snapshot: Snapshot, names: list[str] | None = None) -> str:
    names = names or []
    if names and all(_is_fc_norm(n) for n in names):  # the module is absent in this release: no name loads them
        return ("no name loads them: this release's draft class builds no fc_norm; serve with an engine version "
                "that applies fc_norm (see engine.norms), or retrain with fc_norm=False")
    if snapshot.kind.loading.key_fix_renames_first_layer and snapshot.behaviours.first_layer == "midlayer" and any(
        n.startswith(("layers.", "model.layers.")) for n in names
    ):
        return ("rename layers.0.* -> midlayer.* in a copy of the checkpoint, or serve with "
                f"{snapshot.serve_with('first_layer', lambda v: v == 'layers')}")
    if snapshot.kind.loading.key_fix_strips_model_prefix and any(n.startswith("model.") for n in names):
        return "strip the model. prefix from the draft's tensor names (vLLM adds it)"
    return "rename the tensors to the engine's names: midlayer.* or layers.N.*, fc.weight, norm.weight, lm_head.weight, d2t"


# ---------------------------------------------------------------- the MLP width (behaviour mlp_width)
#: Checkpoint sub-names of the MLP and the axis that holds the intermediate width.
_MLP_AXIS = {".mlp.gate_proj.": 0, ".mlp.up_proj.": 0, ".mlp.down_proj.": 1}


def plan_mlp(sheet: FactSheet, snapshot: Snapshot, parameters: Mapping[str, tuple[str, ...]]) -> Filed:
    """A llama4_text draft whose MLP tensors are not the intermediate_size_mlp the engine builds."""
    rule = snapshot.behaviours.mlp_width
    width, field = mlp_width(rule, sheet.config)
    if width is None or field != "intermediate_size_mlp":
        return Filed()  # a plain intermediate_size mismatch is the config.shapes contract's (rules/shapes.py)
    found = _mismatch(sheet, parameters, width)
    if found is None:
        return Filed()
    name, actual = found
    out = Filing()
    written = sheet.config.get(field)
    value = f"{written}" if written is not None else f"absent: Llama4TextConfig's default {width}"
    built = (f"{snapshot.label} builds the draft's MLP {width} wide from {field} ({value}) because model_type is "
             f"llama4_text, but {name} is {actual} wide")
    fix = (f'set "intermediate_size_mlp": {actual} in the draft\'s config.json (SGLang reads it for model_type '
           'llama4_text), or set "model_type": "llama"')
    evidence = (Evidence(f"config.json {field}", value, str(actual)),
                Evidence(f"{name} intermediate width", str(actual), str(width)))
    sources = (f"rule: {snapshot.source('mlp_width')}",)
    if actual < width and rule.endswith("-padded"):
        out.note(f"{built}: the loader zero-pads it on GPU (the same MLP, {width / actual:.0f}x its memory and "
                 f"compute; {fix})")
    elif actual < width:
        out.refuse("keys", Finding("mlp-width", f"{built}: the loader's narrow fails at startup (RuntimeError)",
                                   evidence, fix, sources))
    else:
        out.lose("keys", Finding("mlp-width", f"{built}: the loader keeps its first {width} (the rest is lost): "
                                 "the draft's MLP is not the trained one", evidence, fix, sources))
    return out.filed()


def _mismatch(sheet: FactSheet, parameters: Mapping[str, tuple[str, ...]], width: int) -> tuple[str, int] | None:
    loaded = {name for names in parameters.values() for name in names}
    for name in sorted(loaded):
        axis = next((a for part, a in _MLP_AXIS.items() if part in name and name.endswith(".weight")), None)
        shape = sheet.shapes.get(name)
        if axis is not None and shape and len(shape) == 2 and shape[axis] != width:
            return name, shape[axis]
    return None


# ---------------------------------------------------------------- modules the class loads and never reaches
def plan_unreached(snapshot: Snapshot, draft_class: str | None, parameters: Mapping[str, object],
                   flags: ClassFlags) -> Filed:
    """Weights of the class's own module that its forward path never reaches (the scan's ``unreached``), filled by
    this checkpoint: loaded, not applied; a loss under ``keys`` with the class's row. The norm-flag modules
    (fc_norm, input_norm) are the norms area's (``flags.unused``)."""
    out = Filing()
    row = snapshot.class_row(draft_class, "unreached")
    if row is None or not row.value:
        return out.filed()
    for module in row.value:
        name = [part for part in module.split(".") if part != "*"][-1]
        if name in _FLAG_MODULES.values() and any(f in flags.rows for f in _FLAG_MODULES):
            continue
        pattern = re.compile("^" + re.escape(module).replace(r"\*", r"\d+") + r"\.")
        filled = sorted(p for p in parameters if pattern.match(p))
        if not filled:
            continue
        out.lose("keys", Finding(
            "loaded-not-applied",
            f"{snapshot.label}'s {draft_class} loads {module} ({plural(len(filled), 'tensor')}) but its forward path never uses it "
            "(loaded, not applied): acceptance is what the draft gets without that module",
            (Evidence(module, f"loaded into {', '.join(filled[:3])}{' ...' if len(filled) > 3 else ''}",
                      "a module the forward path applies"),),
            f"serve with an engine version whose {draft_class} applies {module}",
            (f"rule: {row.source}",),
        ))
    return out.filed()


#: The norm flags whose modules the norms area judges (their rows say loaded, not applied), and the modules.
_FLAG_MODULES = {"fc_norm": "fc_norm", "norm_before_fc": "input_norm"}
