"""Reference acceptance: a plain-torch EAGLE-3 draft forward driven by the real target model.

Imports torch (and, in ``acceptance``, transformers) at module level: import it only when
``--eagle3-target`` asks for it.
"""
