"""Generated knowledge: each module or JSON file names its generator (``pytest_eagle3/scanners/*.py``) and the releases it read."""

from __future__ import annotations

from pathlib import Path

#: The config-field scan (``pytest_eagle3/scanners/fields.py``): ``{"releases": {engine: [...]}, "fields": {...}}``.
FIELD_SCAN = Path(__file__).with_name("field_scan.json")
