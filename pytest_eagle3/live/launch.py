"""Launch commands per engine and version, as data: each rule has a version range and a source line.

The command is always run with the engine's own interpreter (``python -m ...``), never a script
found on PATH, so the version read from that interpreter is the version that runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.launch import LAUNCH_TABLES, LaunchRule
from pytest_eagle3.knowledge.launch_settings import sections
from pytest_eagle3.knowledge.releases import KNOWN_RANGES

#: Draft steps the live run asks for: vLLM ``num_speculative_tokens``; SGLang steps, topk 1 and
#: ``steps + 1`` draft tokens (a chain, as vLLM drafts). The reference measures the same k.
DEFAULT_STEPS = 3


class UnknownEngineVersion(ValueError):
    """An engine version outside the ranges the launch rules were read for."""


def launch_rule(engine: str, aspect: str, version: Version) -> LaunchRule:
    """The rule for ``aspect`` in force at ``version``."""
    first, last = KNOWN_RANGES[engine]
    rows = LAUNCH_TABLES.get(aspect)
    row = rows.find(engine, version) if rows is not None else None
    if row is None:
        raise UnknownEngineVersion(f"no {engine} launch rule for {aspect} at {version} (known {first} to {last})")
    return row


@dataclass(frozen=True)
class LaunchRequest:
    """What to serve and how: everything a launch command is built from."""

    engine: str
    version: Version
    python: str
    target: str
    draft: str | None
    port: int
    host: str = "127.0.0.1"
    steps: int = DEFAULT_STEPS
    has_vllm_dist: bool = True
    skip_tokenizer: bool = False
    extra_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    #: ``cpu`` or ``cuda``: where a server that is told (llama.cpp's layer offload) puts the model.
    device: str = "cpu"
    #: SGLang's tree (``--eagle3-topk``, ``--eagle3-draft-tokens``): 1 / None, a chain of ``steps``.
    topk: int = 1
    draft_tokens: int | None = None


@dataclass(frozen=True)
class LaunchCommand:
    """The argv, the health path, and the rules (with sources) it was built from."""

    argv: tuple[str, ...]
    health_path: str
    sources: tuple[str, ...]


def speculative_json(draft: str, steps: int) -> str:
    """vLLM's ``--speculative-config`` value."""
    return json.dumps({"method": "eagle3", "model": draft, "num_speculative_tokens": steps})


def build_command(request: LaunchRequest) -> LaunchCommand:
    """The command for ``request``; without a draft, the target alone (the greedy baseline)."""
    engine, version = request.engine, request.version
    kind = engine_named(engine)
    module = "module" if kind.interpreter.cpu_distribution is None or request.has_vllm_dist else "module_without_vllm_dist"
    aspects = [module, "address"]
    if request.draft is not None:
        aspects.append("speculative")
    if kind.live.server_binary:  # a GGUF carries its vocabulary; the binary is told where the layers go
        aspects.append(f"device_{request.device.partition(':')[0]}")
    elif request.skip_tokenizer:
        aspects.append("no_tokenizer")
    values = {
        "target": request.target, "host": request.host, "port": str(request.port), "draft": request.draft or "",
        "steps": str(request.steps), "topk": str(request.topk),
        "draft_tokens": str(request.draft_tokens if request.topk > 1 and request.draft_tokens else request.steps + 1),
        "speculative_json": speculative_json(request.draft or "", request.steps),
    }
    # The engine's own interpreter with a module; llama.cpp's server is its binary (``python`` names it).
    argv: list[str] = [request.python] if kind.live.server_binary else [request.python, "-m"]
    sources = []
    for aspect in aspects:
        rule = launch_rule(engine, aspect, version)
        argv.extend(part.format(**values) for part in rule.value)
        sources.append(f"{aspect}: {rule.source}")
    argv.extend(request.extra_args)
    health = launch_rule(engine, "health", version)
    sources.append(f"health: {health.source}")
    return LaunchCommand(tuple(argv), str(health.value), tuple(sources))


def parse_engine_args(text: str | None) -> dict[str, tuple[str, ...]]:
    """``--eagle3-engine-args``: one shell-quoted string for every engine, or ``vllm: ...; sglang: ...``.

    Returns a mapping from engine name (or ``*`` for all) to its arguments, as typed.
    """
    return sections(text, lists_as_words=False)


def args_for(engine: str, parsed: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The pass-through arguments for ``engine``: the common ones, then its own."""
    return tuple(parsed.get("*", ())) + tuple(parsed.get(engine, ()))
