"""Live engines: real SGLang / vLLM servers, their launch commands per version, their own metrics.

A library layer: nothing here imports pytest. The shell (``pytest_eagle3.shell.live_fixtures`` and
``contracts/test_eagle3_live.py``) turns what it returns into fixtures, skips and contract failures.
Heavy or optional libraries (mirakuru, psutil, prometheus_client, torch) are imported lazily.
"""
