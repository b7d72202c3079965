"""Run SGLang's own EAGLE-3 loading code on a draft, on CPU, and write what really happened.

    python sglang_loader.py --draft DIR --target DIR --out FILE.json

Run it with an interpreter where SGLang is installed (a CPU install: torch +cpu and ``sglang
--no-deps``); it is never imported into the plugin's process. Steps, each SGLang's own code:
``ModelConfig(draft, is_draft_model=True, speculative_algorithm="EAGLE3")`` and ``get_model``
(its ``LlamaForCausalLMEagle3`` / ``Eagle3DeepseekV2ForCausalLM`` and their ``load_weights``),
the same for the target; then what the EAGLE worker does after loading: ``set_embed`` (or
``set_embed_and_head`` when the draft borrows the target's lm_head) with the target's
``get_embed_and_head()``, and reading its ``hot_token_id``; the target's ``set_eagle3_layers_to_capture``
with the ids the model runner reads from the draft config (``eagle_config`` only).

Import placeholders are put in place, and only when the module is missing: ``torchvision``
(PyPI's build is CUDA-only), ``vllm`` (the rotary-embedding module imports
``vllm._custom_ops``) and ``sgl_kernel`` (CUDA kernels that releases before 0.5.10 import at
module level). Every attribute of a placeholder is a class that raises when called, so a
loading path that used one would fail loudly. One exception, :data:`KEEP_OWN`: where SGLang before
0.5.8 would take vLLM's activation and norm layers on a CPU without AMX, it keeps its own.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import sys
import types
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes import harness as common
else:  # run by path in an engine interpreter: the harness next to this file, never another installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness as common  # type: ignore[import-not-found,no-redef]

ENGINE = "sglang"
PLACEHOLDER_ROOTS = ("torchvision", "vllm", "sgl_kernel")


class _StubMeta(type):
    """Attributes of a placeholder: classes that can be named and subclassed, never called."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _StubMeta(f"{cls.__name__}.{name}", (), {})

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"import placeholder {cls.__name__} was called by the loading path")


#: SGLang <= 0.5.7 on a CPU without sgl-kernel or AMX replaces some of its own layers by vLLM's at import
#: (layers/activation.py: ``from vllm.model_executor.layers.activation import GeluAndMul, SiluAndMul``;
#: layers/layernorm.py: ``... layernorm import GemmaRMSNorm, RMSNorm``). The placeholder hands back
#: SGLang's own class of that name, defined above the import in the same module: the one its GPU path builds.
KEEP_OWN = {
    "vllm.model_executor.layers.activation": "sglang.srt.layers.activation",
    "vllm.model_executor.layers.layernorm": "sglang.srt.layers.layernorm",
}


class _PlaceholderModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        own = sys.modules.get(KEEP_OWN.get(self.__name__, ""))
        if own is not None and isinstance(getattr(own, name, None), type):
            return getattr(own, name)
        return _StubMeta(f"{self.__name__}.{name}", (), {})


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _PlaceholderModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


_INSTALLED: list[str] = []


def install_placeholders() -> list[str]:
    """Placeholders for the missing ones of ``PLACEHOLDER_ROOTS``; returns their names.

    transformers decides at import whether torchvision is present. Where its image-processor
    registry needs torchvision to exist at all (transformers < 5.19, SGLang 0.5.11 registers image
    processors at import), the placeholder also gets a distribution record, written to a
    temporary folder put on ``sys.path``; otherwise transformers is imported first and keeps
    seeing no torchvision.
    """
    if _INSTALLED:
        return _INSTALLED
    missing = tuple(r for r in PLACEHOLDER_ROOTS if importlib.util.find_spec(r) is None)
    if not missing:
        return []
    from importlib.metadata import version

    tf_version = tuple(int(p) for p in version("transformers").split(".")[:2] if p.isdigit())
    if "torchvision" in missing and tf_version < (5, 19):
        _torchvision_record()
    else:
        importlib.import_module("transformers.utils.import_utils")
    sys.meta_path.insert(0, _PlaceholderFinder(missing))
    _INSTALLED.extend(missing)
    return _INSTALLED


def _torchvision_record() -> None:
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="eagle3-placeholders-"))
    common.distribution_record(folder, "torchvision", "0.26.0")
    sys.path.append(str(folder))


class _State(common.ProbeState):
    """What the hook around the loader saw; ``active`` while the draft (not the target) loads."""

    def __init__(self) -> None:
        super().__init__()
        self.active = False


_CURRENT: list[_State] = []


def _install_load_hook() -> None:
    """Wrap ``DefaultModelLoader.load_weights_and_postprocess``: sentinel before, audit after."""
    from sglang.srt.model_loader.loader import DefaultModelLoader

    original = DefaultModelLoader.load_weights_and_postprocess
    if getattr(original, "eagle3_probe_hook", False):
        return

    def load(model: Any, weights: Any, target_device: Any) -> Any:
        state = _CURRENT[-1] if _CURRENT else None
        if state is None or not state.active:
            return original(model, weights, target_device)
        return common.audited_load(state, model, lambda: original(model, weights, target_device))

    load.eagle3_probe_hook = True  # type: ignore[attr-defined]
    DefaultModelLoader.load_weights_and_postprocess = staticmethod(load)


def _init_distributed() -> None:
    from sglang.srt.distributed import parallel_state

    if parallel_state.model_parallel_is_initialized():
        return
    port = common.free_port()
    try:
        from sglang.test.layer_ut_utils import init_single_process_dist
    except ImportError:
        parallel_state.init_distributed_environment(
            world_size=1, rank=0, local_rank=0, backend="gloo",
            distributed_init_method=f"tcp://127.0.0.1:{port}",
        )
        parallel_state.initialize_model_parallel(backend="gloo")
    else:
        init_single_process_dist(master_port=port, backend="gloo")


def _global_server_args(notes: list[str]) -> None:
    """Versions whose layers read process-wide server args (0.5.11): set them as SGLang's own tests do."""
    from sglang.srt import server_args

    setter = getattr(server_args, "set_global_server_args_for_scheduler", None)
    if setter is None:
        return
    try:
        server_args.get_global_server_args()
    except ValueError:  # "not set yet": set below
        pass
    except Exception:
        return
    else:
        return
    setter(server_args.ServerArgs(model_path="dummy"))
    notes.append("global server args set to ServerArgs(model_path='dummy'), as SGLang's layer tests do")


def _model_config(path: str, draft: bool) -> Any:
    from sglang.srt.configs.model_config import ModelConfig

    # model_override_args: "{}" as ServerArgs.json_model_override_args gives it (<= 0.4.9 json.loads it unguarded)
    kwargs: dict[str, Any] = {"is_draft_model": draft, "context_length": 256, "model_override_args": "{}"}
    if draft:
        kwargs["speculative_algorithm"] = "EAGLE3"
    try:
        return ModelConfig(path, **kwargs)
    except TypeError:  # versions without the speculative_algorithm argument
        kwargs.pop("speculative_algorithm", None)
        return ModelConfig(path, **kwargs)


def _get_model(model_config: Any) -> Any:
    from sglang.srt.configs.device_config import DeviceConfig
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.model_loader import get_model

    return get_model(model_config=model_config, load_config=LoadConfig(), device_config=DeviceConfig("cpu"))


def _configured_aux(draft_hf_config: Any) -> tuple[bool, list[int] | None]:
    """(use_aux_hidden_state, ids) read as the model runner reads them: from eagle_config only.

    Mirrors spec_aux_hidden_state._resolve_eagle_aux_hidden_state (0.5.23) / ModelRunner (0.5.11):
    ``eagle_config.get("use_aux_hidden_state", True)`` and ``eagle_config["eagle_aux_hidden_state_
    layer_ids"]`` inside a try whose except sets the ids to None.
    """
    use_aux = True
    try:
        eagle_config = getattr(draft_hf_config, "eagle_config", None)
        use_aux = bool(eagle_config.get("use_aux_hidden_state", True))  # type: ignore[union-attr]
        ids = eagle_config["eagle_aux_hidden_state_layer_ids"]  # type: ignore[index]
    except Exception:
        ids = None
    return use_aux, (list(ids) if ids is not None else None)


def probe(draft: str, target: str) -> dict[str, Any]:
    """Everything the schema asks for; never raises for a refusal, only for a probe bug."""
    return load(draft, target)[1]


def load(draft: str, target: str) -> tuple[_State, dict[str, Any]]:
    """The probe's result and its state (``state.draft``: the draft as SGLang built, loaded and shared it)."""
    common.offline_environment()
    result = common.empty_result(ENGINE)
    notes: list[str] = result["notes"]
    if importlib.util.find_spec("sglang") is None:
        raise ModuleNotFoundError("No module named 'sglang' in this interpreter")
    placeholders = install_placeholders()
    if placeholders:
        notes.append(f"import placeholders: {', '.join(placeholders)}")
    import sglang

    result["version"] = str(getattr(sglang, "__version__", None) or _dist_version())
    state = _State()
    common.run_audited(state, draft, result, _install_load_hook, _CURRENT,
                       lambda: _probe(draft, target, state, result))
    return state, result


def _dist_version() -> str | None:
    import importlib.metadata

    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return importlib.metadata.version("sglang")
    return None


def _probe(draft: str, target: str, state: _State, result: dict[str, Any]) -> None:
    notes: list[str] = result["notes"]
    try:
        draft_config = _model_config(draft, draft=True)
    except Exception as exc:
        result.update(stage="config", error=common.error_text(exc))
        return
    with contextlib.suppress(Exception):
        from sglang.srt.model_loader.utils import get_model_architecture

        result["draft_class"] = get_model_architecture(draft_config)[0].__name__
    _init_distributed()
    _global_server_args(notes)
    target_model = None
    try:
        target_model = _get_model(_model_config(target, draft=False))
        state.active = True
        try:
            draft_model = _get_model(draft_config)
        finally:
            state.active = False
        state.stage = "share"
        _share(draft_model, target_model, notes)
    except Exception as exc:
        result.update(stage=state.stage, error=common.error_text(exc))
    else:
        result.update(outcome="loaded", stage=None)
    _fill(result, state, target_model, draft_config)


def _share(draft: Any, target: Any, notes: list[str]) -> None:
    """What the EAGLE worker's init_lm_head does for EAGLE-3 after both models are loaded."""
    embed, head = target.get_embed_and_head()
    with _no_cuda_housekeeping(notes):
        if getattr(draft, "load_lm_head_from_target", False):
            draft.set_embed_and_head(embed, head)
            notes.append("draft_vocab_size null: worker calls set_embed_and_head (lm_head from the target)")
        else:
            draft.set_embed(embed)
    # then the hot token map, read as an attribute by every worker (eagle_worker.py; 0.4.8 through
    # get_hot_token_id()): a draft class that never set it fails the worker's start
    draft.hot_token_id  # noqa: B018 (the attribute access is the check)


@contextlib.contextmanager
def _no_cuda_housekeeping(notes: list[str]) -> Any:
    """set_embed ends with torch.cuda.empty_cache()/synchronize() (0.5.11: unconditionally); on a
    CPU-only torch they raise, so they are no-ops here (as vLLM's CPU runner does for its own)."""
    import torch

    if torch.cuda.is_available():
        yield
        return
    saved = torch.cuda.empty_cache, torch.cuda.synchronize
    torch.cuda.empty_cache = torch.cuda.synchronize = lambda *a, **k: None
    try:
        yield
    finally:
        torch.cuda.empty_cache, torch.cuda.synchronize = saved


def _fill(result: dict[str, Any], state: _State, target: Any, draft_config: Any) -> None:
    notes: list[str] = result["notes"]
    draft = state.draft
    if not common.fill_draft_basics(result, draft, state.report):
        return
    import torch

    inner = getattr(draft, "model", None)
    hot = getattr(draft, "hot_token_id", None)
    if hot is not None:
        hot = hot.detach().cpu().to(torch.long)
        d2t = state.checkpoint.get("d2t")
        if d2t is not None and "d2t" in result["dropped"]:
            result["dropped"].remove("d2t")
            notes.append("d2t -> hot_token_id = d2t + arange (not a parameter)")
        identity = bool((hot == torch.arange(hot.shape[0])).all())
        result["draft_to_target"] = None if identity else [int(t) for t in hot]
    fc = getattr(inner, "fc", None)
    result["fc_input_width"] = int(fc.weight.shape[1]) if fc is not None else None
    result["norms"] = {
        "norm_before_residual": None,
        "norm_before_fc": getattr(inner, "input_norm", None) is not None,
        "norm_output": bool(getattr(inner, "norm_output", False)),
        "fc_norm": getattr(inner, "fc_norm", None) is not None,
    }
    notes.append("norm_before_residual: no such switch in this SGLang (null)")
    if result["outcome"] != "loaded" or target is None:
        return
    t_embed, t_head = target.get_embed_and_head()
    embed = getattr(getattr(inner, "embed_tokens", None), "weight", None)
    head = getattr(getattr(draft, "lm_head", None), "weight", None)
    result["embed_tokens"] = common.shared_flag(embed, t_embed)
    result["lm_head"] = common.shared_flag(head, t_head)
    use_aux, ids = _configured_aux(draft_config.hf_config)
    target_layers = len(target.model.layers)
    if not inspect.signature(target.set_eagle3_layers_to_capture).parameters:
        # <= 0.4.8 model_runner.py: self.model.set_eagle3_layers_to_capture(), no ids and no use_aux read
        notes.append("this release reads no ids from the draft config: set_eagle3_layers_to_capture()")
        target.set_eagle3_layers_to_capture()
        capture, use_aux = [int(i) for i in target.model.layers_to_capture], True
    elif use_aux:
        notes.append(f"ids read from the draft config (eagle_config only): {ids}; use_aux_hidden_state: {use_aux}")
        target.set_eagle3_layers_to_capture(ids)
        capture = [int(i) for i in target.model.layers_to_capture]
    else:
        capture = []
    result["aux_layer_ids"] = capture
    result["captured_inputs_of"] = [i for i in capture if 0 <= i < target_layers]
    _fc_applied(result, draft_config, target, len(result["captured_inputs_of"]), use_aux)


def _fc_applied(result: dict[str, Any], draft_config: Any, target: Any, captured: int, use_aux: bool) -> None:
    """SGLang applies fc only when the width the target sends differs from the draft's hidden size."""
    hidden = int(draft_config.hf_config.hidden_size)
    target_hidden = int(target.config.hidden_size)
    sent = captured * target_hidden if use_aux and captured else target_hidden
    result["fc_applied"] = sent != hidden
    result["notes"].append(f"width the target sends: {sent} (draft hidden {hidden}); fc applied iff they differ")
    width = result["fc_input_width"]
    if result["fc_applied"] and width is not None and width != sent:
        result["notes"].append(f"fc takes {width}, the target sends {sent}: the first draft step would fail")


def main(argv: list[str] | None = None) -> int:
    """The command line of the SGLang loader probe."""
    return common.main(ENGINE, probe, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
