"""Checkpoint variants for the differential runs: a few parameters, drawn by Hypothesis, that say how a synthetic
draft departs from its producer's layout (aux ids and the field that holds them, norm flags, vocab maps, dtypes,
hidden sizes, layer counts, key names, target classes), written as a ``ProbeCase`` next to its target.

A variant is plain JSON (``Variant.params``); its fingerprint hashes those parameters and the files the writer makes
of them, so a record of engine runs can tell when the generator or the writer no longer produces what was run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from pytest_eagle3.probes.cases import EAGLE_CONFIG, TOP_LEVEL, ProbeCase, write_case
from pytest_eagle3.producers.names import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS
from pytest_eagle3.testing.synth import SPECFORGE_HF, SynthSpec, write_target

#: The seed of the recorded draw (``generate``): the same seed, count and Hypothesis release give the same variants.
SEED = 20261207
PRODUCERS = (SPECULATORS, SPECFORGE, SPECFORGE_HF, EAGLE, MODELOPT, ANGELSLIM)
#: Faults a loader answers for (a map or a head it may take, refuse or replace); file-level damage is the
#: contracts' business, not a loader's.
LOADER_FAULTS = ("d2t-absolute", "d2t-missing", "missing-lm-head", "d2t-all-zero")
EXTRA_TENSORS = ("fc_bias", "random_embed", "qk_norm")
#: The layouts that save embed_tokens (the ones a "random_embed" variant replaces).
EMBEDDING_PRODUCERS = (SPECULATORS, SPECFORGE_HF)
#: Draft ``architectures`` a producer or a fork writes (None: the producer's own).
ARCHITECTURES = (None, "LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "LlamaForCausalLM",
                 "Eagle3Qwen3vlForCausalLM", "Eagle3MiniMaxM2ForCausalLM")
#: Three-valued config flags: absent, false, true.
FLAG = st.sampled_from((None, False, True))
#: Target classes the synthetic target is written as (same Llama weights, another model_type / class name).
TARGET_CLASSES = {"llama": ("llama", "LlamaForCausalLM"), "mistral": ("mistral", "MistralForCausalLM")}


@dataclass(frozen=True)
class Variant:
    """One drawn variant: its parameters (plain JSON) and what they write."""

    params: Mapping[str, Any]

    @property
    def spec(self) -> SynthSpec:
        """The synthetic draft's shapes and layout."""
        p = self.params
        hidden = int(p["hidden"])
        spec = SynthSpec(
            producer=p["producer"], hidden_size=hidden, intermediate_size=2 * hidden, num_attention_heads=2,
            num_key_value_heads=1, head_dim=hidden // 2, vocab_size=int(p["vocab"]),
            draft_vocab_size=int(p["draft_vocab"]), target_layers=int(p["target_layers"]),
            draft_layers=int(p["draft_layers"]),
            aux_layer_ids=None if p["aux_ids"] is None else tuple(p["aux_ids"]),
            write_aux_ids=bool(p["write_aux_ids"]), dtype=p["dtype"],
        )
        return spec.with_faults(*p["faults"]) if p["faults"] else spec

    @property
    def case(self) -> ProbeCase:
        """The draft as a probe case: the spec plus the config edits and extra tensors."""
        p = self.params
        config: dict[str, Any] = {k: p[k] for k in ("norm_before_residual", "norm_output") if p[k] is not None}
        extra = list(p["extra_tensors"])
        if p["fc_norm"]:
            config["fc_norm"] = True
            extra.append("fc_norm")
        if p["norm_before_fc"]:
            config["norm_before_fc"] = True
            extra.append("input_norm")
        if p["architecture"] is not None:
            config["architectures"] = [p["architecture"]]
        eagle_config = {} if p["use_aux_hidden_state"] is None else {"use_aux_hidden_state": p["use_aux_hidden_state"]}
        layer = {"model_type": "qwen3"} if p["layer_type"] == "qwen3" else {}
        return ProbeCase(self.name, json.dumps(dict(p), sort_keys=True), self.spec, config=config,
                         eagle_config=eagle_config, aux_placement=p["aux_placement"], extra_tensors=tuple(extra),
                         layer_config=layer)

    @property
    def name(self) -> str:
        """A short stable name: the parameters' hash."""
        return "v" + _digest(json.dumps(dict(self.params), sort_keys=True))[:12]

    @property
    def target_key(self) -> str:
        """The target this variant belongs to (variants share targets)."""
        p = self.params
        return f"{p['target_class']}-h{p['hidden']}-v{p['vocab']}-l{p['target_layers']}"

    def write(self, root: Path, targets: dict[str, Path] | None = None) -> tuple[Path, Path]:
        """(draft dir, target dir) under ``root``; ``targets`` caches the targets written so far."""
        targets = {} if targets is None else targets
        if self.target_key not in targets:
            targets[self.target_key] = write_variant_target(self.params, root / "targets" / self.target_key)
        return write_case(self.case, root / self.name), targets[self.target_key]


def write_variant_target(params: Mapping[str, Any], out: Path) -> Path:
    """The variant's target: the synthetic Llama target, written as the drawn target class."""
    hidden = int(params["hidden"])
    spec = SynthSpec(hidden_size=hidden, intermediate_size=2 * hidden, num_attention_heads=2, num_key_value_heads=1,
                     head_dim=hidden // 2, vocab_size=int(params["vocab"]), target_layers=int(params["target_layers"]))
    out = write_target(spec, out)
    model_type, architecture = TARGET_CLASSES[params["target_class"]]
    path = out / "config.json"
    config = json.loads(path.read_text())
    config.update(model_type=model_type, architectures=[architecture])
    path.write_text(json.dumps(config, indent=2) + "\n")
    return out


def fingerprint(params: Mapping[str, Any], draft: Path, target: Path) -> str:
    """The hash of the parameters and of every file the writer made of them (draft and target)."""
    h = hashlib.sha256(json.dumps(dict(params), sort_keys=True).encode())
    for folder in (draft, target):
        for path in sorted(folder.iterdir()):
            if path.name.startswith("."):  # a writer's mark, not the checkpoint
                continue
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:24]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@st.composite
def variant_params(draw: st.DrawFn) -> dict[str, Any]:
    """One variant's parameters (every draw writes a checkpoint; faults only where the producer has them)."""
    producer = draw(st.sampled_from(PRODUCERS))
    target_layers = draw(st.integers(3, 8))
    vocab = draw(st.sampled_from((128, 256)))
    full_vocab = draw(st.booleans())
    aux_ids = draw(st.one_of(st.none(), st.lists(st.integers(0, target_layers + 1), min_size=1, max_size=4)))
    if aux_ids is not None and draw(st.booleans()):
        aux_ids = sorted(set(aux_ids))  # as producers write them; unsorted and repeated ids otherwise
    faults = draw(st.lists(st.sampled_from(LOADER_FAULTS), max_size=1, unique=True))
    layer_type = draw(st.sampled_from(("llama", "llama", "qwen3")))
    safetensors = producer != EAGLE  # the extra tensors are written into model.safetensors
    extra = set(draw(st.sets(st.sampled_from(EXTRA_TENSORS), max_size=2))) if safetensors else set()
    if producer not in EMBEDDING_PRODUCERS:
        extra.discard("random_embed")
    if layer_type == "qwen3" and safetensors:
        extra.add("qk_norm")
    elif layer_type == "qwen3":
        layer_type = "llama"
    return {
        "producer": producer,
        "hidden": draw(st.sampled_from((32, 64))),
        "vocab": vocab,
        "draft_vocab": vocab if full_vocab else draw(st.sampled_from((32, 64))),
        "target_layers": target_layers,
        "draft_layers": draw(st.sampled_from((1, 1, 1, 2))),
        "aux_ids": aux_ids,
        "write_aux_ids": draw(st.booleans()) if draw(st.booleans()) else True,
        "aux_placement": draw(st.sampled_from((None, None, TOP_LEVEL, EAGLE_CONFIG))),
        "dtype": draw(st.sampled_from(("bfloat16", "float16", "float32"))),
        "faults": faults,
        "norm_before_residual": draw(FLAG),
        "norm_output": draw(FLAG),
        "fc_norm": safetensors and draw(st.booleans()),
        "norm_before_fc": safetensors and draw(st.booleans()),
        "use_aux_hidden_state": draw(st.sampled_from((None, None, True, False))),
        "extra_tensors": sorted(extra),
        "layer_type": layer_type,
        "architecture": draw(st.sampled_from(ARCHITECTURES)),
        "target_class": draw(st.sampled_from(tuple(TARGET_CLASSES))),
    }


def valid(params: Mapping[str, Any]) -> bool:
    """Whether the writer can make this variant (a fault the producer's layout has; a layout that has the field)."""
    try:
        return Variant(params).spec.producer in PRODUCERS
    except ValueError:
        return False


#: Hypothesis' example budget for every draw: generation depends on it, so a draw of any count is a prefix of the
#: recorded one only when the budget is the same (the draw stops once it has its count).
DRAW_BUDGET = 20000


class _Enough(Exception):
    """Raised inside the draw once it has its count."""


def generate(count: int, seed_value: int = SEED) -> list[dict[str, Any]]:
    """The first ``count`` distinct valid variants of Hypothesis' draw from ``variant_params`` with a fixed seed
    (at most ``DRAW_BUDGET // 4``)."""
    drawn: list[dict[str, Any]] = []
    seen: set[str] = set()

    @seed(seed_value)
    @settings(max_examples=DRAW_BUDGET, database=None, deadline=None, phases=[Phase.generate], derandomize=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False, print_blob=False)
    @given(variant_params())
    def collect(params: dict[str, Any]) -> None:
        key = json.dumps(params, sort_keys=True)
        if len(drawn) < count and key not in seen and valid(params):
            seen.add(key)
            drawn.append(params)
        if len(drawn) >= count:
            raise _Enough

    try:
        collect()
    except _Enough:
        pass
    return drawn


def write_all(variants: list[Variant], root: Path,
              progress: Callable[[int], None] | None = None) -> list[tuple[Path, Path]]:
    """Every variant's (draft, target) under ``root``, the targets shared."""
    targets: dict[str, Path] = {}
    out = []
    for i, variant in enumerate(variants):
        out.append(variant.write(root, targets))
        if progress is not None:
            progress(i)
    return out


