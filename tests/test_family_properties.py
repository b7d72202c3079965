"""Drafts of every family (Llama, DeepSeek MLA, no-aux, FP8), hostile-edited by Hypothesis, never raise from our code:
every static rule and the judged plan of any engine release return (a verdict, never a traceback).

Each example starts from a probe case of one family (probes/cases.py), sets a drawn config field to a drawn value
(absent, null, negative, huge, a string, a list, a dict, a float, a bool) and drops a drawn subset of its tensors.
The plain FP8 run through the real entry point is tests/test_quantized.py's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.knowledge.releases import RELEASES, EngineVersion
from pytest_eagle3.probes.cases import CASES_BY_NAME, write_case
from pytest_eagle3.testing.synth import SynthSpec, write_target
from pytest_eagle3.verdict.judge import judged_plan
from tests.test_quantized import _every_rule

#: One probe case per family.
FAMILIES = {"llama": "specforge", "llama-speculators": "speculators", "mla": "specforge-mla",
            "no-aux": "specforge-no-aux", "fp8": "specforge-fp8"}
#: The config fields the rules read to tell the families apart and to size the draft.
FIELDS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "draft_vocab_size",
          "num_hidden_layers", "intermediate_size", "architectures", "model_type", "tie_word_embeddings",
          "eagle_config", "eagle_aux_hidden_state_layer_ids", "quantization_config", "kv_lora_rank", "q_lora_rank",
          "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "transformer_layer_config", "rope_scaling",
          "target_hidden_size", "num_aux_hidden_states")
ABSENT = object()
VALUES = st.one_of(st.just(ABSENT), st.none(), st.integers(-3, 3), st.just(2**40), st.text(max_size=4),
                   st.lists(st.integers(-2, 40), max_size=4), st.just({}), st.just({"quant_method": "fp8"}),
                   st.just({"use_aux_hidden_state": False}), st.just({"eagle_aux_hidden_state_layer_ids": [-1, 99]}),
                   st.floats(allow_nan=True), st.booleans())
ENGINES = [EngineVersion(e, Version(v)) for e, versions in RELEASES.items() for v in versions]


@pytest.fixture(scope="module")
def family_drafts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("families")
    return (write_target(SynthSpec(), root / "target"),
            {family: write_case(CASES_BY_NAME[case], root / family) for family, case in FAMILIES.items()})


def _edited(src: Path, out: Path, field: str, value: Any, drop: list[int]) -> Path:
    from safetensors.torch import load_file, save_file

    shutil.copytree(src, out)
    config = json.loads((out / "config.json").read_text())
    if value is ABSENT:
        config.pop(field, None)
    else:
        config[field] = value
    (out / "config.json").write_text(json.dumps(config))
    path = out / "model.safetensors"
    tensors = load_file(str(path))
    names = sorted(tensors)
    for index in drop:
        tensors.pop(names[index % len(names)], None)
    save_file(tensors, str(path))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(family=st.sampled_from(sorted(FAMILIES)), field=st.sampled_from(FIELDS), value=VALUES,
       drop=st.lists(st.integers(0, 63), max_size=3), engine=st.sampled_from(ENGINES))
def test_no_family_draft_makes_a_rule_raise(family_drafts: tuple[Path, dict[str, Path]],
                                            tmp_path_factory: pytest.TempPathFactory, family: str, field: str,
                                            value: Any, drop: list[int], engine: EngineVersion) -> None:
    target, drafts = family_drafts
    draft = _edited(drafts[family], tmp_path_factory.mktemp("edited") / family, field, value, drop)
    _every_rule(draft)
    plan = judged_plan(Checkpoint.open(draft), engine, TargetModel.open(target))
    assert plan.describe()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_unedited_is_judged_by_every_engine(family_drafts: tuple[Path, dict[str, Path]],
                                                         family: str) -> None:
    """The families as written, against the newest release of every engine: a plan, no exception."""
    target, drafts = family_drafts
    model, ckpt = TargetModel.open(target), Checkpoint.open(drafts[family])
    for engine, versions in RELEASES.items():
        assert judged_plan(ckpt, EngineVersion(engine, Version(versions[-1])), model).describe()
