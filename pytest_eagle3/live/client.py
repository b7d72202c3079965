"""Requests to a running server (stdlib HTTP): greedy generation on token-id prompts, and counters.

vLLM: ``POST /v1/completions`` with token-id prompts and ``return_token_ids`` (in
entrypoints/openai/protocol.py CompletionRequest from 0.11.0 L1158; openai/completion/protocol.py
in 0.32.0 L171), ``ignore_eos``; counters from ``GET /metrics``.
SGLang: ``POST /generate`` with ``input_ids`` (srt/entrypoints/http_server.py), ``output_ids`` and
``meta_info`` per request; ``GET /server_info`` (``/get_server_info`` before 0.5.6).
llama.cpp: ``POST /completion`` with a token-id ``prompt``, ``return_tokens`` and ``cache_prompt: false`` (b11312
tools/server/server-schema.cpp fields; the final result's ``tokens`` and ``timings``, server-task.cpp
to_json_non_oaicompat L339-357); counters from ``GET /metrics`` (``--metrics``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_eagle3.knowledge.engines import BY_NAME
from pytest_eagle3.live.errors import RequestFailed

DEFAULT_TIMEOUT = 600.0


def get_text(url: str, timeout: float = 30.0) -> str:
    """GET ``url`` as text; a network error raises RequestFailed."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return str(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError) as exc:
        raise RequestFailed(f"GET {url}: {exc}") from exc


def post_json(url: str, body: dict[str, Any], timeout: float = DEFAULT_TIMEOUT) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded answer; a network error raises RequestFailed."""
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", errors="replace")[:2000]
        raise RequestFailed(f"POST {url}: HTTP {exc.code}: {detail}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise RequestFailed(f"POST {url}: {exc}") from exc


@dataclass(frozen=True)
class Generation:
    """Greedy continuations of each prompt, and the per-request metadata the engine returned."""

    tokens: tuple[tuple[int, ...], ...]
    meta: tuple[dict[str, Any], ...]


def generate(engine: str, base_url: str, prompts: Sequence[Sequence[int]], new_tokens: int,
             model: str | None = None) -> Generation:
    """Temperature 0, ``new_tokens`` per prompt, end-of-sequence ignored (asked the way the engine's
    ``live_client`` says)."""
    client = BY_NAME[engine].live.live_client if engine in BY_NAME else None
    if client == "openai-completions":
        return _vllm_generate(base_url, prompts, new_tokens, model)
    if client == "generate-endpoint":
        return _sglang_generate(base_url, prompts, new_tokens)
    if client == "llama-server-completion":
        return _llamacpp_generate(base_url, prompts, new_tokens)
    raise ValueError(f"unknown engine {engine!r}")


def _vllm_generate(base_url: str, prompts: Sequence[Sequence[int]], new_tokens: int,
                   model: str | None) -> Generation:
    if model is None:
        listed = json.loads(get_text(f"{base_url}/v1/models"))
        model = str(listed["data"][0]["id"])
    body = {"model": model, "prompt": [list(p) for p in prompts], "max_tokens": new_tokens, "temperature": 0.0,
            "ignore_eos": True, "return_token_ids": True}
    reply = post_json(f"{base_url}/v1/completions", body)
    choices = sorted(reply["choices"], key=lambda c: int(c["index"]))
    return Generation(tuple(tuple(int(t) for t in c["token_ids"]) for c in choices), tuple({} for _ in choices))


def _sglang_generate(base_url: str, prompts: Sequence[Sequence[int]], new_tokens: int) -> Generation:
    body = {"input_ids": [list(p) for p in prompts],
            "sampling_params": {"temperature": 0.0, "max_new_tokens": new_tokens, "ignore_eos": True}}
    reply = post_json(f"{base_url}/generate", body)
    items = reply if isinstance(reply, list) else [reply]
    return Generation(tuple(tuple(int(t) for t in item["output_ids"]) for item in items),
                      tuple(dict(item.get("meta_info", {})) for item in items))


def _llamacpp_generate(base_url: str, prompts: Sequence[Sequence[int]], new_tokens: int) -> Generation:
    """One request per prompt; ``meta`` holds each response's ``timings`` (drafted / accepted tokens)."""
    tokens, meta = [], []
    for prompt in prompts:
        body = {"prompt": [int(t) for t in prompt], "n_predict": new_tokens, "temperature": 0.0, "top_k": 1,
                "cache_prompt": False, "return_tokens": True, "stream": False}
        reply = post_json(f"{base_url}/completion", body)
        tokens.append(tuple(int(t) for t in reply["tokens"]))
        meta.append(dict(reply.get("timings", {})))
    return Generation(tuple(tokens), tuple(meta))


def vllm_metrics_text(base_url: str) -> str:
    """The server's Prometheus ``/metrics`` text."""
    return get_text(f"{base_url}/metrics")


def sglang_server_info(base_url: str) -> dict[str, Any]:
    """``/server_info``, falling back to the older ``/get_server_info``."""
    for path in ("/server_info", "/get_server_info"):
        try:
            data = json.loads(get_text(f"{base_url}{path}"))
        except RequestFailed:
            continue
        if isinstance(data, dict):
            return data
    raise RequestFailed(f"neither {base_url}/server_info nor /get_server_info answered")
