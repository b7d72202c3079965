"""Under pytest-xdist: the target's side computed once, on the controller, for every worker.

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

if TYPE_CHECKING:
    from pytest_eagle3.verdict.settings import RunSettings


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
