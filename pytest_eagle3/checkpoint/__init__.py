"""The draft and the target as read from disk: safetensors or ``.bin`` files, sharded or not, never modified."""

from pytest_eagle3.checkpoint.draft import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError, TensorEntry

__all__ = ["Checkpoint", "CheckpointReadError", "TargetModel", "TensorEntry"]
