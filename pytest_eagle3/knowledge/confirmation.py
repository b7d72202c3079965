"""How each engine's facts are known, per engine and release: read in source, the real loader or converter run
here, served live on CPU, served live on GPU. One row per engine and span of releases, each with its source (where
the evidence is produced or written down); ``python -m pytest_eagle3 matrix`` renders them (docs/engines.md).
"""

from __future__ import annotations

from pytest_eagle3.knowledge.engine import Confirmation as Confirmation
from pytest_eagle3.knowledge.engines import REGISTRY
from pytest_eagle3.knowledge.engines.shared import NO as NO

#: Every engine's confirmation rows (``Engine.tables.confirmation``, in the registry's order).
ROWS: tuple[Confirmation, ...] = tuple(row for engine in REGISTRY for row in engine.tables.confirmation)
