"""Price ModelOpt's extra first-layer norm: what serving a ModelOpt-trained draft without it costs.

ModelOpt's EAGLE-3 forward runs the first decoder layer's ``input_layernorm`` on the hidden path before
``hidden_norm`` (nvidia-modelopt 0.47.0 torch/speculative/plugins/modeling_eagle.py
EagleModule._eagle3_attention_forward_pre_hook: transformers' LlamaDecoderLayer.forward applies
``input_layernorm`` first, the pre-attention hook then ``hidden_norm``); vLLM, SGLang and the other engines apply
``hidden_norm`` alone. This script measures the cost once, on the bundled demo target:

1. train drafts on the demo target the way ModelOpt's forward runs them (``DraftSpec.hidden_prenorm``:
   ``hidden_norm(input_layernorm(fc output))``), on the outputs of layers [1, 3, 4] (ModelOpt's output-of ids),
   with the demo drafts' recipe (training-time test over 3 steps, ``examples/build_demo_pair.py``);
2. write each in ModelOpt's export layout (``LlamaForCausalLMEagle3``, ModelOpt's ``eagle_config`` switches,
   ``layers.0.*``, ``d2t`` without ``t2d``);
3. run the reference forward both ways on the demo target (``verdict.predict_acceptance``: the deviation
   ``hidden_prenorm``, the draft with and without the extra norm) and print the figures.

The figure it prints is recorded in ``pytest_eagle3/knowledge/costs.py`` (``MODELOPT_EXTRA_NORM``)::

    python scripts/price_modelopt_norm.py [--seeds 3] [--engine vllm==0.33.0] [--out DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.build_demo_pair import (  # noqa: E402
    CONTENT_COUNT,
    DRAFT_BATCH,
    SEED,
    TARGET_CONFIG,
    VOCAB,
    Language,
    load_target_model,
)
from examples.build_trained_drafts import Recipe  # noqa: E402
from examples.build_trained_drafts import train as train_recipe  # noqa: E402
from pytest_eagle3.reference.acceptance import capture_states  # noqa: E402
from pytest_eagle3.reference.draft import ReferenceDraft  # noqa: E402
from pytest_eagle3.testing.synth import SPECULATORS, SynthSpec, draft_config  # noqa: E402

TARGET = ROOT / "examples" / "demo-target"
#: ModelOpt's ids: outputs of layers 1, 3, 4 (HF hidden_states 2, 4, 5: the demo drafts' states).
OUTPUT_OF = (1, 3, 4)
#: The switches ModelOpt's export writes into eagle_config (export/plugins/hf_spec_configs.py).
MODELOPT_EAGLE = {"use_aux_hidden_state": True, "use_input_layernorm_in_first_layer": True,
                  "use_last_layernorm": True, "use_mtp_layernorm": False, "next_layer_regular": True,
                  "parallel_draft_step": 1, "parallel_draft_heads_num_layers": 1}


def train(target: torch.nn.Module, seed: int) -> ReferenceDraft:
    """A draft trained with ModelOpt's forward (the extra norm on the hidden path): the trained drafts' recipe."""
    draft, _ = train_recipe(target, Recipe(SPECULATORS, 1, aux_ids=OUTPUT_OF, hidden_prenorm=True), seed)
    return draft


def save_modelopt(draft: ReferenceDraft, out: Path) -> None:
    """The draft as ModelOpt's export writes it: LlamaForCausalLMEagle3, eagle_config switches, d2t, no t2d."""
    from safetensors.torch import save_file

    spec = SynthSpec(hidden_size=64, intermediate_size=256, num_attention_heads=2, num_key_value_heads=2,
                     head_dim=32, vocab_size=VOCAB, draft_vocab_size=CONTENT_COUNT, aux_layer_ids=OUTPUT_OF,
                     dtype="float32")
    layer = dict(draft_config(spec)["transformer_layer_config"])
    layer["max_position_embeddings"] = TARGET_CONFIG["max_position_embeddings"]
    config = {**layer, "architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": CONTENT_COUNT,
              "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(OUTPUT_OF), **MODELOPT_EAGLE}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tensors = {k: v.detach().contiguous() for k, v in draft.weights.items()}
    save_file(dict(sorted(tensors.items())), str(out / "model.safetensors"), metadata={"format": "pt"})


def shift(draft: ReferenceDraft, target: torch.nn.Module) -> float:
    """Relative L2 between hidden_norm(input_layernorm(x)) and hidden_norm(x) over the fc outputs of a batch."""
    from pytest_eagle3.reference.draft import rms_norm

    ids, _ = Language(SEED).batch(DRAFT_BATCH)
    with torch.no_grad():
        states = capture_states(target, ids)
    w, eps = draft.weights, draft.spec.rms_norm_eps
    x = torch.nn.functional.linear(torch.cat([states[i + 1] for i in OUTPUT_OF], dim=-1), w["fc.weight"])
    both = rms_norm(rms_norm(x, w["layers.0.input_layernorm.weight"], eps), w["layers.0.hidden_norm.weight"], eps)
    alone = rms_norm(x, w["layers.0.hidden_norm.weight"], eps)
    return float((both - alone).norm() / both.norm())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--engine", default="vllm==0.33.0")
    parser.add_argument("--out", type=Path, default=None, help="where to keep the drafts (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    target = load_target_model(TARGET)
    for param in target.parameters():
        param.requires_grad_(False)
    out = args.out or Path(tempfile.mkdtemp(prefix="modelopt-norm-"))
    session, rows = PredictionSession(), []
    for number in range(args.seeds):
        started = time.perf_counter()
        seed = SEED + 40 + number
        draft = train(target, seed)
        folder = out / f"modelopt-seed{seed}"
        save_modelopt(draft, folder)
        norm = draft.weights["layers.0.input_layernorm.weight"]
        prediction = predict_acceptance(folder, TARGET, args.engine, session=session)
        costs = {d.field: d.cost for d in prediction.deviations}
        rows.append({
            "seed": seed, "input_layernorm": [round(float(norm.min()), 3), round(float(norm.max()), 3)],
            "spread": round(float(norm.abs().max() / norm.abs().min()), 3),
            "relative_l2_shift": round(shift(draft, target), 4),
            "as_trained": round(prediction.training.acceptance.mean_acceptance_length, 3),
            "as_served": round(prediction.mean_acceptance_length, 3) if prediction.acceptance else None,
            "cost_hidden_prenorm": round(costs.get("hidden_prenorm", 0.0), 3),
            "seconds": round(time.perf_counter() - started),
        })
        print(json.dumps(rows[-1]), flush=True)
    summary = {"engine": args.engine, "target": "examples/demo-target", "drafts": rows,
               "worst_cost": max(float(str(r["cost_hidden_prenorm"])) for r in rows),
               "largest_spread": max(float(str(r["spread"])) for r in rows)}
    print(json.dumps(summary, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
