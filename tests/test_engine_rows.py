"""Every engine's rows in the cross-engine tables live in its own module: the tables gather them from the registry
and name no engine themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_eagle3.knowledge import capture_engines, confirmation, draft_classes, runtime
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.releases import EngineVersion

#: The constants the tables used to name engines by (knowledge.releases).
ENGINE_CONSTANTS = ("VLLM", "SGLANG", "TOKENSPEED", "MLX_VLM", "TRTLLM", "LMDEPLOY", "LLAMACPP")


@pytest.mark.parametrize("module", [capture_engines, confirmation, draft_classes, runtime],
                         ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_the_central_tables_name_no_engine(module: object) -> None:
    text = Path(getattr(module, "__file__", "") or "").read_text(encoding="utf-8")
    named = [name for name in ENGINE_CONSTANTS if f"{name}," in text or f"({name}" in text]
    assert named == [], f"{module}: rows still filed under {named}"


@pytest.mark.parametrize("engine", REGISTRY, ids=lambda e: e.name)
def test_each_engine_table_rows_are_its_modules(engine: object) -> None:
    from pytest_eagle3.knowledge.engine import Engine

    assert isinstance(engine, Engine)
    name = engine.name
    assert [k for k in draft_classes.CLASSES if k[0] == name] == [(c.engine, c.name) for c in engine.tables.draft_classes]
    assert all(c.engine == name for c in engine.tables.draft_classes)
    assert [r for r in confirmation.ROWS if r.engine == name] == list(engine.tables.confirmation)
    assert [e for e in capture_engines.ENTRIES if e.engine == name] == list(engine.tables.capture_rows)
    assert [r.since for r in runtime.KV_TABLE.rows_of(name)] == [r.since for r in engine.tables.kv_rows]
    assert [r.since for r in draft_classes.ARCHITECTURE_READ.rows_of(name)] == [r.since for r in engine.tables.architecture_read]
    registered = {(arch, row.since) for (eng, arch), t in draft_classes.REGISTRY.items() if eng == name for row in t.rows}
    assert registered == {(arch, row.since) for arch, row in engine.tables.registry_rows}


def test_the_rows_still_answer_as_before() -> None:
    """A few answers the moved rows give (the released sources' words, not re-derived from the rows)."""
    from packaging.version import Version

    assert runtime.kv_rule(EngineVersion("vllm", Version("0.12.0"))).value == runtime.UNIFORM_TYPE_ELSE_DIVISIBLE
    assert runtime.kv_rule(EngineVersion("llamacpp", Version("9625"))).value == runtime.SEPARATE_POOL
    assert draft_classes.ARCHITECTURE_READ.at(EngineVersion("vllm", Version("0.8.5"))).value is False
    assert draft_classes.ARCHITECTURE_READ.at(EngineVersion("trtllm", Version("1.2.1"))).value is False
    assert "PEagleDraftModel" not in draft_classes.accepted("vllm", Version("0.34.0"))
    assert "PEagleDraftModel" in draft_classes.accepted("vllm", Version("0.33.0"))
    assert draft_classes.accepted("lmdeploy", Version("0.16.0")) == ("LlamaForCausalLM", "Eagle3LlamaForCausalLM")
    klass = draft_classes.draft_class("lmdeploy", Version("0.17.0"), "Eagle3DeepseekV2ForCausalLM")
    assert klass is not None and klass.model_types == ("kimi_k2",)
    assert [r.engine for r in confirmation.ROWS] == [e.name for e in REGISTRY if e.tables.confirmation]
