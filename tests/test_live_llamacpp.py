"""Live llama.cpp end to end, as a user runs it: ``pytest -m engine --eagle3-engine=llamacpp
--eagle3-llamacpp-server=PATH --eagle3-prompts=P`` on the demo pair, an absolute-id ``d2t`` copy of ``demo-draft``
and every draft trained for the prediction (``examples/trained-*``), all on ``demo-target``.

Needs the llama-server binary (``python .ci/build_llama_server.py``; ``--eagle3-llamacpp-server`` or
``EAGLE3_LLAMACPP_SERVER``, else the build script's cache) and the converter's imports (sentencepiece among
them); skips naming what is missing. Target and drafts are converted by the tree's own convert_hf_to_gguf.py;
one server per draft, stopped when that draft's contracts are done, plus the target alone for the greedy check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import validate_report
from tests.reference_cases import EXAMPLES
from tests.test_live_vllm import (
    RUN_MARKER,
    absolute_d2t_copy,
    assert_live_matches_prediction,
    findings,
    gap,
    leftovers,
)

pytest.importorskip("transformers", reason="the live prediction needs transformers (pip install -e '.[test]')")
pytest.importorskip("sentencepiece", reason="llama.cpp's converter imports sentencepiece: pip install -e '.[llamacpp]' "
                    "(or run tox -e llamacpp11312live)")

pytestmark = [pytest.mark.engine("llamacpp"), pytest.mark.slow]
TARGET = EXAMPLES / "demo-target"
ABSOLUTE = "demo-draft-absolute-d2t"
TRAINED = tuple(sorted(p.name for p in EXAMPLES.glob("trained-*") if (p / "config.json").is_file()))
DRAFTS = ("demo-draft", "demo-draft-sglang", ABSOLUTE, *TRAINED)
#: Served, but not as trained: the deviation engine.acceptance names for llama.cpp b11312, which reads aux ids
#: input-of from the top level only (conversion/llama.py LlamaModel.__init__), norm_before_residual there too (False).
DROPS = {
    "demo-draft-sglang": "aux layers: layer inputs [2, 4, 5]",  # nested output-of [2, 4, 5]: the defaults written
    "trained-outputof-speculators": "aux layers: layer inputs [2, 4, 5]",  # the same ids meant as outputs
    # absolute ids read as offsets: the converter's range and duplicate checks pass (content ids < 768), every
    # draft token maps to another target token
    ABSOLUTE: "d2t read as offsets",
}
#: Refused by the converter, as the plan says (the refusal is what a user meets): its own words.
REFUSED = {
    "trained-2layer": "Can not map tensor 'd2t'",  # two layers: not detected as EAGLE-3, converted as a Llama
}
#: Token-id prompts, one per line (--eagle3-prompts): the reference, the prediction and the server read the same.
PROMPTS = [[(5 + 67 * i) % 1024] for i in range(16)]


def llamacpp_server(config: pytest.Config) -> str:
    """The binary the outer run would serve with; skips (naming the build command) when there is none."""
    from pytest_eagle3.live.llamacpp import missing_reason, server_binary
    from pytest_eagle3.shell.options import settings

    given = settings(config).llamacpp_server
    binary = server_binary(given)
    if binary is None:
        pytest.skip(missing_reason(given))
    return str(binary)


@pytest.fixture(scope="module")
def live_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``pytest -m engine`` run over every draft (subprocess): its report, output and duration."""
    server = llamacpp_server(request.config)
    work = tmp_path_factory.mktemp("live-llamacpp")
    paths = {name: EXAMPLES / name for name in DRAFTS if name != ABSOLUTE}
    paths[ABSOLUTE] = absolute_d2t_copy(work / ABSOLUTE)
    prompts = work / "prompts.txt"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    report = work / "report.json"
    marker = uuid.uuid4().hex
    argv = [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA",
            *[f"--eagle3-ckpt={paths[name]}" for name in DRAFTS], f"--eagle3-target={TARGET}",
            "--eagle3-engine=llamacpp", f"--eagle3-llamacpp-server={server}", f"--eagle3-prompts={prompts}",
            f"--eagle3-report={report}"]
    began = time.monotonic()
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=2400, check=False,
                          env={**os.environ, RUN_MARKER: marker})
    seconds = time.monotonic() - began
    assert report.exists(), f"no report (rc {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    if "need" in done.stdout and "skipped" in done.stdout and " passed" not in done.stdout:
        pytest.skip(done.stdout.strip().splitlines()[-1])
    data = json.loads(report.read_text())
    validate_report(data)
    return {"report": data, "stdout": done.stdout, "seconds": seconds, "marker": marker, "paths": paths}


def contracts(run: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    """contract id -> its report entry for one draft, and ``_properties``: the figures it recorded."""
    entry = next(c for c in run["report"]["checkpoints"] if c["path"] == str(run["paths"][name]))
    engine = next(e for e in entry["engines"] if e["engine"] == "llamacpp")
    return {c["id"]: c for c in engine["contracts"]} | {"_properties": entry["properties"]}


SERVED = tuple(name for name in DRAFTS if name not in REFUSED)


@pytest.mark.parametrize("name", SERVED)
def test_live_acceptance_matches_the_prediction(live_run: dict[str, Any], name: str) -> None:
    """llama-server's own counters within 0.05 per position of engine.acceptance's prediction for b11312; a larger
    gap fails live.acceptance saying the profile is wrong (and this test with it: the figure is the claim)."""
    assert_live_matches_prediction(contracts(live_run, name))


@pytest.mark.parametrize("name", SERVED)
def test_the_drop_is_the_one_predicted(live_run: dict[str, Any], name: str) -> None:
    """A draft served as trained passes live.acceptance; one fed the wrong layers fails it, naming the deviation
    the prediction names, with the live and predicted figures on the line the user reads."""
    found = contracts(live_run, name)
    props, acceptance = found["_properties"], found["live.acceptance"]
    loss = props["live_as_trained"] - props["live_mean_acceptance_length"]
    if name not in DROPS:
        assert acceptance["outcome"] == "passed", acceptance["message"]
        assert f"reached {props['live_mean_acceptance_length']:.2f}" in acceptance["message"]
        assert f"predicted {props['live_expected_mean_acceptance_length']:.2f}" in acceptance["message"]
        assert loss <= 0.1
        return
    assert acceptance["outcome"] == "failed"
    summary = findings(acceptance).get("live-loss", "")
    assert f"llama.cpp b11312 reached {props['live_mean_acceptance_length']:.2f}, {loss:.2f} below" in summary
    assert f"the drop engine.acceptance predicted: {DROPS[name]}: -" in summary, acceptance["message"]
    assert f"live.acceptance [live-loss]: {summary}" in live_run["stdout"]  # what the user reads
    if name == ABSOLUTE:
        assert "< 1.3" in findings(acceptance)["live-low-acceptance"]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_converter_refuses_what_the_plan_refuses(live_run: dict[str, Any], name: str) -> None:
    """Nothing is served: llama.cpp's own converter refuses the draft, in its own words, and the plugin's llama.cpp
    plan refuses it too (no prediction to compare)."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.checkpoint.target import TargetModel
    from pytest_eagle3.engines.plan import REFUSED as PLAN_REFUSED
    from pytest_eagle3.engines.plan import load_plan
    from pytest_eagle3.knowledge.selection import parse_selection

    found = contracts(live_run, name)
    for contract in ("live.acceptance", "live.greedy"):
        message = found[contract]["message"]
        assert found[contract]["outcome"] == "failed", message
        assert "llama.cpp's convert_hf_to_gguf.py refused" in message and REFUSED[name] in message, message
    plan = load_plan(Checkpoint.open(live_run["paths"][name]), parse_selection("llamacpp==b11312")[0],
                     TargetModel.open(TARGET))
    assert any(issue.kind == PLAN_REFUSED for issue in plan.issues)


def test_live_run_leaves_no_process(live_run: dict[str, Any]) -> None:
    """Every server of the run (one per served draft, and the target alone) is gone; the figures as a table."""
    assert leftovers(live_run["marker"]) == []
    print("\n| draft | live per position | predicted | gap | server start s | requests s |")
    for name in SERVED:
        props = contracts(live_run, name)["_properties"]
        print(f"| {name} | {props['live_per_position']} | {props['live_expected_per_position']} | "
              f"{gap(props):.4f} | {props['live_server_start_s']} | {props['live_requests_s']} |")
    print(f"whole live run ({len(DRAFTS)} drafts): {live_run['seconds']:.1f} s")




def test_a_server_that_dies_is_reported_and_gone(request: pytest.FixtureRequest, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-server given a GGUF that is not there exits while starting: ServerDied with the command and the log
    tail; nothing carrying the marker is left running."""
    from pytest_eagle3.live.errors import ServerDied
    from pytest_eagle3.live.llamacpp import inspect_server
    from pytest_eagle3.live.server import start_server

    binary = Path(llamacpp_server(request.config))
    marker = uuid.uuid4().hex
    monkeypatch.setenv(RUN_MARKER, marker)
    with pytest.raises(ServerDied) as caught:
        start_server(inspect_server(binary), str(TARGET), None, tmp_path, timeout=120, env=dict(os.environ),
                     served=(str(tmp_path / "absent.gguf"), None))
    text = str(caught.value)
    assert text.startswith("the server died during start: the process exited with code")
    assert "absent.gguf" in text and "| " in text
    assert leftovers(marker) == []


def test_an_unusable_draft_is_served_without_drafting(request: pytest.FixtureRequest, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A draft GGUF that is not EAGLE-3 does not stop llama-server b11312: it logs the error and serves the target
    alone (tools/server/server-context.cpp L1241-1248); the run counts no drafts, so live.acceptance cannot pass."""
    from pytest_eagle3.live.llamacpp import convert_pair, converter_tree, inspect_server
    from pytest_eagle3.live.server import start_server

    binary = Path(llamacpp_server(request.config))
    tree = converter_tree(binary)
    assert tree is not None
    target = convert_pair(tree, TARGET, None, tmp_path).target
    marker = uuid.uuid4().hex
    monkeypatch.setenv(RUN_MARKER, marker)
    server = start_server(inspect_server(binary), str(TARGET), str(EXAMPLES / "demo-draft"), tmp_path, timeout=120,
                          env=dict(os.environ), served=(str(target), str(target)))
    try:
        run = server.run(PROMPTS[:2], 16)
        assert "draft model is not eagle3 (expected 3 extract layers, got 0)" in server.log_text()
    finally:
        server.stop()
    assert run.acceptance is None and all(len(t) == 16 for t in run.generation.tokens)
    assert leftovers(marker) == []
