"""Which draft class each engine version builds for a draft architecture, and what that class holds.

The key map and the parameter set come from the class: the Qwen3 class (vLLM >= 0.24) has
``q_norm`` / ``k_norm`` per layer and sizes ``fc`` from more fields; the MLA classes hold a
DeepSeek MLA attention (``q_a_proj`` and ``kv_a_proj_with_mqa`` fused into one parameter, then
``q_b_proj`` / ``kv_b_proj`` / ``o_proj``). Every row: the registry line that maps the
architecture, with the releases read.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from pytest_eagle3.knowledge.draft_class import (
    LLAMA as LLAMA,
)
from pytest_eagle3.knowledge.draft_class import (
    LLAMA_ATTENTION as LLAMA_ATTENTION,
)
from pytest_eagle3.knowledge.draft_class import (
    MLA as MLA,
)
from pytest_eagle3.knowledge.draft_class import (
    MLA_NORMS_AND_B as MLA_NORMS_AND_B,
)
from pytest_eagle3.knowledge.draft_class import (
    QWEN3 as QWEN3,
)
from pytest_eagle3.knowledge.draft_class import (
    DraftClass as DraftClass,
)
from pytest_eagle3.knowledge.engine import Engine, TableRow
from pytest_eagle3.knowledge.engines import REGISTRY as ENGINE_REGISTRY
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import (
    RELEASES,
    SGLANG,
    VLLM,
    EngineVersion,
)
from pytest_eagle3.knowledge.table import Row, Table, table

VL = "vllm model_executor/models/"
LLAMA_COUNT = ("num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids")
_CENTRAL_CLASSES: dict[tuple[str, str], DraftClass] = {
    (VLLM, "Eagle3LlamaForCausalLM"): DraftClass(
        VLLM, "Eagle3LlamaForCausalLM", LLAMA, (), LLAMA_COUNT,
        f"{VL}llama_eagle3.py Eagle3LlamaForCausalLM (LlamaDecoderLayer: qkv/o, gate_up/down, 3 norms)"),
    ("vllm", "Eagle3Qwen3ForCausalLM"): DraftClass(
        "vllm", "Eagle3Qwen3ForCausalLM", QWEN3, ("self_attn.q_norm.weight", "self_attn.k_norm.weight"),
        ("num_aux_layers", "num_aux_hidden_states", "eagle_aux_hidden_state_layer_ids",
         "eagle_config.eagle_aux_hidden_state_layer_ids"),
        f"{VL}qwen3_eagle3.py Qwen3Eagle3DecoderLayer(Qwen3DecoderLayer): Qwen3Attention q_norm/k_norm [head_dim]; "
        "Qwen3Eagle3Model.__init__ fc count (0.24.0, 0.26.0, 0.29.0, 0.32.0)"),
    ("vllm", "Eagle3DeepseekV2ForCausalLM"): DraftClass(
        "vllm", "Eagle3DeepseekV2ForCausalLM", MLA, (), LLAMA_COUNT,
        (f"{VL}deepseek_eagle3.py DeepseekV2Eagle3DecoderLayer: DeepseekV2MLAAttention(input_size=2 x hidden on "
         "layer 0), fused_qkv_a_proj = q_a_proj + kv_a_proj_with_mqa (hf_to_vllm_mapper orig_to_new_stacked); "
         "AutoWeightsLoader raises on unknown names (0.32.0; CPU run 0.32.0)"),
        attention=("self_attn.fused_qkv_a_proj.weight", *MLA_NORMS_AND_B),
        stacked=((".q_a_proj", ".fused_qkv_a_proj", "q_a"), (".kv_a_proj_with_mqa", ".fused_qkv_a_proj", "kv_a"))),
    ("sglang", "LlamaForCausalLMEagle3"): DraftClass(
        "sglang", "LlamaForCausalLMEagle3", LLAMA, (), ("num_aux_hidden_states",
                                                         "eagle_config.eagle_aux_hidden_state_layer_ids"),
        "sglang models/llama_eagle3.py LlamaForCausalLMEagle3 (no q_norm/k_norm whatever the model_type)",
        plain_fc=("sglang models/llama_eagle3.py LlamaModel.__init__: self.fc = torch.nn.Linear (no quant_config, "
                  "unlike the decoder layer's projections); load_weights skips names without a parameter and copies "
                  "fc.weight with default_weight_loader (0.5.23 read; CPU run 0.5.23)")),
    ("sglang", "Eagle3DeepseekV2ForCausalLM"): DraftClass(
        "sglang", "Eagle3DeepseekV2ForCausalLM", MLA, (), ("eagle_config.eagle_aux_hidden_state_layer_ids",
                                                            "eagle_aux_hidden_state_layer_ids"),
        ("sglang models/kimi_k25_eagle3.py Eagle3DeepseekV2ForCausalLM: one Eagle3MLADecoderLayer at self.midlayer "
         "(ValueError unless num_hidden_layers == 1), load_weights re.sub('^layers.0.', 'midlayer.'), q_a_proj + "
         "kv_a_proj_with_mqa concatenated into fused_qkv_a_proj_with_mqa, unknown names skipped with a warning "
         "(0.5.23; CPU run 0.5.23)"),
        attention=("self_attn.fused_qkv_a_proj_with_mqa.weight", *MLA_NORMS_AND_B),
        stacked=((".q_a_proj", ".fused_qkv_a_proj_with_mqa", "q_a"),
                 (".kv_a_proj_with_mqa", ".fused_qkv_a_proj_with_mqa", "kv_a")),
        renames=(("layers.0.", "midlayer."),), first_layer="midlayer", max_layers=1),
}
#: Every engine's draft classes: the engines' own (``Engine.draft_classes``), then those still filed here.
CLASSES: dict[tuple[str, str], DraftClass] = {
    **{(klass.engine, klass.name): klass for engine in ENGINE_REGISTRY for klass in engine.draft_classes},
    **_CENTRAL_CLASSES}
#: The class a speculators-format config builds, for engines that build one class whatever its model_type.
#: (Each engine's ``speculators_class``.)
SPECULATORS_CLASS = {engine.name: engine.speculators_class for engine in ENGINE_REGISTRY if engine.speculators_class}
#: Engines whose one class (architectures ignored) builds MLA attention for a draft with kv_lora_rank, by a key
#: plan not read here: such a draft is not modelled for them (the source says where that plan lives; each engine's
#: ``mla_unmodelled``).
MLA_UNMODELLED = {engine.name: engine.mla_unmodelled for engine in ENGINE_REGISTRY if engine.mla_unmodelled}


REG = "vllm model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS"
_CENTRAL_REGISTRY_ROWS: tuple[tuple[str, Row[str]], ...] = (
    ("Eagle3LlamaForCausalLM", Row(VLLM, "0.8.5", "Eagle3LlamaForCausalLM",
                                   "vllm 0.8.5 v1/spec_decode/eagle.py (class chosen by method); registry from 0.9.x",
                                   cites=(Cite("vllm/model_executor/models/llama_eagle3.py", "Eagle3LlamaForCausalLM"),))),
    ("LlamaForCausalLMEagle3", Row(VLLM, "0.10.2", "Eagle3LlamaForCausalLM",
                                   f"{REG} (0.10.2; in 0.10.1 the line is commented out 'Re-enable this once "
                                   "tests/models/test_initialization.py is fixed, see PR #22333 #22611')",
                                   cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3Qwen2_5vlForCausalLM", Row(VLLM, "0.11.1", "Eagle3LlamaForCausalLM",
                                       f"{REG} (0.11.1; absent 0.11.0; pytest_eagle3/scanners/draft_classes.py)",
                                       cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3Qwen3vlForCausalLM", Row(VLLM, "0.12.0", "Eagle3LlamaForCausalLM", f"{REG} (0.12.0; absent 0.11.0)",
                                     cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3DeepseekV2ForCausalLM", Row(VLLM, "0.18.0", "Eagle3DeepseekV2ForCausalLM",
                                        f"{REG} maps it to deepseek_eagle3.py (0.18.0; absent 0.17.0)",
                                        cites=(Cite("vllm/model_executor/models/registry.py"),
                                               Cite("vllm/model_executor/models/deepseek_eagle3.py"),))),
    ("Eagle3DeepseekV3ForCausalLM", Row(VLLM, "0.18.0", "Eagle3DeepseekV2ForCausalLM",
                                        f"{REG} maps it to deepseek_eagle3.py (0.18.0; absent 0.17.0)",
                                        cites=(Cite("vllm/model_executor/models/registry.py"),
                                               Cite("vllm/model_executor/models/deepseek_eagle3.py"),))),
    ("Eagle3MiniMaxM2ForCausalLM", Row(VLLM, "0.20.0", "Eagle3LlamaForCausalLM", f"{REG} (0.20.0; absent 0.19.0)",
                                       cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("PEagleDraftModel", Row(VLLM, "0.22.0", "Eagle3LlamaForCausalLM",
                             f"{REG} (0.22.0-0.33.0; absent 0.21.0 and 0.34.0: P-EAGLE removed)", until="0.34.0",
                             cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("PeagleLlamaForCausalLM", Row(VLLM, "0.22.0", "Eagle3LlamaForCausalLM",
                                   f"{REG} (0.22.0-0.33.0; absent 0.21.0 and 0.34.0: P-EAGLE removed)",
                                   until="0.34.0", cites=(Cite("vllm/model_executor/models/registry.py"),))),
    ("Eagle3Qwen3ForCausalLM", Row(VLLM, "0.24.0", "Eagle3Qwen3ForCausalLM",
                                   f"{REG} maps it to qwen3_eagle3.py (0.24.0; absent 0.23.0)",
                                   cites=(Cite("vllm/model_executor/models/registry.py"),
                                          Cite("vllm/model_executor/models/qwen3_eagle3.py"),))),
    ("PeagleQwen3ForCausalLM", Row(VLLM, "0.24.0", "Eagle3Qwen3ForCausalLM",
                                   f"{REG} maps it to qwen3_eagle3.py (0.24.0-0.33.0; absent 0.23.0 and 0.34.0: "
                                   "P-EAGLE removed)", until="0.34.0",
                                   cites=(Cite("vllm/model_executor/models/registry.py"),
                                          Cite("vllm/model_executor/models/qwen3_eagle3.py"),))),
    ("LlamaForCausalLMEagle3", Row(SGLANG, "0.4.4.post2", "LlamaForCausalLMEagle3",
                                   "sglang models/llama_eagle3.py EntryClass (v0.4.4.post2 9e0186f352)",
                                   cites=(Cite("sglang/srt/models/llama_eagle3.py"),))),
    ("Eagle3DeepseekV2ForCausalLM", Row(SGLANG, "0.5.12", "Eagle3DeepseekV2ForCausalLM",
                                    "sglang models/kimi_k25_eagle3.py EntryClass (v0.5.12 a87fb399de)",
                                    cites=(Cite("sglang/srt/models/kimi_k25_eagle3.py"),))),
)


def _own(engine: Engine, row: TableRow) -> Row[Any]:
    """An engine module's row as the tables hold it, named by the engine."""
    return Row(engine.name, row.since, row.value, row.source, until=row.until, read_to=row.read_to, cites=row.cites,
               unmodelled=row.unmodelled)


#: Registry rows: from ``since``, the engine maps the draft architecture to the class named by the value (the
#: engines' own, ``Engine.registry_rows``, then those still filed here).
_REGISTRY_ROWS: tuple[tuple[str, Row[str]], ...] = (
    *((arch, _own(engine, row)) for engine in ENGINE_REGISTRY for arch, row in engine.registry_rows),
    *_CENTRAL_REGISTRY_ROWS)


def _registry() -> dict[tuple[str, str], Table[str]]:
    grouped: dict[tuple[str, str], list[Row[str]]] = {}
    for arch, row in _REGISTRY_ROWS:
        grouped.setdefault((row.engine, arch), []).append(row)
    return {(engine, arch): table(f"{engine} registry: {arch}", rows, full=False)
            for (engine, arch), rows in grouped.items()}


#: The registry: for each (engine, draft architecture), from which release it maps to which class.
REGISTRY: dict[tuple[str, str], Table[str]] = _registry()
#: Whether the engine reads the config's architecture at all (vLLM 0.8.5 builds Eagle3LlamaForCausalLM for
#: method eagle3 whatever the field says).
ARCHITECTURE_READ: Table[bool] = table("architecture field read", (
    *(_own(engine, row) for engine in ENGINE_REGISTRY for row in engine.architecture_read),
    Row(VLLM, "0.8.5", False, "vllm 0.8.5 v1/spec_decode/eagle.py load_model: method eagle3 -> Eagle3LlamaForCausalLM",
        read_to="0.8.5",
        cites=(Cite("vllm/v1/spec_decode/eagle.py", "EagleProposer.load_model"),)),
    Row(VLLM, "0.9.0", True, "vllm 0.9.0 model_executor/models/registry.py: the architecture selects the class",
        cites=(Cite("vllm/model_executor/models/registry.py"),)),
    Row(SGLANG, "0.4.4.post2", True, "sglang model_loader: the architecture selects the EntryClass",
        cites=(Cite("sglang/srt/model_loader/utils.py", "get_model_architecture"),)),
))


def accepted(engine: str, version: Version) -> tuple[str, ...]:
    """The draft architectures the engine version registers."""
    return tuple(arch for (eng, arch), t in REGISTRY.items() if eng == engine and t.find(engine, version))


def accepted_rows() -> tuple[Row[tuple[str, ...] | str], ...]:
    """The profile's ``architectures`` behaviour, derived from the registry: one row wherever it changes
    ('*' while the engine ignores the field)."""
    found: list[Row[tuple[str, ...] | str]] = []
    for engine in RELEASES:
        changes: dict[Version, list[Row[Any]]] = {}
        tables: tuple[Table[Any], ...] = (*REGISTRY.values(), ARCHITECTURE_READ)
        for t in tables:
            for row in t.rows_of(engine):
                changes.setdefault(row.start, []).append(row)
                if row.end is not None:  # a registration that ends (vLLM 0.34.0 removed P-EAGLE's names)
                    changes.setdefault(row.end, []).append(row)
        for start in sorted(changes):
            target = EngineVersion(engine, start)
            value: tuple[str, ...] | str = accepted(engine, start) if ARCHITECTURE_READ.value(target) else "*"
            registered = [r.source for r in changes[start] if isinstance(r.value, str)]
            read = [r.source for r in changes[start] if isinstance(r.value, bool)]
            source = "; ".join(dict.fromkeys(read if value == "*" or not registered else registered))
            found.append(Row(engine, str(start), value, source))
    return tuple(found)


def draft_class(engine: str, version: Version, architecture: str) -> DraftClass | None:
    """The class the architecture (after the engine's rewrite) builds at ``version``; None if unregistered."""
    registered = REGISTRY.get((engine, architecture))
    row = registered.find(engine, version) if registered is not None else None
    return CLASSES[(engine, row.value)] if row is not None else None


#: The architecture a fix names first for a family (both engines register it for their Llama class).
PREFERRED = {LLAMA: "LlamaForCausalLMEagle3"}


def _preferred(engine: str, family: str) -> str | None:
    """The architecture a fix names first; an engine's own first choice where it differs (its
    ``preferred_architectures``: LMDeploy sets its draft vocab only on the LlamaForCausalLM path)."""
    own = engine_named(engine).preferred_architectures
    return (dict(own) if own is not None else PREFERRED).get(family)


def _family(engine: str, row: Row[str]) -> str:
    return CLASSES[(engine, row.value)].family


def family_architectures(engine: str, version: Version, family: str) -> tuple[str, ...]:
    """The architectures ``version`` registers whose class is of ``family`` (the preferred one first): the only
    names an architecture fix may offer a draft of that family."""
    names = []
    for (eng, arch), rows in REGISTRY.items():
        row = rows.find(engine, version) if eng == engine else None
        if row is not None and _family(engine, row) == family:
            names.append(arch)
    return tuple(sorted(names, key=lambda a: (a != _preferred(engine, family), a)))


def first_family_release(engine: str, family: str) -> tuple[str, str] | None:
    """The first release (and the architecture) from which ``engine`` registers a class of ``family``."""
    found = [(row.start, row.since, arch) for (eng, arch), rows in REGISTRY.items() if eng == engine
             for row in rows.rows_of(engine) if _family(engine, row) == family]
    if not found:
        return None
    _, since, arch = min(found, key=lambda item: (item[0], item[2] != _preferred(engine, family), item[2]))
    return since, arch


def arch_source(engine: str, architecture: str) -> str:
    """The source of the registry row for ``architecture`` in ``engine``, or a line saying there is none."""
    registered = REGISTRY.get((engine, architecture))
    return registered.rows[0].source if registered else f"{engine}: no registry row for {architecture}"


def speculators_class(model_type: str) -> str:
    """vllm transformers_utils/configs/speculators/algos.py update_eagle3 (0.24+): llama / qwen3."""
    return "Eagle3Qwen3ForCausalLM" if model_type == QWEN3 else "Eagle3LlamaForCausalLM"


#: Model types whose decoder attention normalises q and k per head: a draft of that type trained
#: with its own layer has q_norm/k_norm, which a Llama-class engine does not hold.
QK_NORM_MODEL_TYPES = ("qwen3", "qwen3_moe", "qwen3_next", "gemma3_text", "olmo2")
