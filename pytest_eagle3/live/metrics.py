"""Acceptance from the engines' own counters, with the definitions the reference uses.

Mean acceptance length counts the bonus token: ``1 + accepted / drafts``; the rate at draft
position j is ``accepted_at_j / drafts`` (the share of drafts whose first j+1 tokens were accepted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.words import plural

#: vLLM Prometheus counter families (exposed with a ``_total`` suffix). The same names in every
#: release read: v1/spec_decode/metrics.py SpecDecodingProm (0.11.0 L150-175, 0.18.0 L154-188,
#: 0.29.0 and 0.32.0 L229-255); first in 0.8.5 (num_drafts, per position), 0.8.3 (the others).
VLLM_DRAFTS = "vllm:spec_decode_num_drafts"
VLLM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
VLLM_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"

#: llama-server's ``/metrics`` (with ``--metrics``): the same four counters under its own prefix. llama.cpp b11312
#: tools/server/server-task.cpp server_task_result_metrics::to_json counters (L1553-1566: drafted tokens,
#: accepted tokens, ``spec_decode_num_drafts_total`` = verification steps) and the per-position family (L1606-1613);
#: summed when each request ends (server-context.cpp metrics_on_prediction, L4109-4129).
LLAMACPP_NAMES = ("llamacpp:spec_decode_num_drafts", "llamacpp:spec_decode_num_draft_tokens",
                  "llamacpp:spec_decode_num_accepted_tokens", "llamacpp:spec_decode_num_accepted_tokens_per_pos")
VLLM_NAMES = (VLLM_DRAFTS, VLLM_DRAFT_TOKENS, VLLM_ACCEPTED, VLLM_ACCEPTED_PER_POS)
#: llama-server's per-request counters: each completion's ``timings`` has ``draft_n`` (tokens drafted) and
#: ``draft_n_accepted`` (b11312 tools/server/server-common.cpp server_slot_stats::to_json, L99-101), no count of
#: verification steps and none per position: the mean acceptance length needs ``/metrics`` too.
LLAMACPP_TIMINGS = ("draft_n", "draft_n_accepted")

#: SGLang per-request ``meta_info`` histogram of accepted drafts per verify step, newest name first:
#: managers/tokenizer_manager.py _calculate_spec_decoding_metrics (``spec_accept_histogram`` from
#: 0.5.9; ``spec_correct_drafts_histogram`` from 0.5.12, the old name an alias until 0.5.20).
SGLANG_HISTOGRAMS = ("spec_correct_drafts_histogram", "spec_accept_histogram")


@dataclass(frozen=True)
class LiveAcceptance:
    """Acceptance measured by an engine over some requests."""

    mean_acceptance_length: float
    per_position: tuple[float, ...]
    drafts: int
    source: str

    def to_json(self) -> dict[str, Any]:
        """The measured acceptance as the JSON report writes it."""
        return {"mean_acceptance_length": round(self.mean_acceptance_length, 4),
                "per_position": [round(p, 4) for p in self.per_position], "drafts": self.drafts,
                "source": self.source}


@dataclass(frozen=True)
class VllmCounters:
    """A snapshot of vLLM's cumulative spec-decode counters (summed over engines and models)."""

    drafts: float
    draft_tokens: float
    accepted: float
    per_position: tuple[float, ...]

    def __sub__(self, earlier: VllmCounters) -> VllmCounters:
        width = max(len(self.per_position), len(earlier.per_position))
        mine = list(self.per_position) + [0.0] * (width - len(self.per_position))
        theirs = list(earlier.per_position) + [0.0] * (width - len(earlier.per_position))
        return VllmCounters(self.drafts - earlier.drafts, self.draft_tokens - earlier.draft_tokens,
                            self.accepted - earlier.accepted, tuple(a - b for a, b in zip(mine, theirs)))

    def acceptance(self, source: str = "vLLM /metrics spec_decode counters") -> LiveAcceptance | None:
        """None when no draft was made."""
        if self.drafts <= 0:
            return None
        per_position = tuple(a / self.drafts for a in self.per_position)
        return LiveAcceptance(1.0 + self.accepted / self.drafts, per_position, int(self.drafts), source)


def parse_vllm_metrics(text: str, names: tuple[str, str, str, str] = VLLM_NAMES) -> VllmCounters:
    """Parse the Prometheus text of vLLM's ``/metrics`` (``prometheus_client`` text parser); ``names``: the
    drafts, draft-token, accepted and per-position families (:data:`LLAMACPP_NAMES` for llama-server)."""
    from prometheus_client.parser import text_string_to_metric_families

    drafts, draft_tokens, accepted, per_pos = names
    totals = {drafts: 0.0, draft_tokens: 0.0, accepted: 0.0}
    per_position: dict[int, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue  # *_created gauges
            name = sample.name.removesuffix("_total")
            if name in totals:
                totals[name] += sample.value
            elif name == per_pos and "position" in sample.labels:
                position = int(sample.labels["position"])
                per_position[position] = per_position.get(position, 0.0) + sample.value
    positions = tuple(per_position.get(i, 0.0) for i in range(max(per_position, default=-1) + 1))
    return VllmCounters(totals[drafts], totals[draft_tokens], totals[accepted], positions)


def llamacpp_acceptance(counted: VllmCounters, timings: Iterable[Mapping[str, Any]]) -> LiveAcceptance | None:
    """Acceptance over llama-server requests: drafted and accepted tokens from each response's ``timings``, the
    verification steps and per-position counts from ``/metrics`` (``counted``, the growth over the same requests).
    The two must agree on drafted and accepted tokens; :class:`CountersDisagree` says so when they do not."""
    rows = list(timings)
    drafted = sum(int(t.get(LLAMACPP_TIMINGS[0], 0) or 0) for t in rows)
    accepted = sum(int(t.get(LLAMACPP_TIMINGS[1], 0) or 0) for t in rows)
    if (drafted, accepted) != (round(counted.draft_tokens), round(counted.accepted)):
        raise CountersDisagree(
            f"llama-server's per-request timings count {drafted} drafted / {accepted} accepted tokens, its /metrics "
            f"{counted.draft_tokens:g} / {counted.accepted:g} over the same {plural(len(rows), 'request')}")
    return counted.acceptance(f"llama-server timings draft_n / draft_n_accepted ({accepted} of {drafted} drafted), "
                              "verification steps and per position from /metrics")


class CountersDisagree(ValueError):
    """An engine's two accounts of the same requests differ."""


def sglang_server_info_acceptance(info: Mapping[str, Any]) -> float | None:
    """``avg_spec_accept_length`` from ``/server_info`` (``/get_server_info`` before 0.5.6).

    Nested under ``internal_states[0]`` since v0.4.6.post4, top level before (reference/sglang.md §6.2;
    managers/scheduler_components/internal_state.py _add_speculative in 0.5.23).
    """
    states = info.get("internal_states")
    if isinstance(states, list) and states and isinstance(states[0], dict):
        value = states[0].get("avg_spec_accept_length")
    else:
        value = info.get("avg_spec_accept_length")
    return float(value) if isinstance(value, (int, float)) else None


def sglang_request_acceptance(meta_infos: Iterable[Mapping[str, Any]], steps: int) -> LiveAcceptance | None:
    """Acceptance over SGLang requests from ``meta_info``: completion tokens per verify step, and the
    per-position rates from the accepted-drafts histogram where the version reports one."""
    verify = tokens = 0
    histogram = [0] * (steps + 1)
    have_histogram = False
    for meta in meta_infos:
        verify += int(meta.get("spec_verify_ct", 0) or 0)
        tokens += int(meta.get("completion_tokens", 0) or 0)
        counts = next((meta[k] for k in SGLANG_HISTOGRAMS if meta.get(k)), None)
        if isinstance(counts, Sequence):
            have_histogram = True
            for accepted, count in enumerate(counts[: steps + 1]):
                histogram[accepted] += int(count)
    if verify <= 0:
        return None
    per_position: tuple[float, ...] = ()
    total = sum(histogram)
    if have_histogram and total:
        per_position = tuple(sum(histogram[j:]) / total for j in range(1, steps + 1))
    return LiveAcceptance(tokens / verify, per_position, verify, "SGLang meta_info spec_verify_ct")
