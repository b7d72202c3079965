"""What vLLM copies from a speculators-format config into the EAGLE-3 config it builds, per release.

``transformers_utils/configs/speculators/algos.py update_eagle3`` always copies ``draft_vocab_size``,
``target_hidden_size`` and ``norm_before_residual``; the rows give the fields it copies on top (the
``transformer_layer_config`` is the base). SGLang reads no speculators config: no rows.
"""

from __future__ import annotations

from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import VLLM, EngineVersion
from pytest_eagle3.knowledge.table import Row, Table, table

ALGOS = "vllm transformers_utils/configs/speculators/algos.py update_eagle3"
AUX_IDS = "eagle_aux_hidden_state_layer_ids"

#: The fields copied beyond the three always copied (aux ids only when the config has them).
SPECULATORS_COPIES: Table[tuple[str, ...]] = table("vllm speculators fields copied", (
    Row(VLLM, "0.8.5", (), f"{ALGOS}: the layer config, draft_vocab_size, target_hidden_size, norm_before_residual "
        "(speculators configs read from 0.10.1)", read_to="0.11.0"),
    Row(VLLM, "0.11.1", (AUX_IDS,), f"vllm 0.11.1 {ALGOS.removeprefix('vllm ')} copies {AUX_IDS}", read_to="0.18.1",
        cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
    Row(VLLM, "0.19.0", (AUX_IDS, "norm_before_fc"),
        f"vllm 0.19.0 {ALGOS.removeprefix('vllm ')} copies norm_before_fc (default False)", read_to="0.24.0",
        cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
    Row(VLLM, "0.25.0", (AUX_IDS, "norm_before_fc", "fc_norm", "norm_output"),
        f"vllm 0.25.0 {ALGOS.removeprefix('vllm ')} propagates fc_norm and norm_output (default False)",
        cites=(Cite("vllm/transformers_utils/configs/speculators/algos.py", "update_eagle3"),)),
))


def speculators_copies(target: EngineVersion) -> tuple[str, ...]:
    """The fields the engine version copies from a speculators config on top of the three always copied."""
    row = SPECULATORS_COPIES.find(target.engine, target.version)
    return () if row is None else row.value
