#!/usr/bin/env bash
# The GPU check of issue 32 in one prepared command: benchmarks/bench_gpu_streaming.py --sweep on the
# full-size wan2.2-ti2v-5b model at 480x832, 200 frames per variant, one table (docs/gpu_and_distributed.md).
#
# For a session lent a GPU machine through the device tool (one H200; the image's python3 holds a CUDA
# torch, accelerate, opencv and torchmetrics but no diffusers):
#   here, once:   bash scripts/gpu_check.sh --fetch
#                 (the pinned wheels the image lacks -> outputs/gpu_wheels, ~6.4 MB; outputs/ is git-ignored)
#   there:        run(command="bash scripts/gpu_check.sh", carry=["outputs/gpu_wheels"], timeout_s=600)
# The project's .venv cannot travel (a CPU torch for Python 3.11, gigabytes); nothing else is installed.
#
# Duration, estimated (never run yet): imports and a random 5 B DiT built on the GPU in bf16 ~0.5 min;
# each variant 3 warm-up steps + 50 timed steps of 4 frames, ~10-30 s (the math-kernel variant more);
# the teacher's 81-frame clip at 50 UniPC steps ~0.5 min; the two compiling variants ~1-2 min of
# compiling. The sweep starts no variant after 330 s (--budget-s) and the whole run is cut at 480 s, so
# it ends inside 8.5 minutes of a 10-minute call; what was measured by then is in $OUT.
# Writes to $OUT (the device tool's folder that comes back) or outputs/gpu_check: environment.txt,
# gpu_streaming.txt (the printed tables) and gpu_streaming.json.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
WHEELS=outputs/gpu_wheels
MISSING="diffusers importlib_metadata"  # at the versions requirements/constraints.txt pins

if [ "${1:-}" = "--fetch" ]; then
    pins=$(for name in $MISSING; do grep -i "^${name}==" requirements/constraints.txt; done)
    mkdir -p "$WHEELS"
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$WHEELS" $pins
    ls -l "$WHEELS"
    exit 0
fi

PY=${PY:-python3}
OUT=${OUT:-outputs/gpu_check}
mkdir -p "$OUT"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gpu_check_site \
        "$WHEELS"/*.whl
    export PYTHONPATH=/tmp/gpu_check_site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
    "$PY" -c 'import torch, diffusers; print("torch", torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available(), "diffusers", diffusers.__version__)'
} 2>&1 | tee "$OUT/environment.txt"
timeout 480 "$PY" benchmarks/bench_gpu_streaming.py --config wan2.2-ti2v-5b --device cuda --sweep --frames 200 \
    --warmup 3 --budget-s 330 --reanchor-every 81 --teacher-frames 81 --teacher-steps 50 \
    --json "$OUT/gpu_streaming.json" 2>&1 | tee "$OUT/gpu_streaming.txt"
