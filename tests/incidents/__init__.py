"""Real incidents from public threads, reproduced as small checkpoints (``incidents.json``, ``build``)."""
