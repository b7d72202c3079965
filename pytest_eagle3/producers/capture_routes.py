"""The path a producer's training took to the target's hidden states, per release: what its aux ids mean.

A producer does not capture the target's states itself: it asks a *backend* (SpecForge: SGLang's own target
class, or its HF backend; speculators: vLLM's hidden-state extraction), and its aux ids mean what that backend
makes of them **for the target's class**. SGLang's ``set_eagle3_layers_to_capture`` adds +1 for the Llama / Qwen
classes, adds it only when the first id is 1 for the DeepSeek-V2 class (Kimi-K2.x, DeepSeek-V3) from 0.5.13, and
follows a boundary rule for gpt-oss from 0.5.17 (``knowledge/engines/sglang.py`` ``aux_transform_*``, the families
in ``knowledge/capture.py``); so one SpecForge convention for every target is wrong.

Each :class:`CaptureRoute` row says, for the producer releases ``since`` (inclusive) to ``until`` (exclusive), one
backend it trained through: either a fixed ``rule`` (the backend indexes the same way for every class it loads), or
the ``engine`` whose target class reads the ids, at the engine ``releases`` the producer pinned (the engine's
per-class rule then applies: ``engines/aux_layers.py`` ``route_readings``). ``supports`` says which targets the backend loads. Where
the checkpoint records neither its producer release nor its backend, every route that supports the target is a
plausible reading (``engines/aux_layers.py`` joins them).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_eagle3.producers.names import ANGELSLIM, EAGLE, MODELOPT, SPECFORGE, SPECULATORS

#: The backend reads ids through the engine's own target class (that class's rule, at the pinned release).
ENGINE_CLASS = "engine-class"
#: The backend loads the target with transformers' AutoModelForCausalLM: the classes transformers maps.
TRANSFORMERS = "transformers"
#: Fixed index rules a backend applies for every class: ``+1`` (the output of layer id), ``as-is`` (its input).
FIXED_RULES = ("+1", "as-is")


@dataclass(frozen=True)
class CaptureRoute:
    """One backend ``producer`` trained through from release ``since`` until ``until`` (None: no bound)."""

    producer: str
    since: str | None
    until: str | None
    backend: str
    #: The fixed rule for every class it loads (FIXED_RULES), or None: the engine class's rule.
    rule: str | None
    #: The engine whose target classes load the target (``sglang``, ``vllm``); None: transformers.
    engine: str | None
    #: The engine releases the producer pinned (its requirements); empty: none pinned (a fixed rule).
    releases: tuple[str, ...]
    #: Which targets the backend loads: ENGINE_CLASS (the engine's classes that capture) or TRANSFORMERS.
    supports: str
    source: str

    def __post_init__(self) -> None:
        if self.rule is None and self.engine is None:
            raise ValueError(f"{self.producer} {self.backend}: a route has a fixed rule or an engine")
        if self.rule is not None and self.rule not in FIXED_RULES:
            raise ValueError(f"{self.producer} {self.backend}: rule {self.rule!r} is not one of {FIXED_RULES}")
        if self.rule is None and not self.releases:
            raise ValueError(f"{self.producer} {self.backend}: an engine-class route names the releases it pinned")
        if self.supports not in (ENGINE_CLASS, TRANSFORMERS):
            raise ValueError(f"{self.producer} {self.backend}: supports {self.supports!r}")
        if len(self.source.strip()) < 10:
            raise ValueError(f"{self.producer} {self.backend}: a route needs a source line")

    @property
    def releases_words(self) -> str:
        """The producer releases the row covers, in words."""
        if self.since is None:
            return f"before {self.until}" if self.until else "every release on record"
        return f"{self.since} up to {self.until}" if self.until else f">= {self.since}"

    @property
    def label(self) -> str:
        """``specforge >= 0.2.0 through SGLang 0.5.14's target class``."""
        via = (f"{self.engine} {'/'.join(self.releases)}'s target class" if self.rule is None
               else f"its {self.backend} backend")
        return f"{self.producer} {self.releases_words} through {via}"


#: SpecForge 0.1.0's tree pinned these SGLang releases (requirements.txt sglang[all]==: 0.5.1 from 94d67101, 0.5.4 from
#: 8731d2c0, 0.5.5 from 00edc174 up to the 0.1.1 bump 8dff2b7c).
SPECFORGE_01_SGLANG = ("0.5.1", "0.5.4", "0.5.5")

#: Every producer's capture routes, oldest release first.
CAPTURE_ROUTES: tuple[CaptureRoute, ...] = (
    CaptureRoute(SPECFORGE, None, "0.2.0", "sglang", None, "sglang", SPECFORGE_01_SGLANG, ENGINE_CLASS,
                 "SpecForge 0.1.0 tree (sgl-project/SpecForge 8dff2b7c^, version.txt 0.1.0) "
                 "specforge/modeling/target/eagle3_target_model.py SGLangEagle3TargetModel.set_aux_hidden_states_layers: "
                 "model_runner.model.set_eagle3_layers_to_capture(ids) (requirements.txt sglang[all]==0.5.1, 0.5.4, 0.5.5)"),
    CaptureRoute(SPECFORGE, None, "0.2.0", "hf", "+1", None, (), TRANSFORMERS,
                 "SpecForge 0.1.0 tree (sgl-project/SpecForge 8dff2b7c^) specforge/modeling/target/eagle3_target_model.py "
                 "Eagle3TargetModel.generate_eagle3_data: offset = 1, outputs.hidden_states[id + 1] "
                 "(HFEagle3TargetModel: AutoModelForCausalLM.from_pretrained; the custom backend's own Llama / Qwen / "
                 "Phi-3 / gpt-oss / Llama-4 classes inherit the same method)"),
    CaptureRoute(SPECFORGE, "0.2.0", None, "sglang", None, "sglang", ("0.5.14",), ENGINE_CLASS,
                 "specforge 0.2.0 offline_capture/sglang_backend/capture.py:87 set_eagle3_capture_layers -> "
                 "model_runner.model.set_eagle3_layers_to_capture(layer_ids); config/schema.py:54 target_backend: "
                 "Literal['sglang'] (the HF/custom backends removed); METADATA Requires-Dist sglang==0.5.14"),
    CaptureRoute(SPECULATORS, "0.3.0", "0.5.0", "vllm-worker", "+1", "vllm", (), ENGINE_CLASS,
                 "speculators 0.3.0-0.4.0 data_generation/custom_worker.py: hidden_states + residual appended "
                 "after running layer idx (the output of layer id) for every class vLLM loads"),
    CaptureRoute(SPECULATORS, "0.5.0", None, "vllm", "as-is", "vllm", (), ENGINE_CLASS,
                 "speculators 0.9.0 models/utils.py resolve_target_layer_ids, captured by the vLLM server the user "
                 "runs (no vLLM pin in its METADATA): extract_hidden_states reads ids as-is for every class "
                 "(knowledge/engines/vllm.py aux_transform_*)"),
    # The producers that capture from transformers' classes themselves read the same index for every class they load.
    CaptureRoute(EAGLE, None, None, "hf", "as-is", None, (), TRANSFORMERS,
                 "SafeAILab/EAGLE eagle/traineagle3/modeling_llama_kv.py LlamaModel.forward: hidden_states kept before "
                 "layer idx (the input of layer id) in its own copies of transformers' decoder classes"),
    CaptureRoute(MODELOPT, "0.29.0", "0.35.0", "megatron", "+1", None, (), TRANSFORMERS,
                 "nvidia-modelopt 0.29.0-0.33.0 torch/speculative/plugins/megatron.py _set_default_aux_hidden_state_layers: "
                 "the forward hook keeps the layer whose layer_number - 1 is an id (the output of layer id)"),
    CaptureRoute(MODELOPT, "0.35.0", None, "hf", "+1", None, (), TRANSFORMERS,
                 "nvidia-modelopt 0.35.0-0.47.0 torch/speculative/plugins/transformers.py (0.45.0+: plugins/hf_eagle.py) "
                 "register_forward_hook on the base model's layers[id] (the output of layer id), for every class it loads"),
    CaptureRoute(ANGELSLIM, "0.2.0", None, "hf", "+1", None, (), TRANSFORMERS,
                 "angelslim 0.2.0-0.5.0 compressor/speculative/train/models/target/target_model_wrapper.py: "
                 "hidden_states[id + 1] (the output of layer id; 0.5.0's vLLM backend: forward hooks on layers[id])"),
)


def routes_of(producer: str) -> tuple[CaptureRoute, ...]:
    """``producer``'s capture routes (empty: its record's convention holds for every target)."""
    return tuple(r for r in CAPTURE_ROUTES if r.producer == producer)


def markdown_table() -> str:
    """The routes as docs/readings.md shows them (tests/test_capture_routes.py checks the doc against it)."""
    lines = ["| producer | releases | backend | what an id means | targets it loads | source |",
             "|---|---|---|---|---|---|"]
    for r in CAPTURE_ROUTES:
        meaning = ({"+1": "the output of layer id", "as-is": "the input of layer id"}[r.rule] if r.rule
                   else f"what {r.engine} {'/'.join(r.releases)}'s target class makes of it")
        loads = (f"{r.engine}'s target classes" if r.supports == ENGINE_CLASS
                 else "transformers' AutoModelForCausalLM classes")
        lines.append(f"| {r.producer} | {r.releases_words} | {r.backend} | {meaning} | {loads} | {r.source} |")
    return "\n".join(lines)
