"""Reference acceptance (with --eagle3-target): run the real target, feed the draft what its config declares, count
the draft tokens a greedy engine would accept, and try the other readings of the aux ids and of d2t to tell which
one the draft was trained with (``Pipeline.reference``, judged by ``verdict.assess_checkpoint``)."""

from __future__ import annotations

from pytest_eagle3.shell.contract import contract_class

TestEagle3ReferenceAcceptance = contract_class(
    "TestEagle3ReferenceAcceptance", "The draft's acceptance on the target, by the reference forward.")
