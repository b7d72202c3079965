"""Differential runs: drawn checkpoint variants (``probes.variants``) through the real engines' loaders, compared
fact by fact with the load plan, recorded, and replayed without any engine.

The record (``differential.json`` beside this file, schema ``RECORD_SCHEMA``) holds the variants' parameters and
fingerprints and, per engine release, each variant's probe facts (``facts``: what ``compare`` reads, the long
strings interned in the run's ``strings`` table) and the differences found when it was recorded. ``replay``
rebuilds each variant's checkpoint, plans it with today's knowledge and compares again.

The facts compared, per engine kind: vLLM and SGLang every fact ``probes.compare`` checks (refusal, parameters
built and their shapes, tensors dropped, parameters left unloaded, captured layers in both runners, norm flags,
embed_tokens / lm_head sources, layers, the map); mlx-vlm and llama.cpp the refusal, and where both load the
captured layers, the layers, the norms and the fc width; every engine the fc width where the draft applies fc.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_eagle3.engines.plan import REFUSED, LoadPlan
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.probes.compare import Difference, compare, cpu_backend_limit, map_summary

RECORD_SCHEMA = "pytest-eagle3/differential/1"
DEFAULT_RECORD = Path(__file__).with_name("differential.json")
#: The probe facts a record keeps (``compare`` reads no other).
FACTS = ("outcome", "stage", "error", "draft_class", "uninitialised", "dropped", "draft_to_target", "aux_layer_ids",
         "captured_inputs_of", "aux_layer_ids_other_mode", "fc_input_width", "fc_applied", "norms", "embed_tokens",
         "lm_head", "draft_layers", "shapes")
#: Facts interned in the run's ``strings`` table (long, and shared by many variants).
INTERNED = ("error", "shapes", "norms", "uninitialised", "dropped")
ERROR_CHARS = 300
#: Refusals the plan files for the first draft step (``engines.fc``: "the first draft step fails with a shape
#: error"): a probe that stops after loading runs no step, so for it they are compared as the layers captured and
#: the fc width, not as the outcome.
STEP_REFUSALS = frozenset({"fc-width"})
#: What each probe script may say, read from its module (``mlx_loader.RUNS_FIRST_STEP``), with these defaults: it
#: reports every fact ``probes.compare`` checks, stops after loading, and its target runs (or resolves) the capture.
TRAITS = {"REPORTS_EVERY_FACT": True, "RUNS_FIRST_STEP": False, "RUNS_TARGET_FORWARD": True}


def engine_of(key: str) -> EngineVersion:
    """The engine release of a recorded run, from its key (``vllm==0.32.0``, ``llamacpp==b11312``)."""
    return parse_selection(key)[0]


def trait(engine: str, name: str) -> bool:
    """What the engine's probe script says of itself (``TRAITS``)."""
    probe = engine_named(engine).interpreter.probe
    if probe is None:
        return TRAITS[name]
    module = importlib.import_module(f"pytest_eagle3.probes.{Path(probe.script).stem}")
    return bool(getattr(module, name, TRAITS[name]))


def facts(result: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of one probe result a record keeps: the map summarised, the error cut, no machine path."""
    out = {name: result.get(name) for name in FACTS}
    if out["captured_inputs_of"]:
        # in layer order, each layer once, as the forward captures them (the vLLM, mlx-vlm and llama.cpp probes
        # report them so; SGLang's lists them as configured, and sglang 0.5.23 models/llama.py:492 captures
        # ``if i in self.layers_to_capture`` in the layer loop)
        out["captured_inputs_of"] = sorted(set(out["captured_inputs_of"]))
    out["draft_to_target"] = map_summary(out["draft_to_target"])
    error = out["error"]
    if error:
        error = re.sub(r"/\S*/site-packages/", "<site-packages>/", str(error))
        out["error"] = re.sub(r"/\S*/(v[0-9a-f]{12})\b", r"<variants>/\1", error)[:ERROR_CHARS]
    return out


def intern(run_strings: list[str], index: dict[str, int], value: Any) -> int:
    """The index of ``value``'s JSON in the run's string table (added when new)."""
    text = json.dumps(value, sort_keys=True)
    if text not in index:
        index[text] = len(run_strings)
        run_strings.append(text)
    return index[text]


def packed(fact_set: Mapping[str, Any], strings: list[str], index: dict[str, int]) -> dict[str, Any]:
    """One variant's facts with the long ones interned."""
    return {k: intern(strings, index, v) if k in INTERNED else v for k, v in fact_set.items() if v is not None}


def unpacked(row: Mapping[str, Any], strings: list[str]) -> dict[str, Any]:
    """The facts as the probe reported them (every ``FACTS`` key; absent ones None)."""
    out: dict[str, Any] = dict.fromkeys(FACTS)
    for key, value in row.items():
        out[key] = json.loads(strings[value]) if key in INTERNED else value
    return out


def _refusals(plan: LoadPlan) -> set[str]:
    """What the plan says refuses the load, for a probe that loads the draft alone (its target's capture support
    is another row's business: ``target-no-capture`` is judged on the target class)."""
    return {i.finding.code for i in plan.issues if i.kind == REFUSED} - {"target-no-capture"}


def differences(plan: LoadPlan, probe: Mapping[str, Any]) -> list[Difference]:
    """Every fact on which the plan and the engine's probe disagree (empty: they agree)."""
    rule = plan.engine.label
    if cpu_backend_limit(dict(probe)):
        return []
    if not trait(plan.engine.engine, "RUNS_FIRST_STEP") or _probe_feeds_what_fc_expects(plan):
        plan = dataclasses.replace(plan, issues=tuple(
            i for i in plan.issues if not (i.kind == REFUSED and i.finding.code in STEP_REFUSALS)))
    if trait(plan.engine.engine, "REPORTS_EVERY_FACT"):
        out = compare(plan, dict(probe))
    else:
        out = _short_compare(plan, probe, rule)
    if not out and probe["outcome"] == "loaded" and probe.get("fc_applied") and probe.get("fc_input_width"):
        width = plan.fc.expects_width
        if width is not None and width != probe["fc_input_width"]:
            out.append(Difference("fc width", repr(width), repr(probe["fc_input_width"]), rule))
    return out


def _probe_feeds_what_fc_expects(plan: LoadPlan) -> bool:
    """Whether a first-step probe's fc gets the width it expects: mlx-vlm's feeds fc one state per distinct configured
    id (``mlx_loader.probe``: no target forward runs), so an id the target never reaches fails no step there."""
    requested = plan.aux.requested
    return requested is not None and len(set(requested)) == plan.fc.expects_states


def _short_compare(plan: LoadPlan, probe: Mapping[str, Any], rule: str) -> list[Difference]:
    refused = bool(_refusals(plan))
    if refused != (probe["outcome"] == "refused"):
        why = ", ".join(sorted(_refusals(plan))) or "no refusal"
        return [Difference("outcome", f"{'refused' if refused else 'loads'} ({why})",
                           f"{probe['outcome']} ({probe.get('error') or 'no error'})", rule)]
    if refused:
        return []
    out = []
    if not trait(plan.engine.engine, "RUNS_TARGET_FORWARD"):
        captured = sorted(set(plan.aux.requested)) if plan.aux.requested is not None else None
    else:
        captured = list(plan.aux.captured) if plan.aux.captured is not None else None
    checks: list[tuple[str, Any, Any]] = [
        ("captured layer inputs", captured, probe.get("captured_inputs_of")),
        ("draft layers", plan.draft_layers, probe.get("draft_layers")),
    ]
    checks += [(f"norm flag {name}", plan.norms.get(name), value) for name, value in (probe.get("norms") or {}).items()]
    for what, predicted, seen in checks:
        if seen is not None and predicted != seen:
            out.append(Difference(what, repr(predicted), repr(seen), rule))
    return out


@dataclass
class Tally:
    """Agreement over a set of variant runs."""

    runs: int = 0
    agree: int = 0
    #: variant name -> the differences found, one line each
    disagreements: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, found: list[Difference]) -> None:
        """Count one variant run and its differences."""
        self.runs += 1
        if found:
            self.disagreements[name] = [str(d) for d in found]
        else:
            self.agree += 1


#: Plans a written draft for an engine release on its target: ``load_plan`` (the verdict pipeline's; the caller's).
Planner = Callable[[EngineVersion, Path, Path], LoadPlan]


def replay(record: Mapping[str, Any], folders: Callable[[str], tuple[Path, Path]], planner: Planner,
           names: Iterable[str] | None = None) -> dict[str, Tally]:
    """Per recorded run, the agreement of today's plans with the recorded facts (every variant, or ``names``)."""
    wanted = None if names is None else set(names)
    tallies: dict[str, Tally] = {}
    for key, run in record["runs"].items():
        engine = engine_of(key)
        tally = tallies.setdefault(key, Tally())
        for name, row in run["results"].items():
            if wanted is not None and name not in wanted:
                continue
            draft, target = folders(name)
            tally.add(name, differences(planner(engine, draft, target), unpacked(row, run["strings"])))
    return tallies


def load_record(path: Path = DEFAULT_RECORD) -> dict[str, Any]:
    """The recorded differential runs (an empty record when there is none)."""
    if not path.is_file():
        return {"schema": RECORD_SCHEMA, "variants": {}, "runs": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    keys = data.pop("param_keys", None)
    if keys is not None:  # each variant as [values in param_keys order, fingerprint]
        data["variants"] = {name: {"params": dict(zip(keys, row[:-1])), "fingerprint": row[-1]}
                            for name, row in data["variants"].items()}
    for run in data["runs"].values():
        run.update(run.pop("meta", {}))
    return data


def save_record(record: Mapping[str, Any], path: Path = DEFAULT_RECORD) -> None:
    """Write the record compactly (one line per variant and per run row)."""
    lines = ["{", f' "schema": {json.dumps(record["schema"])},']
    for key in ("seed", "hypothesis"):
        if key in record:
            lines.append(f' {json.dumps(key)}: {json.dumps(record[key])},')
    items = list(record["variants"].items())
    keys = sorted({k for _, v in items for k in v["params"]})
    lines.append(f' "param_keys": {json.dumps(keys)},')
    lines.append(' "variants": {')
    lines += [f"  {json.dumps(n)}: "
              + json.dumps([v["params"].get(k) for k in keys] + [v.get("fingerprint")], separators=(",", ":"))
              + ("," if i < len(items) - 1 else "") for i, (n, v) in enumerate(items)]
    lines.append(" },")
    lines.append(' "runs": {')
    runs = list(record["runs"].items())
    for r, (key, run) in enumerate(runs):
        head = {k: v for k, v in run.items() if k not in ("strings", "results")}
        lines.append(f"  {json.dumps(key)}: {{")
        lines.append(f'   "meta": {json.dumps(head, sort_keys=True)},')
        lines.append('   "strings": [')
        strings = run["strings"]
        lines += [f"    {json.dumps(s)}" + ("," if i < len(strings) - 1 else "") for i, s in enumerate(strings)]
        lines.append("   ],")
        lines.append('   "results": {')
        results = list(run["results"].items())
        lines += [f"    {json.dumps(n)}: {json.dumps(row, separators=(',', ':'))}" + ("," if i < len(results) - 1 else "")
                  for i, (n, row) in enumerate(results)]
        lines.append("   }")
        lines.append("  }" + ("," if r < len(runs) - 1 else ""))
    lines += [" }", "}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)  # the layout above must stay JSON
    path.write_text(text, encoding="utf-8")
