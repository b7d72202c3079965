"""What vLLM copies from a speculators-format config into the EAGLE-3 config it builds, per release.

``transformers_utils/configs/speculators/algos.py update_eagle3`` always copies ``draft_vocab_size``,
``target_hidden_size`` and ``norm_before_residual``; the rows give the fields it copies on top (the
``transformer_layer_config`` is the base). SGLang reads no speculators config: no rows.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.version import Version

from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import VLLM
from pytest_eagle3.knowledge.table import Row, Table, table

ALGOS = "vllm transformers_utils/configs/speculators/algos.py update_eagle3"
AUX_IDS = "eagle_aux_hidden_state_layer_ids"

#: The fields copied beyond the three always copied (aux ids only when the config has them).
SPECULATORS_COPIES: Table[tuple[str, ...]] = table("vllm speculators fields copied", (
    Row(VLLM, "0.8.5", (), "vllm < 0.10.1: no speculators configs (transformers_utils/configs/speculators/ absent)",
        read_to="0.10.0", cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", absent=True),)),
    Row(VLLM, "0.10.1", (), f"{ALGOS}: the layer config, draft_vocab_size, target_hidden_size, norm_before_residual",
        read_to="0.11.0", cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
    Row(VLLM, "0.11.1", (AUX_IDS,), f"vllm 0.11.1 {ALGOS.removeprefix('vllm ')} copies {AUX_IDS}", read_to="0.18.1",
        cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
    Row(VLLM, "0.19.0", (AUX_IDS, "norm_before_fc"),
        f"vllm 0.19.0 {ALGOS.removeprefix('vllm ')} copies norm_before_fc (default False)", read_to="0.24.0",
        cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
    Row(VLLM, "0.25.0", (AUX_IDS, "norm_before_fc", "fc_norm", "norm_output"),
        f"vllm 0.25.0 {ALGOS.removeprefix('vllm ')} propagates fc_norm and norm_output (default False)",
        cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
))


def speculators_copies(engine: str, version: Version) -> tuple[str, ...]:
    """The fields ``engine`` at ``version`` copies from a speculators config on top of the three always copied."""
    row = SPECULATORS_COPIES.find(engine, version)
    return () if row is None else row.value


#: What vLLM does with a speculators P-EAGLE config (``speculators_model_type: peagle``), per release:
#: ``unsupported`` (not a registered speculators type), ``parallel-drafting`` (converted by ``update_peagle`` and
#: served as eagle3 with parallel drafting: ``mask_hidden`` loaded into a buffer, required), ``refused``.
PEAGLE: Table[str] = table("vllm speculators P-EAGLE", (
    Row(VLLM, "0.8.5", "unsupported",
        "vllm transformers_utils/configs/speculators/base.py extract_transformers_pre_trained_config: 'peagle' not "
        "in SUPPORTED_SPECULATORS_TYPES (algos.py registers eagle3 and dflash) -> ValueError 'Expected one of: ...' "
        "(speculators configs from 0.10.1; 0.21.0 read)", read_to="0.21.0"),
    Row(VLLM, "0.22.0", "parallel-drafting",
        "vllm 0.22.0 speculators/algos.py update_peagle (architectures Peagle*, pard_token = mask_token_id, "
        "norm_before_residual default False, no fc_norm / norm_output) and base.py build_vllm_speculative_config "
        "(method eagle3, parallel_drafting True); model_executor/models/llama_eagle3.py load_weights copies "
        "mask_hidden into a buffer, 'mask_hidden not found in weights but model is configured for parallel "
        "drafting' when absent (0.22.0, 0.33.0 read)", read_to="0.33.0"),
    Row(VLLM, "0.34.0", "refused",
        "vllm 0.34.0 speculators/algos.py update_peagle and base.py build_vllm_speculative_config: ValueError "
        "'P-EAGLE (parallel drafting EAGLE-3) is not supported.'; llama_eagle3.py / qwen3_eagle3.py skip "
        "mask_hidden with a warning"),
), full=False)
#: The words of each refusal, as the engine raises them.
PEAGLE_ERRORS = {
    "unsupported": "ValueError: Expected one of: {...}. Please ensure you're loading a speculators-format model.",
    "refused": "ValueError: P-EAGLE (parallel drafting EAGLE-3) is not supported.",
    "no-mask-hidden": ("ValueError: mask_hidden not found in weights but model is configured for parallel drafting. "
                       "Please provide mask_hidden in the weights."),
    "no-mask-token": "KeyError: 'mask_token_id'",
}


def peagle_rule(engine: str, version: Version) -> str | None:
    """What ``engine`` at ``version`` does with a speculators P-EAGLE config; None where no row says (other engines)."""
    row = PEAGLE.find(engine, version)
    return None if row is None else row.value


def is_peagle(raw: Mapping[str, object]) -> bool:
    """A speculators P-EAGLE config (``speculators_model_type: peagle``)."""
    return raw.get("speculators_model_type") == "peagle"
