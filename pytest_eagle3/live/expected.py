"""The acceptance the plugin expects from an engine version: the one figure live runs are judged against.

For now the reference measurement read the way each engine reads the draft (vLLM: aux ids as
input-of, d2t as offsets; SGLang: output-of, offsets). The per-engine prediction of the load plans
replaces the body of :func:`expected_acceptance` when it lands; callers do not change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_eagle3.engines.versions import SGLANG, VLLM, EngineVersion, in_known_range
from pytest_eagle3.formats import INPUT_OF, OUTPUT_OF

if TYPE_CHECKING:
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.readings import ReferenceCache

#: How each engine reads the configured aux ids (reference/vllm.md §4, reference/sglang.md §4: SGLang
#: adds +1 for Llama-family targets, vLLM uses them as-is).
ENGINE_READING = {VLLM: INPUT_OF, SGLANG: OUTPUT_OF}


@dataclass(frozen=True)
class Expected:
    """Predicted acceptance for one engine version, and what it rests on."""

    mean_acceptance_length: float
    per_position: tuple[float, ...]
    reading: str
    basis: str


def expected_acceptance(ckpt: Checkpoint, target: str, engine_version: EngineVersion, device: str = "cpu",
                        prompts_path: str | None = None, cache: ReferenceCache | None = None) -> Expected | None:
    """What ``engine_version`` should reach with ``ckpt`` on ``target``; None when the version is unknown."""
    from pytest_eagle3.reference.readings import measure_reference

    if not in_known_range(engine_version.engine, engine_version.version):
        return None
    result = measure_reference(ckpt, target, device, prompts_path, cache=cache)
    convention = ENGINE_READING[engine_version.engine]
    chosen = next((a for a in result.inference.results
                   if a.reading.convention == convention and a.reading.d2t == "offsets"), None)
    if chosen is None:
        return None
    return Expected(chosen.mean_acceptance_length, tuple(chosen.per_position), chosen.reading.label,
                    f"reference forward read as {engine_version.label} reads it ({chosen.reading.label}), "
                    f"{result.prompts}")


def live_prompts(target: str, prompts_path: str | None = None) -> list[list[int]]:
    """The prompts the reference uses, as token ids, without loading the target's weights."""
    from pytest_eagle3.reference.acceptance import Target, load_prompts

    root = Path(target)
    root = root.parent if root.is_file() else root
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    vocab = int(config.get("text_config", config).get("vocab_size", config.get("vocab_size", 0)))
    tokenizer = None
    from pytest_eagle3.live.server import has_tokenizer

    if has_tokenizer(str(root)):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
    prompts, _ = load_prompts(Target(None, tokenizer, 0, vocab, "cpu"), prompts_path)
    return prompts
