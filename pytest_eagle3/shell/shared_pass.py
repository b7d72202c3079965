"""Under pytest-xdist: the verdicts, and the target's side, computed once, on the controller, for every worker.

The controller computes every judgement and verdict of the run (each checkpoint, the ``any`` row and each
engine version) before the workers start, and writes them to a file of the run's temporary directory; each worker's
pipeline adopts them (``Pipeline.adopt``), so ``-n 2`` does the judging once, as a serial run does, and the
workers only assert on it. What the file does not hold (a live engine's own version, a user's own fixture use)
a worker computes itself, from the target's pass below.

A serial run passes the target once (``reference.targets.passes``); each xdist worker would pass it again. The
controller writes the pass as a dump of the target's side (``capture_transformers``, every layer's state, at the
longest length the run asks), in a folder of the run's temporary directory, and each worker's pipeline opens it in
place of running the target, labelled as its own pass would be (``TargetPasses.shared``): the report is the
serial one. Nothing is shared when no target with local weights is given, a dump is given, or transformers is
missing (each contract then says why, as in a serial run).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

#: The worker input key naming the run's shared target pass.
SHARED_PASS_INPUT = "eagle3_shared_pass"
#: The worker input key naming the file of the run's verdicts, computed on the controller.
SHARED_VERDICTS_INPUT = "eagle3_shared_verdicts"
#: How long a worker waits for the controller's verdicts before judging for itself.
WAIT_S = 3600.0

if TYPE_CHECKING:
    from pytest_eagle3.verdict import Pipeline
    from pytest_eagle3.verdict.settings import RunSettings


def shared_verdicts(settings: RunSettings, config: pytest.Config, pipeline: Pipeline) -> str | None:
    """The file every worker reads the run's judgements and verdicts from, computed by ``pipeline`` (the
    controller's) in a thread of its own while the workers start; None when there is nothing to share. The file
    appears whole (renamed into place), or its ``.failed`` marker does."""
    import shutil
    import tempfile
    import threading

    if not settings.checkpoints:
        return None
    folder = tempfile.mkdtemp(prefix="eagle3-shared-verdicts-")
    out = Path(folder) / "verdicts.pickle"
    worker = threading.Thread(target=_compute, args=(settings, pipeline, out), name="eagle3-verdicts", daemon=True)

    def cleanup() -> None:
        worker.join()
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(cleanup)
    worker.start()
    return str(out)


def _compute(settings: RunSettings, pipeline: Pipeline, out: Path) -> None:
    """Every judgement and verdict of the run, written to ``out`` (or ``out.failed`` when they cannot be)."""
    import pickle

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.verdict import TargetSide
    from pytest_eagle3.verdict.rows import judgement

    side = TargetSide(settings.target, settings.hidden_states)
    try:
        for path in settings.checkpoints:
            ckpt = Checkpoint.open(path)
            if ckpt.problems or not ckpt.tensors or ckpt.config_raw is None:
                continue  # the workers' contracts skip or fail on the files, as a serial run's do
            for engine in (None, *settings.engines):
                judgement(pipeline, ckpt, engine, side)
            for engine in settings.engines:
                pipeline.forecast(ckpt, engine, side)
        partial = out.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(pipeline.computed()))
        partial.replace(out)
    except Exception:
        out.with_suffix(".failed").touch()


def adopt_verdicts(config: pytest.Config, pipeline: Pipeline) -> bool:
    """On a worker: the controller's verdicts, if it wrote them, taken as this worker's own."""
    import pickle

    workerinput = getattr(config, "workerinput", None)
    path = workerinput.get(SHARED_VERDICTS_INPUT) if isinstance(workerinput, dict) else None
    if not path:
        return False
    import time

    failed = Path(path).with_suffix(".failed")
    deadline = time.monotonic() + WAIT_S
    while not Path(path).exists():  # the controller is still computing them
        if failed.exists() or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    try:
        pipeline.adopt(pickle.loads(Path(path).read_bytes()))
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return False
    return True


def shared_pass(settings: RunSettings, config: pytest.Config) -> str | None:
    """The dump every worker reads (written now), or None when the run has no target pass to share."""
    from pytest_eagle3.checkpoint import TargetModel

    if settings.target is None or settings.hidden_states is not None or not settings.checkpoints:
        return None
    model = TargetModel.open(settings.target)
    if model.problem is not None or model.weights_dir is None or Path(settings.target).is_file():
        return None
    if importlib.util.find_spec("transformers") is None:
        return None
    import shutil
    import tempfile

    from pytest_eagle3.progress import step, tick
    from pytest_eagle3.reference.acceptance import ReferenceInputError
    from pytest_eagle3.reference.targets.capture import capture_transformers
    from pytest_eagle3.reference.targets.source import TargetSourceError

    folder = tempfile.mkdtemp(prefix="eagle3-shared-pass-")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    out = Path(folder) / "dump"
    try:
        with step("the target's pass, once for every worker"):
            manifest = capture_transformers(str(model.weights_dir), out, settings.prompts,
                                            settings.continuation + settings.steps, "all", settings.device,
                                            lambda done, total: tick(f"{done}/{total} prompts"))
    except (TargetSourceError, ReferenceInputError, OSError, RuntimeError, ValueError):
        return None  # each worker passes the target itself and says what fails, as a serial run would
    return str(Path(manifest).parent)


def share(config: pytest.Config, passes: object) -> None:
    """On a worker: the controller's dump, if it wrote one, read in place of this worker's own target pass."""
    from pytest_eagle3.checkpoint import TargetModel
    from pytest_eagle3.reference.targets.passes import TargetPasses
    from pytest_eagle3.shell.options import settings

    workerinput = getattr(config, "workerinput", None)
    dump = workerinput.get(SHARED_PASS_INPUT) if isinstance(workerinput, dict) else None
    target = settings(config).target
    if dump and target and isinstance(passes, TargetPasses):
        weights = TargetModel.open(target).weights_dir
        if weights is not None:
            passes.shared[str(weights)] = str(dump)
