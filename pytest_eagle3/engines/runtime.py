"""Area ``runtime``: the draft run beside its target, from the engine's start to serving.

A pure function of the fact sheet and the profile. Read top-down:

1. :func:`plan_runtime`, the area: the CUDA-graph buffers sized at start, the KV-cache verdict, and what the four
   serving behaviours do; ``refused`` where the engine will not start or serve, ``loss`` where it serves and the
   draft's acceptance drops, a note (``NOTE_PREFIX``) where only the launch's flags decide.
2. SGLang's draft-extend CUDA-graph buffers: their width, aux-state count and logits width.
3. KV-cache pages (:func:`kv_verdict`): vLLM (V1) puts the draft's attention layers into the target's KV-cache
   manager: the layers' KV specs (block x KV heads x head_dim x dtype, MLA: block x latent) must be grouped, and
   which mixes a version accepts changed three times. The draft always runs in the target's dtype
   (``config/speculative.py``: ``dtype=self.target_model_config.dtype``), so dtype cancels out of the page
   comparison. SGLang builds a separate KV pool for the draft worker from the draft's own config, sharing only the
   request-to-token map and the slot allocator.
4. Serving beside the target (behaviours ``draft_positions``, ``target_quantization``, ``draft_sliding_window``,
   ``draft_dtype``): the draft's position range, the quantization its layers are built with
   (:func:`draft_built_with`, which the keys area reads too), its sliding window and its dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.engines.facts import CACHE_ONLY_ROPE_TYPES, FULL, LINEAR, MLA, FactSheet, LayerKv
from pytest_eagle3.engines.param_shapes import VOCAB_PADDING, padded
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import FAILS, PASSES, Evidence, Finding
from pytest_eagle3.knowledge.snapshot import (
    EQUAL_PAGE,
    OK,
    REFUSED,
    SEPARATE_POOL,
    SGLANG,
    UNIFORM_TYPE_ELSE_EQUAL,
    UNIFORM_TYPE_ELSE_PADDED,
    UNKNOWN,
    VLLM,
    KvRule,
    OtherMode,
    Snapshot,
)
from pytest_eagle3.rules.attention import Geometry
from pytest_eagle3.words import plural

_AREA = "runtime"
#: The prefix of this area's notes: engine.runtime shows them in its passing message.
NOTE_PREFIX = "serving: "


# ---------------------------------------------------------------- the area
def plan_runtime(sheet: FactSheet, snapshot: Snapshot, fc_states: int = 3) -> tuple[KvVerdict | None, Filed]:
    """The KV-cache verdict (None without a usable target) and the ``runtime`` area's findings (``fc_states``: the
    aux-state count the draft's fc is built for)."""
    out = Filing()
    _graph_width(out, snapshot, sheet.config)
    _graph_aux_count(out, snapshot, fc_states, sheet.use_aux_hidden_state)
    _graph_logits(out, snapshot, sheet.config)
    verdict = _kv_pages(out, sheet, snapshot)
    _positions(out, sheet, snapshot)
    _quantization(out, sheet, snapshot)
    _sliding_window(out, sheet, snapshot)
    _dtype(out, sheet, snapshot)
    return verdict, out.filed()


# ---------------------------------------------------------------- CUDA-graph buffers
def _int(config: Mapping[str, Any], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _graph_width(out: Filing, snapshot: Snapshot, config: Mapping[str, Any]) -> None:
    """SGLang <= 0.4.9 sized the draft-extend CUDA-graph buffer from the draft's hidden size (sglang#8163)."""
    hidden, target_hidden = _int(config, "hidden_size"), _int(config, "target_hidden_size")
    if snapshot.behaviours.draft_extend_graph_width != "draft-hidden" or not hidden or not target_hidden \
            or hidden == target_hidden:
        return
    out.refuse("runtime", Finding(
        "graph-width",
        f"{snapshot.label} sizes its CUDA-graph draft-extend buffer as hidden_size x 3 = {3 * hidden}, but this draft's "
        f"target sends target_hidden_size x 3 = {3 * target_hidden}: the first draft extend fails with a shape "
        "error while CUDA graphs are on (the default)",
        (Evidence("draft-extend buffer width", str(3 * hidden), str(3 * target_hidden)),),
        f"serve with {snapshot.serve_with('draft_extend_graph_width', lambda v: v != 'draft-hidden', engine=SGLANG)}, or launch with "
        "--disable-cuda-graph",
        (f"rule: {snapshot.source('draft_extend_graph_width')}",),
    ))


def _not_x3(value: object) -> bool:
    return value != "target-config-x3"


def _graph_aux_count(out: Filing, snapshot: Snapshot, fc_states: int, use_aux: object) -> None:
    """SGLang 0.5.12-0.5.14 size the draft-extend CUDA-graph buffer from the TARGET's config (3 aux states)
    while fc takes the draft's aux count: a draft with 2 or 4 aux ids fails the graph capture."""
    if snapshot.behaviours.draft_extend_graph_width != "target-config-x3" or fc_states == 3 or use_aux is False:
        return
    out.refuse("runtime", Finding(
        "graph-aux-count",
        f"{snapshot.label} sizes its CUDA-graph draft-extend buffer from the target's config (3 aux states x its hidden "
        f"size), but this draft's fc takes {fc_states} aux states: the draft-extend graph capture fails at start "
        "with a shape error while CUDA graphs are on (the default)",
        (Evidence("aux states: draft-extend buffer / fc", f"3 / {fc_states}", "equal"),),
        f"serve with {snapshot.serve_with('draft_extend_graph_width', _not_x3, engine=SGLANG)} (or <= "
        f"{snapshot.last_release_before('draft_extend_graph_width', _not_x3, engine=SGLANG)} with 3 aux ids), launch with "
        "--disable-cuda-graph, or train the "
        "draft on 3 aux layers",
        (f"rule: {snapshot.source('draft_extend_graph_width')}", f"rule: {snapshot.source('fc_aux_count')}"),
    ))


def _graph_logits(out: Filing, snapshot: Snapshot, config: Mapping[str, Any]) -> None:
    """SGLang 0.5.1-0.5.14 copy the 64-padded draft logits into a draft_vocab_size-wide CUDA-graph buffer
    (sglang#10106): a draft vocab that is not a multiple of 64 fails the graph capture at start."""
    rows = _int(config, "draft_vocab_size")
    if snapshot.behaviours.draft_extend_logits_buffer != "draft-vocab" or not rows or padded(rows) == rows:
        return
    out.refuse("runtime", Finding(
        "graph-logits",
        f"{snapshot.label} copies the draft's logits ({padded(rows)} wide: draft_vocab_size {rows} padded to a multiple "
        f"of {VOCAB_PADDING}) into a CUDA-graph buffer {rows} wide: the draft-extend graph capture fails at start "
        "while CUDA graphs are on (the default)",
        (Evidence("draft logits width / buffer width", f"{padded(rows)} / {rows}", "equal (a multiple of 64)"),),
        f"serve with {snapshot.serve_with('draft_extend_logits_buffer', lambda v: v != 'draft-vocab', engine=SGLANG)}, launch with "
        "--disable-cuda-graph, or train the draft with a vocab that is "
        f"a multiple of {VOCAB_PADDING}",
        (f"rule: {snapshot.source('draft_extend_logits_buffer')}",),
    ))


# ---------------------------------------------------------------- KV-cache pages
def _kv_pages(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> KvVerdict | None:
    """The KV-cache verdict for this draft beside the target's KV layers; a refusal filed."""
    draft, layers = sheet.draft_geometry, sheet.target_kv
    if draft is None or layers is None:
        return None
    verdict = kv_verdict(snapshot.kv, draft, layers)
    if verdict.status == REFUSED:
        theirs = ", ".join(f"{t.kind}: {t.per_token}" for t in layers)
        out.refuse("runtime", Finding(
            "kv-page",
            f"{snapshot.label}: {verdict.message}",
            (Evidence("draft KV elements per token (2 x KV heads x head_dim)", str(2 * draft.kv_width),
                      f"compatible with the target's ({theirs})"),),
            "give the draft the target's KV geometry (num_key_value_heads x head_dim), or serve with a version "
            "that unifies page sizes",
            (f"rule: {verdict.source}", f"dtype: {snapshot.kind.loading.draft_dtype_source}"),
        ))
    return verdict


@dataclass(frozen=True)
class KvVerdict:
    """The KV-cache verdict for a draft and target: status, message, and the row's source."""
    status: str
    message: str
    source: str


def kv_verdict(rule: KvRule, draft: Geometry, target: tuple[LayerKv, ...]) -> KvVerdict:
    """Whether an engine version grouping KV layers by ``rule`` can put this draft's KV layers next to the target's."""
    page = 2 * draft.kv_width
    pages = sorted({t.per_token for t in target} | {page})
    kinds = {t.kind for t in target}
    if rule.value == SEPARATE_POOL:
        return KvVerdict(OK, "the draft gets its own KV pool", rule.source)
    if LINEAR in kinds:
        return KvVerdict(UNKNOWN, "the target has linear-attention (Mamba-like) layers: not modelled", rule.source)
    all_full = kinds <= {FULL, MLA}
    if rule.value != EQUAL_PAGE and all_full:
        return KvVerdict(OK, "every layer is full attention: one group of any head geometry", rule.source)
    if len(pages) == 1:
        return KvVerdict(OK, "draft and target pages are equal", rule.source)
    largest = pages[-1]
    if rule.value in (EQUAL_PAGE, UNIFORM_TYPE_ELSE_EQUAL):
        return KvVerdict(REFUSED, _refusal(page, target, "NotImplementedError (no common page size)"), rule.source)
    blocked = [p for p in pages if largest % p]
    if rule.value == UNIFORM_TYPE_ELSE_PADDED:
        blocked = [t.per_token for t in target if t.kind == MLA and largest % t.per_token]
    if not blocked:
        return KvVerdict(OK, f"pages unified to the largest ({largest} elements per token)", rule.source)
    return KvVerdict(REFUSED, _refusal(page, target, "NotImplementedError('page size is not divisible by the "
                                       "maximum page size')"), rule.source)


def _refusal(page: int, target: tuple[LayerKv, ...], error: str) -> str:
    theirs = ", ".join(f"{t.kind} {t.per_token}" for t in target)
    return (f"the draft's KV page ({page} elements per token: 2 x KV heads x head_dim) cannot share the KV-cache "
            f"manager with the target's ({theirs}): engine start fails with {error} while sizing the KV cache")


# ---------------------------------------------------------------- serving beside the target: draft_positions
def _positions(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> None:
    draft, served = sheet.draft_context, sheet.target_context
    if draft is None or served is None or draft >= served:
        return
    rule = snapshot.behaviours.draft_positions
    if rule == "unbounded":
        return  # the draft's rope has no table: every position is computed
    table_only = set(sheet.draft_rope_types) <= CACHE_ONLY_ROPE_TYPES
    evidence = (Evidence("draft context (rotary table rows) / target context", f"{draft} / {served}",
                         f"draft >= {served}"),)
    edit = (f"set max_position_embeddings: {served} in the draft's config.json (rope "
            f"{'/'.join(sheet.draft_rope_types)}: it only lengthens the rotary table)" if table_only else
            f"serve a draft whose rope covers {served} positions (rope {'/'.join(sheet.draft_rope_types)}: "
            "max_position_embeddings alone does not size its table)")
    shorter = snapshot.kind.serving.context_length_flag
    fix = f"{edit}, or serve with {shorter} {draft}"
    details = (f"rule: {snapshot.source('draft_positions')}",)
    head = f"{snapshot.label}: the draft's config gives it {draft} positions, the target is served with {served}"
    if rule in ("refuses", "refuses-or-raises"):
        after = ("raises the draft's max_position_embeddings to it" if rule == "refuses-or-raises"
                 else "starts, and the draft reads past its rotary table beyond position " + str(draft))
        out.refuse(_AREA, Finding(
            "draft-positions-refused",
            f"{head}: start fails with \"ValueError: Warning: Target model's context_length ({served}) is greater "
            f"than the derived context_length ({draft})\" (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 {after})",
            evidence, fix + (", or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" if rule == "refuses-or-raises"
                             else ""), details))
        return
    if rule in ("reads-past", "warns-reads-past") or (rule == "raised" and not table_only):
        why = "" if rule != "raised" else (
            f": it raises max_position_embeddings to {served}, which does not size a "
            f"{'/'.join(sheet.draft_rope_types)} rope (yarn sizes its table from original_max_position_embeddings; "
            "dynamic / longrope derive their frequencies from it)")
        out.lose(_AREA, Finding(
            "draft-positions",
            f"{head}{why}: past position {draft} the draft reads beyond its rotary table (an out-of-bounds gather: "
            "garbage draft tokens or a CUDA fault), so acceptance collapses on long sequences",
            evidence, fix, details))
    elif rule in ("raised", "raised-or-limited") and table_only:
        # the default (V2) runner drafts at every position with the raised table: no failure; what differs is a note
        out.note(
            f"{NOTE_PREFIX}{head}: it raises the draft's max_position_embeddings to {served} (rope "
            f"{'/'.join(sheet.draft_rope_types)}: the rotary table grows, the frequencies stay), and its default V2 "
            f"runner drafts at every position: past {draft} at positions the draft's config does not cover (its "
            f"acceptance there was never measured)"
            + (f"; where vLLM runs the V1 runner instead, it proposes nothing past {draft} (the draft's max_model_len "
               "is derived before the raise)" if _has_v1_runner(snapshot) else "")
            + f"; to cover them, {edit} "
            f"(rule: {snapshot.source('draft_positions')})")
    elif rule == "skips-drafting":
        out.lose(_AREA, Finding(
            "draft-positions-no-draft",
            f"{head}: the V1 model runner proposes nothing for a step whose longest sequence + k exceeds "
            f"{draft}, so no token is speculated past {draft} (the V2 runner, where it is the default, "
            "reads past the rotary table instead)", evidence, fix, details))
    elif rule == "raised-or-limited" and not table_only:
        out.lose(_AREA, Finding(
            "draft-positions-context-cut",
            f"{head}: with rope {'/'.join(sheet.draft_rope_types)} it does not raise the draft's range but cuts the "
            f"whole server's max_model_len to {draft} "
            + ("(the V2 runner; the V1 runner stops drafting past it)" if _has_v1_runner(snapshot) else
               "(its one model runner)"),
            evidence, fix, details))


def _has_v1_runner(snapshot: Snapshot) -> bool:
    """Whether this vLLM release still has the V1 model runner beside V2 (launch.VLLM_MODE: 0.34.0 removed it)."""
    row = snapshot.other_runner
    return row is not None and row.value != OtherMode.NEVER


# ---------------------------------------------------------------- target_quantization
def draft_built_with(snapshot: Snapshot, sheet: FactSheet) -> str | None:
    """The quantization the engine builds the draft's layers with (behaviour ``target_quantization``), the one rule
    the serving area and the key plan read: none, the target's, or the draft's own quantization_config (the launch's
    flags aside, which default to it)."""
    rule = snapshot.behaviours.target_quantization
    if rule == "none":
        return None
    if rule == "target":
        return sheet.target_quantization
    return sheet.draft_quantization


def _quantization(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> None:
    rule = snapshot.behaviours.target_quantization
    target, draft = sheet.target_quantization, sheet.draft_quantization
    if target is None and draft is None:
        return
    details = (f"rule: {snapshot.source('target_quantization')}",)
    if rule in ("none", "target"):
        built = draft_built_with(snapshot, sheet)
        if built == draft:
            return
        what = (f"builds the draft's layers with the target's quantization ({built})" if built is not None
                else "builds the draft's layers unquantized")
        trained = f"quantized with {draft}" if draft is not None else "unquantized"
        consequence = (f"its {trained} weights do not fit the parameters built: start fails on the first one "
                       "missing (KeyError, e.g. 'layers.0.mlp.down_proj.weight', vllm#25882; or a scale tensor with "
                       "no parameter)")
        out.refuse(_AREA, Finding(
            "draft-quantization",
            f"{snapshot.label} {what}, but the draft is {trained}: {consequence}",
            (Evidence("draft layers' quantization (engine / draft config)", str(built), str(draft)),),
            f"serve with {snapshot.serve_with('target_quantization', lambda v: v == 'draft', engine=VLLM)} (the draft's own quantization)" + (
                ", or ship an unquantized draft" if draft is not None else
                " (0.11.0 applies the target's quantization_config to every draft)"),
            details))
        return
    if target is not None and draft is None:
        flag = {"server-flag": "the launch's --quantization",
                "server-flag-or-draft-flag": ("--speculative-draft-model-quantization (default: the launch's "
                                              "--quantization; 'unquant' keeps the draft unquantized)"),
                }.get(rule, "its own quantization_config or the speculative config's quantization")
        out.note(NOTE_PREFIX + f"{snapshot.label}: the target's quantization_config ({target}) does not reach the draft; only {flag} "
                 "would quantize it")


# ---------------------------------------------------------------- draft_sliding_window
def _window(sheet: FactSheet, rule: str) -> int | None:
    """The window the engine gives the draft layer from its config, None for full attention."""
    if rule == "interleaved-only":
        window = sheet.draft_interleaved_window
        if isinstance(window, int) and not isinstance(window, bool):
            return window
        if isinstance(window, tuple) and window and isinstance(window[0], int) and sheet.target_layers is not None:
            chosen = window[sheet.target_layers % len(window)]
            return chosen if isinstance(chosen, int) else None
        return None
    if rule == "layer-types" and sheet.draft_layer_types and sheet.draft_layer_types[0] == "sliding_attention":
        return sheet.draft_sliding_window
    return None


def _sliding_window(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> None:
    rule = snapshot.behaviours.draft_sliding_window
    details = (f"rule: {snapshot.source('draft_sliding_window')}",)
    kinds = sheet.draft_layer_types
    if rule == "layer-types-at-target-index":
        if kinds is not None and sheet.target_layers is not None and len(kinds) <= sheet.target_layers:
            out.refuse(_AREA, Finding(
                "draft-sliding-window-index",
                f"{snapshot.label} reads the draft's layer_types at index {sheet.target_layers} (the target's layer "
                f"count), but it has {plural(len(kinds), 'entry')}: start fails with IndexError while building the draft layer",
                (Evidence("len(layer_types)", str(len(kinds)), f"> {sheet.target_layers}"),),
                "remove layer_types from the draft's config.json, or serve with "
                f"{snapshot.serve_with('draft_sliding_window', lambda v: v == 'layer-types', engine=VLLM)}", details))
        return
    window = _window(sheet, rule)
    if window is not None and (sheet.target_context is None or window < sheet.target_context):
        field = "interleaved_sliding_window" if rule == "interleaved-only" else "layer_types[0] / sliding_window"
        out.lose(_AREA, Finding(
            "draft-sliding-window",
            f"{snapshot.label} gives the draft layer a sliding window of {window} tokens from its config ({field}): "
            "EAGLE-3 drafts are trained with full attention, so past that many tokens the draft sees less than it "
            "was trained on and acceptance drops on long sequences",
            (Evidence("draft attention window", str(window), "none (full attention)"),),
            "remove layer_types / interleaved_sliding_window from the draft's config.json (or write "
            "'full_attention')", details))
        return
    written = [name for name, value in (("layer_types", kinds), ("sliding_window", sheet.draft_sliding_window),
                                        ("use_sliding_window", sheet.draft_use_sliding_window),
                                        ("interleaved_sliding_window", sheet.draft_interleaved_window))
               if value not in (None, False)]
    if written and window is None:
        out.note(NOTE_PREFIX + f"{snapshot.label} does not give the draft layer a sliding window from {', '.join(written)}"
                 + (" (only --speculative-draft-window-size does)" if rule == "server-flag" else ""))


# ---------------------------------------------------------------- draft_dtype
#: The dtype SGLang serves a config in under --dtype auto (configs/model_config.py _get_and_verify_dtype:
#: float32, or no dtype written, becomes float16; Gemma configs aside).
_SGLANG_AUTO: dict[str | None, str] = {"float32": "float16", "float": "float16", "half": "float16", None: "float16"}
_HALF = ("bfloat16", "float16", "half")


def sglang_auto_dtype(declared: str | None, model_type: str = "", absent: str = "float16") -> str:
    """The dtype SGLang serves a config in under --dtype auto (a float32 Gemma config: bfloat16); ``absent``: what a
    config without a dtype gets (SGLang: float16; TokenSpeed 0.1.0: bfloat16, ``Engine.dtype_when_absent``)."""
    if declared in ("float32", "float", None) and model_type.startswith("gemma"):
        return "bfloat16"
    if declared is None:
        return absent
    return _SGLANG_AUTO.get(declared, declared)


def _stored(out: Filing, sheet: FactSheet, snapshot: Snapshot, runs_in: str | None) -> None:
    """Tensors stored in another dtype than the draft's config declares: what the engine does with them."""
    declared = sheet.draft_dtype
    other = {dtype: names for dtype, names in sheet.stored_dtypes.items() if dtype != declared}
    if declared is None or not other:
        return
    for dtype, names in other.items():
        overflow = (" (bfloat16 reaches 3e38, float16 only 65504: a larger weight becomes inf, and the draft's "
                    "logits NaN)" if dtype == "bfloat16" and runs_in == "float16" else "")
        cast = f"casts them to {runs_in} on load" if runs_in else "casts them to the dtype it runs the draft in"
        out.note(NOTE_PREFIX + f"{plural(len(names), 'tensor')} (first {names[0]}) stored in {dtype}, but "
                 f"config.json declares {declared}: {snapshot.label} {cast}{overflow}; write the dtype the draft was "
                 f"trained and saved in (\"torch_dtype\": \"{dtype}\") so the config says what the weights are")


#: The draft_dtype rules under which the fc multiplies tensors of one dtype whatever the pair's (a note at most).
_NEVER_MIXED = {
    "cast-to-draft": "casts the target's hidden states to the draft's dtype before the fc: nothing raises",
    "gguf-f32": ("runs the draft from its GGUF (the converter's --outtype) and multiplies F32 activations by the fc "
                 "whatever the weights' type: no dtype mismatch can arise"),
    "promoted": "multiplies the pair as they are, and MLX promotes float16 x bfloat16 to float32: nothing raises",
}


def _dtype(out: Filing, sheet: FactSheet, snapshot: Snapshot) -> None:
    """The draft's dtype beside the target's: a refusal only where this engine's own fc raises on the pair."""
    rule = snapshot.behaviours.draft_dtype
    draft, target = sheet.draft_dtype, sheet.target_dtype
    absent = snapshot.kind.loading.dtype_when_absent
    if rule == "target":
        _stored(out, sheet, snapshot, target or draft)
        if draft is not None and target is not None and draft != target:
            out.note(NOTE_PREFIX + f"{snapshot.label} runs the draft in the target's dtype: its {draft} weights are cast")
        return
    if rule in _NEVER_MIXED:
        if rule == "cast-to-draft":
            _stored(out, sheet, snapshot, sglang_auto_dtype(draft, sheet.model_type, absent))
        if draft is not None and target is not None and draft != target:
            out.note(NOTE_PREFIX + f"{snapshot.label}: the draft is {draft}, the target {target}; it {_NEVER_MIXED[rule]} "
                     f"(rule: {snapshot.source('draft_dtype')})")
        return
    _stored(out, sheet, snapshot, sglang_auto_dtype(draft, sheet.model_type, absent))
    if not sheet.target_usable:
        return
    ran, fed = sglang_auto_dtype(draft, sheet.model_type, absent), sglang_auto_dtype(target, sheet.target_model_type, absent)
    if ran == fed:
        return
    head = (f"{snapshot.label} under --dtype auto (the default) runs the draft in {ran} (its config: {draft or 'no dtype'}) "
            f"and the target in {fed} (its config: {target or 'no dtype'})")
    fix = (f"launch with --dtype {fed} (one dtype for both), or write \"torch_dtype\": \"{fed}\" in the draft's "
           "config.json")
    evidence = (Evidence("draft dtype / target dtype (served)", f"{ran} / {fed}", "equal"),)
    details = (f"rule: {snapshot.source('draft_dtype')}",)
    if rule == "draft-config-unchecked":
        out.unknown(_AREA, Finding(
            "draft-dtype-unchecked",
            f"{head}: the target's {fed} hidden states reach the draft's {ran} fc, and whether its matmul raises on "
            "two dtypes is not in the source read (not judged)",
            evidence, f"what decides: the fc's kernel in {snapshot.display}'s release; meanwhile {fix}", details,
            readings=(("the fc's kernel refuses two dtypes", FAILS), ("it casts or promotes them", PASSES))))
    elif target in _HALF:
        out.refuse(_AREA, Finding(
            "draft-dtype",
            f"{head}: the target's {fed} hidden states reach the draft's {ran} fc, and the draft worker fails with "
            "\"expected mat1 and mat2 to have the same dtype\"",
            evidence, fix, details))
    else:
        out.note(NOTE_PREFIX + f"{head}: unless the launch passes --dtype, the draft worker fails with a dtype mismatch ({fix})")
