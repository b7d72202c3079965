"""The target run in-process with transformers (today's path), as a target source.

``transformers_side`` gives exactly what ``reference.acceptance.run_target`` computes (same batches,
same numbers); ``prompt_states`` splits those batches per prompt for a dump.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from pytest_eagle3.reference.acceptance import Target, TargetRun, load_prompts, load_target, run_target
from pytest_eagle3.reference.targets.source import PromptStates, TargetHead, TargetSide


def model_head(target: Target) -> TargetHead:
    """The loaded model's embedding, lm_head and final norm (float32)."""
    norm = target.model.get_decoder().norm
    eps = float(getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6)))
    return TargetHead(target.embed.detach().float(), target.model.get_output_embeddings().weight.detach().float(),
                      norm.weight.detach().float(), eps)


@dataclass
class TransformersSource:
    """``AutoModelForCausalLM`` from a local directory, prompts continued greedily, every state captured."""

    target_path: str
    device: str = "cpu"
    prompts_path: str | None = None
    new_tokens: int = 0

    def side(self) -> TargetSide:
        """Run the target with transformers on the prompts and return its side."""
        target = load_target(self.target_path, self.device)
        prompts, source = load_prompts(target, self.prompts_path)
        runs = run_target(target, prompts, self.new_tokens)
        hidden = int(target.model.config.get_text_config().hidden_size)
        return TargetSide(tuple(runs), model_head(target), target.layers, hidden, target.vocab_size, source,
                          "transformers in-process")


def transformers_side(target_path: str, device: str, prompts_path: str | None, new_tokens: int) -> TargetSide:
    """The target's side computed here, the way the reference always has."""
    return TransformersSource(target_path, device, prompts_path, new_tokens).side()


def prompt_states(runs: Sequence[TargetRun], layers: Sequence[int]) -> Iterator[tuple[int, PromptStates]]:
    """Each prompt of each run (in run order) with the requested states only, as ``(index, states)``."""
    index = 0
    for run in runs:
        for row in range(run.sequences.shape[0]):
            states = {k: run.states[k][row].detach().to("cpu", torch.float32).contiguous() for k in layers}
            yield index, PromptStates(run.sequences[row].detach().cpu(), run.prompt_length, states)
            index += 1
