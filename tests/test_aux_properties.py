"""Aux-layer arithmetic against an independent statement of each engine's rule.

The independent statement replays the engines' own capture loops literally (``for i in
range(L): if i in layers_to_capture: ...``) on the ids each engine's resolver reads; the profile
side is the set arithmetic in ``pytest_eagle3.engines.aux_layers``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from pytest_eagle3.engines import aux_layers as aux
from pytest_eagle3.engines.aux_layers import trained_inputs
from pytest_eagle3.knowledge.behaviours import segment_starts
from pytest_eagle3.knowledge.releases import RELEASES as KNOWN_RELEASES
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.snapshot import snapshot_of

FIELDS = ("eagle_aux_hidden_state_layer_ids", "eagle_config.eagle_aux_hidden_state_layer_ids",
          "eagle_config.layer_ids", "dflash_config.target_layer_ids", "dflash_config.layer_ids",
          "dspark_target_layer_ids", "target_layer_ids")


def _config(field: str | None, ids: list[int]) -> dict[str, Any]:
    if field is None:
        return {}
    section, _, name = field.rpartition(".")
    return {section: {name: ids}} if section else {field: ids}


def sglang_reference(version: Version, family: str, config: dict[str, Any], layers: int) -> tuple[list[int], bool]:
    """SGLang: spec_aux_hidden_state reads eagle_config ids (from 0.4.9); the target's
    set_eagle3_layers_to_capture transforms them; LlamaModel.forward captures before layer i."""
    ids = None
    if version >= Version("0.4.9"):
        ids = (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids") or None
    if ids is None:
        to_capture = [2, layers // 2, layers - 3]
    elif family == "deepseek" and version >= Version("0.5.13") and ids[0] != 1:
        to_capture = list(ids)
    elif family == "gpt_oss" and version >= Version("0.5.17"):
        # boundary 0 = embeddings, boundary i + 1 = after block i (models/gpt_oss.py forward)
        boundaries = list(ids) if max(ids) == layers else [v + 1 for v in ids]
        return [b for b in range(layers + 1) if b in boundaries], False
    else:
        to_capture = [v + 1 for v in ids]
    captured: list[int] = []
    for i in range(layers):
        if i in to_capture:
            if i == 0:
                return captured, True  # hidden_states + None
            captured.append(i)
    return captured, False


def _vllm_v1_ids(version: Version, config: dict[str, Any]) -> Any:
    """gpu_model_runner.py _get_eagle3_aux_layers_from_config (model runner V1), release by release."""
    ids = config.get("eagle_aux_hidden_state_layer_ids") if version >= Version("0.11.1") else None
    dflash, eagle = config.get("dflash_config"), config.get("eagle_config")
    if not ids and version >= Version("0.22.0"):
        if isinstance(dflash, dict):
            ids = [i + 1 for i in (dflash.get("target_layer_ids") or [])]
        if isinstance(eagle, dict):
            ids = eagle.get("eagle_aux_hidden_state_layer_ids")
    elif not ids and version >= Version("0.20.0") and isinstance(dflash, dict):
        ids = dflash.get("target_layer_ids")
    return ids


def _vllm_v2_ids(version: Version, config: dict[str, Any]) -> Any:
    """v1/worker/gpu/spec_decode/eagle/eagle3_utils.py get_eagle3_aux_layers_from_config (model runner V2)."""
    ids = config.get("eagle_aux_hidden_state_layer_ids")
    dflash = config.get("dflash_config")
    if not ids and version >= Version("0.24.0") and isinstance(dflash, dict):
        ids = [i + 1 for i in (dflash.get("target_layer_ids") or [])]
    for name in ("dspark_target_layer_ids", "target_layer_ids"):
        if not ids and version >= Version("0.25.0") and config.get(name):
            ids = [i + 1 for i in config[name]]
    for section in ("dflash_config", "eagle_config"):
        drafter = config.get(section)
        if not ids and version >= Version("0.27.0") and isinstance(drafter, dict):
            ids = drafter.get("layer_ids")
    return ids


def vllm_reference(version: Version, config: dict[str, Any], layers: int, runner: str = "default"
                   ) -> tuple[list[int], bool]:
    """vLLM: the runner's resolver (the GPU default: V2 for Llama from 0.23, V1 before; ``other``: the
    other one, from 0.22), ids as-is; the loop captures before layer idx (to 0.17), or the embeddings
    plus after each layer idx the id idx + 1 (0.18+)."""
    v2 = version >= Version("0.23.0") if runner == "default" else version < Version("0.23.0")
    ids = _vllm_v2_ids(version, config) if v2 else _vllm_v1_ids(version, config)
    chosen = tuple(sorted(set(ids))) if ids else (2, layers // 2, layers - 3)
    captured: list[int] = []
    if version >= Version("0.18.0"):
        if 0 in chosen:
            captured.append(0)
        for idx in range(layers):
            if idx + 1 in chosen:
                captured.append(idx + 1)
        return captured, False
    for idx in range(layers):
        if idx in chosen:
            if idx == 0:
                return captured, True
            captured.append(idx)
    return captured, False


#: The one release list, plus versions between releases (a patch nobody read takes the earlier segment's rules).
RELEASES = {engine: [Version(v) for v in names] + [Version(f"{Version(v).base_version}.99") for v in names[::7]]
            for engine, names in KNOWN_RELEASES.items()}


def _versions(engine: str) -> st.SearchStrategy[Version]:
    """Every segment start, and releases in between (which take the earlier segment's rules)."""
    return st.sampled_from(sorted(set(segment_starts(engine)) | set(RELEASES[engine])))


@given(
    version=_versions("sglang"),
    family=st.sampled_from(["llama", "deepseek", "gpt_oss"]),
    layers=st.integers(4, 80),
    field=st.sampled_from([None, *FIELDS]),
    data=st.data(),
)
def test_sglang_capture_matches_the_engine_loop(version: Version, family: str, layers: int, field: str | None,
                                                data: st.DataObject) -> None:
    ids = data.draw(st.lists(st.integers(0, layers + 2), min_size=1, max_size=5))
    config = _config(field, ids)
    prof = snapshot_of(EngineVersion("sglang", version))
    fields = prof.behaviours.aux_id_fields
    _, _, _, requested = aux.resolve_capture(prof, fields, config, family, layers)
    assert requested is not None
    captured, _, crash = aux.firing(requested, layers, aux.capture_range_for(prof, family))
    expected, expected_crash = sglang_reference(version, family, config, layers)
    assert crash == expected_crash
    if not crash:
        assert list(captured) == expected


#: The runner whose resolver is replayed -> the profile behaviour that holds its fields.
RUNNER_FIELDS = {"default": "aux_id_fields", "other": "aux_id_fields_other_mode"}


@pytest.mark.parametrize("field", [None, *FIELDS])
@pytest.mark.parametrize("runner", RUNNER_FIELDS)
@given(version=_versions("vllm"), layers=st.integers(4, 80), data=st.data())
def test_vllm_capture_matches_the_engine_loop(runner: str, field: str | None, version: Version, layers: int,
                                              data: st.DataObject) -> None:
    """Both runners from 0.22 (V1 and V2); before 0.22 there is one. Every field the resolvers read, alone."""
    ids = data.draw(st.lists(st.integers(0, layers + 2), min_size=1, max_size=5))
    config = _config(field, ids)
    prof = snapshot_of(EngineVersion("vllm", version))
    fields = getattr(prof.behaviours, RUNNER_FIELDS[runner])
    if fields is None:
        return  # one model runner in this release: the default's test covers it
    _, _, _, requested = aux.resolve_capture(prof, fields, config, "llama", layers)
    assert requested is not None
    captured, _, crash = aux.firing(requested, layers, str(prof.behaviours.capture_range))
    expected, expected_crash = vllm_reference(version, config, layers, runner)
    assert crash == expected_crash
    if not crash:
        assert list(captured) == expected


@given(ids=st.lists(st.integers(0, 60), min_size=1, max_size=4), convention=st.sampled_from(aux.CONVENTIONS))
def test_output_of_ids_are_the_inputs_of_the_next_layer(ids: list[int], convention: str) -> None:
    trained = trained_inputs(ids, convention)
    shift = 1 if convention == "output-of" else 0
    assert trained == tuple(sorted({i + shift for i in ids}))
    assert "outputs of layers" in aux.describe_inputs([j for j in trained if j > 0] or [1])


@pytest.mark.parametrize("rule", ["+1", "as-is", "+1-if-first-is-1", "+1-unless-max-is-L"])
@pytest.mark.parametrize("trained", [(0, 2, 4), (1, 2, 4), (2, 4, 8), (3, 5, 7), (1, 4, 8)])
def test_the_printed_aux_edit_reads_back_as_the_trained_layers(rule: str, trained: tuple[int, ...]) -> None:
    """The ids a fix writes are never negative and the engine's own rule turns them into the trained
    layers; where no ids can (SGLang's DeepSeek rule asked for inputs (1, 2, 4)), no edit is proposed."""
    from pytest_eagle3.engines.aux_layers import inverse_transform, transform

    ids = inverse_transform(rule, trained, 8)
    if ids is None:
        assert all(transform(rule, cand, 8) != trained
                   for cand in (tuple(j - 1 for j in trained), trained) if min(cand) >= 0)
    else:
        assert min(ids) >= 0 and transform(rule, ids, 8) == trained
