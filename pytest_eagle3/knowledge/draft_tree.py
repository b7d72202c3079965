"""Which engines draft SGLang's EAGLE tree (``--eagle3-topk`` > 1): the predicted walk drafts the tree for them
and the chain of ``k`` for every other engine (vLLM's ``num_speculative_tokens``, TensorRT-LLM's
``max_draft_len``: a chain of ``k``)."""

from __future__ import annotations

from pytest_eagle3.knowledge.releases import SGLANG, EngineVersion
from pytest_eagle3.knowledge.table import Row, Table, table

DRAFT_TREE: Table[bool] = table("drafts an EAGLE tree (speculative_eagle_topk > 1)", (
    Row(SGLANG, "0.4.4.post2", True,
        "sglang srt/speculative/eagle_worker_v2.py EAGLEWorkerV2.draft_forward: per step select_top_k_tokens "
        "(srt/speculative/spec_utils.py: the topk children of each of the topk frontier nodes scored by cumulative "
        "draft probability, the best topk kept as the next frontier), then eagle_utils.organize_draft_results keeps "
        "the num_draft_tokens - 1 best candidates, verified greedily (0.5.23 read)", read_to="0.5.23",
        unmodelled=("read in 0.5.23 (eagle_worker_v2.py, spec_utils.py); the older eagle_worker.py draft_forward "
                    "and eagle_utils.select_top_k_tokens were not re-read per release")),
), full=False)


def drafts_tree(target: EngineVersion) -> bool:
    """Whether the engine version drafts a tree when asked to (no row: a chain)."""
    row = DRAFT_TREE.find(target.engine, target.version)
    return row is not None and row.value
