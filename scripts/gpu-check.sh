#!/usr/bin/env bash
# One prepared command for a machine with one GPU:  scripts/gpu-check.sh OUT_DIR
#
# Needs torch (CUDA), transformers, pytest, hypothesis, safetensors; no network, no engine.
# 1. installs this checkout without dependencies (pip install --no-deps -e .)
# 2. writes a Llama-3-8B-shaped target (random bf16 weights, ~16 GB) and a matching EAGLE-3 draft
#    into OUT_DIR/models (reused when present; EAGLE3_GPU_MODELS=DIR puts them elsewhere;
#    EAGLE3_GPU_TINY=1 writes tiny shapes instead, to try the script on a machine without a GPU)
# 3. runs `pytest -m gpu --eagle3-device=cuda` on them: the reference acceptance on CUDA, and the live
#    engine contracts, which skip naming the missing engine unless EAGLE3_VLLM_PYTHON /
#    EAGLE3_SGLANG_PYTHON point at interpreters with vLLM / SGLang (then they start real servers)
# 4. the capture path: the target's side written once (vLLM's workers when EAGLE3_VLLM_PYTHON is set, else
#    transformers on CUDA) into OUT_DIR/dump, then the same contracts from the dump and the target's config.json
# 5. writes timings.txt, figures.json, report.json, junit.xml, pytest.txt, capture.txt and pytest-dump.txt into OUT_DIR
# Exit status: pytest's.
set -uo pipefail

OUT=${1:?usage: scripts/gpu-check.sh OUT_DIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
MODELS=${EAGLE3_GPU_MODELS:-$OUT/models}
TIMINGS="$OUT/timings.txt"
: > "$TIMINGS"

step() {  # step NAME COMMAND...: run, append "NAME SECONDS rc=RC" to timings.txt
    local name=$1; shift
    local began=$(date +%s%N)
    "$@"; local rc=$?
    local ms=$(( ($(date +%s%N) - began) / 1000000 ))
    printf '%s %d.%03d s rc=%d\n' "$name" $((ms / 1000)) $((ms % 1000)) "$rc" | tee -a "$TIMINGS" >&2
    return $rc
}

cd "$ROOT" || exit 2
{ nvidia-smi -L || echo "nvidia-smi: not found"; } > "$OUT/gpu.txt" 2>&1
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'devices', torch.cuda.device_count()); print('transformers', transformers.__version__)" >> "$OUT/gpu.txt" 2>&1
step install "$PY" -m pip install --no-deps --no-build-isolation -q -e . || exit 2
step models "$PY" scripts/gpu_models.py "$MODELS" ${EAGLE3_GPU_TINY:+--tiny} > "$OUT/models.json" || exit 2

# a GPU run that finds no GPU fails instead of passing on skips (the CPU rehearsal, EAGLE3_GPU_TINY=1, skips them)
REQUIRE_GPU=--eagle3-require=gpu
[ -n "${EAGLE3_GPU_TINY:-}" ] && REQUIRE_GPU=--eagle3-require=
step pytest "$PY" -m pytest -m gpu -p no:cacheprovider -rs --durations=0 $REQUIRE_GPU \
    --eagle3-ckpt="$MODELS/draft" --eagle3-target="$MODELS/target" --eagle3-device=cuda \
    --eagle3-min-acceptance=1.0 --eagle3-report="$OUT/report.json" --junitxml="$OUT/junit.xml" \
    2>&1 | tee "$OUT/pytest.txt"
rc=${PIPESTATUS[0]}

rm -rf "$OUT/dump"
if [ -n "${EAGLE3_VLLM_PYTHON:-}" ]; then
    step capture "$PY" -m pytest_eagle3 capture "$MODELS/target" "$OUT/dump" --engine vllm \
        --vllm-python "$EAGLE3_VLLM_PYTHON" --engine-args "--max-model-len 4096" > "$OUT/capture.txt" 2>&1
else
    step capture "$PY" -m pytest_eagle3 capture "$MODELS/target" "$OUT/dump" --device cuda > "$OUT/capture.txt" 2>&1
fi
step pytest-dump "$PY" -m pytest -m gpu -p no:cacheprovider -rs \
    --eagle3-ckpt="$MODELS/draft" --eagle3-target="$MODELS/target/config.json" --eagle3-hidden-states="$OUT/dump" \
    --eagle3-device=cuda --eagle3-min-acceptance=1.0 > "$OUT/pytest-dump.txt" 2>&1

"$PY" - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
report = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else {}
figures = []
for ckpt in report.get("checkpoints", []):
    for engine in ckpt["engines"]:
        for contract in engine["contracts"]:
            figures.append({"engine": engine["engine"], "contract": contract["id"],
                            "outcome": contract["outcome"], "message": contract["message"]})
    figures.append({"properties": ckpt.get("properties", {})})
(out / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
print(f"figures: {out / 'figures.json'}")
PYEOF
exit "$rc"
