"""Reference acceptance: run the real target, feed the draft what it was trained on, count.

1. The target (transformers ``AutoModelForCausalLM``, local path) continues each prompt greedily
   (token by token with its KV cache, as any decoder must).
2. One target forward over the finished sequences captures every layer's state:
   ``states[k]`` for k < L is HF ``hidden_states[k]``, the INPUT of decoder layer k (vLLM id k);
   ``states[L]`` is the OUTPUT of the last layer before the final norm (HF's ``hidden_states[L]``
   is after the norm, so it is captured with a hook instead).
3. The draft proposes ``k`` tokens from every position at once (``ReferenceDraft.propose``).
4. The engine's greedy walk is replayed on those proposals: start at the last prompt token,
   accept the longest prefix that matches the target, advance by accepted + 1.

The mean acceptance length counts the bonus token (1 + accepted), as vLLM >= 0.9 and SGLang do.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pytest_eagle3 import progress
from pytest_eagle3.producers.formats import INPUT_OF, OUTPUT_OF
from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS
from pytest_eagle3.reference.draft import ReferenceDraft
from pytest_eagle3.words import plural

#: Built-in prompts for a target with a tokenizer: short, varied, open-ended.
BUILTIN_TEXTS = (
    "The history of the printing press begins",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Q: What is the boiling point of water at sea level?\nA:",
    "Once upon a time, in a village by the sea,",
    "A list of the planets of the solar system, in order from the sun:",
    "To make a cup of tea, first",
    "The three laws of thermodynamics are",
    "Translate to French: The weather is nice today.\nFrench:",
)
#: Built-in prompts for a target without a tokenizer: one token each, spread over the vocab.
BUILTIN_TOKEN_PROMPTS = 16
#: HF hidden_states index = aux id + offset. Source: reference/producers.md §5.3.
CONVENTION_OFFSETS = {INPUT_OF: 0, OUTPUT_OF: 1}
#: Readings tried around the declared one: the two conventions and one layer beyond each.
TRIED_OFFSETS = (-1, 0, 1, 2)
#: Engines' aux ids when a config gives none (input-of). Source: vLLM and SGLang defaults
#: (2, N//2, N-3), reference/producers.md §5.3.
class ReferenceInputError(Exception):
    """The target or the prompts cannot be used; the message says why."""


@dataclass(frozen=True)
class Target:
    """A loaded target model and what the measurement needs from it."""

    model: Any
    tokenizer: Any
    layers: int
    vocab_size: int
    device: str

    @property
    def embed(self) -> torch.Tensor:
        """The target's input embedding matrix."""
        weight: torch.Tensor = self.model.get_input_embeddings().weight
        return weight


def load_target(path: str, device: str = "cpu") -> Target:
    """``AutoModelForCausalLM`` from a local directory (never the hub); float32 on CPU."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    root = Path(path)
    root = root.parent if root.is_file() else root
    dtype = torch.float32 if device == "cpu" else "auto"
    hf_logging: Any = logging
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # the run's own progress line says what is loading (pytest_eagle3.progress)
    progress.tick(f"loading the target {root.name}")
    try:
        model: Any = AutoModelForCausalLM.from_pretrained(str(root), local_files_only=True, dtype=dtype)
    except Exception as exc:  # transformers raises many types for a bad directory
        raise ReferenceInputError(f"transformers cannot load the target {path}: {str(exc).splitlines()[0]}") from exc
    finally:
        if bar:
            hf_logging.enable_progress_bar()
    model.to(device).eval()
    tokenizer = None
    if any((root / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
        except (OSError, ValueError, ImportError):  # no usable tokenizer: token-id prompts still work
            tokenizer = None
    config = model.config.get_text_config()
    return Target(model, tokenizer, int(config.num_hidden_layers), int(config.vocab_size), device)


def load_prompts(target: Target, path: str | None) -> tuple[list[list[int]], str]:
    """Prompts as token ids, and where they came from (a file, or the built-in set)."""
    if path is None:
        if target.tokenizer is not None:
            return [list(target.tokenizer(t)["input_ids"]) for t in BUILTIN_TEXTS], "built-in texts"
        step = target.vocab_size // BUILTIN_TOKEN_PROMPTS + 1  # +1: not a multiple of small periods
        return [[(3 + i * step) % target.vocab_size] for i in range(BUILTIN_TOKEN_PROMPTS)], "built-in token ids"
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReferenceInputError(f"prompts file {path}: cannot read ({exc})") from exc
    prompts = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        prompts.append(_parse_prompt(line, number, path, target))
    if not prompts:
        raise ReferenceInputError(f"prompts file {path}: no prompts (one per line: a JSON list of token ids, or text)")
    return prompts, f"{path} ({plural(len(prompts), 'prompt')})"


def _parse_prompt(line: str, number: int, path: str, target: Target) -> list[int]:
    where = f"prompts file {path}, line {number}"
    if line.lstrip().startswith("["):
        try:
            ids = json.loads(line)
        except ValueError as exc:
            raise ReferenceInputError(f"{where}: not a JSON list of token ids ({exc})") from exc
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ReferenceInputError(f"{where}: not a non-empty JSON list of integers")
        bad = [i for i in ids if not 0 <= i < target.vocab_size]
        if bad:
            raise ReferenceInputError(f"{where}: token ids {bad[:4]} outside the target vocab [0, {target.vocab_size})")
        return ids
    if target.tokenizer is None:
        raise ReferenceInputError(f"{where}: text, but the target has no tokenizer: give JSON lists of token ids")
    ids = list(target.tokenizer(line)["input_ids"])
    if not ids:
        raise ReferenceInputError(f"{where}: the tokenizer gives no tokens")
    return ids


@dataclass(frozen=True)
class TargetRun:
    """Sequences of one prompt length and the target's states over them."""

    sequences: torch.Tensor  # [B, T]: prompt + greedy continuation
    prompt_length: int
    states: Sequence[torch.Tensor]  # L + 1 entries of [B, T, H] (a dump's: only the captured ones readable)


def run_target(target: Target, prompts: Sequence[Sequence[int]], new_tokens: int = DEFAULT_NEW_TOKENS) -> list[TargetRun]:
    """Greedy continuations, then one forward capturing every layer's state (grouped by prompt length)."""
    return list(iter_target_runs(target, prompts, new_tokens))


def iter_target_runs(target: Target, prompts: Sequence[Sequence[int]],
                     new_tokens: int = DEFAULT_NEW_TOKENS) -> Iterator[TargetRun]:
    """:func:`run_target` one group of equal-length prompts at a time (shortest first), for streaming."""
    groups: dict[int, list[Sequence[int]]] = {}
    for prompt in prompts:
        groups.setdefault(len(prompt), []).append(prompt)
    done = 0
    with torch.no_grad():
        for length, group in sorted(groups.items()):
            ids = torch.tensor(group, dtype=torch.long, device=target.device)
            span = f"prompt {done + 1}" if len(group) == 1 else f"prompts {done + 1}-{done + len(group)}"
            which = f" on {plural(len(group), 'prompt')}" if len(group) == len(prompts) else f", {span} of {len(prompts)}"
            where = f"running the target{which}: token"

            def tick(token: int, where: str = where) -> None:
                progress.tick(f"{where} {token}/{new_tokens}")

            sequences = greedy_continue(target.model, ids, new_tokens, tick)
            done += len(group)
            yield TargetRun(sequences, length, capture_states(target.model, sequences))


def greedy_continue(model: Any, ids: torch.Tensor, new_tokens: int,
                    on_token: Callable[[int], None] | None = None) -> torch.Tensor:
    """Greedy decoding with the KV cache, no stop token: ``new_tokens`` appended to every row (``on_token(n)``
    after the n-th)."""
    # transformers >= 5.2x names the cache argument ``cache``; earlier versions ``past_key_values``
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    out = model(input_ids=ids, use_cache=True)
    tokens = [out.logits[:, -1].argmax(-1)]
    for _ in range(new_tokens - 1):
        if on_token is not None:
            on_token(len(tokens))
        out = model(input_ids=tokens[-1][:, None], use_cache=True, **{name: out[name]})
        tokens.append(out.logits[:, -1].argmax(-1))
    return torch.cat([ids, torch.stack(tokens, dim=1)], dim=1)


def capture_states(model: Any, sequences: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """HF ``hidden_states[0..L-1]`` plus the last layer's pre-norm output (hooked)."""
    last_layer = model.get_decoder().layers[-1]
    captured: list[torch.Tensor] = []

    def hook(_module: Any, _args: Any, output: Any) -> None:
        captured.append(output[0] if isinstance(output, tuple) else output)

    handle = last_layer.register_forward_hook(hook)
    try:
        out = model(input_ids=sequences, output_hidden_states=True, use_cache=False)
    finally:
        handle.remove()
    states = tuple(out.hidden_states[:-1]) + (captured[-1],)
    return tuple(s.float() for s in states)


@dataclass(frozen=True)
class Reading:
    """One way to feed the draft: which target states (HF indices) and how d2t is read."""

    ids: tuple[int, ...]
    offset: int
    d2t: str = "offsets"

    @property
    def indices(self) -> tuple[int, ...]:
        """The hidden-state indices this reading feeds: each aux id plus the offset."""
        return tuple(i + self.offset for i in self.ids)

    @property
    def convention(self) -> str:
        """The aux-id convention of the offset: ``input-of``, ``output-of``, or one off them."""
        names = {v: k for k, v in CONVENTION_OFFSETS.items()}
        if self.offset in names:
            return names[self.offset]
        base, extra = (INPUT_OF, self.offset) if self.offset < 0 else (OUTPUT_OF, self.offset - 1)
        return f"{base}{extra:+d}"

    @property
    def label(self) -> str:
        """The reading in words: convention, ids, and how d2t is read."""
        ids = "[" + ",".join(str(i) for i in self.ids) + "]"
        text = f"{self.convention} {ids}"
        return text if self.d2t == "offsets" else f"{text}, d2t as absolute ids"


@dataclass(frozen=True)
class Acceptance:
    """Acceptance of one reading, over the engine's greedy walk."""

    reading: Reading
    mean_acceptance_length: float
    per_position: tuple[float, ...]
    drafts: int


def greedy_walk(proposals: torch.Tensor, run: TargetRun, usable: int, steps: int, counts: torch.Tensor,
                budget: int | None = None, reserve: int = 1) -> None:
    """The engine's greedy walk over one run's proposals: from the last prompt token, accept the longest
    prefix that matches the target, advance by accepted + 1; ``counts[a]`` counts verifications accepting a.
    ``budget``: the request's token limit, to which the engine cuts each draft (the tokens left, minus ``reserve``;
    no draft when that is 0: knowledge.draft_budget); None: ``steps`` drafted at every verification."""
    accepted = torch.cumprod((proposals == gold_tokens(run, usable, steps)).long(), dim=-1).sum(-1)
    walk_accepted(accepted, run, usable, steps, counts, budget, reserve)


def gold_tokens(run: TargetRun, usable: int, steps: int) -> torch.Tensor:
    """The target's continuation after each position [B, usable, steps]: what a draft from there must propose."""
    return torch.stack([run.sequences[:, 2 + j: usable + 2 + j] for j in range(steps)], dim=-1)


def walk_accepted(accepted: torch.Tensor, run: TargetRun, usable: int, steps: int, counts: torch.Tensor,
                  budget: int | None = None, reserve: int = 1) -> None:
    """:func:`greedy_walk` from the tokens a verification at each position accepts ([B, usable]: a chain's
    matching prefix, or a tree's deepest matching path)."""
    for row in accepted.cpu():
        position = run.prompt_length - 1
        while position < usable:
            count = int(row[position])
            if budget is not None:  # generated so far: position - prompt_length + 2
                drafted = min(steps, budget - (position - run.prompt_length + 2) - reserve)
                if drafted <= 0:
                    break
                count = min(count, drafted)
            counts[count] += 1
            position += count + 1


def measure(draft: ReferenceDraft, embed: torch.Tensor, runs: Sequence[TargetRun], reading: Reading,
            steps: int = DEFAULT_STEPS, continuation: int | None = None) -> Acceptance:
    """Draft ``steps`` tokens from every position at once, then replay the engine's walk (with ``continuation``:
    drafting while the request has generated fewer tokens, as ``simulate.Simulator`` walks)."""
    accepted_counts = torch.zeros(steps + 1, dtype=torch.long)
    with torch.no_grad():
        for run in runs:
            usable = run.sequences.shape[1] - 1 - steps  # positions whose k drafts can be verified
            if continuation is not None:
                usable = min(run.prompt_length + continuation - 2, usable)
            if usable < run.prompt_length:
                continue
            aux = torch.cat([run.states[i][:, :usable] for i in reading.indices], dim=-1)
            next_ids = run.sequences[:, 1: usable + 1]
            proposals, _ = draft.propose(aux, next_ids, steps, embed, reading.d2t)
            greedy_walk(proposals, run, usable, steps, accepted_counts)
    drafts = int(accepted_counts.sum())
    if drafts == 0:
        return Acceptance(reading, 0.0, (), 0)
    at_least = [int(accepted_counts[j:].sum()) / drafts for j in range(1, steps + 1)]
    return Acceptance(reading, 1.0 + sum(at_least), tuple(round(p, 4) for p in at_least), drafts)


@dataclass(frozen=True)
class Inference:
    """Acceptance under each reading tried; which the draft was trained with, and by how much."""

    declared: Acceptance | None
    results: tuple[Acceptance, ...]  # best first

    @property
    def best(self) -> Acceptance:
        """The best-accepting reading."""
        return self.results[0]

    @property
    def margin(self) -> float:
        """How far the best reading is ahead of the runner-up."""
        return self.results[0].mean_acceptance_length - (
            self.results[1].mean_acceptance_length if len(self.results) > 1 else 1.0)


def candidate_readings(ids: tuple[int, ...], layers: int, available: frozenset[int] | None = None) -> list[Reading]:
    """The aux readings whose target states exist (HF indices 0..L; of those, the ``available`` ones)."""
    return [Reading(ids, o) for o in TRIED_OFFSETS
            if all(0 <= i + o <= layers and (available is None or i + o in available) for i in ids)]


def untried_readings(ids: tuple[int, ...], layers: int, available: frozenset[int] | None) -> list[Reading]:
    """The readings of these ids the target has states for but the capture does not hold: a measurement that
    skips them cannot tell which reading the draft was trained with."""
    if available is None:
        return []
    tried = candidate_readings(ids, layers, available)
    return [r for r in candidate_readings(ids, layers) if r not in tried]


def missing_states(readings: Sequence[Reading], available: frozenset[int] | None) -> list[int]:
    """The target states (HF indices) these readings need that the capture lacks."""
    return sorted({i for r in readings for i in r.indices if available is not None and i not in available})


def infer(draft: ReferenceDraft, embed: torch.Tensor, runs: Sequence[TargetRun], ids: tuple[int, ...],
          declared: str | None, layers: int, vocab_size: int, steps: int = DEFAULT_STEPS,
          available: frozenset[int] | None = None, continuation: int | None = None) -> Inference:
    """Measure every aux reading (d2t as offsets), then d2t as absolute ids under the best one."""
    declared_offset = CONVENTION_OFFSETS.get(declared or "", 0)

    def rank(a: Acceptance) -> tuple[float, int, bool]:  # ties go to the declared reading
        return (-a.mean_acceptance_length, abs(a.reading.offset - declared_offset), a.reading.d2t != "offsets")

    results = [measure(draft, embed, runs, r, steps, continuation)
               for r in progress.counted(candidate_readings(ids, layers, available), "measuring the draft, reading")]
    if not results:
        captured = "" if available is None else f" among the captured states {sorted(available)}"
        raise ReferenceInputError(f"aux ids {list(ids)} name no layer of this {layers}-layer target{captured}")
    results.sort(key=rank)
    absolute = draft.target_ids("absolute")
    if absolute is not None and bool(((absolute >= 0) & (absolute < vocab_size)).all()):
        best = results[0].reading
        results.append(measure(draft, embed, runs, Reading(best.ids, best.offset, "absolute"), steps, continuation))
        results.sort(key=rank)
    chosen = None
    if declared in CONVENTION_OFFSETS:
        chosen = next((a for a in results if a.reading.offset == CONVENTION_OFFSETS[declared]
                       and a.reading.d2t == "offsets"), None)
    return Inference(chosen, tuple(results))
