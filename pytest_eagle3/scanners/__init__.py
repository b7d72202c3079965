"""Static scanners over released engine sources: each reads unpacked releases and writes a table of
``pytest_eagle3/knowledge/generated/`` (``python -m pytest_eagle3.scanners.<name> --help``)."""
