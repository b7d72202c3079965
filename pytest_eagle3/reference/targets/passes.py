"""One target pass per run: the target's side computed once, at the longest length any consumer needs.

The reference measurement asks for ``--eagle3-continuation`` generated tokens, the prediction (and the fix
proofs, which reuse its predictors) for ``continuation + k``: the same greedy continuation of the same
prompts. :class:`TargetPasses` runs the target once for ``longest`` tokens and gives each consumer that
pass cut to its length (greedy decoding and causal attention: the first ``n`` tokens and their states are
the same in a longer pass). A dump is opened per length asked: it costs no forward pass, and a producer
dump's prompt boundary is read from the tokens asked (``producer_dumps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_eagle3.reference.acceptance import TargetRun
from pytest_eagle3.reference.targets.choose import target_side
from pytest_eagle3.reference.targets.source import TargetSide


@dataclass
class TargetPasses:
    """The run's target sides, one pass per target and prompts, shared by every consumer and checkpoint."""

    #: Generated tokens per prompt every pass covers at least (the longest any consumer of the run needs).
    longest: int = 0
    sides: dict[tuple[object, ...], tuple[int, TargetSide]] = field(default_factory=dict)
    #: How many times the target's side was computed or opened (a run's figure: one per target here).
    computed: int = 0
    #: Targets whose side was written once for the whole run (pytest-xdist's controller, for its workers): target
    #: path -> the dump, opened in place of running the target and labelled as the pass here would be.
    shared: dict[str, str] = field(default_factory=dict)

    def side(self, target_path: str, device: str, prompts_path: str | None, new_tokens: int,
             hidden_states: str | None = None) -> TargetSide:
        """The target's side for ``new_tokens`` generated tokens per prompt (raises ``TargetSourceError``)."""
        stamp = Path(prompts_path).stat().st_mtime_ns if prompts_path and Path(prompts_path).is_file() else None
        key: tuple[object, ...] = (target_path, device, hidden_states, prompts_path, stamp)
        if hidden_states is not None:  # no forward pass: opened at the length asked
            key = (*key, new_tokens)
        held = self.sides.get(key)
        if held is None or held[0] < new_tokens:
            length = new_tokens if hidden_states is not None else max(new_tokens, self.longest)
            if hidden_states is None and target_path in self.shared:
                held = (length, shared_side(target_path, self.shared[target_path], length))
            else:
                held = (length, target_side(target_path, device, prompts_path, length, hidden_states))
            self.sides[key] = held
            self.computed += 1
        length, side = held
        return side if length == new_tokens else shortened(side, new_tokens)


def shared_side(target_path: str, dump: str, new_tokens: int) -> TargetSide:
    """The side a run's own shared dump holds, as the in-process pass would have given it (same states, labels)."""
    import dataclasses

    from pytest_eagle3.checkpoint import TargetModel
    from pytest_eagle3.reference.targets.dump import DUMP_SUFFIX, open_dump

    side = open_dump(dump, TargetModel.open(target_path), new_tokens)
    return dataclasses.replace(side, prompts=side.prompts.removesuffix(DUMP_SUFFIX), origin="transformers in-process")


def shortened(side: TargetSide, new_tokens: int) -> TargetSide:
    """``side`` with each prompt's continuation cut to ``new_tokens`` tokens (views of the same tensors)."""
    runs = []
    for run in side.runs:
        keep = run.prompt_length + new_tokens
        runs.append(TargetRun(run.sequences[:, :keep], run.prompt_length, tuple(s[:, :keep] for s in run.states)))
    return TargetSide(tuple(runs), side.head, side.layers, side.hidden_size, side.vocab_size, side.prompts,
                      side.origin)
