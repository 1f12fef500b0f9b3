#!/usr/bin/env bash
# The main job: installs what is missing, builds attnfuse, runs it on the
# bundled example, prints the IR at each stage and checks the numbers of the
# compiled result against the naive lowering.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
EXAMPLE="${1:-$ROOT/examples/attention.mlir}"
"$ROOT/scripts/build.sh" "$BUILD" >/dev/null
BIN="$BUILD/bin"

echo "== input: $EXAMPLE"
cat "$EXAMPLE"
echo
echo "== attnfuse IR (canonicalized)"
"$BIN/attnfuse-opt" "$EXAMPLE" --canonicalize
echo
echo "== numeric check: attnfuse pipeline vs naive lowering, on random inputs (CPU)"
"$BIN/attnfuse-run" "$EXAMPLE"
echo "== numeric check: attnfuse pipeline vs fp64 evaluation (FlashAttention's tolerance rule)"
"$BIN/attnfuse-run" "$EXAMPLE" --check=fa
