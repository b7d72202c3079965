"""Target sources: the target's side of a measurement (token ids, hidden states, embed / lm_head / norm).

A source is in-process transformers (:mod:`.transformers_source`) or a captured dump
(:mod:`.dump`); both give the same :class:`~.source.TargetSide`.
"""
