"""Config and tensor-shape consistency, and consistency with the target model.

Shape rules (producers.md §5.2): lm_head rows = draft vocab; fc.weight = [H, A * Th] with A the
number of aux ids (3 when unset) and Th the target hidden size; first-layer q/k/v take 2H
(embedding and hidden state concatenated); hidden_norm, input_layernorm, norm present.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.findings import Evidence, Finding, short
from pytest_eagle3.producers.formats import INPUT_OF, LEFTOVER_PREFIXES, OUTPUT_OF, UNKNOWN, DraftConfig
from pytest_eagle3.rules.attention import (
    ROUTE_AS_WRITTEN,
    ROUTE_CONFIG_CLASS,
    derive,
    disagreements,
    implied,
)
from pytest_eagle3.rules.draft_kind import classify_checkpoint, not_a_draft_finding
from pytest_eagle3.rules.mla import FAMILY_MLA, attention_family, mla_required, mla_shapes
from pytest_eagle3.rules.quantized import is_packed, not_modelled, present_weights
from pytest_eagle3.words import plural, verb

DEFAULT_AUX_COUNT = 3
REQUIRED_CONFIG_FIELDS = ("hidden_size", "vocab_size")
LLAMA_ATTENTION = ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                   "self_attn.o_proj.weight")
LAYER_REST = ("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
              "hidden_norm.weight", "input_layernorm.weight", "post_attention_layernorm.weight")
FIRST_LAYER_TENSORS = LLAMA_ATTENTION + LAYER_REST


def config_findings(ckpt: Checkpoint) -> list[Finding]:
    """config.json parseable, fields of the right type, the fields every engine needs present."""
    if ckpt.config_problem:
        return [Finding("config-unreadable", ckpt.config_problem,
                        (Evidence("config.json", ckpt.config_problem, "a JSON object"),),
                        "write the draft's config.json next to its weights (a JSON object)")]
    cfg = ckpt.config
    findings = [Finding("config-field", p, fix="correct the field in config.json") for p in cfg.problems]
    missing = [name for name in REQUIRED_CONFIG_FIELDS if getattr(cfg, name) is None]
    if missing:
        where = "transformer_layer_config" if ckpt.format.producer == "speculators" else "config.json"
        findings.append(Finding(
            "config-missing-field",
            f"config.json has no {', '.join(missing)}: engines cannot build the draft",
            tuple(Evidence(name, "absent", f"an integer in {where}") for name in missing),
            f"add {', '.join(missing)} to {where}",
        ))
    return findings


def format_findings(ckpt: Checkpoint) -> list[Finding]:
    """The checkpoint is an EAGLE-3 draft, and its producer recognisable (else its aux convention is a guess)."""
    not_a_draft = not_a_draft_finding(classify_checkpoint(ckpt))
    if not_a_draft is not None:
        return [not_a_draft]
    if ckpt.format.producer != UNKNOWN:
        return []
    return [Finding(
        "format-unknown",
        "no producer's layout matches this checkpoint, so the meaning of its aux layer ids "
        "(input-of vs output-of) cannot be inferred",
        (Evidence("architectures", str(list(ckpt.config.architectures)),
                  "Eagle3DraftModel / LlamaForCausalLMEagle3 / Eagle3LlamaForCausalLM / LlamaForCausalLM+draft_vocab_size"),
         Evidence("first-layer keys", ckpt.config.first_layer_prefix or "none", "midlayer.* or layers.0.*")),
        "export with a known producer (speculators, SpecForge, ModelOpt, AngelSlim, EAGLE)",
    )]


def unrecognised_note(ckpt: Checkpoint) -> str | None:
    """The note of a draft no producer's layout matches but whose first decoder layer (``midlayer.*`` or
    ``layers.0.*``) engines load, None otherwise. Such layouts are served: llama.cpp's converter takes any
    architecture on its Llama list (LlamaForCausalLM, Eagle3Speculator, Eagle3DraftModel, ...) with draft_vocab_size
    and one layer, ``midlayer.*`` or ``layers.0.*`` (llama-cpp-python 0.3.36 vendor/llama.cpp conversion/llama.py
    LlamaModel.__init__ / index_tensors); TensorRT-LLM reads no architecture and loads both prefixes
    (_torch/models/modeling_speculative.py Eagle3ForCausalLM.load_weights). Unrecognised is a note, never a failure:
    the engine contracts judge the layout, under both aux-id conventions."""
    if ckpt.format.producer != UNKNOWN or ckpt.format.evidence or ckpt.config.first_layer_prefix is None:
        return None
    if not_a_draft_finding(classify_checkpoint(ckpt)) is not None:
        return None
    return (f"unrecognised: no producer's layout matches (architectures {list(ckpt.config.architectures)}, first "
            f"layer {ckpt.config.first_layer_prefix}*), so the meaning of its aux layer ids (input-of vs output-of) is "
            "not inferred: the engine contracts judge it under both readings (state it with "
            "--eagle3-aux-convention, or pass --eagle3-target=DIR with the target's weights to measure it); whether "
            "an engine loads this layout is engine.architecture's and engine.keys' verdict")


@dataclass(frozen=True)
class ShapeRule:
    """One expected tensor shape, derived from the config."""

    tensor: str
    expected: tuple[int, ...]
    why: str


def expected_fc_width(cfg: DraftConfig) -> int | None:
    """The fc's input width the config implies (aux states x target hidden size), or None."""
    count = len(cfg.aux.ids) if cfg.aux.ids else DEFAULT_AUX_COUNT
    return count * cfg.target_hidden_size if cfg.target_hidden_size else None


def shape_findings(ckpt: Checkpoint) -> list[Finding]:
    """Tensors present and shaped as the config says."""
    cfg = ckpt.config
    findings: list[Finding] = []
    findings += _leftover_prefixes(ckpt)
    prefix = cfg.first_layer_prefix
    if prefix is None:
        findings.append(Finding(
            "no-draft-layer", "no first decoder layer (midlayer.* or layers.0.*) in the checkpoint",
            (Evidence("tensor names", short(sorted(ckpt.tensors), 6), "midlayer.* or layers.0.*"),),
            "export the draft's decoder layer",
        ))
        prefix = "layers.0."
    present = present_weights(ckpt.tensors)
    mla = attention_family(ckpt.tensors) == FAMILY_MLA
    attention = mla_required(prefix, present) if mla else [prefix + t for t in LLAMA_ATTENTION]
    required = attention + [prefix + t for t in LAYER_REST] + (["fc.weight"] if uses_aux_states(ckpt) else []) \
        + ["norm.weight"]
    missing = [name for name in required if name not in present]
    if missing and cfg.first_layer_prefix:
        findings.append(Finding(
            "missing-tensors",
            f"{plural(len(missing), 'tensor')} every EAGLE-3 draft needs {verb(len(missing), 'is', 'are')} absent: engines leave them randomly initialised",
            (Evidence("missing", short(missing), "present"),),
            "export the full draft state dict (norms included)",
        ))
    findings += _lm_head(ckpt, cfg)
    rules = _shape_rules(cfg, prefix, uses_aux_states(ckpt), attention=not mla)
    if mla:  # an MLA layer: its own projections, sized by the MLA fields (rules.mla); no q/k/v geometry
        rules += [ShapeRule(t, shape, why) for t, shape, why in mla_shapes(_layer_config(ckpt), prefix, present).rules]
    findings += _mismatched_shapes(ckpt, rules)
    findings += _layer_count(cfg)
    findings += [] if mla else _attention(ckpt)
    findings += _optional_norms(ckpt, cfg)
    return findings


def _leftover_prefixes(ckpt: Checkpoint) -> list[Finding]:
    hits = sorted(k for k in ckpt.tensors if k.startswith(LEFTOVER_PREFIXES))
    if not hits:
        return []
    return [Finding(
        "leftover-prefix",
        f"{len(hits)} tensor names keep a trainer wrapper prefix: engines match none of them",
        (Evidence("names", short(hits, 4), "no draft_model./eagle_module./module. prefix"),),
        "strip the prefix when exporting (SpecForge export_to_sglang rejects draft_model.)",
    )]


def _lm_head(ckpt: Checkpoint, cfg: DraftConfig) -> list[Finding]:
    if "lm_head.weight" in ckpt.tensors or cfg.draft_vocab_size is None or cfg.vocab_size is None:
        return []
    if cfg.draft_vocab_size < cfg.vocab_size:
        return [Finding(
            "missing-lm-head",
            f"no lm_head.weight, but the draft vocab ({cfg.draft_vocab_size}) is smaller than the "
            f"target's ({cfg.vocab_size}): no head can produce draft-vocab logits",
            (Evidence("lm_head.weight", "absent", f"[{cfg.draft_vocab_size}, {cfg.hidden_size}]"),),
            "export the draft's lm_head",
        )]
    return []


def uses_aux_states(ckpt: Checkpoint) -> bool:
    """False where the draft says it was trained on the target's last hidden state alone: no fc, no aux ids.

    The one spelling EAGLE-3 readers know is ``eagle_config.use_aux_hidden_state`` (SpecForge and ModelOpt write
    it; vllm 0.33.0 model_executor/models/llama_eagle3.py LlamaModel.__init__ and v1/spec_decode/llm_base_proposer.py
    _get_eagle3_use_aux_hidden_state_from_config, sglang 0.5.23 speculative/eagle_utils.py get_eagle_config; a
    speculators config has none: vllm speculators/algos.py update_eagle3 does not carry it)."""
    eagle = (ckpt.config_raw or {}).get("eagle_config")
    return not (isinstance(eagle, dict) and eagle.get("use_aux_hidden_state") is False)


def _layer_config(ckpt: Checkpoint) -> dict[str, object]:
    """The decoder-layer fields as engines read them (speculators: transformer_layer_config)."""
    raw = ckpt.config_raw or {}
    layer = raw.get("transformer_layer_config")
    return dict(layer) if isinstance(layer, dict) else dict(raw)


def _shape_rules(cfg: DraftConfig, prefix: str, aux_states: bool = True, attention: bool = True) -> list[ShapeRule]:
    rules = []
    h, dv, v = cfg.hidden_size, cfg.draft_vocab_size, cfg.vocab_size
    if h and dv:
        rules.append(ShapeRule("lm_head.weight", (dv, h), "lm_head rows = draft_vocab_size"))
    width = expected_fc_width(cfg) if aux_states else None
    if h and width:
        aux = f"{len(cfg.aux.ids)} aux ids" if cfg.aux.ids else "3 aux states (default)"
        rules.append(ShapeRule("fc.weight", (h, width),
                               f"fc input = {aux} x target hidden {cfg.target_hidden_size}"))
    if h and attention:
        for proj in ("q_proj", "k_proj", "v_proj"):
            rules.append(ShapeRule(f"{prefix}self_attn.{proj}.weight", (-1, 2 * h),
                                   "first-layer attention takes cat(embeds, hidden) = 2 x hidden"))
        for norm in ("hidden_norm", "input_layernorm", "post_attention_layernorm"):
            rules.append(ShapeRule(f"{prefix}{norm}.weight", (h,), "norm over the hidden size"))
        rules.append(ShapeRule("norm.weight", (h,), "final norm over the hidden size"))
    if h and v:
        rules.append(ShapeRule("embed_tokens.weight", (v, h), "embedding = [target vocab, hidden]"))
    return rules


def packed_weights(ckpt: Checkpoint) -> list[str]:
    """Weights stored packed (uint8 NVFP4, int32 weight_packed): their saved shape is not the matrix's."""
    return sorted(n for n, e in ckpt.tensors.items() if is_packed(n, e, ckpt.tensors))


def logical_shape(ckpt: Checkpoint, name: str) -> tuple[int, ...] | None:
    """The shape the rules compare: None for a packed weight (not modelled, ``shape_unmodelled``)."""
    entry = ckpt.tensors.get(name)
    if entry is not None and is_packed(name, entry, ckpt.tensors):
        return None
    return ckpt.shape(name)


def shape_unmodelled(ckpt: Checkpoint) -> list[Finding]:
    """What config.shapes does not check: the shapes of packed quantized weights; the MLA shapes whose fields the
    config omits."""
    return _packed_unmodelled(ckpt) + _mla_unmodelled(ckpt)


def _mla_unmodelled(ckpt: Checkpoint) -> list[Finding]:
    prefix = ckpt.config.first_layer_prefix
    if prefix is None or attention_family(ckpt.tensors) != FAMILY_MLA:
        return []
    shapes = mla_shapes(_layer_config(ckpt), prefix, present_weights(ckpt.tensors))
    if not shapes.missing_fields:
        return []
    checked = {t for t, _, _ in shapes.rules}
    names = sorted(n for n in ckpt.tensors if n.startswith(prefix + "self_attn.") and n not in checked)
    return [not_modelled(
        "config.shapes (MLA layer)", names or [prefix + "self_attn.*"],
        "the real loader (probe.load with --eagle3-sglang-python / --eagle3-vllm-python): the engine's config class "
        "fills the omitted fields with its defaults",
        f"config.json omits {', '.join(shapes.missing_fields)}, which size these MLA projections")]


def _packed_unmodelled(ckpt: Checkpoint) -> list[Finding]:
    packed = packed_weights(ckpt)
    if not packed:
        return []
    return [not_modelled("config.shapes", packed,
                         "the engine's own loader (probe.load with --eagle3-vllm-python / --eagle3-sglang-python), "
                         "which unpacks them with the quantization_config",
                         "packed quantized weights (several values a byte or word): their saved shape is not the "
                         "matrix's, so q/k/v/o and MLP widths are not compared with config.json")]


def _mismatched_shapes(ckpt: Checkpoint, rules: list[ShapeRule]) -> list[Finding]:
    evidence = []
    for rule in rules:
        shape = logical_shape(ckpt, rule.tensor)
        if shape is None:
            continue
        fits = len(shape) == len(rule.expected) and all(
            e in (-1, s) for e, s in zip(rule.expected, shape)
        )
        if not fits:
            expected = "[" + ", ".join("*" if e == -1 else str(e) for e in rule.expected) + "]"
            evidence.append(Evidence(f"{rule.tensor} ({rule.why})", str(list(shape)), expected))
    if not evidence:
        return []
    fc = next((e for e in evidence if e.key.startswith("fc.weight ")), None)
    fc_fix = _fc_fix(ckpt) if fc is not None and len(evidence) == 1 else None
    return [Finding(
        "shape-mismatch",
        f"{plural(len(evidence), 'tensor')} {verb(len(evidence), 'disagrees', 'disagree')} with config.json: engines raise on load or read the wrong widths",
        tuple(evidence),
        fc_fix or "make config.json describe the saved tensors (hidden_size, draft_vocab_size, "
        "eagle_aux_hidden_state_layer_ids, target_hidden_size)",
    )]


def _fc_fix(ckpt: Checkpoint) -> str | None:
    """fc alone disagrees: the states it was trained on against the aux ids the config names, one way to agree."""
    cfg, shape = ckpt.config, logical_shape(ckpt, "fc.weight")
    if shape is None or len(shape) != 2 or not cfg.target_hidden_size or shape[1] % cfg.target_hidden_size:
        return None
    trained = shape[1] // cfg.target_hidden_size
    named = f"{len(cfg.aux.ids)} aux ids {list(cfg.aux.ids)} in {cfg.aux.field}" if cfg.aux.ids else \
        f"no aux ids (the engines' {DEFAULT_AUX_COUNT} defaults)"
    return (f"fc.weight was trained on {trained} concatenated states but the config names {named}: write the "
            f"{trained} ids the draft was trained on there (the engines size fc and capture from them), or export "
            "the fc trained on those ids")


def _attention(ckpt: Checkpoint) -> list[Finding]:
    """q/k/v/o against the heads and head_dim the config gives under every reading engines use.

    A contradiction under one reading only is engine-specific (engine.geometry says which engine).
    """
    raw = ckpt.config_raw or {}
    layer = raw.get("transformer_layer_config")
    config = layer if isinstance(layer, dict) else raw
    readings = [derive(config, route) for route in (ROUTE_CONFIG_CLASS, ROUTE_AS_WRITTEN)]
    packed = set(packed_weights(ckpt))
    names = {n for n in ckpt.tensors if n not in packed}
    found = [disagreements(g, lambda n: logical_shape(ckpt, n), names) for g in readings if g is not None]
    if not found or not all(found):
        return []
    geometry = readings[0]
    assert geometry is not None
    fields = implied(found[0], geometry)
    return [Finding(
        "attention-geometry",
        f"{len(found[0])} attention tensors contradict num_attention_heads={geometry.heads}, "
        f"num_key_value_heads={geometry.kv_heads}, head_dim={geometry.head_dim} (as engines read config.json): "
        "engines refuse them at load or cut them silently",
        tuple(Evidence(d.tensor, str(list(d.shape)), f"{list(d.expected)} ({d.fields})") for d in found[0][:6]),
        ("write " + ", ".join(f"{k}: {v}" for k, v in sorted(fields.items())) + " into config.json") if fields
        else "make the attention fields of config.json describe the saved q/k/v/o",
        tuple(f"{k}: {v}" for k, v in sorted(geometry.sources.items())),
    )]


def _layer_count(cfg: DraftConfig) -> list[Finding]:
    if cfg.num_hidden_layers is None or cfg.layer_count == 0 or cfg.num_hidden_layers == cfg.layer_count:
        return []
    return [Finding(
        "layer-count",
        f"config.json says {cfg.num_hidden_layers} draft layers but the checkpoint holds {cfg.layer_count}: "
        f"engines build {cfg.num_hidden_layers} and leave the rest random, or refuse",
        (Evidence("num_hidden_layers", str(cfg.num_hidden_layers), f"{cfg.layer_count} (from tensor names)"),),
        f"set num_hidden_layers to {cfg.layer_count} in the draft config (yuhuili/EAGLE3-Vicuna1.3-13B ships 40)",
    )]


def _optional_norms(ckpt: Checkpoint, cfg: DraftConfig) -> list[Finding]:
    findings = []
    if cfg.norm_flags.get("norm_before_fc") and "input_norm.weight" not in ckpt.tensors:
        findings.append(Finding(
            "missing-input-norm", "norm_before_fc is set but input_norm.weight is absent",
            (Evidence("input_norm.weight", "absent", f"[{expected_fc_width(cfg)}]"),),
            "export input_norm.weight or clear norm_before_fc",
        ))
    if not cfg.norm_flags.get("norm_before_fc") and "input_norm.weight" in ckpt.tensors:
        findings.append(Finding(
            "unused-input-norm",
            "input_norm.weight is saved but norm_before_fc is off: engines skip the norm the draft "
            "was trained with (sglang#32334)",
            (Evidence("norm_before_fc", "false/absent", "true"),),
            "set norm_before_fc: true in config.json",
        ))
    fc_norms = sorted(k for k in ckpt.tensors if k.startswith("fc_norm."))
    if cfg.norm_flags.get("fc_norm") and not fc_norms:
        findings.append(Finding("missing-fc-norm", "fc_norm is set but no fc_norm.* tensors are saved",
                                (Evidence("fc_norm.*", "absent", "one per aux state"),),
                                "export fc_norm.* or clear fc_norm"))
    if not cfg.norm_flags.get("fc_norm") and fc_norms:
        findings.append(Finding("unused-fc-norm", "fc_norm.* tensors are saved but fc_norm is off",
                                (Evidence("fc_norm", "false/absent", "true"),), "set fc_norm: true in config.json"))
    return findings


def target_findings(ckpt: Checkpoint, target: TargetModel) -> list[Finding]:
    """Vocab, hidden size and aux ids agree with the target model."""
    if target.problem:
        return [Finding("target-unreadable", target.problem, fix="point --eagle3-target at the target's dir or config.json")]
    cfg = ckpt.config
    evidence = []
    if target.vocab_size is not None and cfg.vocab_size is not None and target.vocab_size != cfg.vocab_size:
        evidence.append(Evidence("vocab_size (draft config vs target)", str(cfg.vocab_size), str(target.vocab_size)))
    if target.hidden_size is not None and cfg.target_hidden_size is not None and target.hidden_size != cfg.target_hidden_size:
        evidence.append(Evidence(f"target hidden size ({cfg.sources.get('target_hidden_size', '')})",
                                 str(cfg.target_hidden_size), str(target.hidden_size)))
    findings = []
    if evidence:
        findings.append(Finding(
            "target-mismatch",
            "the draft was not built for this target: token ids or hidden states will not line up",
            tuple(evidence),
            "train the draft against this target, or pass the right --eagle3-target",
        ))
    findings += _aux_range(cfg, target)
    return findings


def aux_id_range(convention: str | None, layers: int) -> tuple[int, int]:
    """Inclusive id range that names a real hidden state: input-of may name L (the last output); an unknown
    convention too (an id that names a state under one reading is no evidence against the draft)."""
    return (0, layers - 1) if convention == OUTPUT_OF else (0, layers)


def _aux_range(cfg: DraftConfig, target: TargetModel) -> list[Finding]:
    layers = target.num_hidden_layers
    if layers is None or not cfg.aux.ids:
        return []
    convention = cfg.aux.convention_on(layers)
    lo, hi = aux_id_range(convention, layers)
    outside = [i for i in cfg.aux.ids if not lo <= i <= hi]
    if not outside:
        return []
    meaning = {INPUT_OF: "inputs of decoder layers", OUTPUT_OF: "outputs of decoder layers"}.get(
        convention or "", "layer ids")
    return [Finding(
        "aux-ids-out-of-range",
        f"aux layer ids {outside} name no layer of the {layers}-layer target ({meaning}, "
        f"{cfg.aux.field}): that hidden state is never captured",
        (Evidence(cfg.aux.field or "aux ids", str(list(cfg.aux.ids)), f"ids in [{lo}, {hi}]"),),
        "use the ids the draft was trained on, for this target",
    )]
