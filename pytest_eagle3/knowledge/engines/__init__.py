"""The registry: every engine, one module each (its :class:`~pytest_eagle3.knowledge.engine.Engine` and its
behaviour rows), one entry each in :data:`REGISTRY`. Everything else reads the engines from here.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.engine import Engine
from pytest_eagle3.knowledge.engines import llamacpp, lmdeploy, mlx_vlm, sglang, tokenspeed, trtllm, vllm

#: Every engine, in the order the selection ``all``, the tables and the reports list them.
REGISTRY: tuple[Engine, ...] = (
    sglang.ENGINE,
    vllm.ENGINE,
    tokenspeed.ENGINE,
    mlx_vlm.ENGINE,
    trtllm.ENGINE,
    lmdeploy.ENGINE,
    llamacpp.ENGINE,
)
BY_NAME: dict[str, Engine] = {engine.name: engine for engine in REGISTRY}


def engine_named(name: str) -> Engine:
    """The registered engine of that name; KeyError for an unknown one."""
    return BY_NAME[name]
