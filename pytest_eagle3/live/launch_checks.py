"""Launch contracts: pure functions of the command line (and the load plan) that return findings.

Checked before any process starts: the speculative algorithm matches an EAGLE-3 draft, a draft
path is given and is a checkpoint, and the runtime mode the launch selects (CUDA graphs, vLLM's
model runner) feeds the draft the layers it was trained on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from pytest_eagle3.findings import Evidence, Finding
from pytest_eagle3.knowledge.engines import engine_named
from pytest_eagle3.knowledge.launch import VLLM_MODE, OtherMode
from pytest_eagle3.knowledge.releases import VLLM

if TYPE_CHECKING:
    from pytest_eagle3.engines.plan import LoadPlan

SGLANG_EAGLE3_SOURCE = (
    "sglang speculative/spec_info.py: EAGLE and EAGLE3 are separate algorithms; an EAGLE-3 draft under "
    "EAGLE gets one hidden state, so models/llama_eagle3.py skips fc (width check) and accepts ~1.0 "
    "(sgl-project/sglang PR #21272)")
SGLANG_NO_DRAFT_SOURCE = ("sglang: without --speculative-draft-model-path the target config is used as the "
                          "draft (0.5.20 spec_aux_hidden_state.py) and the launch loads the target as the draft "
                          "(sgl-project/sglang#36528)")
VLLM_METHOD_SOURCE = "vllm config/speculative.py SpeculativeConfig.method: 'eagle3' selects the EAGLE-3 proposer"
DRAFT_FLAGS = ("--speculative-draft-model-path", "--speculative-draft-model")


def flag_value(argv: Sequence[str], names: Sequence[str]) -> str | None:
    """The last value given to any of ``names`` (``--flag VALUE`` or ``--flag=VALUE``), as argparse keeps it."""
    value = None
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif arg.startswith(name + "="):
                value = arg[len(name) + 1:]
    return value


def is_eagle3_draft(architectures: Sequence[str], producer_hint: str = "") -> bool:
    """Whether the architectures (or the producer) name an EAGLE-3 draft."""
    return any("eagle3" in a.lower() for a in architectures) or "eagle3" in producer_hint.lower()


def algorithm_findings(engine: str, argv: Sequence[str], architectures: Sequence[str],
                       producer_hint: str = "") -> list[Finding]:
    """The speculative algorithm named on the command line is EAGLE-3 for an EAGLE-3 draft."""
    if not is_eagle3_draft(architectures, producer_hint):
        return []
    if engine_named(engine).live.speculative_flags == "--speculative-algorithm":
        algorithm = flag_value(argv, ("--speculative-algorithm",))
        if algorithm is None or algorithm.upper() == "EAGLE3":
            return []
        return [Finding(
            "launch-algorithm",
            f"SGLang runs this EAGLE-3 draft as {algorithm}: fc is skipped and acceptance will be ~1.0",
            (Evidence("--speculative-algorithm", algorithm, "EAGLE3"),),
            "launch with --speculative-algorithm EAGLE3", (f"rule: {SGLANG_EAGLE3_SOURCE}",))]
    method = _vllm_method(argv)
    if method is None or method == "eagle3":
        return []
    return [Finding(
        "launch-algorithm", f"vLLM runs this EAGLE-3 draft with method {method!r}, not as EAGLE-3",
        (Evidence("--speculative-config method", method, "eagle3"),),
        'set "method": "eagle3" in --speculative-config', (f"rule: {VLLM_METHOD_SOURCE}",))]


def _vllm_config(argv: Sequence[str]) -> dict[str, object] | None:
    text = flag_value(argv, ("--speculative-config", "-sc"))
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _vllm_method(argv: Sequence[str]) -> str | None:
    config = _vllm_config(argv)
    return None if config is None else str(config.get("method", "")) or None


def draft_path_findings(engine: str, argv: Sequence[str]) -> list[Finding]:
    """A draft path is given, and it is a directory with a config.json."""
    if engine_named(engine).live.speculative_flags == "--speculative-algorithm":
        path = flag_value(argv, DRAFT_FLAGS)
        algorithm = flag_value(argv, ("--speculative-algorithm",))
        if algorithm is not None and path is None:
            return [Finding(
                "launch-no-draft", f"SGLang is launched with --speculative-algorithm {algorithm} but no draft path: "
                "it loads the target as the draft", (Evidence("--speculative-draft-model-path", "absent",
                                                              "the draft checkpoint directory"),),
                "add --speculative-draft-model-path DRAFT", (f"rule: {SGLANG_NO_DRAFT_SOURCE}",))]
    else:
        config = _vllm_config(argv)
        path = None if config is None else (str(config["model"]) if config.get("model") else None)
        if config is not None and path is None:
            return [Finding(
                "launch-no-draft", "vLLM is launched with --speculative-config but no draft model",
                (Evidence("--speculative-config model", "absent", "the draft checkpoint directory"),),
                'add "model": DRAFT to --speculative-config', ("rule: vllm config/speculative.py SpeculativeConfig.model",))]
    if path is not None and not (Path(path) / "config.json").is_file():
        return [missing_draft_finding(path)]
    return []


def missing_draft_finding(path: str) -> Finding:
    """The finding for a draft path that is missing or has no config.json."""
    what = "does not exist" if not Path(path).exists() else "has no config.json"
    return Finding("launch-draft-path", f"the draft path {path} {what}: the engine cannot load a draft from it",
                   (Evidence("draft path", f"{path} ({what})", "a checkpoint directory with config.json"),),
                   "pass the directory that holds the draft's config.json and weights")


def vllm_uses_other_mode(version: Version, device: str, env: Mapping[str, str]) -> bool | None:
    """Whether this vLLM launch runs the profile's other runtime mode; None while there is one mode."""
    flag = env.get("VLLM_USE_V2_MODEL_RUNNER", "").strip().lower()
    row = VLLM_MODE.find(VLLM, version)
    if row is None or row.value == OtherMode.NEVER:
        return None
    if row.value == OtherMode.OPT_IN:
        return flag in ("1", "true")
    return device == "cpu" or flag in ("0", "false")


def sglang_cuda_graph_on(argv: Sequence[str], device: str) -> bool:
    """CUDA-graph decode is on unless disabled or not on CUDA (server_args.py --disable-cuda-graph; 0.5.23
    also --cuda-graph-backend-decode=disabled)."""
    if device != "cuda" or "--disable-cuda-graph" in argv:
        return False
    return (flag_value(argv, ("--cuda-graph-backend-decode",)) or "").lower() != "disabled"


def runtime_mode_findings(plan: LoadPlan, argv: Sequence[str], env: Mapping[str, str], device: str) -> list[Finding]:
    """The runtime mode this launch selects feeds the layers the draft was trained on."""
    from pytest_eagle3.knowledge.snapshot import snapshot_of

    aux, snapshot = plan.aux, snapshot_of(plan.engine)
    if aux.trained is None:
        return []
    fed, how = None, ""
    switch = snapshot.kind.live.runtime_mode_switch
    if switch == "cuda-graph" and aux.graph_mode is not None and sglang_cuda_graph_on(argv, device):
        fed, how = aux.graph_mode, f"CUDA-graph decode ({snapshot.source('graph_mode_default_layers')})"
    elif switch == "model-runner" and aux.other_mode is not None and vllm_uses_other_mode(snapshot.version, device, env):
        rule = VLLM_MODE.at(snapshot.target)
        fed, how = aux.other_mode, f"the other model runner ({rule.value}; {rule.source})"
    if fed is None or tuple(fed) == tuple(aux.trained) or tuple(fed) == tuple(aux.captured or ()):
        return []  # the mode changes nothing, or the default mode is wrong too (the engine.* contracts say so)
    return [Finding(
        "launch-runtime-mode",
        f"{snapshot.label} in this launch feeds the draft layer inputs {list(fed)}, trained on {list(aux.trained)}: "
        "acceptance will drop",
        (Evidence("captured layer inputs", str(list(fed)), str(list(aux.trained))),),
        "disable the mode (SGLang: --disable-cuda-graph; vLLM: set the ids in the field this runner reads)",
        (f"mode: {how}",))]
