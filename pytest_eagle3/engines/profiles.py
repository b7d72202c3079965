"""TEMPORARY (removed before merge): the aux modules' old names while they are merged into one area module."""

from pytest_eagle3.knowledge.snapshot import Snapshot as Profile
from pytest_eagle3.knowledge.snapshot import snapshot_of as profile

__all__ = ["Profile", "profile"]
