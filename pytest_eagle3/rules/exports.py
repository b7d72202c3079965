"""Producer export bugs: a tensor an export writes wrongly, known from the producer's code
(:data:`pytest_eagle3.producers.EXPORT_BUGS`)."""

from __future__ import annotations

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.producers.formats import TORCHSPEC
from pytest_eagle3.producers.habits import EXPORT_BUGS
from pytest_eagle3.rules.vocab_map import ACCEPTANCE_NOTE


def export_findings(ckpt: Checkpoint, vocab_size: int, draft_vocab_size: int) -> list[Finding]:
    """The export bugs that apply to ``ckpt`` (TorchSpec's pruned lm_head, for now)."""
    bug = EXPORT_BUGS.get(ckpt.format.producer)
    if bug is None or bug.producer != TORCHSPEC:
        return []
    if "d2t" not in ckpt.tensors or draft_vocab_size >= vocab_size:
        return []
    return [Finding(
        bug.code,
        f"assumed from the producer's code: {bug.wrong}: the draft proposes tokens from the wrong rows, "
        f"{ACCEPTANCE_NOTE}",
        (Evidence("lm_head.weight rows", "full head rows d2t[i] (TorchSpec pruning)", "full head rows i + d2t[i]"),),
        bug.fix,
        (f"applies to {bug.when}", f"producer: {bug.source}"),
    )]
