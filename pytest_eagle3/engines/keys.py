"""Area ``keys``: where every checkpoint tensor lands, what is dropped or refused, what stays uninitialised.

A pure function of the fact sheet, the profile and the draft's shape (area ``layers``); the resolution
itself is ``key_resolution.resolve_keys``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.engines.bias import field_of, is_layer_bias
from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.frozen import FrozenDict
from pytest_eagle3.engines.key_resolution import D2T_PARAM, DraftShape, load_keys
from pytest_eagle3.engines.param_shapes import parameter_shapes
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.engines.serving import draft_built_with
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.knowledge.snapshot import VLLM, Snapshot
from pytest_eagle3.rules.quantized import PACKED_SUFFIX, is_scale, not_modelled
from pytest_eagle3.rules.vocab_map import ACCEPTANCE_NOTE
from pytest_eagle3.words import plural


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
MASK_BUFFER = "mask_hidden"


def plan_keys(sheet: FactSheet, snapshot: Snapshot, shape: DraftShape, fc_states: int) -> Keys:
    """Resolve the checkpoint's tensor names against the parameters ``shape``'s class builds."""
    out = Filing()
    load = load_keys(snapshot, list(sheet.tensors), shape)
    params, required, res = load.params, load.required, load.resolution
    loaded = {k: tuple(v) for k, v in res.loaded.items()}
    if sheet.peagle and snapshot.peagle == "parallel-drafting":
        # llama_eagle3.py load_weights under parallel drafting: mask_hidden is copied into its buffer
        masks = [(n, why) for n, why in res.dropped if "mask_hidden" in n]
        res.dropped[:] = [d for d in res.dropped if d not in masks]
        if masks:
            loaded[MASK_BUFFER] = tuple(n for n, _ in masks)
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
            f"{snapshot.label} will silently drop {plural(len(names), 'tensor')}: {names[0]}"
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


def _not_required(sheet: FactSheet, snapshot: Snapshot, name: str) -> bool:
    """A parameter a strict loader does not demand from the checkpoint: the target's is used (lm_head when
    absent; embed_tokens when absent, or always when the widths agree), no d2t means the identity, or llama.cpp's
    d2t is a tensor, not a parameter (engine.vocab says what its absence costs). Behaviours lm_head_source,
    embed_source, d2t_absent."""
    b = snapshot.behaviours
    if name == D2T_PARAM:
        return snapshot.kind.d2t_is_converted_tensor or b.d2t_absent == "identity"
    if name == "lm_head.weight":
        return b.lm_head_source == "target-if-absent"
    return name == "model.embed_tokens.weight" and (b.embed_source == "target-if-absent" or (
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
    if snapshot.kind.key_fix_renames_first_layer and snapshot.behaviours.first_layer == "midlayer" and any(
        n.startswith(("layers.", "model.layers.")) for n in names
    ):
        return ("rename layers.0.* -> midlayer.* in a copy of the checkpoint, or serve with "
                f"{snapshot.serve_with('first_layer', lambda v: v == 'layers')}")
    if snapshot.kind.key_fix_strips_model_prefix and any(n.startswith("model.") for n in names):
        return "strip the model. prefix from the draft's tensor names (vLLM adds it)"
    return "rename the tensors to the engine's names: midlayer.* or layers.N.*, fc.weight, norm.weight, lm_head.weight, d2t"
