"""The target (verifier) model as far as contracts need it: its config, read from a dir or file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_eagle3.checkpoint.draft import Checkpoint

#: Multimodal configs nest the language model's fields. Source: transformers configs of
#: Qwen2.5-VL / Llama-4 / Gemma-3 (``text_config``) and Kimi-VL (``text_config``).
NESTED_TEXT_CONFIGS = ("text_config", "language_config", "llm_config")


@dataclass(frozen=True)
class TargetModel:
    """A target's config fields; ``problem`` is set when it cannot be read."""

    path: str
    config: dict[str, Any]
    problem: str | None = None

    @classmethod
    def open(cls, path: str | Path) -> TargetModel:
        """Read the target's config from a folder, a config.json or a pinned Hub id; problems are recorded, not raised."""
        given = str(path)
        config_path = Path(path)
        if given.startswith("hf://"):  # a pinned Hub id: its config.json is in the cache's snapshot folder
            from pytest_eagle3.checkpoint.hub import HubError, open_repo

            try:
                config_path = open_repo(given).snapshot
            except HubError as exc:
                return cls(given, {}, f"target {given}: {exc}")
        if config_path.is_dir():
            config_path = config_path / "config.json"
        if not config_path.is_file():
            return cls(given, {}, f"target {given}: no config.json found")
        try:
            data = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            return cls(given, {}, f"target {config_path}: not valid JSON ({exc})")
        if not isinstance(data, dict):
            return cls(given, {}, f"target {config_path}: a JSON {type(data).__name__}, not an object")
        return cls(given, data)

    @property
    def text_config(self) -> dict[str, Any]:
        """The language model's config: the nested text config of a multimodal target, else the config itself."""
        for key in NESTED_TEXT_CONFIGS:
            nested = self.config.get(key)
            if isinstance(nested, dict) and "num_hidden_layers" in nested:
                return nested
        return self.config

    def _int(self, name: str) -> int | None:
        value = self.text_config.get(name, self.config.get(name))
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def num_hidden_layers(self) -> int | None:
        """The target's decoder layer count, or None when the config does not say."""
        return self._int("num_hidden_layers")

    @property
    def hidden_size(self) -> int | None:
        """The target's hidden size, or None when the config does not say."""
        return self._int("hidden_size")

    @property
    def vocab_size(self) -> int | None:
        """The target's vocabulary size, or None when the config does not say."""
        return self._int("vocab_size")

    @property
    def architectures(self) -> tuple[str, ...]:
        """The config's ``architectures`` (empty when absent)."""
        value = self.config.get("architectures")
        return tuple(str(a) for a in value) if isinstance(value, list) else ()

    @property
    def draft_signs(self) -> list[str]:
        """What says this config is an EAGLE draft's, not a target's (empty for a target): the fields only draft
        configs carry (``speculators_config``, ``draft_vocab_size``, ``eagle_config``) and an Eagle architecture."""
        signs = [f"it has {key}" for key in ("speculators_config", "draft_vocab_size", "eagle_config")
                 if key in self.config]
        signs += [f"its architecture is {a}" for a in self.architectures if "eagle" in a.lower()]
        return signs

    @property
    def on_hub(self) -> bool:
        """Whether the target was given as a Hub id."""
        return self.path.startswith("hf://")

    @property
    def weights_dir(self) -> Path | None:
        """The folder holding the target's weights (on disk: a Hub id's cache snapshot once downloaded); None
        when only a config.json was given."""
        root = Path(self.path)
        if self.on_hub:
            from pytest_eagle3.checkpoint.hub import HubError, open_repo

            try:
                files = open_repo(self.path)
            except HubError:
                return None
            return files.snapshot if files.local else None
        if not root.is_dir():
            return None
        has_weights = any(root.glob("*.safetensors")) or any(root.glob("pytorch_model*.bin"))
        return root if has_weights else None

    @property
    def no_weights(self) -> str | None:
        """Why the target's forward cannot run here (no weights on disk), or None when it can."""
        if self.weights_dir is not None:
            return None
        if self.on_hub:
            from pytest_eagle3.checkpoint.hub import NOT_DOWNLOADED

            return f"{NOT_DOWNLOADED.removeprefix('not run: ')} for the target {self.path}"
        return f"--eagle3-target={self.path} names only a config"

    def config_only(self) -> TargetModel:
        """This target's config alone, its weights left out: a local model directory read as its ``config.json``;
        itself when it names none (a ``config.json`` already, or a Hub id)."""
        if self.on_hub or not Path(self.path).is_dir():
            return self
        return TargetModel(str(Path(self.path) / "config.json"), self.config, self.problem)

    @cached_property
    def weights(self) -> Checkpoint | None:
        """The target's tensors, indexed once from their headers (on the Hub: by range); None when only a
        config was given."""
        if self.on_hub and self.problem is None:
            return Checkpoint.open(self.path)
        return Checkpoint.open(self.weights_dir) if self.weights_dir is not None else None
