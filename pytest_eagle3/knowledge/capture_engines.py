"""Hand-read capture rows of the engines beyond vLLM and SGLang.

Each entry: (engine, since, family, support, source, target architectures[, cites]). ``knowledge/capture.py``
reads them into its capture tables ahead of the source scans (TokenSpeed, mlx-vlm, LMDeploy, llama.cpp: a test
checks that each agrees with its engine's scan); TensorRT-LLM has no scan, and an architecture no entry names is
unknown there.
"""

from __future__ import annotations

from typing import Any

from pytest_eagle3.knowledge.engines import REGISTRY

_CENTRAL: tuple[tuple[Any, ...], ...] = (
)
#: Every hand-read capture row: the engines' own (``Engine.capture_rows``, in the registry's order), then those
#: still filed here.
ENTRIES: tuple[tuple[Any, ...], ...] = (*(row for engine in REGISTRY for row in engine.capture_rows), *_CENTRAL)
