"""Target sources: the target's side of a measurement (token ids, hidden states, embed / lm_head / norm).

A source is in-process transformers (:mod:`.transformers_source`) or a captured dump (:mod:`.dump`,
written by :mod:`.capture` or by ``live.capture`` from vLLM's workers); both give the same
:class:`~.source.TargetSide`, chosen by :func:`.choose.target_side`.
"""
