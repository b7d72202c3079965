"""Shared fixtures for the plugin's own tests: synthetic checkpoints and contract runs.

torch, safetensors and hypothesis are imported here, before any test: pytester restores
``sys.modules`` after each in-process run, and a torch first imported inside one would be imported
a second time by the next and crash; hypothesis would be re-imported by every inner run (~2 s).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis.internal.observability  # noqa: F401  (hypothesis' plugin imports it in every inner run)
import pytest
import safetensors.torch  # noqa: F401
import torch

# The knowledge layer too: a module imported during an in-process run leaves itself as an attribute of its package
# (pytest_eagle3.knowledge) when pytester drops it from sys.modules, and the next run's ``from pytest_eagle3.knowledge
# import reach`` (knowledge/snapshot.py) takes that stale module while ``from pytest_eagle3.knowledge.reach import
# Reach`` imports a fresh one: two Reach classes, and aux_layers.firing's isinstance check fails (KeyError). The
# full suite imports it at collection; a run of a few files (tox -e producers) did not.
import pytest_eagle3.knowledge.snapshot
from pytest_eagle3.knowledge.package_index import INDEX_ENV, OFF
from pytest_eagle3.probes.cases import write_all
from pytest_eagle3.probes.run import env_variable, find_engine_python, run_probes
from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint, write_target

# One OpenMP thread per xdist worker and for every process it starts (a CLI run, a probe): `-n 2` puts two workers on
# two cores, and each torch would take both. Oversubscribed, the fast tier took 7-9 minutes on 2 cores; with one
# thread each, 4 min 41 s (docs/development.md). A serial run keeps torch's own default; OMP_NUM_THREADS, where set,
# wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(int(os.environ.setdefault("OMP_NUM_THREADS", "1")))

# No test asks the real package index (pytest_eagle3.knowledge.package_index): a version newer than every release read
# is "unknown", as offline, and the lookup's own tests point it at a local index (tests/index_server.py).
os.environ[INDEX_ENV] = OFF

try:  # the same for transformers, and the reference module keeps its loaded targets across runs
    import transformers.models.llama.modeling_llama  # noqa: F401
    from transformers import AutoModelForCausalLM  # noqa: F401

    import pytest_eagle3.reference.readings  # noqa: F401
except ImportError:  # reference-acceptance tests skip, naming transformers
    pass


@pytest.fixture(autouse=True)
def _engine_interpreters_only_for_engine_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """EAGLE3_VLLM_PYTHON / EAGLE3_SGLANG_PYTHON (tox passes them through) would make every inner contract run
    probe that engine (probe.load): only tests marked ``engine`` see them."""
    if request.node.get_closest_marker("engine") is None:
        for engine in ("vllm", "sglang"):
            monkeypatch.delenv(env_variable(engine), raising=False)


@pytest.fixture(autouse=True)
def _inner_runs_keep_whole_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """An xdist worker has COLUMNS set (the controller's width): inner runs would fit their output to it
    (``shell.terminal``). They keep whole lines, as a log does; the width tests set COLUMNS themselves.
    GNU readline (imported by pytest's debugging plugin) exports COLUMNS and LINES into the C environment
    behind ``os.environ``'s back, and a subprocess inherits that: unset it there too."""
    monkeypatch.delenv("COLUMNS", raising=False)
    for name in ("COLUMNS", "LINES"):
        if name not in os.environ:
            os.unsetenv(name)


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under GitHub Actions every inner contract run would append its verdict table to the job's summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _no_shuffle(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("PYTEST_ADDOPTS", f"{os.environ.get('PYTEST_ADDOPTS', '')} -p no:randomly".strip())


@pytest.fixture(autouse=True)
def _inner_runs_in_a_fixed_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject's ``-p no:randomly`` does not reach inner pytest runs (their own rootdir): without this,
    pytest-randomly (in the test extra) would shuffle them and their output order. A later ``-p randomly``
    (the order-independence test) still enables it."""
    _no_shuffle(monkeypatch)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester clears PYTEST_ADDOPTS when it starts: set the fixed order again for its in-process runs."""
    _no_shuffle(monkeypatch)
    return pytester


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

    def engine_entry(self, checkpoint: str | Path, engine: str) -> dict[str, Any]:
        """The report entry of one engine (``sglang==0.5.23``) for one checkpoint."""
        name, _, version = engine.partition("==")
        for ckpt in self.report["checkpoints"]:
            if ckpt["path"] == str(checkpoint):
                for entry in ckpt["engines"]:
                    if entry["engine"] == name and entry["version"] == (version or None):
                        return dict(entry)
        raise KeyError(f"{engine} for {checkpoint} not in report")

    def engine_outcomes(self, checkpoint: str | Path, engine: str) -> dict[str, tuple[str, str]]:
        entry = self.engine_entry(checkpoint, engine)
        return {c["id"]: (c["outcome"], c["message"]) for c in entry["contracts"]}

    def verdict(self, checkpoint: str | Path) -> str:
        for ckpt in self.report["checkpoints"]:
            if ckpt["path"] == str(checkpoint):
                return str(ckpt["engines"][0]["verdict"])
        raise KeyError(str(checkpoint))

    @property
    def output(self) -> str:
        return self.result.stdout.str()


def validate_report(data: dict[str, Any]) -> None:
    """Every report the tests write follows the JSON Schema shipped in the package."""
    import jsonschema

    from pytest_eagle3.verdict.report import SCHEMA_FILE

    jsonschema.validate(data, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


@pytest.fixture
def run_contracts(pytester: pytest.Pytester) -> Callable[..., ContractRun]:
    """Run ``pytest --eagle3-ckpt=...`` in-process and return the outcome and JSON report."""

    # pytester drops the modules an in-process run imported; a second run in one test would then raise a fresh
    # NotRun class that the first run's cached judgement code does not catch: keep the exceptions' module loaded
    import pytest_eagle3.verdict.assess  # noqa: F401

    def run(checkpoints: Sequence[str | Path], *args: str, target: str | Path | None = None) -> ContractRun:
        report = pytester.path / "eagle3-report.json"
        argv = [f"--eagle3-ckpt={c}" for c in checkpoints] + [f"--eagle3-report={report}", "-p", "no:cacheprovider"]
        if target is not None:
            argv.append(f"--eagle3-target={target}")
        result = pytester.runpytest(*argv, *args)
        data = json.loads(report.read_text()) if report.exists() else {}
        if data:
            validate_report(data)
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


@pytest.fixture(scope="session")
def make_variant(make_checkpoint: Callable[..., Path], synth_dir: Path) -> Callable[..., Path]:
    """A copy of a synthetic checkpoint with config edits, tensors dropped, renamed or replaced."""
    from safetensors.torch import load_file, save_file

    counter = iter(range(10_000))

    def make(spec: SynthSpec, *, config: Callable[[dict[str, Any]], None] | None = None,
             drop: Sequence[str] = (), rename: Callable[[str], str] | None = None,
             replace: dict[str, torch.Tensor] | None = None, name: str = "variant") -> Path:
        source = make_checkpoint(spec)
        out = synth_dir / f"{name}-{next(counter)}"
        out.mkdir()
        data = json.loads((source / "config.json").read_text())
        if config is not None:
            config(data)
        (out / "config.json").write_text(json.dumps(data, indent=2))
        binary = not (source / "model.safetensors").exists()
        if binary:
            tensors = torch.load(source / "pytorch_model.bin", weights_only=True)
        else:
            tensors = load_file(str(source / "model.safetensors"))
        tensors = {(rename(k) if rename else k): v for k, v in tensors.items() if k not in drop}
        tensors.update(replace or {})
        if binary:
            torch.save(tensors, out / "pytorch_model.bin")
        else:
            save_file(tensors, str(out / "model.safetensors"))
        return out

    return make


def config_variant(draft: Path, folder: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of a real ``draft`` (its weights linked, never modified) whose config.json ``edit`` changed."""
    config = json.loads((draft / "config.json").read_text())
    edit(config)
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").symlink_to(draft / "model.safetensors")
    return folder


@pytest.fixture(scope="session")
def make_target(synth_dir: Path) -> Callable[..., Path]:
    """A target config (and weights for the default spec) with a given layer count and architecture."""
    counter = iter(range(10_000))

    def make(layers: int = 8, architecture: str = "LlamaForCausalLM", with_weights: bool = False) -> Path:
        out = write_target(SynthSpec(target_layers=layers), synth_dir / f"target-{next(counter)}", with_weights)
        data = json.loads((out / "config.json").read_text())
        data["architectures"] = [architecture]
        (out / "config.json").write_text(json.dumps(data, indent=2))
        return out

    return make


# -- probes of the real engines (shared by the probe tests and the plan-vs-engine tests) --------
ProbeResults = dict[str, dict[str, Any]]
HOW_TO = {"vllm": "tox -e vllm0320", "sglang": "tox -e sglang0523"}


@pytest.fixture(scope="session")
def probe_cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    return write_all(tmp_path_factory.mktemp("probe-cases"))


@pytest.fixture(scope="session")
def engine_results(probe_cases: tuple[Path, dict[str, Path]]) -> Callable[[str], ProbeResults]:
    """engine -> {case name: probe result}; one probe process per engine and session."""
    cache: dict[str, ProbeResults] = {}
    target, drafts = probe_cases

    def get(engine: str) -> ProbeResults:
        if engine not in cache:
            python = find_engine_python(engine)
            if python is None:
                pytest.skip(f"no {engine} interpreter: set {env_variable(engine)} or run {HOW_TO[engine]}")
            results = run_probes(engine, python, [(d, target) for d in drafts.values()], timeout=240)
            cache[engine] = dict(zip(drafts, results))
        return cache[engine]

    return get


@contextlib.contextmanager
def counted_forwards() -> Iterator[list[int]]:
    """Every call of a Llama target's transformers model (``LlamaForCausalLM.forward``: the demo target's), counted."""
    pytest.importorskip("transformers", reason="the target runs with transformers (pip install -e '.[target]')")
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    calls: list[int] = []
    real = LlamaForCausalLM.forward

    @functools.wraps(real)  # its signature kept: reference.acceptance reads the cache argument's name from it
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LlamaForCausalLM, "forward", counted)
        yield calls


@pytest.fixture(scope="session")
def capture_forwards(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The target's forward passes in ``python -m pytest_eagle3 capture examples/demo-target`` (built-in prompts)."""
    from pytest_eagle3.shell.cli import main

    out = tmp_path_factory.mktemp("capture") / "dump"
    target = Path(__file__).resolve().parent.parent / "examples" / "demo-target"
    with counted_forwards() as calls, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        assert main(["capture", str(target), str(out)]) == 0
    return len(calls)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the unit tier's tests ``unit`` (``tests/tiers.py``), for ``pytest -m unit``."""
    from tests.tiers import mark_unit

    mark_unit(items)
