"""Hand-read capture rows of the engines beyond vLLM and SGLang, gathered from their modules.

Each entry: a :class:`~pytest_eagle3.knowledge.engine.CaptureEntry` (engine, since, family, support, source, target
architectures, cites). ``knowledge/capture.py``
reads them into its capture tables ahead of the source scans (TokenSpeed, mlx-vlm, LMDeploy, llama.cpp: a test
checks that each agrees with its engine's scan); TensorRT-LLM has no scan, and an architecture no entry names is
unknown there.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.engine import CaptureEntry
from pytest_eagle3.knowledge.engines import REGISTRY

#: Every hand-read capture row: the engines' own (``Engine.tables.capture_rows``, in the registry's order).
ENTRIES: tuple[CaptureEntry, ...] = tuple(row for engine in REGISTRY for row in engine.tables.capture_rows)
