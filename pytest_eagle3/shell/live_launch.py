"""The live launch as ``live.launch`` shows it: the command ``eagle3_server`` would run, and the findings on it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_eagle3.shell.live_fixtures import engine_install, live_device
from pytest_eagle3.shell.options import settings
from pytest_eagle3.shell.verdicts import pipeline, target_side

if TYPE_CHECKING:
    from pytest_eagle3.knowledge.releases import EngineVersion


def launch_preview(request: pytest.FixtureRequest, ckpt: Any, engine: EngineVersion) -> tuple[list[str], list[Any]]:
    """The command ``eagle3_server`` would run (port 0 as a placeholder) and the launch findings for it."""
    from pytest_eagle3.live.cpu_serving import cpu_serving_finding
    from pytest_eagle3.live.launch import LaunchRequest, args_for, build_command, parse_engine_args
    from pytest_eagle3.live.launch_checks import (
        algorithm_findings,
        draft_path_findings,
        runtime_mode_findings,
    )
    from pytest_eagle3.live.server import has_tokenizer

    config = request.config
    target = settings(config).target or ""
    install = engine_install(config, engine.engine)
    extra = args_for(engine.engine, parse_engine_args(settings(config).engine_args))
    model, draft = target, str(ckpt.path)
    if engine.kind.runs_own_loop:  # no server: the loop's command, no launch flags to check
        from pytest_eagle3.live.generate_loop import loop_command

        prompts = settings(config).prompts or "PROMPTS"
        argv = loop_command(install.python, model, draft, prompts, settings(config).steps,
                            settings(config).continuation, live_device(config))
        return argv, []
    if engine.kind.serving.converts_checkpoint:  # what the server is given: the GGUFs the converter writes of them
        model, draft = f"{Path(target).name}.gguf", f"{Path(draft).name}.gguf"
    argv = list(build_command(LaunchRequest(
        engine.engine, engine.version, install.python, model, draft, 0, steps=settings(config).steps,
        has_vllm_dist=install.has_vllm_dist, skip_tokenizer=not has_tokenizer(target), extra_args=extra,
        device=live_device(config))).argv)
    findings = algorithm_findings(engine.engine, argv, ckpt.config.architectures, ckpt.format.producer)
    blocker = cpu_serving_finding(install)
    findings += [blocker] if blocker is not None else []
    findings += draft_path_findings(engine.engine, argv)
    if install.known:
        plan = pipeline(config).judge(ckpt, engine, target_side(config))
        findings += runtime_mode_findings(plan, argv, dict(os.environ), live_device(config))
    return argv, findings
