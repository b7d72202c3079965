"""The aux knowledge is typed: aux-id fields are AuxField values, transforms a Transform enum, capture rows
CaptureEntry records; plain strings and tuples no longer pass as them."""

from __future__ import annotations

from pytest_eagle3.knowledge.behaviours.kinds import VALUES, value_fits
from pytest_eagle3.knowledge.capture_engines import ENTRIES
from pytest_eagle3.knowledge.engine import CaptureEntry
from pytest_eagle3.knowledge.engines.shared import DFLASH_PLUS_1, V2_FIELDS, AuxField, Transform


def test_a_shifted_field_prints_as_the_rows_wrote_it_and_as_messages_name_it() -> None:
    assert str(DFLASH_PLUS_1) == "dflash_config.target_layer_ids+1"
    assert DFLASH_PLUS_1.text() == "dflash_config.target_layer_ids (+1)"
    assert str(AuxField("eagle_config.layer_ids")) == AuxField("eagle_config.layer_ids").text() == "eagle_config.layer_ids"


def test_no_field_path_carries_a_shift_in_its_text() -> None:
    assert all("+" not in f.path for f in V2_FIELDS)


def test_the_behaviour_types_refuse_plain_strings() -> None:
    assert not value_fits(("eagle_aux_hidden_state_layer_ids",), VALUES["aux_id_fields"])
    assert value_fits((DFLASH_PLUS_1,), VALUES["aux_id_fields"])
    assert not value_fits("+1", VALUES["aux_transform_llama"])
    assert value_fits(Transform.PLUS_1, VALUES["aux_transform_llama"])


def test_each_transform_requests_what_its_engine_source_does() -> None:
    ids = (1, 4, 8)
    assert Transform.PLUS_1.apply(ids, 8) == (2, 5, 9)
    assert Transform.AS_IS.apply(ids, 8) == ids
    assert Transform.AS_IS_AT_LEAST_1.apply((0, 3), 8) == (1, 3)
    assert Transform.PLUS_1_IF_FIRST_IS_1.apply(ids, 8) == (2, 5, 9)
    assert Transform.PLUS_1_IF_FIRST_IS_1.apply((2, 4), 8) == (2, 4)
    assert Transform.PLUS_1_UNLESS_MAX_IS_L.apply(ids, 8) == ids
    assert Transform.PLUS_1_UNLESS_MAX_IS_L.apply((1, 4), 8) == (2, 5)
    assert Transform.PLUS_1_UNLESS_MAX_IS_L.apply(ids, None) is None


def test_every_capture_entry_is_a_record() -> None:
    assert ENTRIES and all(isinstance(e, CaptureEntry) and e.architectures for e in ENTRIES)
