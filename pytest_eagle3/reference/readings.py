"""From measured acceptance to findings: too low, or trained with another convention than declared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.producers.formats import DEFAULT_AUX_RULE, INPUT_OF, OUTPUT_OF, default_aux_inputs
from pytest_eagle3.reference.acceptance import (
    CONVENTION_OFFSETS,
    Acceptance,
    Inference,
    Reading,
    infer,
    missing_states,
    untried_readings,
)
from pytest_eagle3.reference.defaults import DEFAULT_NEW_TOKENS, DEFAULT_STEPS
from pytest_eagle3.reference.draft import DraftLoadError, ReferenceDraft
from pytest_eagle3.reference.targets.passes import TargetPasses
from pytest_eagle3.reference.targets.source import TargetSourceError

#: A declared reading "loses clearly" when another is this much longer in mean acceptance length.
#: Source: demo pair (examples/build_demo_pair.py): the trained reading leads wrong ones by > 1;
#: an untrained draft's readings lie within 0.05 of each other.
CLEAR_LOSS = 0.2


class ReferenceUnavailable(Exception):
    """The reference cannot be measured for this draft and target; the message says why."""


@dataclass(frozen=True)
class ReferenceResult:
    """Everything measured for one checkpoint against one target."""

    inference: Inference
    measured: Acceptance  # the declared reading, or the best one when nothing is declared
    declared_convention: str | None
    ids_source: str
    prompts: str
    steps: int

    def to_json(self) -> dict[str, Any]:
        """The reference measurement as the JSON report writes it."""
        best = self.inference.best
        return {
            "mean_acceptance_length": round(self.measured.mean_acceptance_length, 4),
            "per_position": list(self.measured.per_position),
            "convention": self.measured.reading.convention,
            "aux_layer_ids": list(self.measured.reading.ids),
            "d2t": self.measured.reading.d2t,
            "declared_convention": self.declared_convention,
            "inferred": {"convention": best.reading.convention, "d2t": best.reading.d2t,
                         "mean_acceptance_length": round(best.mean_acceptance_length, 4),
                         "margin": round(self.inference.margin, 4)},
            "readings": [{"reading": a.reading.label, "mean_acceptance_length": round(a.mean_acceptance_length, 4),
                          "per_position": list(a.per_position)} for a in self.inference.results],
            "draft_steps": self.steps,
            "drafts": self.measured.drafts,
            "prompts": self.prompts,
        }


def measure_reference(ckpt: Checkpoint, target_path: str, device: str = "cpu", prompts_path: str | None = None,
                      steps: int = DEFAULT_STEPS, passes: TargetPasses | None = None,
                      new_tokens: int = DEFAULT_NEW_TOKENS, hidden_states: str | None = None) -> ReferenceResult:
    """Load the draft and take the target's side (run here, or a dump) from ``passes``, the run's one target
    pass (``reference.targets.passes``: the pipeline's, shared with the predictions); try every reading. The
    draft is walked as the predictions walk it (``simulate.Simulator``: ``new_tokens`` generated, the pass
    ``steps`` longer), so the reference and the predictions' "as trained" are one figure."""
    passes = passes if passes is not None else TargetPasses()
    try:
        draft = ReferenceDraft.from_checkpoint(ckpt, device=device)
    except DraftLoadError as exc:
        raise ReferenceUnavailable(f"the reference forward cannot run this draft: {exc}") from exc
    try:
        target = passes.side(target_path, device, prompts_path, new_tokens + steps, hidden_states)
    except TargetSourceError as exc:
        raise ReferenceUnavailable(str(exc)) from exc
    ids, source = _aux_ids(ckpt, target.layers)
    hidden = target.hidden_size
    if draft.fc_in != len(ids) * hidden:
        raise ReferenceUnavailable(
            f"the draft does not fit this target: fc takes {draft.fc_in} inputs, {len(ids)} aux states of "
            f"this target give {len(ids) * hidden} (see target.consistent)")
    if draft.draft_vocab > target.vocab_size:
        raise ReferenceUnavailable(f"the draft vocab ({draft.draft_vocab}) is larger than the target's ({target.vocab_size})")
    runs, prompt_source = target.runs, target.prompts
    embed = draft.weights.get("embed_tokens.weight", target.head.embed)
    missing = draft.missing_embedding(int(target.head.embed.shape[-1]))
    if missing is not None:
        raise ReferenceUnavailable(missing)
    convention = ckpt.config.aux.convention_on(target.layers) if ckpt.config.aux.ids is not None else INPUT_OF
    untried = untried_readings(ids, target.layers, target.available)
    declared_offset = CONVENTION_OFFSETS.get(convention or "", 0)
    if any(r.offset == declared_offset for r in untried):
        states = missing_states(untried, target.available)
        raise ReferenceUnavailable(
            f"the captured hidden states lack {states}, which the declared reading ({convention} "
            f"{list(ids)}) and the others need: capture them (python -m pytest_eagle3 capture TARGET DIR "
            f"--layers {','.join(map(str, states))}) to measure the draft")
    inference = infer(draft, embed, runs, ids, convention, target.layers, target.vocab_size, steps,
                      target.available, new_tokens)
    measured = inference.declared or inference.best
    return ReferenceResult(inference, measured, convention, source, prompt_source, steps)


def _aux_ids(ckpt: Checkpoint, layers: int) -> tuple[tuple[int, ...], str]:
    aux = ckpt.config.aux
    if aux.ids is not None:
        return aux.ids, f"config.json {aux.field}"
    return default_aux_inputs(layers), f"not in config.json: the engines' default, {DEFAULT_AUX_RULE}"


def describe(reading: Reading) -> str:
    """Which physical target states a reading feeds, in words."""
    indices = ",".join(str(i) for i in reading.indices)
    outputs = ",".join(str(i - 1) for i in reading.indices)
    return f"outputs of layers [{outputs}] = hidden_states[{indices}]"


def acceptance_findings(result: ReferenceResult, minimum: float) -> list[Finding]:
    """Fail when the mean acceptance length under the declared reading is below ``minimum``."""
    measured, best = result.measured, result.inference.best
    if measured.mean_acceptance_length >= minimum:
        return []
    details = [f"per position: {list(measured.per_position)} over {measured.drafts} drafts ({result.prompts})"]
    fix = ("the draft itself is weak, or was trained for another target: retrain it, or check "
           "--eagle3-target names the model it was trained on")
    if best is not measured and best.mean_acceptance_length - measured.mean_acceptance_length >= CLEAR_LOSS:
        details.append(f"read as {best.reading.label} it reaches {best.mean_acceptance_length:.2f}")
        fix = "fix the config or the d2t map: see reference.convention"
    return [Finding(
        "low-acceptance",
        f"reference mean acceptance length {measured.mean_acceptance_length:.2f} < {minimum:g} at k={result.steps} "
        f"with aux ids {measured.reading.label}: the draft will barely speed up decoding",
        (Evidence("mean acceptance length (counting the bonus token)",
                  f"{measured.mean_acceptance_length:.2f}", f">= {minimum:g} (--eagle3-min-acceptance)"),),
        fix, tuple(details),
    )]


def convention_findings(result: ReferenceResult) -> list[Finding]:
    """Fail when another reading of the aux ids or of d2t beats the declared one clearly."""
    declared, best = result.inference.declared, result.inference.best
    if declared is None or best is declared:
        return []
    drop = best.mean_acceptance_length - declared.mean_acceptance_length
    if drop < CLEAR_LOSS:
        return []
    figures = (f"acceptance {declared.mean_acceptance_length:.2f} as declared vs "
               f"{best.mean_acceptance_length:.2f} (drop {drop:.2f})")
    evidence = tuple(Evidence(a.reading.label, f"mean acceptance length {a.mean_acceptance_length:.2f}",
                              "the declared reading leads") for a in result.inference.results[:4])
    if best.reading.d2t != declared.reading.d2t:
        return [Finding(
            "d2t-absolute", f"d2t holds absolute target ids, engines read offsets (target = i + d2t[i]): {figures} "
            "when read as absolute ids", evidence, "store offsets: d2t = target_ids - torch.arange(draft_vocab_size)")]
    ids = list(declared.reading.ids)
    input_ids = list(best.reading.indices)
    output_ids = [i - 1 for i in input_ids]
    return [Finding(
        "aux-convention",
        f"trained on {describe(best.reading)}; config declares {result.declared_convention} {ids} "
        f"-> engines would feed the wrong layers: {figures}",
        evidence,
        f"declare the layers it was trained on: {input_ids} as {INPUT_OF} ids (speculators / vLLM reading) "
        f"or {output_ids} as {OUTPUT_OF} ids (SpecForge / SGLang reading)",
        (f"aux ids from {result.ids_source}",),
    )]


def summary(result: ReferenceResult) -> str:
    """One line for the report and the terminal."""
    measured, inference = result.measured, result.inference
    line = (f"mean acceptance length {measured.mean_acceptance_length:.2f} at k={result.steps} "
            f"(per position {list(measured.per_position)}) with aux ids {measured.reading.label}; "
            f"inferred: {inference.best.reading.label} leads by {inference.margin:.2f}")
    return line
