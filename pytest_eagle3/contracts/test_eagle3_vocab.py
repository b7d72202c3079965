"""Vocab-map contract: ``d2t`` holds offsets (target = i + d2t[i]), in range, unique, int64, one per draft token,
and agrees with ``t2d`` when both are saved (judged by ``verdict.assess_checkpoint.vocab_map``)."""

from __future__ import annotations

from pytest_eagle3.shell.contract import contract_class

TestEagle3VocabMap = contract_class("TestEagle3VocabMap", "The draft-to-target token map.")
