"""``capture`` with the transformers engine: the local target run here, its side written as a dump.

The engine-side capture (vLLM workers) lives in :mod:`pytest_eagle3.live.capture`; both write
:mod:`.dump`'s format. Prompts are run one equal-length group at a time and written as they finish,
so memory holds one group's states.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_eagle3.checkpoint import TargetModel
from pytest_eagle3.producers.formats import default_aux_inputs
from pytest_eagle3.reference.acceptance import TRIED_OFFSETS, iter_target_runs, load_prompts, load_target
from pytest_eagle3.reference.targets.dump import DumpWriter, Manifest, config_hash
from pytest_eagle3.reference.targets.head import read_head
from pytest_eagle3.reference.targets.source import TargetSourceError
from pytest_eagle3.reference.targets.transformers_source import prompt_states

Progress = Callable[[int, int], None]


def default_layers(layers: int, aux_ids: Sequence[int] = ()) -> tuple[int, ...]:
    """The states a capture keeps: around each aux id (the engines' defaults and any given), every reading
    the measurement tries (``acceptance.TRIED_OFFSETS``: input-of, output-of and one beyond each), and the
    last layer's output (the state an engine sends when it bypasses ``fc``)."""
    ids = set(default_aux_inputs(layers)) | set(aux_ids)
    wanted = {i + o for i in ids for o in TRIED_OFFSETS} | {layers}
    return tuple(sorted(k for k in wanted if 0 <= k <= layers))


def parse_layers(text: str | None, layers: int) -> tuple[int, ...]:
    """``--layers``: ``all``, or a comma list of state indices (added to the defaults)."""
    if text is None:
        return default_layers(layers)
    if text.strip().lower() == "all":
        return tuple(range(layers + 1))
    try:
        given = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise TargetSourceError(f"--layers {text!r}: give 'all' or a comma list of integers") from None
    bad = [k for k in given if not 0 <= k <= layers]
    if bad:
        raise TargetSourceError(f"--layers: {bad} outside the target's states 0..{layers} (state k = input of layer k, "
                                f"state {layers} = the last layer's output)")
    return tuple(sorted(set(default_layers(layers)) | set(given)))


def capture_transformers(target_dir: str, out: str | Path, prompts_path: str | None, new_tokens: int,
                         layers_text: str | None = None, device: str = "cpu",
                         progress: Progress | None = None) -> Path:
    """Run the local target on the prompts and write the dump; returns the manifest's path."""
    import transformers

    model = TargetModel.open(target_dir)
    if model.problem is not None:
        raise TargetSourceError(model.problem)
    target = load_target(target_dir, device)
    layers = parse_layers(layers_text, target.layers)
    prompts, source = load_prompts(target, prompts_path)
    writer = DumpWriter(out)
    lengths = [0] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # iter_target_runs' order (stable sort)
    done = 0
    for run in iter_target_runs(target, prompts, new_tokens):
        for _, prompt in prompt_states([run], layers):
            index = order[done]
            writer.add(index, prompt)
            lengths[index] = prompt.prompt_length
            done += 1
            if progress is not None:
                progress(done, len(prompts))
    hidden = int(target.model.config.get_text_config().hidden_size)
    manifest = Manifest(config_hash(model.config), hidden, target.vocab_size, target.layers, layers, new_tokens,
                        tuple(lengths), source, "transformers", transformers.__version__, model.architectures)
    return writer.finish(read_head(_root(target_dir), model, as_float=False), manifest)


def _root(target: str) -> Path:
    path = Path(target)
    return path.parent if path.is_file() else path
