"""Draft and target together at run time: KV-cache page compatibility and dtype, per engine version.

vLLM (V1) puts the draft's attention layers into the target's KV-cache manager: the layers' KV
specs (block x KV heads x head_dim x dtype, MLA: block x latent) must be grouped, and which mixes
a version accepts changed three times. The draft always runs in the target's dtype
(``config/speculative.py``: ``dtype=self.target_model_config.dtype``), so dtype cancels out of the
page comparison. SGLang builds a separate KV pool for the draft worker from the draft's own
config, sharing only the request-to-token map and the slot allocator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.engines.param_shapes import VOCAB_PADDING, padded
from pytest_eagle3.engines.plan_types import Filed, Filing
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import (
    EQUAL_PAGE,
    OK,
    REFUSED,
    SEPARATE_POOL,
    SGLANG,
    UNIFORM_TYPE_ELSE_EQUAL,
    UNIFORM_TYPE_ELSE_PADDED,
    UNKNOWN,
    KvRule,
    Snapshot,
)
from pytest_eagle3.rules.attention import Geometry

FULL = "full"
SLIDING = "sliding"
MLA = "mla"
LINEAR = "linear"


@dataclass(frozen=True)
class LayerKv:
    """One kind of target attention layer and its per-token KV width (elements, dtype cancels)."""

    kind: str
    per_token: int


def _int(config: Mapping[str, Any], name: str) -> int | None:
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def target_layers(config: Mapping[str, Any], geometry: Geometry | None) -> tuple[LayerKv, ...] | None:
    """The target's KV layer kinds from its (text) config; None when the config cannot say."""
    latent, rope = _int(config, "kv_lora_rank"), _int(config, "qk_rope_head_dim")
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


def plan_runtime(sheet: Any, snapshot: Snapshot, fc_states: int = 3) -> tuple[KvVerdict | None, Filed]:
    """The KV-cache verdict (None without a usable target) and the ``runtime`` area's refusals (``fc_states``: the
    aux-state count the draft's fc is built for)."""
    out = Filing()
    _graph_width(out, snapshot, sheet.config)
    _graph_aux_count(out, snapshot, fc_states, sheet.use_aux_hidden_state)
    _graph_logits(out, snapshot, sheet.config)
    draft, layers = sheet.draft_geometry, sheet.target_kv
    if draft is None or layers is None:
        return None, out.filed()
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
            (f"rule: {verdict.source}", f"dtype: {snapshot.kind.draft_dtype_source}"),
        ))
    return verdict, out.filed()


def _graph_logits(out: Any, snapshot: Any, config: Mapping[str, Any]) -> None:
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


def _graph_width(out: Any, snapshot: Any, config: Mapping[str, Any]) -> None:
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


def _graph_aux_count(out: Any, snapshot: Any, fc_states: int, use_aux: bool | None) -> None:
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
