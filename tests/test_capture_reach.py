"""Capture reach per target class and release: the scan reads the engines' loops, the aux area applies it.

The scanner is run on literal excerpts of released model files (the loop shapes the releases use); the
table it generated is then checked on both sides of each change it records, through the load plan a
user sees.
"""

from __future__ import annotations

import importlib.util
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import REFUSED, load_plan
from pytest_eagle3.knowledge import reach
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.testing.synth import SPECFORGE, SPECULATORS, SynthSpec


@pytest.fixture(scope="module")
def scanner() -> ModuleType:
    return importlib.import_module("pytest_eagle3.scanners.reach")


#: Loop shapes as released (trimmed to the capture lines).
SGLANG_LLAMA_0_5_11 = """
class LlamaModel(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        if self.pp_group.is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
            residual = None
        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        return hidden_states, aux_hidden_states
"""
SGLANG_LLAMA_0_5_22 = """
class LlamaModel(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        aux_hidden_states = AuxHiddenStateList()
        for i in range(self.start_layer, self.end_layer):
            hidden_states = self.layers[i](
                positions, hidden_states, forward_batch,
                capture_output=aux_hidden_states.capture if i in self.layers_to_capture else None,
            )
        return hidden_states, aux_hidden_states
"""
SGLANG_GPT_OSS_0_5_17 = """
class GptOssModel(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        residual = None
        aux_hidden_states = []
        if self.start_layer in self.layers_to_capture:
            aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
        for i in range(self.start_layer, self.end_layer):
            with get_global_expert_distribution_recorder().with_current_layer(i):
                layer = self.layers[i]
                hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
                if i + 1 in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
        return hidden_states, aux_hidden_states
"""
SGLANG_GEMMA3_0_5_12 = """
class Gemma3TextModel(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        aux_hidden_states = []
        residual = None
        num_layers = len(self.layers)
        for i, layer in enumerate(self.layers):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states)
            hidden_states, residual = layer(positions=positions, hidden_states=hidden_states, residual=residual)
        if num_layers in self.layers_to_capture:
            aux_hidden_states.append(hidden_states)
        return hidden_states, aux_hidden_states
"""
VLLM_LLAMA_0_17_0 = """
class LlamaModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors):
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states, aux_hidden_states
"""
VLLM_LLAMA_0_18_0 = """
class LlamaModel(nn.Module, EagleModelMixin):
    def forward(self, input_ids, positions, intermediate_tensors):
        residual = None
        aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
            hidden_states, residual = layer(positions, hidden_states, residual)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
        return hidden_states, aux_hidden_states
"""
SGLANG_QWEN2_MOE_0_5_4_POST2 = """
class Qwen2MoeModel(nn.Module):
    def set_eagle3_layers_to_capture(self, layers_to_capture):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)

    def forward(self, input_ids, positions, forward_batch):
        residual = None
        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            with get_global_expert_distribution_recorder().with_current_layer(i):
                layer = self.layers[i]
                hidden_states, residual = layer(
                    positions, hidden_states, forward_batch, residual,
                    captured_last_layer_outputs=(
                        aux_hidden_states if getattr(layer, "_is_layer_to_capture", False) else None),
                )
        return hidden_states, aux_hidden_states
"""


@pytest.mark.parametrize(("name", "source", "expected"), [
    ("sglang llama 0.5.11", SGLANG_LLAMA_0_5_11, ("crash", False, "global")),
    ("sglang llama 0.5.22", SGLANG_LLAMA_0_5_22, ("embeddings", False, "global")),
    ("sglang gpt_oss 0.5.17", SGLANG_GPT_OSS_0_5_17, ("embeddings", True, "global")),
    ("sglang gemma3 0.5.12", SGLANG_GEMMA3_0_5_12, ("embeddings", True, "global")),
    ("vllm llama 0.17.0", VLLM_LLAMA_0_17_0, ("crash", False, "stage")),
    ("vllm llama 0.18.0", VLLM_LLAMA_0_18_0, ("embeddings", True, "stage")),
    ("sglang qwen2_moe 0.5.4.post2", SGLANG_QWEN2_MOE_0_5_4_POST2, ("embeddings", False, "global")),
])
def test_the_scan_reads_each_loop_shape(scanner: ModuleType, tmp_path: Path, name: str, source: str,
                                        expected: tuple[str, bool, str]) -> None:
    engine = name.split()[0]
    (tmp_path / "model.py").write_text(textwrap.dedent(source))
    sets = scanner.CAPTURE_SETS[engine]
    found = scanner.classes(tmp_path, sets)
    loop = next(info.loop for info in found.values() if info.loop is not None)
    assert (loop.zero, loop.last, loop.index) == expected
    assert loop.past == ("index-error" if "qwen2_moe" in name else "never-fires")


def test_the_scan_follows_the_inner_model(scanner: ModuleType, tmp_path: Path) -> None:
    """An outer class builds its model through a helper (SGLang llama.py ``self.model = self._init_model``)."""
    (tmp_path / "llama.py").write_text(textwrap.dedent(SGLANG_LLAMA_0_5_11) + textwrap.dedent("""
        class LlamaForCausalLM(nn.Module):
            def __init__(self, config):
                self.model = self._init_model(config)

            def _init_model(self, config):
                return LlamaModel(config)

        class MistralForCausalLM(LlamaForCausalLM):
            pass
        """))
    found = scanner.classes(tmp_path, scanner.CAPTURE_SETS["sglang"])
    loop = scanner.find_loop("MistralForCausalLM", found)
    assert loop is not None and loop.where == "llama.py:LlamaModel.forward" and loop.zero == "crash"


@pytest.mark.parametrize(("engine", "arch", "before", "after", "what"), [
    ("sglang", "LlamaForCausalLM", "0.5.21", "0.5.22", "zero"),
    ("sglang", "DeepseekV3ForCausalLM", "0.5.13", "0.5.14", "zero"),
    ("sglang", "GptOssForCausalLM", "0.5.16", "0.5.17", "last"),
    ("vllm", "LlamaForCausalLM", "0.17.0", "0.18.0", "last"),
    ("vllm", "Qwen3MoeForCausalLM", "0.17.0", "0.18.0", "last"),
])
def test_reach_rows_change_where_the_source_changes(engine: str, arch: str, before: str, after: str,
                                                    what: str) -> None:
    old, new = (reach.reach_at(engine, Version(v), arch) for v in (before, after))
    assert old is not None and new is not None
    reached = (lambda r: r.value.last) if what == "last" else (lambda r: r.value.zero == reach.EMBEDDINGS)
    assert not reached(old) and reached(new)
    assert reach.first_reaching(engine, arch, what, Version(before)) == {"sglang": f"SGLang {after}", "vllm": f"vLLM {after}"}[engine]


def test_families_differ_within_one_release() -> None:
    """vLLM 0.17.0: the Llama loop adds hidden_states + None at index 0; Qwen3-MoE's guards it."""
    llama = reach.reach_at("vllm", Version("0.17.0"), "LlamaForCausalLM")
    moe = reach.reach_at("vllm", Version("0.17.0"), "Qwen3MoeForCausalLM")
    assert llama is not None and moe is not None
    assert (llama.value.zero, moe.value.zero) == ("crash", "embeddings")


@pytest.fixture(scope="module")
def plan_for(make_checkpoint: Callable[..., Path], make_target: Callable[..., Path]) -> Callable[..., object]:
    def run(spec: SynthSpec, engine: str, arch: str, layers: int = 8, convention: str | None = "input-of") -> object:
        target = TargetModel.open(make_target(layers, arch))
        return load_plan(Checkpoint.open(make_checkpoint(spec)), parse_selection(engine)[0], target, convention)
    return run


def _codes(plan: object) -> set[str]:
    return {i.finding.code for i in plan.issues if i.area != "producer"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("arch", "codes"), [
    ("LlamaForCausalLM", {"aux-index-zero"}),
    ("Qwen3MoeForCausalLM", set()),
])
def test_index_zero_per_family_in_the_plan(plan_for: Callable[..., object], arch: str, codes: set[str]) -> None:
    """Speculators ids [0, 3, 5] on vLLM 0.17.0 (as-is): Llama targets fail the first forward, Qwen3-MoE
    targets capture the embeddings."""
    plan = plan_for(SynthSpec(producer=SPECULATORS, aux_layer_ids=(0, 3, 5)), "vllm==0.17.0", arch)
    assert _codes(plan) & {"aux-index-zero"} == codes


@pytest.mark.parametrize(("version", "refused"), [("0.5.13", True), ("0.5.14", False)])
def test_sglang_deepseek_index_zero_boundary(plan_for: Callable[..., object], version: str, refused: bool) -> None:
    """DeepSeek targets read ids as-is unless the first is 1 (0.5.13+): [0, 3, 5] asks for the embeddings,
    which the loop adds to a None residual up to 0.5.13 and captures from 0.5.14."""
    plan = plan_for(SynthSpec(producer=SPECFORGE, aux_layer_ids=(0, 3, 5)), f"sglang=={version}",
                    "DeepseekV3ForCausalLM")
    assert ("aux-index-zero" in _codes(plan)) is refused
    if refused:
        finding = next(i.finding for i in plan.issues if i.finding.code == "aux-index-zero")  # type: ignore[attr-defined]
        assert "SGLang 0.5.14" in finding.fix and "deepseek_v2.py" in " ".join(finding.details)


@pytest.mark.parametrize(("version", "fails"), [("0.17.0", True), ("0.18.0", False)])
def test_vllm_last_layer_output_boundary(plan_for: Callable[..., object], version: str, fails: bool) -> None:
    """Id 8 = L on an 8-layer Llama target: out of reach up to 0.17.0 (fc gets 2 of 3 states: a shape
    failure, whose fix names the release that reaches it), captured from 0.18.0."""
    plan = plan_for(SynthSpec(producer=SPECULATORS, aux_layer_ids=(2, 4, 8)), f"vllm=={version}", "LlamaForCausalLM")
    assert (plan.outcome == REFUSED) is fails  # type: ignore[attr-defined]
    if fails:
        finding = next(i.finding for i in plan.issues if i.finding.code == "fc-width")  # type: ignore[attr-defined]
        assert "vLLM 0.18.0" in finding.fix and "[8]" in finding.fix and "L-1" in finding.fix
        aux_fix = next(i.finding.fix for i in plan.issues if i.finding.code == "aux-layers")  # type: ignore[attr-defined]
        assert aux_fix.startswith("the draft was trained on layer inputs [8], out of this target's reach")
    else:
        assert plan.aux.captured == (2, 4, 8)  # type: ignore[attr-defined]


def test_sglang_llama_never_reaches_the_last_layer_output(plan_for: Callable[..., object]) -> None:
    """SGLang's Llama loop captures before each layer in every release read: id 7 (+1 = 8 = L) never fires,
    and the fix says no SGLang release reaches it."""
    plan = plan_for(SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 3, 7)), "sglang==0.5.23", "LlamaForCausalLM",
                    convention="output-of")
    assert plan.aux.never_fire == (8,)  # type: ignore[attr-defined]
    fixes = " ".join(i.finding.fix for i in plan.issues)  # type: ignore[attr-defined]
    assert "no SGLang release read reaches L for LlamaForCausalLM, vLLM 0.18.0 does" in fixes


@pytest.mark.parametrize(("version", "codes"), [("0.5.4.post1", {"fc-width"}),
                                               ("0.5.4.post2", {"fc-width", "aux-index-past-end"})])
def test_sglang_qwen_moe_index_past_the_end(plan_for: Callable[..., object], version: str, codes: set[str]) -> None:
    """Id 7 on an 8-layer Qwen3-MoE target (+1 = 8 = L): up to 0.5.4.post1 it never fires (2 of 3 states reach
    fc); from 0.5.4.post2 the model flags self.layers[8]: IndexError at startup."""
    plan = plan_for(SynthSpec(producer=SPECFORGE, aux_layer_ids=(1, 3, 7)), f"sglang=={version}",
                    "Qwen3MoeForCausalLM", convention="output-of")
    assert _codes(plan) & {"fc-width", "aux-index-past-end"} == codes
    assert plan.outcome == REFUSED  # type: ignore[attr-defined]
    if "aux-index-past-end" in codes:
        finding = next(i.finding for i in plan.issues if i.finding.code == "aux-index-past-end")  # type: ignore[attr-defined]
        assert "IndexError" in finding.summary and "qwen2_moe.py" in " ".join(finding.details)


@pytest.mark.parametrize(("ids", "captured", "never"), [
    ((2, 4, 8), (3, 5, 8), ()),    # +1 = 9 = L + 1: the final residual after the loop, the last layer's output
    ((2, 4, 7), (3, 5), (8,)),     # +1 = 8 = L: no layer 8 in the loop, and the after-loop check asks L + 1
])
def test_tokenspeed_takes_the_last_output_for_an_id_of_l(plan_for: Callable[..., object], ids: tuple[int, ...],
                                                         captured: tuple[int, ...], never: tuple[int, ...]) -> None:
    """TokenSpeed 0.1.1 on an 8-layer Llama target (runtime/models/base/transformer_model.py forward): an id of L
    is captured as the last layer's output, an id of L - 1 never fires (fc gets 2 of 3 states: refused)."""
    plan = plan_for(SynthSpec(producer=SPECFORGE, aux_layer_ids=ids), "tokenspeed==0.1.1", "LlamaForCausalLM")
    assert plan.aux.captured == captured and plan.aux.never_fire == never  # type: ignore[attr-defined]
    assert (plan.outcome == REFUSED) is bool(never)  # type: ignore[attr-defined]
