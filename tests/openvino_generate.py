"""Run in OpenVINO GenAI's interpreter: export a draft / target with optimum-intel's own exporter, or serve the
converted pair with ``openvino_genai.LLMPipeline`` on CPU and print its speculative-decoding counts as JSON.

``export SRC OUT [--no-trust-remote-code]``: ``optimum-cli export openvino`` (exit code, the last error line, and the
names transformers' load report calls UNEXPECTED / MISSING).
``serve TARGET DRAFT LAYERS PROMPTS_JSON STEPS NEW_TOKENS``: LAYERS ``-`` for none, else ``2,4,5`` written into the
converted draft's rt_info ``hidden_layers_list`` (the only way a Python caller reaches it: a list argument arrives
as int64 and draft_model's property check wants int32).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path


def export(source: str, out: str, trust: bool) -> dict[str, object]:
    command = [str(Path(sys.executable).with_name("optimum-cli")), "export", "openvino", "-m", source, out,
               "--task=text-generation-with-past", "--weight-format", "fp32", *(["--trust-remote-code"] if trust else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    errors = [line for line in done.stderr.splitlines() if "Error" in line]
    report = [line.split("|") for line in (done.stdout + done.stderr).splitlines() if line.count("|") >= 2]
    named = {status: sorted(row[0].strip() for row in report if row[1].strip() == status)
             for status in ("UNEXPECTED", "MISSING")}
    return {"returncode": done.returncode, "error": errors[-1] if errors else None,
            "unexpected": named["UNEXPECTED"], "missing": named["MISSING"]}


def serve(target: str, draft: str, layers: str, prompts: list[list[int]], steps: int, new_tokens: int) -> dict[str, object]:
    import numpy as np
    import openvino as ov
    import openvino_genai as genai

    if layers != "-":
        copy = Path(draft).with_name(Path(draft).name + "-layers-" + layers.replace(",", "-"))
        shutil.copytree(draft, copy, dirs_exist_ok=True)
        model = ov.Core().read_model(Path(draft) / "openvino_model.xml")
        model.set_rt_info(layers.replace(",", " "), ["hidden_layers_list"])
        ov.save_model(model, copy / "openvino_model.xml", compress_to_fp16=False)
        draft = str(copy)
    try:
        pipe = genai.LLMPipeline(target, "CPU", draft_model=genai.draft_model(draft, "CPU"))
    except RuntimeError as exc:
        return {"refused": str(exc), "version": genai.get_version()}
    config = genai.GenerationConfig()
    config.max_new_tokens, config.num_assistant_tokens, config.ignore_eos = new_tokens, steps, True
    runs = []
    for prompt in prompts:
        result = pipe.generate(ov.Tensor(np.array([prompt], dtype=np.int64)), config)
        metrics = result.extended_perf_metrics
        runs.append({"tokens": [int(t) for t in result.tokens[0]], "accepted": metrics.get_num_accepted_tokens(),
                     "drafted": metrics.get_num_draft_tokens(), "generated": metrics.get_num_generated_tokens()})
    return {"refused": None, "version": genai.get_version(), "runs": runs}


if __name__ == "__main__":
    if sys.argv[1] == "export":
        print(json.dumps(export(sys.argv[2], sys.argv[3], "--no-trust-remote-code" not in sys.argv)))
    else:
        _, _, target, draft, layers, prompts, steps, new_tokens = sys.argv
        print(json.dumps(serve(target, draft, layers, json.loads(prompts), int(steps), int(new_tokens))))
