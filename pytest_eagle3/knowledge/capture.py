"""Which target architectures capture aux hidden states for EAGLE-3, per engine and version.

A target that does not capture sends the draft a single hidden state: the engine refuses to start,
or (SGLang, when widths allow) skips ``fc`` silently. Each row has its source. Hand-checked rows
(:data:`CAPTURE_TABLES`) come first; the wheel scan (``capture_table.py``, generated) is read into
the same table type per architecture.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from packaging.version import Version

from pytest_eagle3.knowledge import capture_engines
from pytest_eagle3.knowledge.generated import capture_table
from pytest_eagle3.knowledge.releases import KNOWN_RANGES, SGLANG, VLLM
from pytest_eagle3.knowledge.table import Row, Table, table

LLAMA = "llama"
DEEPSEEK = "deepseek"
GPT_OSS = "gpt_oss"



class Support(StrEnum):
    """What a target architecture does with the configured aux layer ids."""

    CAPTURES = "captures"
    REFUSED = "refused"
    SILENT = "silent-no-capture"


CAPTURES = Support.CAPTURES
REFUSED = Support.REFUSED
SILENT = Support.SILENT


@dataclass(frozen=True)
class Capture:
    """A capture row's value: the support, and the family whose aux-id rule the target follows."""

    support: Support
    family: str


def _row(engine: str, since: str, family: str, source: str, *archs: str,
         support: Support = CAPTURES) -> list[tuple[str, Row[Capture]]]:
    return [(arch, Row(engine, since, Capture(support, family), source)) for arch in archs]


SGL = "sglang models/{}.py set_eagle3_layers_to_capture"
VLL = "vllm model_executor/models/{}.py SupportsEagle3"

_HAND_ROWS: tuple[tuple[str, Row[Capture]], ...] = tuple(pair for group in (
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
) for pair in group) + tuple(
    pair for engine, since, family, support, source, archs in capture_engines.ENTRIES
    for pair in _row(engine, since, family, source, *archs, support=Support(support)))


def _hand_tables() -> dict[tuple[str, str], Table[Capture]]:
    grouped: dict[tuple[str, str], list[Row[Capture]]] = {}
    for arch, row in _HAND_ROWS:
        grouped.setdefault((row.engine, arch), []).append(row)
    return {(engine, arch): table(f"{engine} capture: {arch}", rows, full=False)
            for (engine, arch), rows in grouped.items()}


#: Hand-checked capture rows, one table per (engine, target architecture); before its first row an
#: architecture does not capture.
CAPTURE_TABLES: dict[tuple[str, str], Table[Capture]] = _hand_tables()


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
ALLOWLIST_SOURCE = ("vllm config/speculative.py SpeculativeConfig eagle3_target_supported (0.9.2 config.py, 0.10.1, "
                    "0.11.0-0.16.0 read; removed 0.17.0)")
ALLOWLIST: Table[tuple[str, ...]] = table("vllm eagle3 target allowlist", (
    Row(VLLM, "0.8.5", ("llama",), ALLOWLIST_SOURCE),
    Row(VLLM, "0.10.1", ("llama", "qwen"), ALLOWLIST_SOURCE),
    Row(VLLM, "0.11.0", ("llama", "qwen", "minicpm", "gpt_oss"), ALLOWLIST_SOURCE),
    Row(VLLM, "0.16.0", ("llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense", "afmoe"),
        ALLOWLIST_SOURCE),
    Row(VLLM, "0.17.0", (), ALLOWLIST_SOURCE),
))


def allowlisted(version: Version, model_type: str) -> tuple[str, ...] | None:
    """The vLLM allowlist at ``version`` when ``model_type`` fails it; None when it passes or none applies."""
    row = ALLOWLIST.find(VLLM, version)
    names = row.value if row is not None else ()
    if not names or any(n in model_type for n in names):
        return None
    return names


def _scan(engine: str) -> tuple[tuple[str, ...], dict[str, str], dict[str, str], frozenset[str]]:
    if engine == VLLM:
        return (capture_table.VLLM_RELEASES, capture_table.VLLM_SINCE, capture_table.VLLM_LAST,
                capture_table.VLLM_NEVER)
    return (capture_table.SGLANG_RELEASES, capture_table.SGLANG_SINCE, capture_table.SGLANG_LAST,
            capture_table.SGLANG_NEVER)


@cache
def scanned_table(engine: str, architecture: str) -> Table[Capture] | None:
    """The wheel scan (capture_table.py) of one architecture as a full table; None when the scan never saw it.

    A row ends at the next release read: a release between two read ones takes the earlier row."""
    if engine not in (SGLANG, VLLM):
        return None  # no wheel scan: knowledge/capture_engines.py rows only
    releases, since_table, last_table, never = _scan(engine)
    first, family = KNOWN_RANGES[engine][0], _guess_family(architecture)
    where = f"wheel scan of {engine} {releases[0]}-{releases[-1]}"
    since = since_table.get(architecture)
    if since is None:
        if architecture not in never:
            return None
        return table(f"{engine} capture scan: {architecture}", (Row(
            engine, first, Capture(REFUSED, family),
            f"{where}: registered, but no release read gives its class the EAGLE-3 capture interface"),))
    found = []
    if Version(since) > Version(first):
        found.append(Row(engine, first, Capture(REFUSED, family), f"{where}: captures from {since}, after this version"))
    last = last_table.get(architecture)
    found.append(Row(engine, since, Capture(CAPTURES, family), f"{where}: captures from {since}", read_to=last))
    if last is not None:
        stop = releases[releases.index(last) + 1]
        found.append(Row(engine, stop, Capture(REFUSED, family),
                         f"{where}: captures up to {last}, not in the next release read (removed or interface lost)"))
    return table(f"{engine} capture scan: {architecture}", found)


def capture_support(engine: str, version: Version, architecture: str) -> CaptureSupport:
    """The hand-checked row covering ``architecture`` at ``version``; then the wheel scan; unknown when neither
    names it."""
    hand = CAPTURE_TABLES.get((engine, architecture))
    if hand is not None:
        row = hand.find(engine, version)
        if row is None:
            first = hand.rows_of(engine)[0]
            return CaptureSupport(architecture, REFUSED, first.value.family,
                                  f"{first.source}: added in {first.since}, after this version")
        return CaptureSupport(architecture, row.value.support, row.value.family, row.source)
    scanned = scanned_table(engine, architecture)
    row = scanned.find(engine, version) if scanned is not None else None
    if row is None:
        return CaptureSupport(architecture, None, _guess_family(architecture), "not in the capture table")
    return CaptureSupport(architecture, row.value.support, row.value.family, row.source)


def _guess_family(architecture: str) -> str:
    name = architecture.lower()
    if "deepseek" in name or "kimik2" in name or "glmmoedsa" in name:
        return DEEPSEEK
    if "gptoss" in name:
        return GPT_OSS
    return LLAMA
