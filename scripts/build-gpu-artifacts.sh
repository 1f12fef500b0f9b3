#!/usr/bin/env bash
# Compiles every configuration of bench/gpu_configs.py with attnfuse-opt
# (convert-attn-to-gpu, then attn-lower-to-nvvm-pipeline with format=isa),
# assembles the PTX with ptxas for the chip, and writes, per configuration,
# NAME.cubin, NAME.ptx, NAME.json (kernel name, grid, block, shared memory,
# argument layout), NAME.ptxas.txt (ptxas -v) and NAME.cost (the
# report-cost remark: FLOPs, bytes, roofline time), plus manifest.json and
# compile-time.txt, into OUT (default .gpu-artifacts). The GPU machine has no
# MLIR: test/GPU/check_gpu.py and bench/bench_attention.py run from these.
# Usage: scripts/build-gpu-artifacts.sh [OUT] [CHIP] [ROLE]
# (ONLY="NAME NAME ...": only those configurations of ROLE.)
# (ROLE: only the configurations of that role, e.g. check; a chip other than
# sm_90a also skips the compile-time measurement. With ROLE sweep a
# configuration whose compile fails with a diagnostic is written as
# NAME.unsupported instead, and only the cubin and JSON are kept, to keep the
# payload small.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/.gpu-artifacts}"
CHIP="${2:-sm_90a}"
ROLE="${3:-}"
OPT="${ATTNFUSE_OPT:-$ROOT/build/bin/attnfuse-opt}"
PTXAS="${PTXAS:-/usr/local/cuda/bin/ptxas}"
CONFIGS="$ROOT/bench/gpu_configs.py"
mkdir -p "$OUT"
python3 "$CONFIGS" manifest > "$OUT/manifest.json"
for name in ${ONLY:-$(python3 "$CONFIGS" list $ROLE)}; do
  d="$OUT/$name"
  python3 "$CONFIGS" mlir "$name" > "$d.mlir"
  opts="$(python3 "$CONFIGS" opts "$name")"
  if ! "$OPT" "$d.mlir" --convert-attn-to-gpu="$opts report-cost=true" \
      -o "$d.stage1.mlir" 2> "$d.err" ||
     ! "$OPT" "$d.mlir" --attn-lower-to-nvvm-pipeline="chip=$CHIP format=isa $opts" \
      -o "$d.final.mlir" 2>> "$d.err"; then
    # A diagnostic (exit 1) marks what the family does not support; a crash
    # is an error whatever the role.
    if [ "$ROLE" = sweep ] && ! grep -q "Stack dump" "$d.err"; then
      mv "$d.err" "$d.unsupported"
      rm -f "$d.stage1.mlir" "$d.final.mlir"
      echo "$name: unsupported: $(grep -m1 'error:' "$d.unsupported" | sed 's/.*error: //')"
      continue
    fi
    cat "$d.err" >&2; exit 1
  fi
  # The kernel's cost report (KernelCost.cpp: FLOPs, HBM bytes, roofline
  # time on the chip), for bench_attention.py's measured / roofline.
  grep -o "cost of .*" "$d.err" > "$d.cost" || true
  rm -f "$d.err"
  python3 "$ROOT/bench/extract_kernels.py" "$d.stage1.mlir" "$d.final.mlir" "$d"
  "$PTXAS" -arch="$CHIP" -O3 -v "$d.ptx" -o "$d.cubin" > "$d.ptxas.txt" 2>&1
  rm -f "$d.stage1.mlir" "$d.final.mlir"
  [ "$ROLE" != sweep ] || rm -f "$d.ptx" "$d.mlir"
  echo "$name: $(grep -o 'Used [0-9]* registers' "$d.ptxas.txt"), $(grep -o '[0-9]* bytes spill stores' "$d.ptxas.txt")"
done
# Compile time of one kernel, attn.attention to cubin in one attnfuse-opt run.
[ -z "$ROLE" ] || exit 0
d="$OUT/bench_d128_n4096_c1"
s=$(date +%s.%N)
"$OPT" "$d.mlir" --attn-lower-to-nvvm-pipeline="chip=$CHIP format=bin" -o /dev/null
e=$(date +%s.%N)
echo "bench_d128_n4096_c1 attn.attention -> cubin (attnfuse-opt, format=bin, $(nproc) cores): $(python3 -c "print(round($e - $s, 3))") s" | tee "$OUT/compile-time.txt"
