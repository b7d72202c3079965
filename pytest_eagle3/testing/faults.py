"""File faults: each a named way a written checkpoint goes wrong, with the contract and diagnosis that
must catch it, as data (:class:`~pytest_eagle3.testing.spec.SynthSpec` checks fault names against it; what each
does is :mod:`.damage`). The vocab-map faults come from the corruption catalogue (:mod:`.corruptions`)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.producers.formats import EAGLE, SPECULATORS
from pytest_eagle3.testing.corruptions import CATALOGUE
from pytest_eagle3.testing.layouts import PRODUCERS, SAFETENSORS


@dataclass(frozen=True)
class Fault:
    """A fault: what it imitates, which contract catches it, with which diagnosis (what it does to the draft or
    to a written file is ``testing.damage``)."""

    description: str
    contract: str
    diagnosis: str
    producers: tuple[str, ...] = PRODUCERS
    #: The tensor the fault changes; a layout without it is left as it is (the map of a full-vocab draft).
    needs: str | None = None
    #: The catalogue entry (``corruptions.CATALOGUE``) this fault is the file form of.
    corruption: str | None = None


#: Every fault: what it imitates and the contract and diagnosis that must catch it (what it does, to the tensors and
#: config before writing or to a written file: ``testing.damage``; the rest shape how the writer writes).
#: The vocab.map rows are the file forms of the corruption catalogue.
FAULTS: dict[str, Fault] = {
    **{c.fault: Fault(c.description, c.contract, c.diagnosis, c.producers, needs=c.needs,
                      corruption=c.name)
       for c in CATALOGUE if c.fault is not None},
    "nan-lm-head": Fault("speculators' NaN lm_head/embed saved before load_verifier_weights()", "weights.finite",
                         "speculators-nan-init", (SPECULATORS,)),
    "inf-weight": Fault("an fp16 overflow left Inf in fc", "weights.finite", "non-finite"),
    "zero-weight": Fault("an all-zero o_proj (never loaded)", "weights.initialised", "all-zero-weights"),
    "constant-weight": Fault("an uninitialised constant mlp.down_proj", "weights.initialised", "constant-weights"),
    "fc-width": Fault("fc sized for 4 aux states, config says 3", "config.shapes", "shape-mismatch"),
    "qkv-width": Fault("first-layer q_proj takes H, not 2H", "config.shapes", "shape-mismatch"),
    "missing-norm": Fault("hidden_norm not exported", "config.shapes", "missing-tensors"),
    "missing-lm-head": Fault("no lm_head with a reduced vocab", "config.shapes", "missing-lm-head"),
    "leftover-prefix": Fault("draft_model. prefix left on every key", "config.shapes", "leftover-prefix"),
    "layer-count": Fault("config says 2 draft layers, checkpoint holds 1", "config.shapes", "layer-count"),
    "config-missing-hidden": Fault("config.json without hidden_size", "config.parseable", "config-missing-field"),
    "unknown-format": Fault("architectures and keys of no known producer", "format.detected", "format-unknown", SAFETENSORS),
    "truncated": Fault("weight file cut short", "checkpoint.readable", "unreadable"),
    "header-length-lie": Fault("safetensors length prefix larger than the file", "checkpoint.readable", "unreadable", SAFETENSORS),
    "header-offsets-lie": Fault("a tensor's data_offsets run past the file", "checkpoint.readable", "unreadable", SAFETENSORS),
    "shard-outside": Fault("shard index points outside the checkpoint directory", "checkpoint.readable", "unreadable", SAFETENSORS),
    "pickle-code": Fault("pytorch_model.bin whose pickle runs code", "checkpoint.readable", "unreadable", (EAGLE,)),
    "config-not-json": Fault("config.json is not JSON", "config.parseable", "config-unreadable"),
    "config-not-object": Fault("config.json is a JSON list", "config.parseable", "config-unreadable"),
    "empty-dir": Fault("an empty directory", "checkpoint.readable", "unreadable"),
}
