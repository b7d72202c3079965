"""A plain-torch EAGLE-3 draft forward for any checkpoint the reader understands.

Written from the producers' own forwards (speculators 0.9.0 ``models/eagle3/core.py`` and
``model_definitions.py``; specforge 0.2.0 ``modeling/draft/llama3_eagle.py``):

    x   = fc(fc_norm_i(chunk_i) | input_norm(cat aux))               (target hidden -> draft hidden)
          (ModelOpt: hidden_norm(input_layernorm(x)) on the hidden path, ``DraftSpec.hidden_prenorm``)
    h   = layer_0(cat(input_layernorm(embed(token)), hidden_norm(x)))  residual: x, or hidden_norm(x)
    h   = layer_l(h) for further layers (multi-layer drafts)
    out = lm_head(norm(h)) over the draft vocab; target id = i + d2t[i]

``propose`` runs ``k`` chained steps for every position at once (training-time-test layout): step
``j`` at position ``i`` attends to step-1 keys at positions ``<= i`` and to its own earlier steps at
``i`` only, which is what an engine's KV cache holds when it drafts from position ``i``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError
from pytest_eagle3.producers.habits import NORM_HABITS, norm_output_reading
from pytest_eagle3.producers.names import layer_config
from pytest_eagle3.producers.rope import RopeKey, forward_rope, served_rope

#: Activation names in config.json ``hidden_act``. Source: transformers ACT2FN.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "silu": F.silu, "swish": F.silu, "gelu": F.gelu, "relu": F.relu,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}
#: Draft-layer key layouts, first layer first. Source: formats.FIRST_LAYER_PREFIXES.
LAYER_KEY = re.compile(r"^(?:model\.)?(?:layers\.(\d+)|(midlayer))\.(.+)$")
TOP_LEVEL = ("fc.weight", "fc.bias", "input_norm.weight", "norm.weight", "lm_head.weight",
             "embed_tokens.weight", "d2t")


class DraftLoadError(Exception):
    """The checkpoint cannot be run by the reference forward; the message says why."""


@dataclass(frozen=True)
class DraftSpec:
    """What the forward needs from the config, after the producer's defaults are applied."""

    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: tuple[tuple[str, Any], ...]
    act: str
    layers: int
    aux_count: int
    norm_before_residual: bool
    norm_before_fc: bool
    fc_norm: bool
    norm_logits: bool
    feed_normed: bool
    #: The first layer's input_layernorm also runs on the hidden path before hidden_norm (ModelOpt's forward:
    #: producers.habits.NORM_HABITS); no engine does this.
    hidden_prenorm: bool = False


@dataclass
class ReferenceDraft:
    """Weights under canonical names (``layers.{l}.*``, ``fc.weight``, ...) and the spec."""

    spec: DraftSpec
    weights: dict[str, torch.Tensor]
    #: The rope its config.json gives it, as both engines build it (producers.Rope.key); None when unknown.
    config_rope: RopeKey | None = None

    # -- loading ---------------------------------------------------------------------------
    @classmethod
    def from_checkpoint(cls, ckpt: Checkpoint, dtype: torch.dtype = torch.float32,
                        device: str = "cpu") -> ReferenceDraft:
        """Load a draft; raises ``DraftLoadError`` with a readable reason when it cannot run."""
        if ckpt.config_raw is None or not ckpt.tensors or ckpt.problems:
            raise DraftLoadError("the checkpoint is not readable (see checkpoint.readable / config.parseable)")
        weights: dict[str, torch.Tensor] = {}
        try:
            for name in ckpt.tensors:
                canonical = canonical_name(name)
                if canonical is None:
                    continue
                tensor = ckpt.read(name)
                if canonical != "d2t":
                    tensor = tensor.to(dtype)
                weights[canonical] = tensor.to(device)
        except CheckpointReadError as exc:
            raise DraftLoadError(f"cannot read the weights: {exc}") from exc
        spec = spec_from_config(ckpt, weights)
        draft = cls(spec, weights, served_rope(ckpt.config_raw).key())
        draft.check()
        return draft

    def check(self) -> None:
        """Every tensor the forward uses is there, with the width it needs."""
        s, w = self.spec, self.weights
        needed = ["fc.weight", "norm.weight", "lm_head.weight"]
        for layer in range(s.layers):
            needed += [f"layers.{layer}.{n}" for n in (
                "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight")]
        needed.append("layers.0.hidden_norm.weight")
        if s.norm_before_fc:
            needed.append("input_norm.weight")
        if s.fc_norm:
            needed += [f"fc_norm.{i}.weight" for i in range(s.aux_count)]
        missing = [n for n in needed if n not in w]
        if missing:
            raise DraftLoadError(f"missing tensors: {', '.join(missing[:4])}" + (" ..." if len(missing) > 4 else ""))
        q_in = w["layers.0.self_attn.q_proj.weight"].shape[1]
        if q_in != 2 * s.hidden_size:
            raise DraftLoadError(f"first-layer q_proj takes {q_in} inputs, not 2 x hidden ({2 * s.hidden_size})")
        if w["fc.weight"].shape[0] != s.hidden_size:
            raise DraftLoadError(f"fc.weight has {w['fc.weight'].shape[0]} rows, hidden size is {s.hidden_size}")

    def missing_embedding(self, target_width: int) -> str | None:
        """Why the draft cannot run on a target whose embedding is ``target_width`` wide (it ships no embed_tokens and
        runs at another width: the embedding it was trained with is not in the files), else None."""
        if "embed_tokens.weight" in self.weights or target_width == self.spec.hidden_size:
            return None
        return (f"the draft ships no embed_tokens and runs {self.spec.hidden_size} wide: the target's embedding is "
                f"{target_width} wide, so the embedding it was trained with is not in the files (see engine.embeddings)")

    @property
    def fc_in(self) -> int:
        """The fc's input width (aux states x hidden size)."""
        return int(self.weights["fc.weight"].shape[1])

    @property
    def draft_vocab(self) -> int:
        """The draft's vocabulary size (lm_head rows)."""
        return int(self.weights["lm_head.weight"].shape[0])

    def target_ids(self, d2t_reading: str = "offsets") -> torch.Tensor | None:
        """Draft id -> target id, as engines read ``d2t`` (offsets) or as absolute ids; None = identity."""
        d2t = self.weights.get("d2t")
        if d2t is None:
            return None
        d2t = d2t.long()
        return d2t if d2t_reading == "absolute" else torch.arange(d2t.shape[0], device=d2t.device) + d2t

    # -- forward ---------------------------------------------------------------------------
    def project(self, aux: torch.Tensor) -> torch.Tensor:
        """fc over the concatenated aux states, with ``input_norm`` / per-chunk ``fc_norm``."""
        w = self.weights
        x = aux.to(w["fc.weight"].dtype)
        if "input_norm.weight" in w:
            x = rms_norm(x, w["input_norm.weight"], self.spec.rms_norm_eps)
        norms = [w[f"fc_norm.{i}.weight"] for i in range(self.spec.aux_count) if f"fc_norm.{i}.weight" in w]
        if norms:
            chunks = x.chunk(len(norms), dim=-1)
            x = torch.cat([rms_norm(c, n, self.spec.rms_norm_eps) for c, n in zip(chunks, norms)], dim=-1)
        return F.linear(x, w["fc.weight"], w.get("fc.bias"))

    def propose(
        self, aux: torch.Tensor, next_ids: torch.Tensor, steps: int, embed: torch.Tensor,
        d2t_reading: str = "offsets", teacher: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Draft ``steps`` tokens from every position at once.

        aux [B, T, A*Th]: the target's aux states at position i; next_ids [B, T]: the token at
        i + 1 (what the engine samples from the target); embed: the embedding matrix to use
        (the draft's own, or the target's). ``teacher`` [B, T, steps-1] feeds given tokens to
        steps 2.. instead of the draft's own proposals (training). Returns target ids
        [B, T, steps] and the draft-vocab logits of each step.
        """
        to_target = self.target_ids(d2t_reading)
        hidden = self.project(aux)
        positions = torch.arange(next_ids.shape[1], device=next_ids.device)
        caches: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in range(self.spec.layers)]
        tokens = next_ids
        proposals, all_logits = [], []
        for step in range(steps):
            logits, hidden = self.step(tokens, hidden, caches, positions + step, embed)
            draft_ids = logits.argmax(-1)
            proposed = to_target[draft_ids] if to_target is not None else draft_ids
            proposals.append(proposed)
            all_logits.append(logits)
            tokens = teacher[..., step] if teacher is not None and step < teacher.shape[-1] else proposed
        return torch.stack(proposals, dim=-1), all_logits

    def step(self, tokens: torch.Tensor, hidden: torch.Tensor, caches: list[list[tuple[torch.Tensor, torch.Tensor]]],
             positions: torch.Tensor, embed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One draft step over every position: the draft-vocab logits and the hidden state the next step takes
        (each layer's keys appended to ``caches``)."""
        s, w = self.spec, self.weights
        cos, sin = self.rotary(positions, hidden.dtype)
        emb = F.embedding(tokens.clamp(0, embed.shape[0] - 1), embed).to(hidden.dtype)
        h = self._first_layer(emb, hidden, caches[0], cos, sin)
        for layer in range(1, s.layers):
            h = self._layer(layer, h, caches[layer], cos, sin)
        normed = rms_norm(h, w["norm.weight"], s.rms_norm_eps)
        logits = F.linear(normed if s.norm_logits else h, w["lm_head.weight"])
        return logits, normed if s.feed_normed else h

    def propose_tree(self, aux: torch.Tensor, next_ids: torch.Tensor, steps: int, topk: int, embed: torch.Tensor,
                     d2t_reading: str = "offsets") -> DraftTree:
        """SGLang's EAGLE tree from every position at once (sglang 0.5.23 srt/speculative/eagle_worker_v2.py
        ``EAGLEWorkerV2.draft_forward`` with spec_utils.py ``select_top_k_tokens``): step 1 takes the ``topk`` most
        probable tokens; each later step expands the ``topk`` children of every frontier node, scores each by its
        cumulative draft probability (parent's score x its own plain softmax over the draft vocab: spec_utils.py
        ``renorm_draft_probs`` without rejection sampling), keeps every child as a candidate, and the best
        ``topk`` of them as the next frontier. Each branch attends to the context's first-step keys and to its own
        ancestors' (the engine's tree mask)."""
        to_target = self.target_ids(d2t_reading)
        hidden = self.project(aux)
        batch, length = next_ids.shape
        positions = torch.arange(length, device=next_ids.device)
        caches: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in range(self.spec.layers)]
        tokens, scores, parents = [], [], []
        frontier_score = frontier_index = torch.empty(0)
        rows, fed, count = None, next_ids, 0
        for step in range(steps):
            logits, hidden = self.step(fed, hidden, caches, positions + step, embed)
            top = logits.topk(topk, dim=-1).indices  # [R, T, topk]: ordered as the logits, so topk 1 is the argmax
            prob = torch.softmax(logits.float(), dim=-1).gather(-1, top)
            ids = to_target[top] if to_target is not None else top
            if step == 0:
                score, token = prob, ids
                parent = torch.full_like(top, -1)
            else:  # rows b * topk + f: frontier node f of batch row b
                prob = prob.view(batch, topk, length, topk).permute(0, 2, 1, 3)
                score = (frontier_score.unsqueeze(-1) * prob).reshape(batch, length, topk * topk)
                token = ids.view(batch, topk, length, topk).permute(0, 2, 1, 3).reshape(batch, length, topk * topk)
                parent = frontier_index.unsqueeze(-1).expand(-1, -1, -1, topk).reshape(batch, length, topk * topk)
            tokens.append(token)
            scores.append(score)
            parents.append(parent)
            if step == steps - 1:
                break
            frontier_score, chosen = score.topk(topk, dim=-1)
            frontier_index = chosen + count
            count += score.shape[-1]
            fed = token.gather(-1, chosen).permute(0, 2, 1).reshape(batch * topk, length)
            if rows is None:  # the first frontier: every row continues the context's step
                hidden = hidden.repeat_interleave(topk, dim=0)
                for cache in caches:
                    cache[:] = [(k.repeat_interleave(topk, dim=0), v.repeat_interleave(topk, dim=0)) for k, v in cache]
                rows = torch.arange(batch, device=next_ids.device).repeat_interleave(topk) * topk
            else:  # each new frontier node continues its parent's row
                source = (rows.view(batch, topk, 1) + (chosen // topk).permute(0, 2, 1))  # [B, topk, T]
                source = source.reshape(batch * topk, length)
                hidden = _by_row(hidden, source, 1)
                for cache in caches:
                    cache[1:] = [(_by_row(k, source, 2), _by_row(v, source, 2)) for k, v in cache[1:]]
        depth = torch.cat([torch.full((t.shape[-1],), i + 1, dtype=torch.long) for i, t in enumerate(tokens)])
        return DraftTree(torch.cat(tokens, -1), torch.cat(scores, -1), torch.cat(parents, -1), depth)

    def _first_layer(self, emb: torch.Tensor, hidden: torch.Tensor,
                     cache: list[tuple[torch.Tensor, torch.Tensor]], cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        s, w = self.spec, self.weights
        pre = rms_norm(hidden, w["layers.0.input_layernorm.weight"], s.rms_norm_eps) if s.hidden_prenorm else hidden
        normed_hidden = rms_norm(pre, w["layers.0.hidden_norm.weight"], s.rms_norm_eps)
        x = torch.cat([rms_norm(emb, w["layers.0.input_layernorm.weight"], s.rms_norm_eps), normed_hidden], dim=-1)
        residual = normed_hidden if s.norm_before_residual else hidden
        return self._attention_mlp(0, x, residual, cache, cos, sin)

    def _layer(self, layer: int, h: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]],
               cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = rms_norm(h, self.weights[f"layers.{layer}.input_layernorm.weight"], self.spec.rms_norm_eps)
        return self._attention_mlp(layer, x, h, cache, cos, sin)

    def _attention_mlp(self, layer: int, x: torch.Tensor, residual: torch.Tensor,
                       cache: list[tuple[torch.Tensor, torch.Tensor]], cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        s, w, p = self.spec, self.weights, f"layers.{layer}."
        batch, length, _ = x.shape
        q = F.linear(x, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias"))
        k = F.linear(x, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias"))
        v = F.linear(x, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias"))
        q = q.view(batch, length, s.num_heads, s.head_dim).transpose(1, 2)
        k = k.view(batch, length, s.num_kv_heads, s.head_dim).transpose(1, 2)
        v = v.view(batch, length, s.num_kv_heads, s.head_dim).transpose(1, 2)
        if p + "self_attn.q_norm.weight" in w:  # Qwen3 layers
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], s.rms_norm_eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], s.rms_norm_eps)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        groups = s.num_heads // s.num_kv_heads
        cache.append((k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)))
        attn = ttt_attention(q, cache, 1.0 / math.sqrt(s.head_dim))
        attn = attn.transpose(1, 2).reshape(batch, length, s.num_heads * s.head_dim)
        h = residual + F.linear(attn, w[p + "self_attn.o_proj.weight"], w.get(p + "self_attn.o_proj.bias"))
        y = rms_norm(h, w[p + "post_attention_layernorm.weight"], s.rms_norm_eps)
        act = ACTIVATIONS[s.act]
        mlp = F.linear(act(F.linear(y, w[p + "mlp.gate_proj.weight"])) * F.linear(y, w[p + "mlp.up_proj.weight"]),
                       w[p + "mlp.down_proj.weight"])
        return h + mlp

    def rotary(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The rope's (cos, sin) at ``positions``."""
        seq_len = int(positions.max()) + 1 if positions.numel() else None
        inv_freq, factor = rope_frequencies(self.spec.head_dim, self.spec.rope_theta, dict(self.spec.rope_scaling),
                                            seq_len)
        freqs = positions.double()[:, None] * inv_freq.double().to(positions.device)[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        return (emb.cos() * factor).to(dtype), (emb.sin() * factor).to(dtype)


@dataclass(frozen=True)
class DraftTree:
    """Every candidate of a tree drafted from each position: ``tokens``, ``scores`` (cumulative draft probability)
    and ``parents`` (candidate index, -1 for the root's children) are [B, T, N]; ``depth`` [N] is each candidate's
    step (1-based), parents before children."""

    tokens: torch.Tensor
    scores: torch.Tensor
    parents: torch.Tensor
    depth: torch.Tensor

    def accepted(self, gold: torch.Tensor, keep: int) -> torch.Tensor:
        """Tokens accepted from each position [B, T] when the engine verifies the ``keep`` best candidates
        (sglang eagle_utils.py ``organize_draft_results``: torch.topk of the scores) greedily against ``gold``
        [B, T, steps], the target's continuation: the deepest kept candidate whose path is the continuation."""
        kept = torch.zeros_like(self.scores, dtype=torch.bool)
        kept.scatter_(-1, self.scores.topk(min(keep, self.scores.shape[-1]), dim=-1).indices, True)
        match = torch.zeros_like(kept)
        accepted = torch.zeros(kept.shape[:2], dtype=torch.long, device=kept.device)
        for n in range(self.tokens.shape[-1]):
            depth = int(self.depth[n])
            parent = self.parents[..., n]
            up = torch.ones_like(kept[..., n]) if depth == 1 else match.gather(-1, parent.clamp(min=0)[..., None])[..., 0]
            match[..., n] = kept[..., n] & up & (self.tokens[..., n] == gold[..., depth - 1])
            accepted = torch.where(match[..., n], torch.clamp(accepted, min=depth), accepted)
        return accepted


def _by_row(x: torch.Tensor, source: torch.Tensor, position_dim: int) -> torch.Tensor:
    """``x`` [R, ..., T, ...] with row ``source[r, t]`` at each (r, t): the rows each position's branch continues."""
    moved = x.movedim(position_dim, 1)  # [R, T, ...]
    picked = moved[source, torch.arange(source.shape[1], device=source.device)[None, :]]
    return picked.movedim(1, position_dim)


def ttt_attention(q: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]], scale: float) -> torch.Tensor:
    """Step-j attention: causal over step-1 keys, plus each later step's key at the same position."""
    k1, v1 = cache[0]
    length = q.shape[2]
    scores = torch.matmul(q, k1.transpose(-1, -2)) * scale
    causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    diag = [(q * k).sum(-1, keepdim=True) * scale for k, _ in cache[1:]]
    probs = torch.softmax(torch.cat([scores, *diag], dim=-1).float(), dim=-1).to(q.dtype)
    out = torch.matmul(probs[..., :length], v1)
    for m, (_, v) in enumerate(cache[1:]):
        out = out + probs[..., length + m: length + m + 1] * v
    return out


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Llama/Qwen3 RMSNorm: normalise in fp32, cast back, then scale."""
    dtype = x.dtype
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)
    return weight * y.to(dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` by the rope's ``cos`` and ``sin`` (the half-split layout)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


#: Rope types the reference forward computes. Formulas: transformers 5.24
#: ``modeling_rope_utils`` (``ROPE_INIT_FUNCTIONS`` and ``dynamic_rope_update``); checked against
#: them in ``tests/test_rope.py``.
ROPE_TYPES = ("default", "linear", "llama3", "yarn", "dynamic", "longrope")


def rope_inv_freq(head_dim: int, theta: float, scaling: Mapping[str, Any]) -> torch.Tensor:
    """Inverse frequencies at the model's own length (no dynamic growth); see ``rope_frequencies``."""
    return rope_frequencies(head_dim, theta, scaling)[0]


def rope_frequencies(head_dim: int, theta: float, scaling: Mapping[str, Any],
                     seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """(inverse frequencies, cos/sin scale) for every rope type in ``ROPE_TYPES``.

    ``scaling`` is the config's ``rope_scaling`` / ``rope_parameters`` without ``rope_theta``;
    ``max_position_embeddings`` is read from it when the caller adds it (dynamic, longrope and
    yarn without ``factor`` need it). ``seq_len`` is the longest position + 1 of the forward
    (dynamic and longrope change with it, as transformers' ``dynamic_rope_update`` does).
    """
    kind = str(scaling.get("rope_type", scaling.get("type", "default")))
    if kind not in ROPE_TYPES:
        raise DraftLoadError(f"rope type {kind!r} is not supported by the reference forward ({', '.join(ROPE_TYPES)})")
    if float(scaling.get("partial_rotary_factor", 1.0)) != 1.0:
        raise DraftLoadError("partial_rotary_factor != 1 is not supported by the reference forward")
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    inv = 1.0 / (theta ** exponents)
    given = scaling.get("attention_factor")
    if kind == "default":
        return inv, 1.0
    if kind == "linear":
        return inv / float(scaling["factor"]), 1.0
    if kind == "llama3":
        return _llama3(inv, scaling), 1.0
    if kind == "dynamic":
        return _dynamic(head_dim, theta, exponents, scaling, seq_len), 1.0
    if kind == "yarn":
        return _yarn(head_dim, theta, scaling)
    return _longrope(theta, exponents, scaling, seq_len, given)


def _need(scaling: Mapping[str, Any], name: str, kind: str) -> float:
    value = scaling.get(name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise DraftLoadError(f"rope type {kind!r} needs a numeric {name} in rope_scaling")
    return float(value)


def _llama3(inv: torch.Tensor, scaling: Mapping[str, Any]) -> torch.Tensor:
    factor, low = _need(scaling, "factor", "llama3"), _need(scaling, "low_freq_factor", "llama3")
    high, old_len = _need(scaling, "high_freq_factor", "llama3"), _need(scaling, "original_max_position_embeddings", "llama3")
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old_len / low, inv / factor, inv)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
    return torch.where(medium, smoothed, scaled)


def _dynamic(head_dim: int, theta: float, exponents: torch.Tensor, scaling: Mapping[str, Any],
             seq_len: int | None) -> torch.Tensor:
    """NTK: the base grows only once the sequence outgrows max_position_embeddings."""
    factor, max_len = _need(scaling, "factor", "dynamic"), _need(scaling, "max_position_embeddings", "dynamic")
    length = max(float(seq_len or 0), max_len)
    base = theta * ((factor * length / max_len) - (factor - 1)) ** (head_dim / (head_dim - 2))
    inv: torch.Tensor = 1.0 / (base ** exponents)
    return inv


def _yarn(head_dim: int, theta: float, scaling: Mapping[str, Any]) -> tuple[torch.Tensor, float]:
    original = scaling.get("original_max_position_embeddings") or scaling.get("max_position_embeddings")
    if not isinstance(original, (int, float)):
        raise DraftLoadError("rope type 'yarn' needs original_max_position_embeddings in rope_scaling")
    factor = scaling.get("factor")
    factor = float(factor) if factor is not None else _need(scaling, "max_position_embeddings", "yarn") / float(original)

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention = scaling.get("attention_factor")
    if attention is None:
        m, m_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
        attention = mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)
    fast, slow = float(scaling.get("beta_fast") or 32), float(scaling.get("beta_slow") or 1)

    def correction(rotations: float) -> float:
        return head_dim * math.log(float(original) / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction(fast), correction(slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    high = high + 0.001 if low == high else high
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    extrapolate = 1 - ramp
    pos = theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    inv = (1.0 / (factor * pos)) * (1 - extrapolate) + (1.0 / pos) * extrapolate
    return inv, float(attention)


def _longrope(theta: float, exponents: torch.Tensor, scaling: Mapping[str, Any], seq_len: int | None,
              given: Any) -> tuple[torch.Tensor, float]:
    original = _need(scaling, "original_max_position_embeddings", "longrope")
    long, short = scaling.get("long_factor"), scaling.get("short_factor")
    if not isinstance(long, list) or not isinstance(short, list) or len(long) != len(short) != exponents.numel():
        raise DraftLoadError("rope type 'longrope' needs long_factor and short_factor lists of head_dim / 2 numbers")
    factor = scaling.get("factor")
    factor = float(factor) if factor is not None else _need(scaling, "max_position_embeddings", "longrope") / original
    attention = float(given) if given is not None else (
        1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original)))
    ext = torch.tensor(long if seq_len and seq_len > original else short, dtype=torch.float64)
    return 1.0 / (ext * theta ** exponents), attention


def canonical_name(name: str) -> str | None:
    """``midlayer.x`` -> ``layers.0.x``; drops a leading ``model.``; None for tensors not used."""
    match = LAYER_KEY.match(name)
    if match:
        layer = "0" if match.group(2) else match.group(1)
        return f"layers.{layer}.{match.group(3)}"
    bare = name.removeprefix("model.")
    if bare in TOP_LEVEL or re.fullmatch(r"fc_norm\.\d+\.weight", bare):
        return bare
    return None


def spec_from_config(ckpt: Checkpoint, weights: Mapping[str, torch.Tensor]) -> DraftSpec:
    """The spec from the normalised config, with shapes filling what the config leaves out."""
    cfg = ckpt.config
    raw = ckpt.config_raw or {}
    scope = layer_config(raw)[0]
    if cfg.hidden_size is None:
        raise DraftLoadError("config.json gives no hidden_size")
    heads = cfg.num_attention_heads
    if heads is None:
        raise DraftLoadError("config.json gives no num_attention_heads")
    head_dim = cfg.head_dim or cfg.hidden_size // heads
    q = weights.get("layers.0.self_attn.q_proj.weight")
    k = weights.get("layers.0.self_attn.k_proj.weight")
    if q is not None and q.shape[0] != heads * head_dim:
        raise DraftLoadError(f"q_proj has {q.shape[0]} rows, config says {heads} heads x {head_dim}")
    kv_heads = cfg.num_key_value_heads or (k.shape[0] // head_dim if k is not None else heads)
    act = str(scope.get("hidden_act", raw.get("hidden_act", "silu")))
    if act not in ACTIVATIONS:
        raise DraftLoadError(f"hidden_act {act!r} is not supported by the reference forward")
    theta, scaling = forward_rope(raw)
    rope_inv_freq(head_dim, theta, scaling)  # raises for an unsupported rope type
    eps = scope.get("rms_norm_eps", raw.get("rms_norm_eps", 1e-6))
    layers = max(1, len({n.split(".")[1] for n in weights if n.startswith("layers.")}))
    aux_count = len(cfg.aux.ids) if cfg.aux.ids else 3
    reading = norm_output_reading(ckpt.format.producer)
    norm_logits, feed_normed = reading.on if cfg.norm_flags.get("norm_output") else reading.off
    return DraftSpec(
        hidden_size=cfg.hidden_size, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        rms_norm_eps=float(eps), rope_theta=theta, rope_scaling=tuple(sorted(scaling.items())), act=act,
        layers=layers, aux_count=aux_count, norm_before_residual=cfg.norm_flags.get("norm_before_residual", False),
        norm_before_fc=cfg.norm_flags.get("norm_before_fc", False), fc_norm=cfg.norm_flags.get("fc_norm", False),
        norm_logits=norm_logits, feed_normed=feed_normed,
        hidden_prenorm=ckpt.format.producer in NORM_HABITS,
    )
