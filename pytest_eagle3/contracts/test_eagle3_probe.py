"""The installed engine as ground truth (``probe.load``): its own loader on this checkpoint, next to the static plan.

Runs when ``--eagle3-vllm-python`` / ``--eagle3-sglang-python`` (or ``EAGLE3_VLLM_PYTHON`` /
``EAGLE3_SGLANG_PYTHON``) name an interpreter: one test per checkpoint and engine, reported under the
version installed there (``demo-draft@vllm==0.32.0``). Without one it is not collected (a run that
did not ask for the real loader is not a partial verdict), and no process is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.findings import check
from pytest_eagle3.shell.contract import (
    Eagle3Result,
    contract_test,
    require_config,
    require_draft,
    require_tensors,
    unknown,
)
from pytest_eagle3.shell.fixtures import InstalledEngine, probe_result
from pytest_eagle3.shell.options import python_option, settings
from pytest_eagle3.shell.verdicts import pipeline
from pytest_eagle3.verdict import TargetSide


def _target_dir(request: pytest.FixtureRequest, label: str) -> str:
    target = settings(request.config).target
    model = pipeline(request.config).target_model(target) if target else None
    if model is None or model.problem is not None or model.weights_dir is None or Path(target or "").is_file():
        pytest.skip(f"{label}'s loader builds the target too: pass --eagle3-target=DIR (the target model's "
                    "directory, with its weights)")
    return str(model.weights_dir)


class TestEagle3Probe:
    """``probe.load``: the installed engine's own loader on the draft."""
    @contract_test
    def test_probe_load(self, request: pytest.FixtureRequest, eagle3_checkpoint: Checkpoint,
                        eagle3_installed_engine: InstalledEngine, eagle3_result: Eagle3Result) -> None:
        from pytest_eagle3.knowledge.releases import DISPLAY, in_known_range
        from pytest_eagle3.probes.probe_verdict import PROBE_ERROR, UNPLANNED, judge_probe

        installed, ckpt = eagle3_installed_engine, eagle3_checkpoint
        option = python_option(installed.engine)
        name = DISPLAY[installed.engine]
        if installed.version is None:
            flag = option.flag if option is not None else "an engine option"
            pytest.skip(f"{installed.engine} is not installed for {installed.python}: pass {flag}=PYTHON "
                        f"of a venv with {name}")
        require_tensors(ckpt)
        require_config(ckpt)
        require_draft(ckpt)
        engine = installed.row
        target = _target_dir(request, engine.label)
        # load-time facts: the pipeline's judge step (readings joined), before any simulation settles losses
        plan = (pipeline(request.config).judge(ckpt, engine, TargetSide(target))
                if in_known_range(engine.engine, engine.version) else None)
        probe = probe_result(request.config, ckpt, installed, target)
        reduced = (ckpt.config.draft_vocab_size or 0) < (ckpt.config.vocab_size or 0)
        verdict = judge_probe(probe, engine, plan, reduced_vocab=reduced, python=installed.python)
        eagle3_result.probe(verdict)
        if verdict.status in (PROBE_ERROR, UNPLANNED) and not verdict.failed:
            unknown(verdict.findings[0], settings(request.config).unknown_fails, eagle3_result)
        check(list(verdict.findings))
        eagle3_result.passed(verdict.message)
