"""Which target source a measurement uses: a dump when one is given, else transformers in-process."""

from __future__ import annotations

from pytest_eagle3.checkpoint import TargetModel
from pytest_eagle3.reference.targets.source import TargetSide, TargetSourceError


def target_side(target_path: str, device: str, prompts_path: str | None, new_tokens: int,
                hidden_states: str | None = None) -> TargetSide:
    """The target's side for ``new_tokens`` generated tokens per prompt, from the dump or from the model."""
    if hidden_states is None:
        from pytest_eagle3.reference.targets.transformers_source import transformers_side

        return transformers_side(target_path, device, prompts_path, new_tokens)
    if prompts_path is not None:
        raise TargetSourceError("--eagle3-prompts with --eagle3-hidden-states: the prompts are the dump's "
                                "(capture again with --prompts FILE to change them)")
    from pytest_eagle3.reference.targets.producer_dumps import open_hidden_states

    return open_hidden_states(hidden_states, TargetModel.open(target_path), new_tokens)
