#!/usr/bin/env bash
# The gate of behaviour-preserving changes to the GPU generator: writes, for
# every configuration of bench/gpu_configs.py (check, bench and sweep roles),
# the kernel attributes after convert-attn-to-gpu and the PTX of
# attn-lower-to-nvvm-pipeline (format=isa) into OUT/NAME.txt, or the
# diagnostic into OUT/NAME.err (the compile time in the binary's properties
# masked). Compare two snapshots with `diff -r`.
# Usage: scripts/ptx-snapshot.sh OUT [CHIP]   (ATTNFUSE_OPT: the tool)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$1"
CHIP="${2:-sm_90a}"
export OPT="${ATTNFUSE_OPT:-$ROOT/build/bin/attnfuse-opt}" CHIP OUT ROOT
CONFIGS="$ROOT/bench/gpu_configs.py"
mkdir -p "$OUT"
one() {
  name="$1"
  mlir="$(python3 "$ROOT/bench/gpu_configs.py" mlir "$name")"
  opts="$(python3 "$ROOT/bench/gpu_configs.py" opts "$name")"
  if ! { echo "$mlir" | "$OPT" --convert-attn-to-gpu="$opts" |
           grep -o 'attn\.[a-z_]* = [^,}]*' &&
         echo "$mlir" | "$OPT" --attn-lower-to-nvvm-pipeline="chip=$CHIP format=isa $opts" |
           sed 's/LLVMIRToISATimeInMs = [0-9]*/LLVMIRToISATimeInMs = T/'; } \
      > "$OUT/$name.txt" 2> "$OUT/$name.err"; then
    rm -f "$OUT/$name.txt"; return 0
  fi
  rm -f "$OUT/$name.err"
}
export -f one
python3 "$CONFIGS" list | sort -u | xargs -P "$(nproc)" -I{} bash -c 'one {}'
echo "$(ls "$OUT"/*.txt 2>/dev/null | wc -l) kernels, $(ls "$OUT"/*.err 2>/dev/null | wc -l) diagnostics in $OUT"
