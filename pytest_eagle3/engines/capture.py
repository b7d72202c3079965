"""Which target architectures capture aux hidden states for EAGLE-3, per engine and version.

A target that does not capture sends the draft a single hidden state: the engine refuses to start,
or (SGLang, when widths allow) skips ``fc`` silently. Each row has its source.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from pytest_eagle3.engines import capture_table
from pytest_eagle3.engines.versions import SGLANG, VLLM

LLAMA = "llama"
DEEPSEEK = "deepseek"
GPT_OSS = "gpt_oss"

CAPTURES = "captures"
REFUSED = "refused"
SILENT = "silent-no-capture"


@dataclass(frozen=True)
class CaptureRule:
    """From ``since``, targets named in ``architectures`` do ``support`` with the family's id rule."""

    engine: str
    architectures: tuple[str, ...]
    since: str
    support: str
    family: str
    source: str


def _row(engine: str, since: str, family: str, source: str, *archs: str, support: str = CAPTURES) -> CaptureRule:
    return CaptureRule(engine, archs, since, support, family, source)


SGL = "sglang models/{}.py set_eagle3_layers_to_capture"
VLL = "vllm model_executor/models/{}.py SupportsEagle3"

CAPTURE_RULES: tuple[CaptureRule, ...] = (
    _row(SGLANG, "0.4.4.post2", LLAMA, SGL.format("llama") + " (9e0186f352)", "LlamaForCausalLM"),
    _row(SGLANG, "0.4.4.post2", LLAMA, SGL.format("llama") + ", inherited (v0.5.18 scan)",
         "Phi3ForCausalLM", "MistralForCausalLM", "InternLM3ForCausalLM"),
    _row(SGLANG, "0.4.8", LLAMA, SGL.format("llama4") + ", inherited (first release read with llama4.py)",
         "Llama4ForCausalLM"),
    _row(SGLANG, "0.4.9", LLAMA, SGL.format("mllama4") + " delegates to the language model",
         "Llama4ForConditionalGeneration"),
    _row(SGLANG, "0.4.9", LLAMA, SGL.format("qwen3") + " (1964c325de)", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
    _row(SGLANG, "0.5.0", GPT_OSS, SGL.format("gpt_oss") + " (v0.5.0rc0 c1d2061f97)", "GptOssForCausalLM"),
    _row(SGLANG, "0.5.2", LLAMA, SGL.format("qwen2") + " (87a0f7d2c2)", "Qwen2ForCausalLM", "Qwen2MoeForCausalLM"),
    _row(SGLANG, "0.5.2", LLAMA, SGL.format("qwen2_5_vl") + " (37d83c6e6d)", "Qwen2_5_VLForConditionalGeneration"),
    _row(SGLANG, "0.5.4.post2", DEEPSEEK, SGL.format("deepseek_v2") + " (78c43d8847), inherited",
         "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM",
         "MistralLarge3ForCausalLM"),
    _row(SGLANG, "0.5.5", LLAMA, SGL.format("glm4_moe"), "Glm4MoeForCausalLM"),
    _row(SGLANG, "0.5.5.post1", LLAMA, SGL.format("minimax_m2"), "MiniMaxM2ForCausalLM"),
    _row(SGLANG, "0.5.10", DEEPSEEK, SGL.format("kimi_k25") + " delegates to DeepseekV3",
         "KimiK25ForConditionalGeneration"),
    _row(SGLANG, "0.5.11", LLAMA, SGL.format("qwen3_vl"), "Qwen3VLForConditionalGeneration",
         "Qwen3VLMoeForConditionalGeneration"),
    _row(SGLANG, "0.5.11", LLAMA, "sglang models/qwen3_5.py forward captures only DFlash-flagged layers "
         "(fixed v0.5.22)", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", support=SILENT),
    _row(SGLANG, "0.5.12", LLAMA, SGL.format("gemma3_causal"), "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"),
    _row(SGLANG, "0.5.22", LLAMA, SGL.format("qwen3_5") + " / qwen3_vl.py (0.5.22)",
         "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM",
         "Qwen3_5MoeForCausalLM"),
    _row(SGLANG, "0.4.4.post2", LLAMA, "sglang model_runner_components/attention_backend_setup.py: no method -> "
         "AttributeError (ValueError from 0.5.23)", "KimiVLForConditionalGeneration",
         "LlavaForConditionalGeneration", support=REFUSED),
    _row(VLLM, "0.8.5", LLAMA, "vllm 0.8.5 models/llama.py set_aux_hidden_state_layers", "LlamaForCausalLM"),
    _row(VLLM, "0.10.1", LLAMA, VLL.format("qwen3") + " (0.10.1, allowlist llama/qwen)", "Qwen3ForCausalLM"),
    _row(VLLM, "0.10.2", LLAMA, VLL.format("qwen2") + " (0.10.1's Qwen2 lacks it: 'Model does not support EAGLE3')",
         "Qwen2ForCausalLM"),
    _row(VLLM, "0.11.1", LLAMA, VLL.format("qwen3_moe") + " (0.11.1; absent in 0.10.1-0.11.0)", "Qwen3MoeForCausalLM"),
    _row(VLLM, "0.11.0", LLAMA, VLL.format("gpt_oss/minicpm") + " (0.11.0 allowlist adds gpt_oss, minicpm)",
         "GptOssForCausalLM", "MiniCPMForCausalLM"),
    _row(VLLM, "0.8.5", LLAMA, "vllm config/speculative.py: 'Eagle3 is only supported for ... models' "
         "(allowlist to 0.16; from 0.17 RuntimeError 'Model does not support EAGLE3 interface')",
         "KimiVLForConditionalGeneration", support=REFUSED),
)


@dataclass(frozen=True)
class CaptureSupport:
    """What a target architecture does in one engine version."""

    architecture: str
    support: str | None
    family: str
    source: str

    @property
    def known(self) -> bool:
        return self.support is not None


#: vLLM 0.8.5-0.16: the target's model_type must contain one of these (config/speculative.py
#: SpeculativeConfig: "Eagle3 is only supported for ... models"); the list was dropped in 0.17.0.
ALLOWLIST: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.8.5", ("llama",)),
    ("0.10.1", ("llama", "qwen")),
    ("0.11.0", ("llama", "qwen", "minicpm", "gpt_oss")),
    ("0.16.0", ("llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense", "afmoe")),
    ("0.17.0", ()),
)
ALLOWLIST_SOURCE = ("vllm config/speculative.py SpeculativeConfig eagle3_target_supported (0.9.2 config.py, 0.10.1, "
                    "0.11.0-0.16.0 read; removed 0.17.0)")


def allowlisted(version: Version, model_type: str) -> tuple[str, ...] | None:
    """The vLLM allowlist at ``version`` when ``model_type`` fails it; None when it passes or none applies."""
    active = [names for since, names in ALLOWLIST if Version(since) <= version]
    names = active[-1] if active else ()
    if not names or any(n in model_type for n in names):
        return None
    return names


def _scanned(engine: str, version: Version, architecture: str) -> CaptureSupport | None:
    """The wheel scan (capture_table.py), for architectures no hand-checked row names."""
    since_table = capture_table.VLLM_SINCE if engine == VLLM else capture_table.SGLANG_SINCE
    last_table = capture_table.VLLM_LAST if engine == VLLM else capture_table.SGLANG_LAST
    releases = capture_table.VLLM_RELEASES if engine == VLLM else capture_table.SGLANG_RELEASES
    since = since_table.get(architecture)
    never = capture_table.VLLM_NEVER if engine == VLLM else capture_table.SGLANG_NEVER
    if since is None and architecture in never:
        return CaptureSupport(architecture, REFUSED, _guess_family(architecture),
                              f"wheel scan of {engine} {releases[0]}-{releases[-1]}: registered, but no release read "
                              "gives its class the EAGLE-3 capture interface")
    if since is None:
        return None
    family, where = _guess_family(architecture), f"wheel scan of {engine} {releases[0]}-{releases[-1]}"
    if version < Version(since):
        return CaptureSupport(architecture, REFUSED, family, f"{where}: captures from {since}, after this version")
    last = last_table.get(architecture)
    if last is not None and version > Version(last):
        return CaptureSupport(architecture, REFUSED, family,
                              f"{where}: captures up to {last}, not in the next release read (removed or interface lost)")
    return CaptureSupport(architecture, CAPTURES, family, f"{where}: captures from {since}")


def capture_support(engine: str, version: Version, architecture: str) -> CaptureSupport:
    """The newest row covering ``architecture`` at ``version``; then the wheel scan; unknown when neither names it."""
    rows = [r for r in CAPTURE_RULES if r.engine == engine and architecture in r.architectures]
    if not rows:
        scanned = _scanned(engine, version, architecture)
        if scanned is not None:
            return scanned
        return CaptureSupport(architecture, None, _guess_family(architecture), "not in the capture table")
    active = [r for r in rows if Version(r.since) <= version]
    if not active:
        first = min(rows, key=lambda r: Version(r.since))
        return CaptureSupport(architecture, REFUSED, first.family,
                              f"{first.source}: added in {first.since}, after this version")
    row = max(active, key=lambda r: Version(r.since))
    return CaptureSupport(architecture, row.support, row.family, row.source)


def _guess_family(architecture: str) -> str:
    name = architecture.lower()
    if "deepseek" in name or "kimik2" in name or "glmmoedsa" in name:
        return DEEPSEEK
    if "gptoss" in name:
        return GPT_OSS
    return LLAMA
