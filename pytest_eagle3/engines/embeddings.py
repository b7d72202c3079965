"""embed_tokens and lm_head: whether the engine uses the draft's own or borrows the target's.

Rules per version are the profile behaviours ``embed_source`` and ``lm_head_source``; equality
with the target's weights is decided only when ``--eagle3-target`` holds weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_eagle3.engines import habit
from pytest_eagle3.engines.facts import FactSheet
from pytest_eagle3.engines.plan_types import Filed, Filing, Measured
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.snapshot import SGLANG, VLLM, Snapshot
from pytest_eagle3.producers.habits import embed_habits
from pytest_eagle3.rules.vocab_map import ACCEPTANCE_NOTE

TARGET_EMBED = ("model.embed_tokens.weight", "model.language_model.embed_tokens.weight", "embed_tokens.weight")
TARGET_LM_HEAD = ("lm_head.weight", "language_model.lm_head.weight")


def _draft_name(sheet: FactSheet, *names: str) -> str | None:
    return next((n for n in names if n in sheet.shapes), None)


@dataclass(frozen=True)
class Sharing:
    """Whose embed_tokens and lm_head the engine uses, and what the area files."""

    embed_tokens: str
    lm_head: str
    filed: Filed = field(default_factory=Filed)


def plan_embeddings(sheet: FactSheet, snapshot: Snapshot, measured: Measured | None) -> Sharing:
    """Whose embed_tokens and lm_head ``snapshot``'s engine uses for this draft (area ``embeddings``)."""
    out = Filing()
    embed = _draft_name(sheet, "embed_tokens.weight", "model.embed_tokens.weight")
    head = _draft_name(sheet, "lm_head.weight")
    embed_tokens = _embed(out, sheet, snapshot, measured, embed)
    if measured is not None and measured.embed == "draft" and embed_tokens == "target":
        out.lose("embeddings", Finding(
            "embed-replaced",
            f"{snapshot.label} uses the target's embed_tokens, but the draft was trained with its own (measured: it "
            "reaches clearly more with its own): acceptance drops",
            (Evidence("embed_tokens used", "the target's", "the draft's own (measured)"),),
            "serve with an engine version that keeps a differing draft embed_tokens "
            f"({snapshot.serve_with('embed_source', lambda v: v == 'target-if-absent-or-equal', engine=VLLM)}), or retrain "
            "with the target's embedding", (f"rule: {snapshot.source('embed_source')}", measured.words),
        ))
    lm_head = _lm_head(out, sheet, snapshot, embed_tokens, head)
    return Sharing(embed_tokens, lm_head, out.filed())


def _embed(out: Filing, sheet: FactSheet, snapshot: Snapshot, measured: Measured | None, embed: str | None) -> str:
    """Whose embed_tokens the engine uses."""
    rule = snapshot.behaviours.embed_source
    config = sheet.config
    hidden, target_hidden = config.get("hidden_size"), config.get("target_hidden_size")
    if rule == "target-unless-hidden-differs":
        return _sglang_embed(out, snapshot, embed, hidden, target_hidden)
    target_width = sheet.target_width or target_hidden or hidden
    if rule == "target-if-same-shape-required" and embed is None:
        out.refuse("embeddings", Finding(
            "embed-required",
            f"{snapshot.label}'s drafter has an embed_tokens module the checkpoint does not fill: the strict load fails "
            "('Missing parameters'), or, where the loader drops weightless modules, binding the target's embedding "
            "raises AttributeError at the first round",
            (Evidence("embed_tokens.weight", "absent", f"[vocab, {hidden}] (the target's, copied)"),),
            "ship embed_tokens.weight (a copy of the target's; python -m pytest_eagle3 fix --to "
            f"{snapshot.spec} writes it)", (f"rule: {snapshot.source('embed_source')}",),
        ))
        return "none"
    if rule == "target-if-same-shape-required":
        rule = "target-if-same-shape"
    if rule == "target-always-key-raises":
        if embed is not None:
            out.refuse("embeddings", Finding(
                "embed-key",
                f"{snapshot.label} has no embed_tokens module in the draft: loading {embed} raises KeyError",
                (Evidence(embed, "present", "absent"),), "drop embed_tokens.weight from the checkpoint",
                (f"rule: {snapshot.source('embed_source')}",),
            ))
        elif target_width != hidden:  # shared at PP == 1 whatever the width
            return _narrow_embed(out, snapshot, embed, hidden, target_width)
        return "target"
    if rule == "draft":  # never the target's (ATOM): an absent embed_tokens keeps the module's initial memory
        if embed is None:
            out.lose("embeddings", Finding(
                "embed-uninitialised",
                f"{snapshot.label} keeps the draft's own embed_tokens module and never shares the target's; the "
                "checkpoint does not fill it, so it keeps its uninitialised (torch.empty) memory and the loader only "
                "warns: every draft token is embedded as garbage",
                (Evidence("embed_tokens.weight", "absent", f"[vocab, {hidden}] (the target's, copied)"),),
                "ship embed_tokens.weight (a copy of the target's)", (f"rule: {snapshot.source('embed_source')}",),
            ))
            return "none"
        return "draft"
    if target_width != hidden:  # vLLM: a draft narrower or wider than its target, release by release
        return _narrow_embed(out, snapshot, embed, hidden, target_width)
    if rule == "target-always":  # the target's replaces whatever the draft shipped
        return "target"
    if embed is None:
        return "target"
    if rule == "target-if-absent":
        return "draft"
    if rule == "target-if-same-shape":
        vocab = config.get("vocab_size")
        target_vocab = sheet.target_vocab if sheet.target_given else vocab
        target_width = sheet.target_hidden_reported if sheet.target_given else target_hidden or hidden
        return "target" if (target_vocab, target_width) == (vocab, hidden) else "draft"
    equal = sheet.contents.same_as_target(embed, TARGET_EMBED)
    if equal is None:
        return "draft unless identical to the target's (give --eagle3-target with weights to decide)"
    if not equal and measured is not None and measured.embed == "draft":
        out.note("embed_tokens: the draft's own, and the measurement shows it was trained with it")
        return "draft"
    if not equal:
        _kept(out, sheet, snapshot, embed)
    return "target" if equal else "draft"


#: How an embed habit reads, as a reading's label.
OWN, FROZEN = "trains its own embedding", "trains with the target's embedding, frozen"


def _kept(out: Filing, sheet: FactSheet, snapshot: Snapshot, embed: str) -> None:
    """The engine keeps the draft's own embed_tokens, which differs from the target's: right only where the producer
    trains its own (engines.habit)."""
    habits = embed_habits(sheet.producer, sheet.raw)
    call = habit.judge(sheet.producer, habits, lambda h: h[0])
    sources = tuple(f"producer: {source}" for _, source in habits[:5])
    if call.outcome == habit.AGREES:
        out.note(f"embed_tokens: the draft's own, which {sheet.producer} trains ({habits[0][1]})")
        return
    evidence = (Evidence(embed, "differs from the target's embed_tokens", "identical to the target's, or absent"),)
    if call.outcome == habit.UNDECIDED:
        out.unknown("embeddings", Finding(
            "embed-kept-undecided",
            f"{snapshot.label} keeps the draft's own embed_tokens, which differs from the target's; whether the draft was "
            "trained with it or with the target's is not known (producer unknown)",
            evidence, "pass --eagle3-target=DIR with the target's weights (the reference measures which embedding the "
            "draft was trained with), or drop embed_tokens.weight if it is a stale copy",
            (f"rule: {snapshot.source('embed_source')}", *sources),
            readings=habit.readings(
                [(f"{source.split(' ', 1)[0]} ({OWN if own else FROZEN})", own) for own, source in habits],
                "a producer not on record", "trained with this embed_tokens",
                "trained with the target's frozen embedding (this copy stale)"),
        ))
        return
    out.lose("embeddings", Finding(
        "embed-kept",
        f"{snapshot.label} keeps the draft's own embed_tokens because it differs from the target's; {sheet.producer} "
        f"trains with the target's frozen embedding, so this one is untrained or stale (TorchSpec#38): acceptance drops",
        evidence, "drop embed_tokens.weight from the checkpoint (the engine then shares the target's)",
        (f"rule: {snapshot.source('embed_source')}", *sources, "SGLang replaces it with the target's instead"),
    ))


def _sglang_embed(out: Filing, snapshot: Snapshot, embed: str | None, hidden: object, target_hidden: object) -> str:
    """SGLang's set_embed swaps in the target's embedding unless target_hidden_size != hidden_size."""
    differs = target_hidden is not None and target_hidden != hidden
    if differs and embed is None:
        out.lose("embeddings", Finding(
            "embed-missing",
            f"{snapshot.label} keeps the draft's own embed_tokens when target_hidden_size ({target_hidden}) != "
            f"hidden_size ({hidden}); the checkpoint has none, so it stays random: {ACCEPTANCE_NOTE}",
            (Evidence("embed_tokens.weight", "absent", f"[vocab, {hidden}]"),),
            "ship the trained embed_tokens.weight", (f"rule: {snapshot.source('embed_source')}",),
        ))
    return "draft" if differs else "target"


def _narrow_embed(out: Filing, snapshot: Snapshot, embed: str | None, hidden: object, target_width: object) -> str:
    """A draft of another width than its target: its own embed_tokens is the trained one, never a copy."""
    if embed is not None:
        out.note(f"embed_tokens kept: the draft is {hidden} wide, the target {target_width}; "
                 "its own embedding is the one it was trained with")
        return "draft"
    if snapshot.behaviours.embed_width_check == "target-width":
        out.refuse("embeddings", Finding(
            "embed-width",
            f"{snapshot.label} shares the target's {target_width}-wide embed_tokens with a {hidden}-wide draft that ships "
            "none: the first draft step fails on the width (input_layernorm over the draft's hidden size)",
            (Evidence("embed_tokens.weight", "absent", f"[vocab, {hidden}], the draft's own trained embedding"),),
            "ship the draft's trained embed_tokens.weight",
            (f"rule: {snapshot.source('embed_width_check')}", "static reading: the failing step was not run"),
        ))
        return "target"
    out.lose("embeddings", Finding(
        "embed-missing",
        f"{snapshot.label} keeps a separate {hidden}-wide embed_tokens for a draft narrower or wider than its target "
        f"({target_width}); the checkpoint has none, so it is never loaded: {ACCEPTANCE_NOTE}",
        (Evidence("embed_tokens.weight", "absent", f"[vocab, {hidden}]"),),
        "ship the draft's trained embed_tokens.weight", (f"rule: {snapshot.source('embed_width_check')}",),
    ))
    return "draft"


def _lm_head(out: Filing, sheet: FactSheet, snapshot: Snapshot, embed_tokens: str, head: str | None) -> str:
    """Whose lm_head the engine uses (``embed_tokens``: whose embedding, for a tied head)."""
    rule = snapshot.behaviours.lm_head_source
    config = sheet.config
    draft_vocab = config.get("draft_vocab_size") or config.get("vocab_size")
    vocab = config.get("vocab_size")
    if "draft_vocab_size" in config and config.get("draft_vocab_size") is None \
            and snapshot.behaviours.draft_vocab_size_null == "target-lm_head":
        return "target"
    if "draft_vocab_size" not in config and snapshot.behaviours.draft_vocab_size_missing == "target-lm_head" \
            and not config.get("tie_word_embeddings"):
        if head is not None:
            out.lose("embeddings", Finding(
                "lm-head-replaced",
                f"{snapshot.label} reads no draft_vocab_size in config.json and replaces the draft's trained lm_head with "
                "the target's: the draft's predictions go through the wrong head",
                (Evidence("draft_vocab_size", "absent", f"{draft_vocab} (the trained head's rows)"),),
                f"write draft_vocab_size: {draft_vocab} into config.json", (f"rule: {snapshot.source('draft_vocab_size_missing')}",),
            ))
        return "target"
    if snapshot.kind.loading.ties_lm_head_to_embed and config.get("tie_word_embeddings"):
        # lm_head is the draft's embed_tokens module, which set_embed swaps for the target's only
        # when the hidden sizes agree (models/llama.py set_embed).
        return "target (tied to embed_tokens)" if embed_tokens == "target" else "draft (tied to its embed_tokens)"
    if rule == "draft":
        if head is None:
            _missing_head(out, snapshot, draft_vocab)
        return "draft"
    if rule == "draft-else-embed":
        if head is None:
            out.lose("embeddings", Finding(
                "lm-head-embedding",
                f"{snapshot.label} drops the lm_head module the checkpoint does not fill and scores draft tokens with "
                f"its embed_tokens ({embed_tokens}'s, {vocab} rows) instead of a trained head of {draft_vocab} rows",
                (Evidence("lm_head.weight", "absent", f"[{draft_vocab}, hidden], trained"),),
                "ship the draft's trained lm_head.weight", (f"rule: {snapshot.source('lm_head_source')}",),
            ))
            return f"{embed_tokens} embed_tokens"
        return "draft"
    if rule == "target-if-same-shape":
        same = draft_vocab == (sheet.target_vocab or vocab)
        if same and head is not None:
            out.lose("embeddings", Finding(
                "lm-head-replaced",
                f"{snapshot.label} replaces the draft's trained lm_head with the target's whenever their shapes match "
                f"(draft vocab = vocab = {vocab}): the draft's predictions go through the wrong head",
                (Evidence("lm_head.weight", f"[{draft_vocab}, hidden], trained", "kept"),),
                f"serve with {snapshot.serve_with('lm_head_source', lambda v: v != 'target-if-same-shape', engine=VLLM)}, or train with a "
                "reduced draft vocab",
                (f"rule: {snapshot.source('lm_head_source')}",),
            ))
        elif not same and head is None:
            _missing_head(out, snapshot, draft_vocab)
        return "target" if same else "draft"
    if head is None:
        if draft_vocab != vocab:
            out.lose("embeddings", Finding(
                "lm-head-missing",
                f"{snapshot.label} shares the target's full-vocab lm_head with a reduced-vocab draft ({draft_vocab} of "
                f"{vocab}): draft logits are indexed through d2t against the wrong rows: silently wrong tokens",
                (Evidence("lm_head.weight", "absent", f"[{draft_vocab}, hidden]"),), "ship the draft's trained lm_head",
                (f"rule: {snapshot.source('lm_head_source')}",),
            ))
        return "target"
    if rule == "target-if-absent-or-equal-unpacked" and sheet.contents.target_packed(TARGET_LM_HEAD):
        out.note(f"embeddings: {snapshot.label} keeps the draft's own lm_head without comparing it with the target's: the "
                 "target's lm_head is quantized into packed weights (no lm_head.weight), which it cannot compare "
                 f"(rule: {snapshot.source('lm_head_source')})")
        return "draft"
    equal = sheet.contents.same_as_target(head, TARGET_LM_HEAD)
    return "target" if equal else "draft"


def _missing_head(out: Filing, snapshot: Snapshot, draft_vocab: object) -> None:
    out.lose("embeddings", Finding(
        "lm-head-missing",
        f"{snapshot.label} uses the draft's own lm_head, and the checkpoint has none: it stays randomly initialised "
        f"(sglang#27829: accept len 1.00)",
        (Evidence("lm_head.weight", "absent", f"[{draft_vocab}, hidden]"),),
        "ship lm_head.weight, or set draft_vocab_size: null to borrow the target's "
        f"({snapshot.serve_with('draft_vocab_size_null', lambda v: v == 'target-lm_head', engine=SGLANG)})",
        (f"rule: {snapshot.source('lm_head_source')}",),
    ))
