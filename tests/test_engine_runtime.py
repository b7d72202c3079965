"""KV-cache compatibility of draft and target, against vLLM's own grouping code (marker ``engine``).

The static verdict (``engines.runtime.kv_verdict`` for the installed version) must agree with
``get_kv_cache_groups`` run on the same specs in the engine's interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.engines.facts import LayerKv
from pytest_eagle3.engines.geometry import Geometry
from pytest_eagle3.engines.runtime import OK, kv_verdict
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.knowledge.runtime import kv_rule
from pytest_eagle3.probes import vllm_kv
from pytest_eagle3.probes.run import env_variable, find_engine_python

pytestmark = pytest.mark.engine

#: name -> (target layers as [kind, kv_heads, head_dim], draft [kv_heads, head_dim])
JOBS: dict[str, tuple[list[tuple[str, int, int]], tuple[int, int]]] = {
    "same-geometry": ([("full", 8, 128)] * 4, (8, 128)),
    "fewer-kv-heads": ([("full", 8, 128)] * 4, (2, 128)),
    "other-head-dim": ([("full", 8, 128)] * 4, (8, 64)),
    "hybrid-dividing": ([("full", 8, 128), ("sliding", 8, 128)] * 2, (4, 64)),
    "hybrid-not-dividing": ([("full", 8, 128), ("sliding", 8, 128)] * 2, (3, 64)),
    "mla-target": ([("mla", 1, 576)] * 4, (8, 128)),
}


def _layers(target: list[tuple[str, int, int]]) -> tuple[LayerKv, ...]:
    per_token = {(k, kv * hd * (1 if k == "mla" else 2)) for k, kv, hd in target}
    return tuple(LayerKv(k, p) for k, p in sorted(per_token))


@pytest.fixture(scope="module")
def engine_kv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    python = find_engine_python("vllm")
    if python is None:
        pytest.skip(f"no vllm interpreter: set {env_variable('vllm')}")
    tmp = tmp_path_factory.mktemp("kv")
    jobs = [{"name": n, "target": [list(t) for t in target], "draft": list(draft)} for n, (target, draft) in JOBS.items()]
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run([python, str(Path(vllm_kv.__file__)), "--jobs", str(tmp / "jobs.json"),
                           "--out", str(tmp / "out.json")], capture_output=True, text=True, timeout=600, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads((tmp / "out.json").read_text()))


@pytest.mark.parametrize("name", sorted(JOBS))
def test_static_kv_verdict_matches_the_engine(name: str, engine_kv: dict[str, object]) -> None:
    version = Version(str(engine_kv["version"]).split("+")[0])
    result = next(r for r in engine_kv["results"] if r["name"] == name)  # type: ignore[union-attr]
    target, (kv, head_dim) = JOBS[name]
    draft = Geometry(heads=kv, kv_heads=kv, head_dim=head_dim, hidden=kv * head_dim, sources={})
    verdict = kv_verdict(kv_rule(EngineVersion("vllm", version)), draft, _layers(target))
    engine_ok = result["outcome"] == "ok"
    assert (verdict.status == OK) == engine_ok, f"vLLM {version} {name}: engine {result}, plan {verdict}"
