"""pytest-eagle3: contract tests for EAGLE-3 draft checkpoints.

Importing this package is cheap; the readers and contracts import torch only when used::

    from pytest_eagle3.checkpoint import Checkpoint
    ckpt = Checkpoint.open("path/to/draft")
    ckpt.format.label, ckpt.config.aux.ids, ckpt.config.aux.convention
"""

__version__ = "0.1.0"
