"""Run the draft exactly as one engine version's load plan feeds it, and count what it would accept.

A :class:`Feed` is everything about a load plan that changes the draft's numbers: the target
states fed (layer-input indices = HF ``hidden_states`` indices), whether fc runs or a single state
bypasses it, the norm flags applied, whose ``embed_tokens`` / ``lm_head`` are used (the draft's,
the target's, or a seeded random init for a parameter the engine leaves uninitialised), how
``d2t`` is read, how many draft layers run and which norm layers >= 1 apply, the parameters
left uninitialised, and the draft's rope (the config's, as both engines build it, unless the
producer is known to have trained with another). Feeds are hashable: several engine versions with the same feed share one
draft pass (:class:`Simulator` caches by feed).

The walk is the engine's: start at the last prompt token, accept the longest matching prefix,
advance by accepted + 1, and keep drafting until the request has generated its continuation
(vLLM schedules full drafts to the end and counts acceptance before truncating at max_tokens:
``v1/core/sched/scheduler.py`` ``update_from_output``, 0.32.0), so the target run is
``steps`` tokens longer than the continuation. An engine that drafts SGLang's tree (``Feed.topk`` > 1) is walked
the same way from the deepest kept path of its tree that matches the target (``ReferenceDraft.propose_tree``).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from pytest_eagle3.knowledge.draft_budget import DraftBudget
from pytest_eagle3.producers.habits import Rope, RopeKey
from pytest_eagle3.reference.acceptance import (
    Acceptance,
    Reading,
    TargetRun,
    gold_tokens,
    greedy_walk,
    walk_accepted,
)
from pytest_eagle3.reference.draft import ReferenceDraft, rms_norm

if TYPE_CHECKING:
    from pytest_eagle3.reference.targets.source import WholeHead

DRAFT, TARGET, RANDOM, TARGET_EMBED = "draft", "target", "random", "target embed_tokens (tied)"
OFFSETS, IDENTITY, ABSOLUTE = "offsets", "identity", "absolute"
FC_RUN, FC_BYPASSED = "fc", "bypassed"
#: Seed of every parameter an engine leaves uninitialised (matrices N(0, 0.02), norms ones, biases
#: torch.nn.Linear's default U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
RANDOM_SEED = 20260
NORM_FLAGS = ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_logits", "feed_normed")


@dataclass(frozen=True)
class Feed:
    """How the draft is fed and built: by training, or by one engine version's load plan."""

    indices: tuple[int, ...]
    fc: str = FC_RUN
    norms: tuple[tuple[str, bool], ...] = ()
    embed: str = DRAFT
    lm_head: str = DRAFT
    d2t: str = OFFSETS
    layers: int = 1
    later_norm: str = "input_layernorm"
    uninitialised: tuple[str, ...] = ()
    #: The rope the draft runs with (producers.Rope.key) where it is not its config.json's; None: the config's.
    rope: RopeKey | None = None
    #: The first layer's input_layernorm also runs on the hidden path (ModelOpt's training; no engine).
    hidden_prenorm: bool = False
    #: How the engine drafts at the end of a request (knowledge.draft_budget): a property of its serving loop,
    #: never a deviation from training (``differences`` leaves it out).
    budget: str = "full"
    #: SGLang's tree (knowledge.draft_tree, ``--eagle3-topk``): candidates per node, and tokens verified per step
    #: (the root included); topk 1: the chain of ``steps``. A serving setting, never a deviation.
    topk: int = 1
    draft_tokens: int = 0

    def norm(self, name: str) -> bool:
        """Whether the feed applies the norm ``name``."""
        return dict(self.norms)[name]

    def differences(self, other: Feed) -> list[str]:
        """Field names where ``other`` differs (norm flags one by one)."""
        names = [f.name for f in dataclasses.fields(self) if f.name not in ("norms", "budget", "topk", "draft_tokens")
                 and getattr(self, f.name) != getattr(other, f.name)]
        names += [f"norms.{n}" for n in NORM_FLAGS if dict(self.norms).get(n) != dict(other.norms).get(n)]
        return names

    def with_field(self, name: str, other: Feed) -> Feed:
        """This feed with one field (as named by ``differences``) taken from ``other``."""
        if name.startswith("norms."):
            flag = name.split(".", 1)[1]
            return dataclasses.replace(self, norms=tuple(
                (k, dict(other.norms)[flag] if k == flag else v) for k, v in self.norms))
        if name in ("layers", "later_norm"):
            return dataclasses.replace(self, layers=other.layers, later_norm=other.later_norm)
        return dataclasses.replace(self, **{name: getattr(other, name)})


def describe_field(name: str, feed: Feed) -> str:
    """One deviation in words: 'aux layers: inputs of [3, 5, 6]'."""
    if name == "indices":
        return f"aux layers: layer inputs {list(feed.indices)}"
    if name == "fc":
        return "fc bypassed: one hidden state reaches the draft" if feed.fc == FC_BYPASSED else "fc runs"
    if name.startswith("norms."):
        return f"{name.split('.', 1)[1]}={feed.norm(name.split('.', 1)[1])}"
    if name == "embed":
        return f"embed_tokens from {_source_words(feed.embed)}"
    if name == "lm_head":
        return f"lm_head from {_source_words(feed.lm_head)}"
    if name == "d2t":
        return {OFFSETS: "d2t read as offsets", IDENTITY: "d2t ignored: draft ids used as target ids",
                ABSOLUTE: "d2t read as absolute ids"}[feed.d2t]
    if name in ("layers", "later_norm"):
        return f"{feed.layers} draft layer(s), layers >= 1 normed by {feed.later_norm}"
    if name == "hidden_prenorm":
        return ("layers.0.input_layernorm " + ("applied" if feed.hidden_prenorm else "not applied")
                + " on the hidden path before hidden_norm")
    if name == "rope":
        if feed.rope is None:
            return "rope: config.json's rope_theta / rope_scaling, not the rope it was trained with"
        theta, scaling = feed.rope
        return f"rope: {Rope(theta, dict(scaling) or None).describe()}"
    return f"uninitialised: {', '.join(feed.uninitialised[:3])}" + (" ..." if len(feed.uninitialised) > 3 else "")


def _source_words(source: str) -> str:
    return {DRAFT: "the draft", TARGET: "the target", RANDOM: f"a seeded random init (seed {RANDOM_SEED})"}.get(
        source, source)


@dataclass(frozen=True)
class TargetFeed:
    """What one target run provides to every simulation: states, embed, lm_head, final norm."""

    runs: tuple[TargetRun, ...]
    embed: torch.Tensor
    lm_head: torch.Tensor
    final_norm: torch.Tensor
    final_norm_eps: float
    continuation: int
    layers: int
    #: Set when the head was read in part (a dump): the whole embedding / lm_head, read where one is needed.
    whole: WholeHead | None = None

    def full(self, name: str) -> torch.Tensor:
        """The target's whole ``embed`` or ``lm_head`` (read now, once, where only part of it was read)."""
        if self.whole is not None:
            return self.whole.matrix(name)
        return self.embed if name == "embed" else self.lm_head

    def same_embed(self, other: torch.Tensor) -> bool:
        """Whether ``other`` equals the target's embedding (compared in ``other``'s dtype)."""
        if other.shape != self.embed.shape:
            return False
        if self.whole is not None:
            return self.whole.embed_equals(other)
        return bool(torch.equal(other, self.embed.to(other.dtype)))


@dataclass
class Simulator:
    """One draft against one target run; draft passes cached per distinct feed."""

    draft: ReferenceDraft
    target: TargetFeed
    steps: int = 3
    cache: dict[Feed, Acceptance] = field(default_factory=dict)
    passes: int = 0

    def acceptance(self, feed: Feed) -> Acceptance:
        """The acceptance under ``feed``, run once and cached."""
        if feed not in self.cache:
            self.cache[feed] = self._run(feed)
            self.passes += 1
        return self.cache[feed]

    def _run(self, feed: Feed) -> Acceptance:
        draft, embed = built_draft(self.draft, feed, self.target)
        counts = torch.zeros(self.steps + 1, dtype=torch.long)
        reading = Reading(feed.indices, 0, ABSOLUTE if feed.d2t == ABSOLUTE else OFFSETS)
        with torch.no_grad():
            for run in self.target.runs:
                counts += self._walk(draft, embed, run, feed)
        return _acceptance(reading, counts, self.steps)

    def _walk(self, draft: ReferenceDraft, embed: torch.Tensor, run: TargetRun, feed: Feed) -> torch.Tensor:
        steps, counts = self.steps, torch.zeros(self.steps + 1, dtype=torch.long)
        # the request drafts at position p while it has generated fewer than `continuation` tokens:
        # p - prompt_length + 2 < continuation
        usable = min(run.prompt_length + self.target.continuation - 2, run.sequences.shape[1] - 1 - steps)
        if usable < run.prompt_length:
            return counts
        if feed.fc == FC_BYPASSED:
            final = run.states[self.target.layers][:, :usable]
            aux = rms_norm(final, self.target.final_norm, self.target.final_norm_eps)
        else:
            aux = torch.cat([run.states[i][:, :usable] for i in feed.indices], dim=-1)
        next_ids = run.sequences[:, 1: usable + 1]
        d2t = ABSOLUTE if feed.d2t == ABSOLUTE else OFFSETS
        budget = DraftBudget(feed.budget)
        cut = self.target.continuation if budget != DraftBudget.FULL else None
        if feed.topk > 1:
            tree = draft.propose_tree(aux, next_ids, steps, feed.topk, embed, d2t)
            keep = (feed.draft_tokens or steps + 1) - 1
            walk_accepted(tree.accepted(gold_tokens(run, usable, steps), keep), run, usable, steps, counts, cut,
                          budget.reserve)
            return counts
        proposals, _ = draft.propose(aux, next_ids, steps, embed, d2t)
        greedy_walk(proposals, run, usable, steps, counts, cut, budget.reserve)
        return counts


def _acceptance(reading: Reading, counts: torch.Tensor, steps: int) -> Acceptance:
    drafts = int(counts.sum())
    if drafts == 0:
        return Acceptance(reading, 0.0, (), 0)
    at_least = [int(counts[j:].sum()) / drafts for j in range(1, steps + 1)]
    return Acceptance(reading, 1.0 + sum(at_least), tuple(round(p, 4) for p in at_least), drafts)


def built_draft(base: ReferenceDraft, feed: Feed, target: TargetFeed) -> tuple[ReferenceDraft, torch.Tensor]:
    """The draft as the feed builds it, and the embedding matrix it uses."""
    weights = dict(base.weights)
    spec = base.spec
    norms = dict(feed.norms)
    flags: dict[str, Any] = {k: norms[k] for k in NORM_FLAGS if k in norms}
    spec = dataclasses.replace(spec, layers=feed.layers, hidden_prenorm=feed.hidden_prenorm, **flags)
    if feed.rope is not None and feed.rope != base.config_rope:
        theta, scaling = feed.rope
        same_scaling = base.config_rope is not None and scaling == base.config_rope[1]
        spec = dataclasses.replace(spec, rope_theta=theta, rope_scaling=spec.rope_scaling if same_scaling else scaling)
    hidden = spec.hidden_size
    for name in feed.uninitialised:
        if name.endswith(".bias") and name.replace(".bias", ".weight") in weights:
            weights[name] = _random_bias(name, weights[name.replace(".bias", ".weight")])
        elif name in weights or name.startswith("layers."):
            weights[name] = _random_like(name, weights.get(name), hidden)
    for layer in range(base.spec.layers, feed.layers):  # layers the engine builds beyond the checkpoint
        weights.update(_random_layer(layer, spec, int(weights["layers.0.mlp.gate_proj.weight"].shape[0])))
    _apply_norm_weights(weights, spec, feed, hidden)
    if feed.later_norm == "hidden_norm":
        for layer in range(1, feed.layers):
            weights[f"layers.{layer}.input_layernorm.weight"] = weights.get(
                f"layers.{layer}.hidden_norm.weight", torch.ones(hidden))
    if feed.fc == FC_BYPASSED:
        weights["fc.weight"] = torch.eye(hidden)
        weights.pop("fc.bias", None)
        weights.pop("input_norm.weight", None)
        spec = dataclasses.replace(spec, fc_norm=False, norm_before_fc=False)
    weights["lm_head.weight"] = _head(base, feed, target)
    if feed.d2t == IDENTITY:
        weights.pop("d2t", None)
    return ReferenceDraft(spec, weights, base.config_rope), _embed(base, feed, target)


def _apply_norm_weights(weights: dict[str, torch.Tensor], spec: Any, feed: Feed, hidden: int) -> None:
    """input_norm / fc_norm present exactly when the engine applies them (ones when not shipped)."""
    if spec.norm_before_fc:
        weights.setdefault("input_norm.weight", torch.ones(weights["fc.weight"].shape[1]))
    else:
        weights.pop("input_norm.weight", None)
    for i in range(spec.aux_count):
        name = f"fc_norm.{i}.weight"
        if spec.fc_norm:
            weights.setdefault(name, torch.ones(weights["fc.weight"].shape[1] // spec.aux_count))
        else:
            weights.pop(name, None)


def _random_layer(layer: int, spec: Any, inter: int) -> dict[str, torch.Tensor]:
    """A later (hidden-wide) decoder layer the checkpoint does not ship, seeded."""
    h, q, kv = spec.hidden_size, spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    shapes = {"self_attn.q_proj.weight": (q, h), "self_attn.k_proj.weight": (kv, h), "self_attn.v_proj.weight": (kv, h),
              "self_attn.o_proj.weight": (h, q), "mlp.gate_proj.weight": (inter, h), "mlp.up_proj.weight": (inter, h),
              "mlp.down_proj.weight": (h, inter), "input_layernorm.weight": (h,), "post_attention_layernorm.weight": (h,)}
    return {f"layers.{layer}.{k}": _random_like(f"layers.{layer}.{k}", torch.empty(shape), h)
            for k, shape in shapes.items()}


def _random_bias(name: str, weight: torch.Tensor) -> torch.Tensor:
    """A bias the checkpoint does not ship, as torch.nn.Linear initialises it: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    gen = torch.Generator().manual_seed(RANDOM_SEED + zlib.crc32(name.encode()))
    bound = 1.0 / float(weight.shape[1]) ** 0.5
    bias: torch.Tensor = (torch.rand(weight.shape[0], generator=gen) * 2 - 1) * bound
    return bias


def _random_like(name: str, tensor: torch.Tensor | None, hidden: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(RANDOM_SEED + zlib.crc32(name.encode()))
    shape = tensor.shape if tensor is not None else (hidden,)
    if name.endswith("norm.weight"):
        return torch.ones(shape)
    return torch.randn(shape, generator=gen) * 0.02


def _embed(base: ReferenceDraft, feed: Feed, target: TargetFeed) -> torch.Tensor:
    own = base.weights.get("embed_tokens.weight")
    if feed.embed == TARGET:
        return target.embed
    if feed.embed == DRAFT and own is not None:
        return own
    return _random_like("embed_tokens.weight", target.embed, target.embed.shape[1])


def _head(base: ReferenceDraft, feed: Feed, target: TargetFeed) -> torch.Tensor:
    own = base.weights.get("lm_head.weight")
    if feed.lm_head == TARGET:
        return target.full("lm_head")
    if feed.lm_head == TARGET_EMBED:
        return target.full("embed")
    if feed.lm_head == DRAFT and own is not None:
        return own
    rows = own.shape[0] if own is not None else target.lm_head.shape[0]
    return _random_like("lm_head.weight", torch.empty(rows, base.spec.hidden_size), base.spec.hidden_size)


def trained_feed(draft: ReferenceDraft, indices: Sequence[int], d2t: str, target: TargetFeed,
                 rope: RopeKey | None = None) -> Feed:
    """The feed the draft was trained with: its own config, the given layers and d2t reading, and the
    rope its producer trained with where that is not the config's."""
    s = draft.spec
    own = draft.weights.get("embed_tokens.weight")
    same = own is not None and target.same_embed(own)
    return Feed(
        indices=tuple(indices), norms=tuple((n, bool(getattr(s, n))) for n in NORM_FLAGS),
        embed=DRAFT if own is not None and not same else TARGET,
        lm_head=DRAFT, d2t=d2t if "d2t" in draft.weights else IDENTITY, layers=s.layers, rope=rope,
        hidden_prenorm=s.hidden_prenorm,
    )
