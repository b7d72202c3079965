"""The target a draft names in its own config, found when no ``--eagle3-target`` is given.

Aux layers and the fc width need only the target's config; many drafts name their target. A name that is a
local folder with a ``config.json`` (as given, or beside the draft) is used as it is; a Hub repo id
(``ORG/NAME``) is read as ``hf://ORG/NAME``: its config and headers only, never its weights, from the
Hugging Face cache when offline (``HF_HUB_OFFLINE``). Each field below is a knowledge row with its source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where a producer writes the target's name: (field path, producer, source).
FIELDS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("speculators_config", "verifier", "name_or_path"), "speculators",
     ("speculators 0.9.0 config.py VerifierConfig.name_or_path (models/eagle3 save_pretrained writes it from "
      "the --verifier / verifier_name_or_path the draft was trained against)")),
)
#: A Hub repo id as transformers' ``from_pretrained`` takes it: ``ORG/NAME`` (no scheme, no absolute path).
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


@dataclass(frozen=True)
class NamedTarget:
    """A target the draft names: ``path`` the local folder or pinned Hub id to read (None when it cannot be
    had), ``field`` where the name was read, ``name`` as written, ``problem`` why it cannot be used."""

    name: str
    field: str
    path: str | None
    problem: str = ""

    @property
    def said(self) -> str:
        """Where the target came from, for the header and the JSON report."""
        if self.path is None:
            return f"the draft names target {self.name!r} ({self.field}), not found: {self.problem}"
        return f"{self.path} (named by the draft's {self.field})"


def named_target(config: Mapping[str, Any] | None, draft_root: Path) -> NamedTarget | None:
    """The target the draft's config names, resolved; None when it names none."""
    if not isinstance(config, Mapping):
        return None
    for path, _, _ in FIELDS:
        value: Any = config
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, str) and value.strip():
            return _resolve(value.strip(), ".".join(path), draft_root)
    return None


def _resolve(name: str, field: str, draft_root: Path) -> NamedTarget:
    for folder in (Path(name).expanduser(), draft_root / name):
        if (folder / "config.json").is_file():
            return NamedTarget(name, field, str(folder))
    if name.startswith("hf://") or _REPO_ID.match(name):
        from pytest_eagle3.checkpoint.hub import HubError, pin

        spec = name if name.startswith("hf://") else f"hf://{name}"
        try:
            return NamedTarget(name, field, pin(spec))
        except HubError as exc:
            return NamedTarget(name, field, None, f"{exc}; pass --eagle3-target=DIR")
    return NamedTarget(name, field, None, "no such folder with a config.json; pass --eagle3-target=DIR")
