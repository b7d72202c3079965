"""The corruption catalogue: every way a producer's vocab map goes wrong, once.

Each :class:`Corruption` is data: the ``vocab.map`` diagnosis it must produce, and the names of up to two
forms of the same damage: the file fault ``fault`` (:data:`pytest_eagle3.testing.faults.FAULTS`; its form,
which changes a synthetic checkpoint's tensors before they are written, is ``testing.damage.DRAFT_FORMS``)
and the Hypothesis corruption ``name`` (:data:`pytest_eagle3.testing.strategies.CORRUPTIONS`; its form draws
the damage for a generated map). Both tables are built from :data:`CATALOGUE`; this module imports neither
torch nor Hypothesis, and nothing that reads a synthetic spec, so the spec can check fault names against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.producers.formats import MODELOPT
from pytest_eagle3.testing.layouts import PRODUCERS, WITH_T2D

VOCAB_MAP = "vocab.map"


@dataclass(frozen=True)
class Corruption:
    """One vocab-map corruption: the diagnosis it must produce, and the file fault that writes it (if any)."""

    name: str
    diagnosis: str
    description: str
    #: The file fault's name in FAULTS; None when the damage has no checkpoint form.
    fault: str | None
    #: The Hypothesis base map must have t2d (True), must not (False), or either (None).
    needs_t2d: bool | None = None
    #: Layouts the file form applies to.
    producers: tuple[str, ...] = PRODUCERS
    #: The tensor the file form changes; a layout without it is left as it is.
    needs: str = "d2t"
    contract: str = VOCAB_MAP


#: Every vocab-map corruption, in the order ``synth --list-faults`` prints the file faults. Sources of the
#: real-world cases are in each description.
CATALOGUE: tuple[Corruption, ...] = (
    Corruption("absolute-ids", "absolute-ids", "d2t stores absolute target ids (verl-SpeCo#67)",
               "d2t-absolute", needs_t2d=True),
    Corruption("arange-default", "absolute-ids", "d2t left as arange(draft vocab), no t2d (never filled in)",
               None),
    Corruption("all-zero", "all-zero", "d2t all zero with a reduced vocab (NeMo Automodel#2447)",
               "d2t-all-zero"),
    Corruption("t2d-from-other-selection", "t2d-mismatch", "d2t and t2d from different selections (data-prep bug)",
               "d2t-t2d-mismatch", needs_t2d=True, producers=WITH_T2D),
    Corruption("defaults-never-replaced", "defaults-never-replaced",
               "SpecForge default buffers saved: t2d all True, d2t zeros",
               "t2d-defaults", producers=WITH_T2D),
    Corruption("out-of-range", "out-of-range", "d2t maps past the target vocab",
               "d2t-out-of-range"),
    Corruption("duplicate-targets", "duplicate-targets", "two draft tokens map to one target token",
               "d2t-duplicates", producers=(MODELOPT,)),
    Corruption("missing", "missing-map", "reduced vocab with no d2t in the checkpoint",
               "d2t-missing"),
    Corruption("int32", "d2t-dtype", "d2t saved as int32", "d2t-int32"),
    Corruption("wrong-length", "d2t-length", "d2t cached for another draft vocab size (SpecForge#602)",
               "d2t-wrong-length"),
    Corruption("t2d-extra-id", "t2d-count", "t2d marks more ids than the draft vocab",
               "t2d-wrong-count", needs_t2d=True, producers=WITH_T2D, needs="t2d"),
)
