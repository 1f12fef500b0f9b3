#!/usr/bin/env bash
# The main job: installs what is missing, builds attnfuse, raises the bundled
# unfused attention graph into attn.attention, prints the fused (tiled) IR, and
# checks the numbers of the compiled result against the naive lowering of the
# graph as written and against an fp64 evaluation.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
EXAMPLE="${1:-$ROOT/examples/attention.mlir}"
"$ROOT/scripts/build.sh" "$BUILD" >/dev/null
OPT="$BUILD/bin/attnfuse-opt --mlir-print-op-on-diagnostic=false"
RUN="$BUILD/bin/attnfuse-run"

echo "== 1. raising: $EXAMPLE (an unfused chain) -> attn.attention"
$OPT "$EXAMPLE" --attn-raise-attention=summary -linalg-fuse-elementwise-ops \
  -canonicalize -cse
echo
echo "== 2. the fused kernel: FlashAttention's tiled algorithm (convert-attn-to-scf)"
$OPT "$EXAMPLE" --attn-raise-attention=report=none -linalg-fuse-elementwise-ops \
  -canonicalize \
  --convert-attn-to-scf -canonicalize -cse
echo
echo "== 3. numbers on the CPU: attnfuse pipeline vs the naive lowering of the graph as written"
"$RUN" "$EXAMPLE"
echo "== 4. numbers on the CPU: attnfuse pipeline vs fp64 (FlashAttention's tolerance rule)"
"$RUN" "$EXAMPLE" --check=fa
