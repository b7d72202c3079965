"""The scanners follow a class the way Python imports it: a package's ``__init__`` re-exports, per-platform
dispatch (the CUDA class judged, the others noted), ``TYPE_CHECKING`` / ``try`` branches, star imports, and
registry rows naming a package; then the real generated tables for the classes vLLM moved into such packages."""

from __future__ import annotations

import textwrap

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.capture import CAPTURES, capture_support
from pytest_eagle3.knowledge.generated import capture_table, reach_table
from pytest_eagle3.scanners import capture, draft_classes, reach

INTERFACES = '''
from typing import Protocol


class SupportsEagle3(Protocol):
    def set_aux_hidden_state_layers(self, layers): ...
'''

#: A model that captures (SupportsEagle3, a concrete setter, an inner model whose forward reads the set).
CAPTURING = '''
from vllm.model_executor.models.interfaces import SupportsEagle3


class {name}Model:
    def forward(self, x):
        aux = []
        for idx, layer in enumerate(self.layers):
            x = layer(x)
            if idx + 1 in self.aux_hidden_state_layers:
                aux.append(x)
        return x, aux


class {name}(SupportsEagle3):
    def __init__(self):
        self.model = {name}Model()

    def set_aux_hidden_state_layers(self, layers):
        self.model.aux_hidden_state_layers = layers
'''

#: The same class without the interface: vLLM refuses it ("Model does not support EAGLE3 interface").
PLAIN = '''
class {name}:
    def forward(self, x):
        return x
'''

#: architecture -> (registry module, class): each row names a module the scanner must follow.
ROWS = {
    "ReexportForCausalLM": ("reexport", "ReexportForCausalLM"),              # a package of model_executor/models
    "DispatchForCausalLM": ("vllm.models.dispatch", "DispatchForCausalLM"),  # if rocm / elif cpu / else nvidia
    "TypedForCausalLM": ("vllm.models.typed", "TypedForCausalLM"),          # if TYPE_CHECKING or is_cuda()
    "GuardedForCausalLM": ("guarded", "GuardedForCausalLM"),                # try / except ImportError
    "StarForCausalLM": ("star", "StarForCausalLM"),                        # from .impl import *
    "OnlyGpuForCausalLM": ("vllm.models.onlygpu", "OnlyGpuForCausalLM"),    # else: raise NotImplementedError
    "HintedForCausalLM": ("hinted", "HintedForCausalLM"),                   # if TYPE_CHECKING: stub, else alias
}

FILES = {
    "vllm/model_executor/models/interfaces.py": INTERFACES,
    "vllm/model_executor/models/reexport/__init__.py":
        "from .modeling import ReexportImpl as ReexportForCausalLM\n",
    "vllm/model_executor/models/reexport/modeling.py": CAPTURING.format(name="ReexportImpl"),
    "vllm/models/__init__.py": "",
    "vllm/models/dispatch/__init__.py": '''
        from vllm.platforms import current_platform

        if current_platform.is_rocm():
            from .amd.model import DispatchForCausalLM
        elif current_platform.is_cpu():
            from vllm.model_executor.models.old_dispatch import DispatchForCausalLM
        else:
            from .nvidia.model import DispatchForCausalLM
    ''',
    "vllm/models/dispatch/nvidia/model.py": CAPTURING.format(name="DispatchForCausalLM"),
    "vllm/models/dispatch/amd/model.py": PLAIN.format(name="DispatchForCausalLM"),
    "vllm/model_executor/models/old_dispatch.py": CAPTURING.format(name="DispatchForCausalLM"),
    "vllm/models/typed/__init__.py": '''
        from typing import TYPE_CHECKING
        from vllm.platforms import current_platform

        if TYPE_CHECKING or current_platform.is_cuda():
            from .nvidia.model import TypedForCausalLM
        else:
            from vllm.model_executor.models.typed_old import TypedForCausalLM
    ''',
    "vllm/models/typed/nvidia/model.py": CAPTURING.format(name="TypedForCausalLM"),
    "vllm/model_executor/models/typed_old.py": PLAIN.format(name="TypedForCausalLM"),
    "vllm/model_executor/models/guarded.py": '''
        try:
            from .guarded_fast import GuardedForCausalLM
        except ImportError:
            from .guarded_slow import GuardedForCausalLM
    ''',
    "vllm/model_executor/models/guarded_fast.py": CAPTURING.format(name="GuardedForCausalLM"),
    "vllm/model_executor/models/guarded_slow.py": PLAIN.format(name="GuardedForCausalLM"),
    "vllm/model_executor/models/star.py": "from .star_impl import *\n",
    "vllm/model_executor/models/star_impl.py": CAPTURING.format(name="StarForCausalLM"),
    "vllm/models/onlygpu/__init__.py": '''
        from typing import TYPE_CHECKING
        from vllm.platforms import current_platform

        if TYPE_CHECKING:
            from .nvidia import OnlyGpuForCausalLM
        elif current_platform.is_cuda():
            from .nvidia import OnlyGpuForCausalLM
        elif current_platform.is_rocm():
            from .amd import OnlyGpuForCausalLM
        else:
            raise NotImplementedError("only NVIDIA and AMD GPUs")
    ''',
    "vllm/models/onlygpu/nvidia.py": CAPTURING.format(name="OnlyGpuForCausalLM"),
    "vllm/models/onlygpu/amd.py": CAPTURING.format(name="OnlyGpuForCausalLM"),
    "vllm/model_executor/models/hinted.py": '''
        from typing import TYPE_CHECKING

        from .hinted_impl import HintedImpl

        if TYPE_CHECKING:
            class HintedForCausalLM:
                pass
        else:
            HintedForCausalLM = HintedImpl
    ''',
    "vllm/model_executor/models/hinted_impl.py": CAPTURING.format(name="HintedImpl"),
}


def _registry() -> str:
    rows = "".join(f"    {arch!r}: ({module!r}, {cls!r}),\n" for arch, (module, cls) in ROWS.items())
    return f"_TEXT_GENERATION_MODELS = {{\n{rows}}}\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> capture.ReleaseScan:
    root = tmp_path_factory.mktemp("wheel") / "vllm-0.34.0"
    for rel, text in {**FILES, "vllm/model_executor/models/registry.py": _registry()}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return capture.scan_release("vllm", root)


@pytest.mark.parametrize("arch", sorted(ROWS))
def test_the_class_a_cuda_user_gets_is_judged(release: capture.ReleaseScan, arch: str) -> None:
    assert arch in release.registered
    assert arch in release.capturing, f"{arch}: judged as lacking the capture interface"


@pytest.mark.parametrize(("arch", "where"), [
    ("ReexportForCausalLM", "vllm/model_executor/models/reexport/modeling.py"),
    ("DispatchForCausalLM", "vllm/models/dispatch/nvidia/model.py"),
    ("TypedForCausalLM", "vllm/models/typed/nvidia/model.py"),
    ("GuardedForCausalLM", "vllm/model_executor/models/guarded_fast.py"),
    ("StarForCausalLM", "vllm/model_executor/models/star_impl.py"),
    ("OnlyGpuForCausalLM", "vllm/models/onlygpu/nvidia.py"),
    ("HintedForCausalLM", "vllm/model_executor/models/hinted_impl.py"),
])
def test_the_judged_class_is_read_where_python_finds_it(release: capture.ReleaseScan, arch: str, where: str) -> None:
    assert release.where(release.capturing[arch]) == where


def test_other_platforms_get_a_note_where_their_class_differs(release: capture.ReleaseScan) -> None:
    assert release.platforms["DispatchForCausalLM"] == (
        "on ROCm: DispatchForCausalLM of vllm/models/dispatch/amd/model.py (lacks the EAGLE-3 capture interface); "
        "on CPU: DispatchForCausalLM of vllm/model_executor/models/old_dispatch.py (captures)")
    assert release.platforms["TypedForCausalLM"].startswith("on ROCm, XPU, CPU: TypedForCausalLM of "
                                                            "vllm/model_executor/models/typed_old.py (lacks")
    assert release.platforms["OnlyGpuForCausalLM"] == (
        "on ROCm: OnlyGpuForCausalLM of vllm/models/onlygpu/amd.py (captures); "
        "on XPU, CPU: not importable (its module raises)")
    # one class on every platform: no note
    assert not {"ReexportForCausalLM", "GuardedForCausalLM", "StarForCausalLM", "HintedForCausalLM"} & set(
        release.platforms)


def test_reach_reads_the_loop_of_the_class_capture_resolved(release: capture.ReleaseScan) -> None:
    loops = reach.scan("vllm", release.release.wheel)
    assert loops["DispatchForCausalLM"].where == "model.py:DispatchForCausalLMModel.forward"
    assert loops["DispatchForCausalLM"].zero == "unreached" and loops["DispatchForCausalLM"].last


def test_the_draft_scan_shares_the_reading(release: capture.ReleaseScan) -> None:
    drafts = draft_classes.DraftRelease("vllm", release.release.wheel)
    found = drafts.resolve("vllm.models.typed", "TypedForCausalLM")
    assert found is not None and found[0] == "vllm.models.typed.nvidia.model"
    assert drafts.resolve("hinted", "HintedForCausalLM") == drafts.resolve("hinted_impl", "HintedImpl")


# ---------------------------------------------------------------- the real generated tables
def _captures_in(arch: str, release: str) -> bool:
    runs = capture_table.VLLM_SPANS.get(arch, ())
    return any(Version(a) <= Version(release) <= Version(b) for a, b in runs)


@pytest.mark.parametrize(("arch", "release"), [
    ("DeepseekV4ForCausalLM", "0.33.0"),   # vllm/models/deepseek_v4/__init__.py: else -> nvidia/model.py
    ("DeepseekV4ForCausalLM", "0.34.0"),
    ("Qwen3_5ForCausalLM", "0.34.0"),      # vllm/models/qwen3_5/__init__.py: TYPE_CHECKING or is_cuda()
    ("Qwen3_5MoeForCausalLM", "0.34.0"),
    ("Qwen3_5ForConditionalGeneration", "0.34.0"),
    ("Qwen3_5MoeForConditionalGeneration", "0.34.0"),
    ("MistralLarge4ForCausalLM", "0.34.0"),  # vllm/models/mistral/mistral_large4/__init__.py: elif is_cuda()
])
def test_the_classes_behind_platform_packages_capture(arch: str, release: str) -> None:
    assert _captures_in(arch, release)
    assert arch not in capture_table.VLLM_NEVER
    assert capture_support("vllm", Version(release), arch).support == CAPTURES


def test_the_table_notes_what_other_platforms_build() -> None:
    notes = dict((b, note) for _, b, note in capture_table.VLLM_PLATFORMS["MistralLarge4ForCausalLM"])
    assert "on XPU, CPU: not importable (its module raises)" in notes["0.34.0"]
    qwen = capture_table.VLLM_PLATFORMS["Qwen3_5ForCausalLM"][-1]
    assert qwen[1] == "0.34.0" and "vllm/model_executor/models/qwen3_5.py" in qwen[2]


def test_reach_reads_the_nvidia_loop_of_deepseek_v4() -> None:
    """vllm 0.34.0 vllm/models/deepseek_v4/nvidia/model.py DeepseekV4Model.forward: ``if idx + 1 in
    self.aux_hidden_state_layers`` after the layer call: index 0 (the embeddings) is never captured."""
    entries = reach_table.VLLM_REACH["DeepseekV4ForCausalLM"]
    assert entries[-1][1:4] == ("unreached", True, "global")


def test_a_row_says_what_other_platforms_build() -> None:
    said = capture_support("vllm", Version("0.34.0"), "MistralLarge4ForCausalLM")
    assert said.support == CAPTURES
    assert "(the CUDA class; on ROCm: MistralLarge4ForCausalLM of vllm/models/mistral/mistral_large4/amd/model.py " \
           "(captures); on XPU, CPU: not importable (its module raises))" in said.source
