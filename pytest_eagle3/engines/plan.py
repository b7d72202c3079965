"""Load plans: what one engine version will do with a checkpoint, computed from its profile.

``load_plan(ckpt, engine_version, target=None)`` returns a :class:`LoadPlan`: tensor -> parameter,
dropped tensors, parameters left uninitialised, the effective draft -> target map, the physical
target layers fed to the draft, the width reaching ``fc`` and whether ``fc`` runs, the norms
applied, where embed_tokens and lm_head come from; plus :class:`Issue` s, each a finding filed
under the contract area that judges it, marked ``refused`` (the engine will not start) or ``loss``
(it starts and acceptance suffers).
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.checkpoint import Checkpoint, CheckpointReadError, TargetModel
from pytest_eagle3.engines import draft_classes
from pytest_eagle3.engines.aux import plan_aux
from pytest_eagle3.engines.config_view import EngineView, engine_view, lookup
from pytest_eagle3.engines.draft_classes import LLAMA_ATTENTION
from pytest_eagle3.engines.geometry import plan_geometry
from pytest_eagle3.engines.keymap import (
    DraftShape,
    KeyResolution,
    engine_parameters,
    fused_complete,
    resolve_keys,
    unused_parameters,
)
from pytest_eagle3.engines.loadplan import (
    LOADS,
    LOADS_WITH_LOSS,
    LOSS,
    REFUSED,
    AuxPlan,
    FcPlan,
    Issue,
    LoadPlan,
    Measured,
)
from pytest_eagle3.engines.param_shapes import parameter_shapes
from pytest_eagle3.engines.producer import plan_producer
from pytest_eagle3.engines.profiles import Profile, profile
from pytest_eagle3.engines.runtime import plan_runtime
from pytest_eagle3.engines.sharing import plan_sharing
from pytest_eagle3.engines.versions import SGLANG, VLLM, EngineVersion
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.rules.draft_kind import classify_checkpoint, not_a_draft_finding
from pytest_eagle3.rules.vocab import ACCEPTANCE_NOTE

__all__ = ["LOADS", "LOADS_WITH_LOSS", "LOSS", "REFUSED", "AuxPlan", "FcPlan", "Issue", "LoadPlan", "Measured",
           "load_plan"]


def load_plan(ckpt: Checkpoint, engine: EngineVersion, target: TargetModel | None = None,
              convention: str | None = None, measured: Measured | None = None) -> LoadPlan:
    """Compute what ``engine`` will do with ``ckpt`` (and the target, when known).

    ``measured``: the layer inputs (and embedding) the draft was trained with, as the reference
    measurement settled them; it overrules every convention assumption (``plan.aux.basis``).
    """
    prof = profile(engine)
    raw = ckpt.config_raw or {}
    plan = LoadPlan(engine, None, measured=measured)
    view = engine_view(raw, prof)
    not_a_draft = not_a_draft_finding(classify_checkpoint(ckpt))
    if not_a_draft is not None:
        plan.refuse("architecture", not_a_draft)
        return plan
    if not _architecture(plan, prof, view, raw) or _rewritten_to_mtp(plan, prof, view):
        return plan
    shape = _draft_shape(plan, prof, view, ckpt, target)
    params = engine_parameters(prof, shape)
    resolution = resolve_keys(prof, list(ckpt.tensors), params, shape)
    _keys(plan, prof, ckpt, resolution, params - unused_parameters(prof, shape), shape)
    _shapes(plan, prof, view, ckpt)
    _built(plan, prof, view, params)
    _mla_rope(plan, prof, view)
    if shape.attention == LLAMA_ATTENTION:  # q/k/v geometry; an MLA class has latent projections instead
        plan_geometry(plan, prof, view, ckpt)
    _vocab(plan, prof, view, ckpt, resolution, target)
    plan_aux(plan, prof, view, ckpt, target, convention, measured)
    _fc(plan, prof, view, ckpt, target)
    _norms(plan, prof, view, ckpt)
    _embeddings(plan, prof, view, ckpt, target, resolution)
    plan_producer(plan, prof, view, ckpt, params)
    plan.runtime = plan_runtime(plan, prof, view, target)
    return plan


# ---------------------------------------------------------------- architecture and config format

def _architecture(plan: LoadPlan, prof: Profile, view: EngineView, raw: dict[str, Any]) -> bool:
    if view.speculators:
        if not prof.value("speculators_format"):
            plan.refuse("architecture", Finding(
                "speculators-format",
                f"{prof.label} cannot read a speculators-format config: startup fails "
                "('Unrecognized model ... Should have a model_type key')",
                (Evidence("config.json", "speculators_model_type / transformer_layer_config",
                          "a flat HF config with architectures ['LlamaForCausalLMEagle3']"),),
                "convert the config for SGLang: flatten transformer_layer_config, set architectures "
                "['LlamaForCausalLMEagle3'], put the aux ids in eagle_config.eagle_aux_hidden_state_layer_ids",
                (f"rule: {prof.source('speculators_format')}",),
            ))
            return False
        allowed = prof.value("speculators_model_types")
        model_type = str(view.config.get("model_type", ""))
        if "*" not in allowed and model_type not in allowed:
            plan.refuse("architecture", Finding(
                "speculators-model-type",
                f"{prof.label} maps speculators model_type {model_type!r} to no draft class: ValueError at startup",
                (Evidence("transformer_layer_config.model_type", repr(model_type), " or ".join(allowed)),),
                "use a supported layer config (llama or qwen3)", (f"rule: {prof.source('speculators_model_types')}",),
            ))
            return False
        has_qwen3 = "Eagle3Qwen3ForCausalLM" in prof.value("architectures")  # algos.py update_eagle3, 0.24+
        plan.draft_class = draft_classes.speculators_class(model_type) if has_qwen3 else "Eagle3LlamaForCausalLM"
        return True
    archs = raw.get("architectures")
    arch = str(archs[0]) if isinstance(archs, list) and archs else ""
    accepted = prof.value("architectures")
    resolved = _rewrite(arch, prof.value("arch_rewrite"))
    if accepted == "*":
        plan.draft_class = "Eagle3LlamaForCausalLM"
        return True
    if resolved in accepted:
        plan.draft_class = resolved
        return True
    if prof.engine == SGLANG and arch in ("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen2ForCausalLM"):
        consequence = "SGLang builds the plain target class instead: startup fails (vocab-row assert / KeyError)"
    else:
        consequence = f"{prof.label} has no draft class named {resolved or '(none)'}: startup fails"
    plan.refuse("architecture", Finding(
        "architecture",
        f"{prof.label} does not build an EAGLE-3 draft for architectures {archs!r}: {consequence}",
        (Evidence("config.json architectures[0]", repr(arch), " or ".join(accepted)),),
        'set architectures to ["LlamaForCausalLMEagle3"]',
        (f"rule: {prof.source('architectures')}", f"rule: {prof.source('arch_rewrite')}"),
    ))
    return False


def _rewritten_to_mtp(plan: LoadPlan, prof: Profile, view: EngineView) -> bool:
    """vLLM turns a draft of model_type deepseek_v3 (and kin) into its MTP draft, whatever the method."""
    model_type = str(view.config.get("model_type") or "")
    if model_type not in prof.value("mtp_model_types"):
        return False
    plan.refuse("architecture", Finding(
        "mtp-model-type",
        f"{prof.label} rewrites a draft of model_type {model_type!r} to its MTP draft (DeepSeekMTPModel): the EAGLE-3 "
        "speculative config is refused at startup ('Eagle3DeepSeekMTPModel are not supported')",
        (Evidence("config.json model_type", repr(model_type), "deepseek_v2 (the same MLA fields)"),),
        'set "model_type": "deepseek_v2" in the draft\'s config.json (DeepseekV2Config reads the same MLA fields)',
        (f"rule: {prof.source('mtp_model_types')}",),
    ))
    return True


def _rewrite(arch: str, rule: str) -> str:
    if rule == "prefix-unless-starts" and arch and not arch.startswith("Eagle3"):
        return "Eagle3" + arch
    if rule == "prefix-unless-starts-or-ends" and arch and not (arch.startswith("Eagle3") or arch.endswith("Eagle3")):
        return "Eagle3" + arch
    return arch


def _int(config: dict[str, Any], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _draft_shape(plan: LoadPlan, prof: Profile, view: EngineView, ckpt: Checkpoint,
                 target: TargetModel | None) -> DraftShape:
    config = view.config
    layers = _int(config, "num_hidden_layers") or 1
    klass = _draft_class(prof, plan.draft_class)
    by_class = bool(klass and klass.max_layers == 1)
    rule = "refused" if by_class else prof.value("multi_layer")
    if layers != 1 and rule == "refused":
        plan.refuse("layers", Finding(
            "multi-layer",
            f"{prof.label} builds one-layer EAGLE-3 drafts only: num_hidden_layers={layers} raises "
            "ValueError('EAGLE3 currently only supports 1 layer')",
            (Evidence("config.json num_hidden_layers", str(layers), "1"),),
            "train a one-layer draft" if by_class else "serve with SGLang >= 0.5.12, or train a one-layer draft",
            (f"rule: {klass.source}" if by_class and klass else f"rule: {prof.source('multi_layer')}",),
        ))
    in_checkpoint = ckpt.config.layer_count if ckpt.config_raw is not None else 1
    if rule == "one-layer" and in_checkpoint > 1:
        plan.refuse("layers", Finding(
            "multi-layer",
            f"{prof.label} builds one draft layer whatever num_hidden_layers says; the checkpoint has "
            f"{in_checkpoint}: loading layers.1.* raises KeyError",
            (Evidence("draft layers", str(in_checkpoint), "1"),),
            "serve with vLLM >= 0.11.1, or train a one-layer draft", (f"rule: {prof.source('multi_layer')}",),
        ))
    built = 1 if rule in ("refused", "one-layer") else layers
    plan.draft_layers = built
    use_aux = lookup(config, "eagle_config.use_aux_hidden_state")
    has_fc = not (use_aux is False and prof.value("use_aux_hidden_state") == "honoured" and prof.engine == VLLM)
    count = _fc_state_count(prof, config, plan.draft_class)
    fc_bias_rule = prof.value("fc_bias")
    draft_vocab = config.get("draft_vocab_size", "missing")
    tie = bool(config.get("tie_word_embeddings", False))
    has_lm_head = not (prof.engine == SGLANG and tie)
    has_embed = not (prof.engine == VLLM and prof.value("embed_source") == "target-always-key-raises")
    full_vocab = draft_vocab in (None, "missing") or draft_vocab == _target_vocab(config, target)
    has_d2t = not (prof.value("d2t_full_vocab") == "refused" and full_vocab)
    return DraftShape(
        layers=built,
        norm_before_fc=view.flags["norm_before_fc"],
        fc_norm_count=count if view.flags["fc_norm"] else 0,
        fc_bias=fc_bias_rule == "always" or (fc_bias_rule == "config.bias" and bool(config.get("bias", False))),
        has_fc=has_fc,
        has_lm_head=has_lm_head,
        has_embed=has_embed,
        has_d2t=has_d2t,
        extra_layer_params=klass.extra_layer_params if klass else (),
        **_class_layout(klass),
    )


def _class_layout(klass: draft_classes.DraftClass | None) -> dict[str, Any]:
    if klass is None:
        return {}
    return {"attention": klass.attention, "stacked": klass.stacked, "renames": klass.renames,
            "first_layer": klass.first_layer}


def _draft_class(prof: Profile, name: str | None) -> draft_classes.DraftClass | None:
    klass = draft_classes.draft_class(prof.engine, prof.version, name or "")
    return klass or draft_classes.CLASSES.get((prof.engine, name or ""))


def _fc_state_count(prof: Profile, config: dict[str, Any], class_name: str | None = None) -> int:
    """The aux-state count fc is built for: the fields the draft class reads, in its order."""
    if prof.value("fc_aux_count") == "3":
        return 3
    klass = _draft_class(prof, class_name)
    for name in klass.fc_count_fields if klass else draft_classes.LLAMA_COUNT:
        value = lookup(config, name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if isinstance(value, list) and value:
            return len(value)
    return 3


# ---------------------------------------------------------------- keys and shapes

def _keys(plan: LoadPlan, prof: Profile, ckpt: Checkpoint, res: KeyResolution, params: set[str],
          shape: DraftShape) -> None:
    plan.parameters = {k: tuple(v) for k, v in sorted(res.loaded.items())}
    plan.dropped = dict(res.dropped)
    shared = {"model.embed_tokens.weight", "lm_head.weight"}
    missing = [p for p in sorted(params) if p not in res.loaded and p not in shared and p != "draft_id_to_target_id"]
    partial = [p for p, shards in res.shards.items() if not fused_complete(p, shards)]
    plan.uninitialised = tuple(missing + partial)
    for name, error in res.refused:
        plan.refuse("keys", Finding(
            "key-refused",
            f"{prof.label} refuses tensor {name} at load: {error}",
            (Evidence(name, "no matching draft parameter", "names the loader maps to a parameter"),),
            _key_fix(prof),
            (f"rule: {prof.source('unknown_key')}", f"rule: {prof.source('key_prefix')}"),
        ))
    lost = {n: why for n, why in res.dropped if not _harmless_drop(n, why)}
    if lost:
        names = sorted(lost)
        plan.lose("keys", Finding(
            "dropped",
            f"{prof.label} will silently drop {len(names)} tensors: {names[0]}"
            + (f" ... ({len(names)})" if len(names) > 1 else "") + f" ({lost[names[0]]})",
            (Evidence("dropped", short(names), "every tensor loaded into a parameter"),),
            _key_fix(prof, names),
            (f"rule: {prof.source('unknown_key')}", f"rule: {prof.source('first_layer')}"),
        ))
    if plan.uninitialised:
        plan.lose("keys", Finding(
            "uninitialised",
            f"{prof.label} leaves {len(plan.uninitialised)} draft parameters at their initial values "
            f"({plan.uninitialised[0]}, ...): {ACCEPTANCE_NOTE}",
            (Evidence("uninitialised", short(plan.uninitialised), "every parameter loaded from the checkpoint"),),
            _key_fix(prof, sorted(lost)) if lost else "ship the missing tensors under the names the engine expects",
            (f"rule: {prof.source('first_layer')}",),
        ))


def _built(plan: LoadPlan, prof: Profile, view: EngineView, params: set[str]) -> None:
    """The class's parameter names and shapes."""
    plan.built = tuple(sorted(params))
    plan.shapes = parameter_shapes(prof.engine, view.config, view.speculators, params, plan.fc.expects_states or 3)


def _mla_rope(plan: LoadPlan, prof: Profile, view: EngineView) -> None:
    """vLLM 0.18-0.27's MLA class builds DeepSeek YaRN whenever rope_scaling is set (always, under transformers 5)."""
    klass = _draft_class(prof, plan.draft_class)
    if klass is None or klass.family != draft_classes.MLA or prof.value("mla_rope") != "forced-yarn":
        return
    rope = view.config.get("rope_scaling") or view.config.get("rope_parameters")
    missing = [k for k in ("factor", "original_max_position_embeddings") if not isinstance(rope, dict) or k not in rope]
    if not missing:
        return
    plan.refuse("architecture", Finding(
        "mla-rope",
        f"{prof.label} builds the MLA draft's rope as DeepSeek YaRN whenever rope_scaling is set (always, assuming "
        f"transformers >= 5): the draft config's rope scaling has no {missing[0]}: KeyError at startup",
        (Evidence("config.json rope_scaling", repr(rope) if rope else "absent",
                  "a YaRN rope_scaling with factor and original_max_position_embeddings"),),
        "write the target's YaRN rope_scaling into the draft's config.json, or serve with vLLM >= 0.28",
        (f"rule: {prof.source('mla_rope')}",),
    ))


def _harmless_drop(name: str, why: str) -> bool:
    return "rotary" in why or "mask_hidden" in why or "use_aux_hidden_state is false" in why


def _key_fix(prof: Profile, names: list[str] | None = None) -> str:
    names = names or []
    if prof.engine == SGLANG and prof.value("first_layer") == "midlayer" and any(
        n.startswith(("layers.", "model.layers.")) for n in names
    ):
        return "rename layers.0.* -> midlayer.* in a copy of the checkpoint, or serve with SGLang >= 0.5.12"
    if prof.engine == VLLM and any(n.startswith("model.") for n in names):
        return "strip the model. prefix from the draft's tensor names (vLLM adds it)"
    return "rename the tensors to the engine's names: midlayer.* or layers.N.*, fc.weight, norm.weight, lm_head.weight, d2t"


def _shapes(plan: LoadPlan, prof: Profile, view: EngineView, ckpt: Checkpoint) -> None:
    config = view.config
    hidden = _int(config, "hidden_size")
    fc_shape = ckpt.shape("fc.weight") or ckpt.shape("model.fc.weight")
    target_hidden = _int(config, "target_hidden_size") or hidden
    count = _fc_state_count(prof, config, plan.draft_class)
    plan.fc.expects_states = count
    plan.fc.expects_width = count * target_hidden if target_hidden else None
    plan.fc.checkpoint_width = fc_shape[1] if fc_shape and len(fc_shape) == 2 else None
    if "model.fc.weight" in plan.parameters and plan.fc.checkpoint_width and plan.fc.expects_width \
            and plan.fc.checkpoint_width != plan.fc.expects_width:
        trained = plan.fc.checkpoint_width // target_hidden if target_hidden else "?"
        if prof.value("fc_aux_count") == "3":
            fix = f"{prof.label} always builds fc for 3 aux states: serve with a version that reads num_aux_hidden_states"
        else:
            fix = (f"write num_aux_hidden_states: {trained} into config.json ({prof.label} reads num_aux_hidden_states, "
                   "else len(eagle_config.eagle_aux_hidden_state_layer_ids), else 3; never the top-level ids)")
        plan.refuse("fc", Finding(
            "fc-shape",
            f"{prof.label} builds fc for {count} aux states ({plan.fc.expects_width} wide) but the checkpoint's fc "
            f"takes {plan.fc.checkpoint_width}: the weight loader's shape assert stops startup",
            (Evidence("fc.weight.shape[1]", str(plan.fc.checkpoint_width),
                      f"{count} x target_hidden_size {target_hidden} = {plan.fc.expects_width}"),),
            fix,
            (f"rule: {prof.source('fc_aux_count')}",),
        ))


# ---------------------------------------------------------------- vocab map

def _target_vocab(config: dict[str, Any], target: TargetModel | None) -> int | None:
    """vLLM >= 0.30 compares draft_vocab_size with the target's vocab (model_config.get_vocab_size())."""
    known = target.vocab_size if target is not None else None
    return known if known is not None else _int(config, "vocab_size")


def _vocab(plan: LoadPlan, prof: Profile, view: EngineView, ckpt: Checkpoint, res: KeyResolution,
           target: TargetModel | None) -> None:
    config = view.config
    draft_vocab, head_from_target = _draft_vocab(plan, prof, config)
    if draft_vocab is None:
        return
    _lm_head_rows(plan, prof, ckpt, draft_vocab)
    full = draft_vocab == _target_vocab(config, target)
    if res.d2t_name is None:
        _no_map(plan, prof, draft_vocab, _int(config, "vocab_size"), full, head_from_target)
        return
    if full and prof.value("d2t_full_vocab") == "refused":
        plan.map_reading = "refused"
        plan.refuse("vocab", Finding(
            "d2t-full-vocab",
            f"{prof.label} has no d2t parameter when draft_vocab_size == vocab_size ({draft_vocab}): loading the "
            "shipped d2t raises 'There is no module or parameter named draft_id_to_target_id'",
            (Evidence("d2t", f"present, {draft_vocab} entries", "absent (full vocab needs no map)"),),
            "drop d2t (and t2d) from the checkpoint: a full-vocab draft needs no map",
            (f"rule: {prof.source('d2t_full_vocab')}",),
        ))
        return
    if prof.value("d2t_present") == "discarded":
        plan.map_reading = "d2t loaded then discarded: draft ids used as target ids"
        if not full:
            plan.lose("vocab", Finding(
                "d2t-discarded",
                f"{prof.label} discards d2t after loading (the renamed key is never found): draft ids become target "
                f"ids: {ACCEPTANCE_NOTE}",
                (Evidence("d2t", "shipped", "applied as offsets"),),
                "serve with vLLM >= 0.9.1", (f"rule: {prof.source('d2t_present')}",),
            ))
        return
    plan.map_reading = "offsets: target = i + d2t[i]"
    d2t = _read_d2t(ckpt, res.d2t_name)
    if d2t is not None:
        plan.draft_to_target = tuple(int(i + v) for i, v in enumerate(d2t))


def _draft_vocab(plan: LoadPlan, prof: Profile, config: dict[str, Any]) -> tuple[int | None, bool]:
    """The draft vocab the engine builds, and whether it borrows the target's lm_head; None when refused."""
    present = "draft_vocab_size" in config
    draft_vocab = config.get("draft_vocab_size")
    if present and draft_vocab is not None:
        return (draft_vocab if isinstance(draft_vocab, int) else None), False
    behaviour = "draft_vocab_size_missing" if not present else "draft_vocab_size_null"
    rule = prof.value(behaviour)
    state = "absent" if not present else "null"
    if rule == "refused":
        plan.refuse("vocab", Finding(
            "draft-vocab-size",
            f"{prof.label} needs draft_vocab_size in the draft config; it is {state}: startup fails",
            (Evidence("config.json draft_vocab_size", state, "the lm_head row count"),),
            "write draft_vocab_size (the lm_head rows) into config.json",
            (f"rule: {prof.source(behaviour)}",),
        ))
        return None, False
    head_from_target = rule == "target-lm_head"
    if head_from_target:
        plan.notes.append("draft_vocab_size: null -> the target's lm_head and embed are used")
    return _int(config, "vocab_size"), head_from_target


def _lm_head_rows(plan: LoadPlan, prof: Profile, ckpt: Checkpoint, draft_vocab: int) -> None:
    lm_head = ckpt.shape("lm_head.weight")
    if lm_head and lm_head[0] != draft_vocab and "lm_head.weight" in plan.parameters:
        plan.refuse("vocab", Finding(
            "lm-head-rows",
            f"{prof.label} builds lm_head with {draft_vocab} rows; the checkpoint's has {lm_head[0]}: startup fails",
            (Evidence("lm_head.weight.shape[0]", str(lm_head[0]), f"draft_vocab_size {draft_vocab}"),),
            "make draft_vocab_size equal lm_head rows",
        ))


def _no_map(plan: LoadPlan, prof: Profile, draft_vocab: int, vocab: int | None, full: bool,
            head_from_target: bool) -> None:
    plan.map_reading = "no d2t: draft ids are used as target ids"
    plan.draft_to_target = None
    if full:
        return
    if prof.value("d2t_absent") == "crash":
        plan.refuse("vocab", Finding(
            "d2t-missing-crash",
            f"{prof.label} needs d2t for a reduced draft vocab: startup fails (hot_token_id is None)",
            (Evidence("d2t", "absent", f"{draft_vocab} offsets"),), "save d2t (offsets) with the draft",
            (f"rule: {prof.source('d2t_absent')}",),
        ))
    elif not head_from_target:
        plan.lose("vocab", Finding(
            "d2t-missing",
            f"{prof.label} will use draft ids 0..{draft_vocab - 1} as target ids: the draft vocab is reduced "
            f"({draft_vocab} of {vocab}) and no d2t is shipped: {ACCEPTANCE_NOTE}",
            (Evidence("d2t", "absent", f"{draft_vocab} offsets (target = i + d2t[i])"),),
            "save d2t with the draft (build it from t2d: d2t = nonzero(t2d) - arange(draft_vocab_size))",
            (f"rule: {prof.source('d2t_absent')}",),
        ))


def _read_d2t(ckpt: Checkpoint, name: str | None) -> list[int] | None:
    if name is None:
        return None

    try:
        tensor = ckpt.read(name)
    except CheckpointReadError:
        return None
    if tensor.ndim != 1 or tensor.numel() > 1 << 20:
        return None
    import torch

    return [int(v) for v in tensor.to(dtype=torch.int64).tolist()]


# ---------------------------------------------------------------- fc

def _fc(plan: LoadPlan, prof: Profile, view: EngineView, ckpt: Checkpoint, target: TargetModel | None) -> None:
    config = view.config
    hidden = _int(config, "hidden_size")
    target_hidden = _int(config, "target_hidden_size") or hidden
    use_aux = lookup(config, "eagle_config.use_aux_hidden_state")
    honoured = prof.value("use_aux_hidden_state") == "honoured"
    fc = plan.fc
    support = plan.aux.support
    if use_aux is False and honoured:
        fc.states_sent, fc.width_sent = 1, target_hidden
        fc.action = "bypassed" if prof.engine == SGLANG else "disabled"
        if fc.checkpoint_width and fc.checkpoint_width != target_hidden:
            plan.lose("fc", Finding(
                "fc-unused",
                f"eagle_config.use_aux_hidden_state is false, so {prof.label} sends one {target_hidden}-wide hidden "
                f"state and {'skips fc silently' if prof.engine == SGLANG else 'drops fc at load'}; the checkpoint's "
                f"fc was trained on {fc.checkpoint_width // target_hidden if target_hidden else '?'} concatenated "
                f"states: {ACCEPTANCE_NOTE}",
                (Evidence("eagle_config.use_aux_hidden_state", "false", "true (fc.weight is "
                          f"{fc.checkpoint_width} wide)"),),
                "set eagle_config.use_aux_hidden_state: true (or remove it)",
                (f"rule: {prof.source('use_aux_hidden_state')}", f"rule: {prof.source('fc_applied')}"),
            ))
        return
    if support is not None and support.support == "silent-no-capture":
        fc.states_sent = 1
    elif plan.aux.captured is not None:
        fc.states_sent = len(plan.aux.captured)
    if fc.states_sent is None or target_hidden is None or hidden is None:
        return
    fc.width_sent = fc.states_sent * target_hidden
    if fc.width_sent == fc.expects_width:
        fc.action = "fc"
        return
    if prof.value("fc_applied") == "when-width-differs" and fc.width_sent == hidden:
        fc.action = "bypassed"
        plan.lose("fc", Finding(
            "fc-bypassed",
            f"{prof.label} receives {fc.states_sent} hidden state ({fc.width_sent} wide = the draft's hidden size) "
            f"and skips fc silently: the draft runs on unfused features, {ACCEPTANCE_NOTE}",
            (Evidence("width reaching fc", str(fc.width_sent), f"{fc.expects_states} x {target_hidden} = {fc.expects_width}"),),
            _capture_fix(plan),
            (f"rule: {prof.source('fc_applied')}",),
        ))
        return
    fc.action = "crash"
    plan.refuse("fc", Finding(
        "fc-width",
        f"{prof.label} concatenates {fc.states_sent} captured states ({fc.width_sent} wide) but fc expects "
        f"{fc.expects_states} ({fc.expects_width}): the first draft step fails with a shape error",
        (Evidence("states captured", str(fc.states_sent), str(fc.expects_states)),),
        _capture_fix(plan),
        (f"rule: {prof.source('fc_applied')}", f"rule: {prof.source('fc_aux_count')}"),
    ))


def _capture_fix(plan: LoadPlan) -> str:
    if plan.aux.never_fire:
        return (f"use aux ids the target can capture (ids whose captured layer input {list(plan.aux.never_fire)} "
                "lies past the last layer never fire)")
    return "make the target capture as many aux states as fc was trained on (aux ids in the field the engine reads)"


# ---------------------------------------------------------------- norms

NORM_FIX = {
    "norm_before_residual": "the engine feeds the raw fc output as residual",
    "norm_before_fc": "the engine skips input_norm before fc",
    "fc_norm": "the engine skips the per-chunk fc_norm",
    "norm_output": "the engine feeds back the pre-norm state",
}


def _norms(plan: LoadPlan, prof: Profile, view: EngineView, ckpt: Checkpoint) -> None:
    plan.norms = dict(view.flags)
    trained = ckpt.config.norm_flags if ckpt.config_raw is not None else {}
    raw = ckpt.config_raw or {}
    for name, applied in view.flags.items():
        want = trained.get(name)
        if want is None or want == applied:
            continue
        explicit = _explicit_flag(raw, name)
        if name in ("fc_norm", "norm_output", "norm_before_fc") and explicit is None:
            continue
        source = ckpt.config.sources.get(name, "")
        plan.lose("norms", Finding(
            "norm-flag",
            f"{prof.label} applies {name}={applied}, the draft was trained with {name}={want}: "
            f"{NORM_FIX[name] if not applied else 'the engine adds a norm the draft never saw'}; acceptance drops",
            (Evidence(name, f"{applied} ({view.flag_notes[name]})", f"{want} ({source})"),),
            _norm_fix(prof, name, want),
            (f"rule: {prof.source(name)}",),
        ))
        if prof.value(name) not in ("not-read", "eagle-format-only"):
            plan.norm_edits[name] = want


def _explicit_flag(raw: dict[str, Any], name: str) -> bool | None:
    for value in (raw.get(name), lookup(raw, f"eagle_config.{name}")):
        if isinstance(value, bool):
            return value
    return None


def _norm_fix(prof: Profile, name: str, want: bool) -> str:
    if prof.value(name) in ("not-read", "eagle-format-only"):
        return f"serve with an engine version that honours {name}, or retrain with {name}={not want}"
    return f"write {name}: {str(want).lower()} into config.json explicitly"


# ---------------------------------------------------------------- embed_tokens and lm_head

def _embeddings(plan: LoadPlan, prof: Profile, view: EngineView, ckpt: Checkpoint, target: TargetModel | None,
                res: KeyResolution) -> None:

    plan_sharing(plan, prof, view, ckpt, target, res)
