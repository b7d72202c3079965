"""Config and format contracts: readable files, a parseable config, a known producer layout, tensor shapes that
agree with the config, and (with --eagle3-target) agreement with the target.

Each contract asserts on the run's judgement (``verdict.assess_checkpoint`` judges it, once, for every command).
"""

from __future__ import annotations

from pytest_eagle3.shell.contract import contract_class

TestEagle3Checkpoint = contract_class(
    "TestEagle3Checkpoint", "The checkpoint's own contracts: its files, format, config and aux ids, against no engine.")
