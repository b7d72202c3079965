"""Honoured means used on the forward path: the engine's own draft-class pieces (vLLM: ``combine_hidden_states``,
``compute_logits``, probes/vllm_behaviour.py; mlx-vlm: the drafter's ``_prepare_target_hidden``, ``_logits``,
``_draft_to_target``, probes/mlx_behaviour.py; SGLang: the draft forward up to its first decoder layer, the final
norm, ``_compute_lm_head`` and ``hot_token_id``, probes/sglang_behaviour.py) run on the checkpoint's weights and a fixed input in the engine's tox
env, compared with the reference forward of what the producer trained (probes/behaviour.py), recorded per release in
``probes/behaviour_results.json``. The default run reads the records: each one must agree with the static reading of
the same class in the same release (knowledge/draft_class_rows.py), so a module the scan calls applied that the engine
does not apply, or the reverse, fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge import draft_class_rows
from pytest_eagle3.probes import behaviour
from pytest_eagle3.probes.run import env_variable, find_engine_python

RECORD: dict[str, Any] = json.loads(behaviour.DEFAULT_OUT.read_text())
RUNS = sorted(RECORD["runs"])
#: The class behaviour that says whether a module of the fc path is applied.
MODULE_ROWS = {"fc_norm": "fc_norm", "input_norm": "norm_before_fc"}


def test_every_case_was_recorded_in_every_run() -> None:
    assert RUNS, "no behaviour run recorded (python -m pytest_eagle3.probes.behaviour --python ENV/bin/python)"
    for key in RUNS:
        results = RECORD["runs"][key]["results"]
        assert set(results) == set(behaviour.CASES[RECORD["runs"][key]["engine"]]), key
        assert not [n for n, r in results.items() if r["combine"]["verdict"] in ("probe-error", "not run")], key


@pytest.mark.parametrize("key", RUNS)
def test_the_recorded_behaviour_agrees_with_the_static_reading(key: str) -> None:
    """A module the class's row calls read is applied by the engine's own combine_hidden_states; one it calls
    loaded-not-applied gives the output without it; the d2t mapping of compute_logits is the trained one."""
    run = RECORD["runs"][key]
    engine, version = run["engine"], Version(run["version"])
    for name, result in run["results"].items():
        klass = result["draft_class"]
        verdict = result["combine"]["verdict"]
        assert verdict != "differs", (key, name, result["combine"])
        for module in result["combine"]["modules"]:
            row = draft_class_rows.class_row(engine, version, klass, MODULE_ROWS[module])
            assert row is not None, (key, klass, module)
            expected = "applied" if row.value == draft_class_rows.READ else f"loaded-not-applied: {module}"
            assert verdict == expected, (key, name, module, row.source, result["combine"])
        assert result["logits"]["verdict"] == "as-trained", (key, name, result["logits"])


def test_each_module_case_tells_the_module_apart() -> None:
    """The comparison can fail: for every case that trains a module of the fc path (fc_norm, input_norm) the output
    without that module is measurably far from the engine's (so 'applied' is a finding, not a tie)."""
    told = []
    for key in RUNS:
        for name, result in RECORD["runs"][key]["results"].items():
            distances = result["combine"]["distances"]
            for module in result["combine"]["modules"]:
                assert distances["as-trained"] < behaviour.TOLERANCE < distances[f"without {module}"], (key, name)
                told.append((key, module))
    assert {module for _, module in told} == {"fc_norm", "input_norm"}, told


@pytest.mark.engine
@pytest.mark.parametrize("engine", sorted(behaviour.SCRIPTS))
def test_the_engine_behaves_as_recorded(tmp_path: Path, engine: str) -> None:
    """In the engine's env (tox -e vllm0320, mlxvlm0710 ...): the pieces run again and give the recorded verdicts."""
    python = find_engine_python(engine)
    if python is None:
        pytest.skip(f"no {engine} interpreter ({env_variable(engine)}, or run in the engine's tox env)")
    engine, version, results = behaviour.probe_all(python, tmp_path, engine)
    recorded = RECORD["runs"].get(f"{engine}=={version}")
    if recorded is None:
        pytest.skip(f"{engine}=={version} has no recorded behaviour run (record it with probes/behaviour.py)")
    for name, result in results.items():
        assert result["combine"]["verdict"] == recorded["results"][name]["combine"]["verdict"], name
        assert result["logits"] == recorded["results"][name]["logits"], name
