"""Shared fixtures for the plugin's own tests: synthetic checkpoints and contract runs.

torch, safetensors and hypothesis are imported here, before any test: pytester restores
``sys.modules`` after each in-process run, and a torch first imported inside one would be imported
a second time by the next and crash; hypothesis would be re-imported by every inner run (~2 s).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis.internal.observability  # noqa: F401  (hypothesis' plugin imports it in every inner run)
import pytest
import safetensors.torch  # noqa: F401
import torch  # noqa: F401

from pytest_eagle3.synth import SynthSpec, write_checkpoint, write_target

try:  # the same for transformers, and the reference module keeps its loaded targets across runs
    import transformers.models.llama.modeling_llama  # noqa: F401
    from transformers import AutoModelForCausalLM  # noqa: F401

    import pytest_eagle3.reference.verdict  # noqa: F401
except ImportError:  # reference-acceptance tests skip, naming transformers
    pass


@dataclass
class ContractRun:
    """One pytest run of the contract suite: its outcome and the JSON report it wrote."""

    result: pytest.RunResult
    report: dict[str, Any]

    def outcomes(self, checkpoint: str | Path) -> dict[str, tuple[str, str]]:
        """contract id -> (outcome, message) for one checkpoint."""
        for ckpt in self.report["checkpoints"]:
            if ckpt["path"] == str(checkpoint):
                engine = ckpt["engines"][0]
                return {c["id"]: (c["outcome"], c["message"]) for c in engine["contracts"]}
        raise KeyError(f"{checkpoint} not in report: {[c['path'] for c in self.report['checkpoints']]}")

    def verdict(self, checkpoint: str | Path) -> str:
        for ckpt in self.report["checkpoints"]:
            if ckpt["path"] == str(checkpoint):
                return str(ckpt["engines"][0]["verdict"])
        raise KeyError(str(checkpoint))

    @property
    def output(self) -> str:
        return self.result.stdout.str()


@pytest.fixture
def run_contracts(pytester: pytest.Pytester) -> Callable[..., ContractRun]:
    """Run ``pytest --eagle3-ckpt=...`` in-process and return the outcome and JSON report."""

    def run(checkpoints: Sequence[str | Path], *args: str, target: str | Path | None = None) -> ContractRun:
        report = pytester.path / "eagle3-report.json"
        argv = [f"--eagle3-ckpt={c}" for c in checkpoints] + [f"--eagle3-report={report}", "-p", "no:cacheprovider"]
        if target is not None:
            argv.append(f"--eagle3-target={target}")
        result = pytester.runpytest(*argv, *args)
        data = json.loads(report.read_text()) if report.exists() else {}
        return ContractRun(result, data)

    return run


@pytest.fixture(scope="session")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("synth")


@pytest.fixture(scope="session")
def make_checkpoint(synth_dir: Path) -> Callable[..., Path]:
    """Write (once per session) a synthetic checkpoint for a spec; returns its directory."""
    made: dict[SynthSpec, Path] = {}

    def make(spec: SynthSpec | None = None, **changes: Any) -> Path:
        spec = spec or SynthSpec(**changes)
        if spec not in made:
            name = f"{spec.producer}-{len(made)}-" + "-".join(sorted(spec.faults) or ["good"])
            made[spec] = write_checkpoint(spec, synth_dir / name)
        return made[spec]

    return make


@pytest.fixture(scope="session")
def synth_target(synth_dir: Path) -> Path:
    """The target model every default SynthSpec draft belongs to."""
    return write_target(SynthSpec(), synth_dir / "target")
