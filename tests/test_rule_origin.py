"""Every rule in the engine it judges: a FAIL finding for one engine rests only on rows read in that engine's own
released source. A row borrowed from another engine (``Row.origin``: a fork's parent) is a reading: a finding that
cites it is not judged (``engines.plan.own_rules``), with whose rule it is and what in this engine's source decides.

The sweep runs every engine and release in the registry over the bundled example drafts and synthetic drafts of
every producer layout (dtype pairs and a short context among them), and fails on any FAIL finding that cites a
borrowed row.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.issue import REFUSED, Issue
from pytest_eagle3.engines.plan import BORROWED, load_plan, own_rules
from pytest_eagle3.engines.plan_types import Filed
from pytest_eagle3.findings import Finding
from pytest_eagle3.knowledge.behaviours import RULES, TABLES
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.releases import RELEASES, EngineVersion
from pytest_eagle3.knowledge.snapshot import BehaviourName, Snapshot, snapshot_of
from pytest_eagle3.knowledge.table import Row, TableError
from pytest_eagle3.producers.names import SPECFORGE
from pytest_eagle3.testing.layouts import PRODUCERS
from pytest_eagle3.testing.spec import SynthSpec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: Every engine version the registry knows: each engine's every release read.
EVERY_RELEASE = tuple(EngineVersion(engine, Version(release)) for engine, releases in RELEASES.items()
                      for release in releases)


def _borrowed_labels(target: EngineVersion) -> dict[str, Row[Any]]:
    """The source label of every behaviour row in force at ``target`` that was read in another engine -> the row."""
    out: dict[str, Row[Any]] = {}
    for table in TABLES.values():
        row = table.find(target.engine, target.version)
        if row is not None and row.borrowed:
            out[table.label(row)] = row
    return out


def _failing_on_borrowed(plan_issues: tuple[Issue, ...], target: EngineVersion) -> list[str]:
    """Each FAIL finding (refusal or loss) that cites a borrowed row, in words."""
    labels = _borrowed_labels(target)
    out = []
    for issue in plan_issues:
        text = "\n".join((issue.finding.summary, *issue.finding.details))
        out += [f"{target.spec} [{issue.finding.code}] rests on a row read in {row.read_in}: {label}"
                for label, row in labels.items() if label in text]
    return out


def _example_pairs() -> Iterator[tuple[Path, Path]]:
    for draft in sorted(EXAMPLES.iterdir()):
        config = draft / "config.json"
        if not config.is_file() or "target" in draft.name:
            continue
        target = EXAMPLES / ("qwen35-target" if draft.name.startswith("qwen35") else "demo-target")
        yield draft, target


def _sweep(draft: Path, target: Path) -> list[str]:
    ckpt, model = Checkpoint.open(draft), TargetModel.open(target)
    found: list[str] = []
    for version in EVERY_RELEASE:
        found += _failing_on_borrowed(load_plan(ckpt, version, model).issues, version)
    return found


# ---------------------------------------------------------------- the rows
def test_a_row_names_another_known_engine_as_its_origin() -> None:
    with pytest.raises(TableError, match="is not another known engine"):
        Row("tokenspeed", "0.1.0", "x", "a source line long enough", origin="tokenspeed")
    with pytest.raises(TableError, match="is not another known engine"):
        Row("tokenspeed", "0.1.0", "x", "a source line long enough", origin="no-such-engine")
    row = Row("tokenspeed", "0.1.0", "x", "a source line long enough", origin="sglang")
    assert row.borrowed and row.read_in == "sglang"
    assert not Row("sglang", "0.4.4.post2", "x", "a source line long enough").borrowed


def test_a_behaviour_row_from_another_engine_is_its_parents_at_a_release_it_pins() -> None:
    """Every engine's behaviour rows are read in its own released source (TokenSpeed's in its wheels, not SGLang's),
    but for a plugin's rules that its parent's code decides (vLLM-Ascend and tpu-inference hand the draft to the vLLM
    they pin): those are carried over, naming the parent (the engine's lineage), the parent's release they run
    (``Row.pinned``), and the place in the plugin's own source that hands them over. No row is borrowed by analogy."""
    from_parent = [(name, row) for name, row in RULES if row.origin is not None]
    assert {row.engine for _, row in from_parent} <= {"tpu-inference", "vllm-ascend"}
    assert [(name, row.engine, row.since) for name, row in from_parent
            if row.origin != engine_named(row.engine).lineage or not row.cites or row.pinned is None
            or row.pinned not in row.source] == []
    assert [(name, row.engine, row.since) for name, row in RULES if row.borrowed] == []


# ---------------------------------------------------------------- the downgrade
def _borrowing(monkeypatch: pytest.MonkeyPatch, name: BehaviourName, value: Any, version: str = "0.1.1") -> Snapshot:
    """TokenSpeed's snapshot at ``version`` with its ``name`` row replaced by SGLang's rule ``value`` (origin SGLang),
    as a module would write a rule it did not read in TokenSpeed's own source."""
    target = EngineVersion("tokenspeed", Version(version))
    snapshot = snapshot_of(target)  # cached before the table changes: other tests read the real one
    table = TABLES[name]
    own = table.at(target)
    borrowed = dataclasses.replace(own, value=value, origin="sglang", source="as SGLang: its rule, read in sglang")
    monkeypatch.setitem(TABLES, name, dataclasses.replace(table, rows=tuple(borrowed if r is own else r
                                                                           for r in table.rows)))
    behaviours = dataclasses.replace(snapshot.behaviours, **{name: value})
    return dataclasses.replace(snapshot, behaviours=behaviours, rows={**snapshot.rows, name: borrowed})


def test_a_refusal_citing_a_borrowed_row_is_not_judged_and_says_whose_rule_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """own_rules over a refusal that cites a row borrowed from SGLang: not judged, never a failure."""
    snapshot = _borrowing(monkeypatch, "layer_bias", "o_proj")
    refusal = Finding("example", f"{snapshot.label} refuses the draft", fix="serve otherwise",
                      details=(f"rule: {snapshot.source('layer_bias')}",))
    own = Finding("own", f"{snapshot.label} refuses the draft", details=(f"rule: {snapshot.source('multi_layer')}",))
    filed = own_rules(Filed((Issue("runtime", REFUSED, refusal), Issue("layers", REFUSED, own))), snapshot)
    assert [i.finding.code for i in filed.issues] == ["own"]
    ((area, finding),) = filed.unknown
    assert area == "runtime" and finding.code == BORROWED
    assert finding.summary == ("not judged: TokenSpeed 0.1.1 refuses the draft; this rests on SGLang's rule "
                               "(layer_bias), not read in TokenSpeed's own source")
    cites = ", ".join(sorted(str(c) for c in snapshot.row("layer_bias").cites))
    assert finding.fix == (f"what decides: TokenSpeed's own released source for layer_bias ({cites}); if it does as "
                           "SGLang does: serve otherwise")
    assert [outcome for _, outcome in finding.readings] == ["fails", "passes"]


def test_sglangs_dtype_refusal_borrowed_by_tokenspeed_leaves_the_row_not_judged(
        monkeypatch: pytest.MonkeyPatch, make_variant: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    """The false FAIL this prevents: SGLang's draft-dtype rule applied to TokenSpeed failed a bf16 draft beside a fp16
    target; borrowed, it is not judged (and TokenSpeed's own 0.1.1 rule gives the draft the target's dtype)."""
    path = make_variant(SynthSpec(producer=SPECFORGE), config=lambda config: config.update(torch_dtype="bfloat16"),
                        name="origin-dtype")
    target = make_target()
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "torch_dtype": "float16"}))
    ckpt, model = Checkpoint.open(path), TargetModel.open(target)
    own = load_plan(ckpt, EngineVersion("tokenspeed", Version("0.1.1")), model)
    assert not own.issues_for("runtime") and "runtime" not in own.unknown
    assert "serving: TokenSpeed 0.1.1 runs the draft in the target's dtype: its bfloat16 weights are cast" in own.notes
    plan = load_plan(ckpt, _borrowing(monkeypatch, "draft_dtype", "draft-config"), model)
    assert not plan.issues_for("runtime")
    finding = plan.unknown["runtime"]
    assert finding.code == BORROWED
    assert finding.summary.startswith("not judged: TokenSpeed 0.1.1 under --dtype auto (the default) runs the draft "
                                      "in bfloat16")
    assert finding.summary.endswith("this rests on SGLang's rule (draft_dtype), not read in TokenSpeed's own source")


# ---------------------------------------------------------------- the sweep
@pytest.mark.parametrize(("draft", "target"), list(_example_pairs()), ids=lambda p: p.name)
def test_no_fail_on_an_example_rests_on_another_engines_row(draft: Path, target: Path) -> None:
    assert _sweep(draft, target) == []


SYNTH_CASES: dict[str, tuple[SynthSpec, dict[str, Any], dict[str, Any]]] = {
    **{f"{producer}": (SynthSpec(producer=producer), {}, {}) for producer in PRODUCERS},
    "bf16-draft-fp16-target": (SynthSpec(producer=SPECFORGE), {"torch_dtype": "bfloat16"}, {"torch_dtype": "float16"}),
    "fp16-draft-bf16-target": (SynthSpec(producer=SPECFORGE), {"torch_dtype": "float16"}, {"torch_dtype": "bfloat16"}),
    "short-context": (SynthSpec(producer=SPECFORGE), {"max_position_embeddings": 64}, {"max_position_embeddings": 4096}),
}


@pytest.mark.parametrize("case", list(SYNTH_CASES))
def test_no_fail_on_a_synthetic_draft_rests_on_another_engines_row(
        case: str, make_variant: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    spec, draft_edit, target_edit = SYNTH_CASES[case]
    path = make_variant(spec, config=lambda config: config.update(draft_edit), name=f"origin-{case}")
    target = make_target()
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, **target_edit}))
    assert _sweep(path, target) == []
