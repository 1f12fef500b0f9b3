#!/usr/bin/env bash
# Peak resident memory of one f32 attention (B = H = 1, D = 64) executed on the
# CPU through attnfuse-run, tiled (attnfuse's pipeline) vs naive (the reference
# lowering), for growing N. The tiled column grows linearly, the naive one
# quadratically. Usage: scripts/measure-cpu-memory.sh [N...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="${BUILD_DIR:-$ROOT/build}/bin/attnfuse-run"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
printf "%8s %14s %14s\n" N tiled_MB naive_MB
for N in "${@:-1024 4096 8192 16384}"; do
  T="tensor<1x1x${N}x64xf32>"
  cat > "$TMP/a.mlir" <<MLIR
func.func @f(%q: $T, %k: $T, %v: $T) -> $T {
  %o = attn.attention ins(%q, %k, %v : $T, $T, $T) -> $T
  return %o : $T
}
MLIR
  row=()
  for mode in "" "naive=1"; do
    kb=$(/usr/bin/time -f "%M" "$RUN" "$TMP/a.mlir" --check=none \
           --pipeline-options="$mode" 2>&1 >/dev/null | tail -1)
    row+=("$((kb / 1024))")
  done
  printf "%8s %14s %14s\n" "$N" "${row[0]}" "${row[1]}"
done
