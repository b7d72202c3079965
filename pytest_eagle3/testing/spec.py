"""What a synthetic draft looks like: its producer layout, shapes, aux ids and faults."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pytest_eagle3.producers.formats import default_aux_inputs
from pytest_eagle3.producers.names import INPUT_OF, SPECULATORS
from pytest_eagle3.testing.faults import FAULTS
from pytest_eagle3.testing.layouts import record_of


@dataclass(frozen=True)
class SynthSpec:
    """Shapes and layout of a synthetic draft (and of the target it belongs to)."""

    producer: str = SPECULATORS
    hidden_size: int = 64
    intermediate_size: int = 128
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 32
    vocab_size: int = 1024
    draft_vocab_size: int = 256
    target_layers: int = 8
    draft_layers: int = 1
    aux_layer_ids: tuple[int, ...] | None = None
    write_aux_ids: bool = True
    dtype: str = "bfloat16"
    seed: int = 0
    sharded: bool = False
    faults: frozenset[str] = field(default_factory=frozenset)
    #: Quantize the decoder layers' projections as an exporter does (``testing.quantize.QUANTIZATIONS``: "fp8",
    #: "modelopt-nvfp4", "compressed-tensors-w4a16", ...): scales beside, quantization_config in config.json.
    quantization: str | None = None
    #: False: a draft trained on the target's last hidden state alone (gpt-oss Eagle3-v2 style): no fc.weight, no
    #: aux ids, ``eagle_config.use_aux_hidden_state: false`` (the layouts with an eagle_config: SpecForge, ModelOpt).
    aux_hidden_state: bool = True

    def with_faults(self, *names: str) -> SynthSpec:
        """This spec with the named faults (``FAULTS``) added; ValueError for an unknown or unfit one."""
        unknown = set(names) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {sorted(FAULTS)}")
        unfit = [n for n in names if self.producer not in FAULTS[n].producers]
        if unfit:
            raise ValueError(f"faults {unfit} do not apply to the {self.producer} layout")
        return replace(self, faults=self.faults | frozenset(names))

    @property
    def convention(self) -> str:
        """The aux-id convention this producer writes (``input-of`` or ``output-of``)."""
        convention = record_of(self.producer).aux_convention
        assert convention is not None, f"the {self.producer} record has no aux-id convention"
        return convention[0]

    @property
    def aux_ids(self) -> tuple[int, ...]:
        """The ids this producer writes by default for the target's layer count (producers.md §1.5, §2.5)."""
        if self.aux_layer_ids is not None:
            return self.aux_layer_ids
        inputs = default_aux_inputs(self.target_layers)
        return inputs if self.convention == INPUT_OF else tuple(i - 1 for i in inputs)
