#!/usr/bin/env bash
# FlashAttention's shape sweep on the GPU machine: every configuration of
# role sweep (bench/gpu_configs.py SWEEP: (Nq, Nk) from (113, 203) to
# (2048, 2048), 11 head dims, none/causal/window, MHA/GQA/MQA, dropout 0/0.17,
# softcap 0/50, pairwise per kernel family) against fp64, inside NaN guard
# bands, and bitwise equal over 2 reruns (test/GPU/check_gpu.py).
# Compile the artifacts first, here: scripts/build-gpu-artifacts.sh .gpu-sweep sm_90a sweep
# Usage: scripts/run-gpu-sweep.sh [ARTIFACTS (default .gpu-sweep)]
# Prints pass/fail/unsupported per family; log and JSON in $OUT (default .).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ART="${1:-$ROOT/.gpu-sweep}"
LOGS="${OUT:-$PWD}"
mkdir -p "$LOGS"
python3 "$ROOT/test/GPU/check_gpu.py" "$ART" --role sweep --reruns 2 \
  --json "$LOGS/gpu-sweep.json" 2>&1 | tee "$LOGS/gpu-sweep.log"
exit "${PIPESTATUS[0]}"
