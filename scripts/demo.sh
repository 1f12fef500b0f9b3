#!/usr/bin/env bash
# The main job: installs what is missing, builds attnfuse, raises the bundled
# unfused attention graph into attn.attention, prints the fused (tiled) IR, and
# checks the numbers of the compiled result against the naive lowering of the
# graph as written and against an fp64 evaluation; then compiles the CUDA
# kernel (with the CUDA toolkit) and checks it on the GPU (with a GPU).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
EXAMPLE="${1:-$ROOT/examples/attention.mlir}"
# The build's progress goes to stderr (ninja's [n/N] lines; a first build on
# a fresh machine takes many minutes), the demo's own output to stdout.
echo "== 0. build: scripts/build.sh (installs what is missing, then builds; progress on stderr)"
"$ROOT/scripts/build.sh" "$BUILD" >&2
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

# The CUDA kernel, where the toolkit (ptxas) is present, and its numbers where
# a GPU is.
if [ -x /usr/local/cuda/bin/ptxas ] || command -v ptxas >/dev/null; then
  echo "== 5. the fused CUDA kernel (attn-lower-to-nvvm-pipeline, sm_90a cubin)"
  PYTHONPATH="$BUILD/python_packages" python3 - "$EXAMPLE" <<'PY'
import sys
import attnfuse
for kernel in attnfuse.compile(open(sys.argv[1]).read(), target="cuda").kernels:
    print(kernel)
PY
  if nvidia-smi -L >/dev/null 2>&1; then
    echo "== 6. numbers on the GPU: the fused kernel vs fp64"
    "$RUN" "$EXAMPLE" --target=cuda --check=fa
  fi
else
  echo "== (no CUDA toolkit: the GPU steps are skipped)"
fi
