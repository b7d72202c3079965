"""Every contract, defined once: its id, its scope (the row it is judged in), the function that judges it, what it
checks, and the test that reports it.

Everything else is derived from this table: the judgement's contracts and their order (``verdict.rows``), the
report's order (:func:`rank`), the contract tests pytest collects (``shell.contract.contract_class`` builds a
``contracts/`` module's class from its rows) and the row each test is parametrised for (``shell.contract.
contract_scope``). A contract is added here, with its function in ``assess_checkpoint`` or ``assess_engine``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pytest_eagle3.verdict import assess_checkpoint as checkpoint
from pytest_eagle3.verdict import assess_engine as engine
from pytest_eagle3.verdict.assess import Assessment

#: The row a contract is judged in: the table's ``any`` row (no engine decides it), an engine version's row, or an
#: engine version's row by a test that starts the engine itself (``live``: serving it, ``probe``: its own loader).
Scope: TypeAlias = Literal["checkpoint", "engine", "live", "probe"]
CHECKPOINT: Scope = "checkpoint"
ENGINE: Scope = "engine"
LIVE: Scope = "live"
PROBE: Scope = "probe"


@dataclass(frozen=True)
class ContractDefinition:
    """One contract: what judges it, in which row, and the test that reports it."""

    id: str
    scope: Scope
    #: The test reporting it, ``Class.method`` in its ``contracts/`` module (its node id, as a failure prints it).
    test: str
    #: What it checks (the test's docstring).
    description: str
    #: The function judging it from the row's record (``assess_checkpoint.Checked``, ``assess_engine.Judged``);
    #: None where its test judges it (live, probe).
    area: Callable[[Assessment, Any], str] | None = None
    #: Measures with the target's weights: unmeasured without them (what PASS (static) lists as not measured), and
    #: ``--eagle3-require=measured`` fails it.
    measures: bool = False

    @property
    def test_class(self) -> str:
        """The class its test is a method of."""
        return self.test.partition(".")[0]

    @property
    def test_name(self) -> str:
        """Its test method's name."""
        return self.test.partition(".")[2]


#: Every contract, in the report's order (a contract outside it, a user's own ``eagle3_contract`` test, is reported
#: after these, by its module and line).
TABLE: tuple[ContractDefinition, ...] = (
    ContractDefinition("checkpoint.readable", CHECKPOINT, "TestEagle3Checkpoint.test_files_readable",
                       "Every weight file parses, every tensor's bytes are where its header says.",
                       checkpoint.files_readable),
    ContractDefinition("config.parseable", CHECKPOINT, "TestEagle3Checkpoint.test_config_parseable",
                       "config.json is a JSON object with the fields every engine needs.", checkpoint.config_parseable),
    ContractDefinition("format.detected", CHECKPOINT, "TestEagle3Checkpoint.test_format_detected",
                       "The producer is recognised, so its aux-layer convention and defaults are known.",
                       checkpoint.format_detected),
    ContractDefinition("config.shapes", CHECKPOINT, "TestEagle3Checkpoint.test_tensor_shapes_match_config",
                       "lm_head rows = draft vocab, fc = aux count x target hidden, q/k/v take 2 x hidden, norms "
                       "present; what the rule does not model (packed quantized weights, a family it does not know) "
                       "is skipped, never failed.", checkpoint.shapes_match_config),
    ContractDefinition("target.consistent", CHECKPOINT, "TestEagle3Checkpoint.test_consistent_with_target",
                       "Vocab, hidden size and aux ids fit the target model.", checkpoint.consistent_with_target),
    ContractDefinition("engine.acceptance", ENGINE, "TestEagle3EngineAcceptance.test_acceptance",
                       "The engine's predicted mean acceptance length reaches the minimum and loses at most "
                       "--eagle3-max-loss against the draft as trained.", engine.acceptance, measures=True),
    ContractDefinition("engine.architecture", ENGINE, "TestEagle3Engine.test_architecture",
                       "The engine builds an EAGLE-3 draft class from this config format and architecture.",
                       engine.architecture),
    ContractDefinition("engine.keys", ENGINE, "TestEagle3Engine.test_keys",
                       "No checkpoint tensor dropped or refused, no engine parameter left uninitialised (unless the "
                       "simulation shows the parameter's initial value costs nothing).", engine.keys),
    ContractDefinition("engine.vocab", ENGINE, "TestEagle3Engine.test_vocab",
                       "The engine reads the draft->target map the way it was written.", engine.vocab),
    ContractDefinition("engine.aux_layers", ENGINE, "TestEagle3Engine.test_aux_layers",
                       "The target layers the engine feeds are the layers the draft was trained on.",
                       engine.aux_layers),
    ContractDefinition("engine.fc", ENGINE, "TestEagle3Engine.test_fc",
                       "The concatenation the target sends matches what fc was trained on; fc is not bypassed.",
                       engine.fc),
    ContractDefinition("engine.norms", ENGINE, "TestEagle3Engine.test_norms",
                       "The engine applies the norms the draft was trained with.", engine.norms),
    ContractDefinition("engine.embeddings", ENGINE, "TestEagle3Engine.test_embeddings",
                       "embed_tokens and lm_head come from where the draft was trained with them.", engine.embeddings),
    ContractDefinition("engine.layers", ENGINE, "TestEagle3Engine.test_layers",
                       "The engine builds as many draft layers as the checkpoint has.", engine.layers),
    ContractDefinition("engine.geometry", ENGINE, "TestEagle3Engine.test_geometry",
                       "The attention the engine builds (heads, KV heads, head_dim as it derives them) fits the "
                       "q/k/v/o tensors.", engine.geometry),
    ContractDefinition("engine.runtime", ENGINE, "TestEagle3Engine.test_runtime",
                       "Draft and target can run together: the draft's KV pages fit the engine's KV-cache manager, "
                       "its position range covers the target's context, and its quantization, sliding window and "
                       "dtype are the ones it was trained with (engines.runtime).", engine.runtime),
    ContractDefinition("engine.producer", ENGINE, "TestEagle3Engine.test_producer",
                       "What the producer trained with reaches the engine: fields it never reads, the rope it builds "
                       "from the config, and the files beside the weights that its loader reads.", engine.producer),
    ContractDefinition("live.launch", LIVE, "TestEagle3Live.test_live_launch",
                       "The launch command runs the draft as EAGLE-3, names it, and selects a mode that feeds its "
                       "layers."),
    ContractDefinition("live.acceptance", LIVE, "TestEagle3Live.test_live_acceptance",
                       "The engine's own acceptance matches the prediction per position, loses at most "
                       "--eagle3-max-loss against the draft as trained, and reaches the minimum."),
    ContractDefinition("live.greedy", LIVE, "TestEagle3Live.test_live_greedy",
                       "At temperature 0 the outputs with the draft equal the target's outputs without it."),
    ContractDefinition("probe.load", PROBE, "TestEagle3Probe.test_probe_load",
                       "The installed engine's own loader (sentinel weights, CPU) loads the draft, loses nothing, and "
                       "does what the static plan for that version says, fact by fact."),
    ContractDefinition("reference.acceptance", CHECKPOINT, "TestEagle3ReferenceAcceptance.test_reference_acceptance",
                       "Mean acceptance length (greedy, k draft steps, bonus token counted) reaches the minimum.",
                       checkpoint.reference_acceptance, measures=True),
    ContractDefinition("reference.convention", CHECKPOINT, "TestEagle3ReferenceAcceptance.test_reference_convention",
                       "The aux-id convention and d2t reading the config declares are the ones the draft was trained "
                       "with.", checkpoint.reference_convention, measures=True),
    ContractDefinition("vocab.map", CHECKPOINT, "TestEagle3VocabMap.test_vocab_map",
                       "The draft->target token map is what engines expect.", checkpoint.vocab_map),
    ContractDefinition("weights.finite", CHECKPOINT, "TestEagle3Weights.test_weights_finite",
                       "No NaN or Inf anywhere (speculators saves NaN lm_head/embed before verifier weights load); "
                       "packed quantized weights the scan cannot read are not modelled (skipped; a failure with "
                       "--eagle3-unknown=fail).", checkpoint.weights_finite),
    ContractDefinition("weights.initialised", CHECKPOINT, "TestEagle3Weights.test_weights_initialised",
                       "No tensor all zero, no weight matrix holding one repeated value.",
                       checkpoint.weights_initialised),
)
#: Every contract id, in the report's order.
CONTRACTS = tuple(c.id for c in TABLE)
BY_ID = {c.id: c for c in TABLE}


def of_scope(scope: Scope) -> tuple[ContractDefinition, ...]:
    """The contracts judged in ``scope``, in the report's order."""
    return tuple(c for c in TABLE if c.scope == scope)


def id_of(area: Callable[[Assessment, Any], str]) -> str:
    """The id of the contract ``area`` judges."""
    return next(c.id for c in TABLE if c.area is area)


@cache
def defined_at(contract: str) -> int:
    """The line of this module where ``contract``'s row starts: where a test built from the row points (it has no
    source of its own)."""
    rows = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(rows, 1) if line.lstrip().startswith(f'ContractDefinition("{contract}"'))


def rank(contract: str) -> tuple[str, int]:
    """Where a contract sorts in the report: its place in the table (others after, by id)."""
    return ("", CONTRACTS.index(contract)) if contract in BY_ID else ("~" + contract, 0)


#: What a row cannot be green without: the layers the engine feeds and the acceptance it reaches, in that order. A
#: row where one of these could not be judged reads NOT JUDGED, never PASS (``--eagle3-not-judged=fail`` fails the
#: run); an acceptance left unmeasured for want of the target's weights alone reads ``PASS (static)``.
ESSENTIAL = (id_of(engine.aux_layers), id_of(engine.acceptance))
#: The contracts that run the draft and the target's forward on the run's device (marked ``gpu`` on CUDA).
ON_DEVICE = (id_of(checkpoint.reference_acceptance), id_of(checkpoint.reference_convention))
#: The contracts whose pass means the run scanned the weights healthy (the repair solver need not scan again).
HEALTH = (id_of(checkpoint.weights_finite), id_of(checkpoint.weights_initialised))
#: The contracts a failing row's repair line reads: the reference acceptance (nothing accepted: the target first),
#: the target's fit (a draft for another target: no copy helps).
REFERENCE_ACCEPTANCE = id_of(checkpoint.reference_acceptance)
TARGET_CONSISTENT = id_of(checkpoint.consistent_with_target)
#: The contracts that measure with the target's weights (``--eagle3-require=measured`` fails each left unmeasured).
MEASURING = tuple(c.id for c in TABLE if c.measures)
