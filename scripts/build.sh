#!/usr/bin/env bash
# Configures and builds attnfuse against Debian's LLVM/MLIR 22 (shared
# libMLIR.so, lld, Ninja, ccache). Usage: scripts/build.sh [build-dir]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
"$ROOT/scripts/install-deps.sh"

export CCACHE_BASEDIR="$ROOT"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/attnfuse-ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
PYTHON="${PYTHON:-$(command -v python3)}"
# lit as a Python script of the same interpreter (not a shell shim).
LIT="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/lit"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT="$LIT" \
    -DPython3_EXECUTABLE="$PYTHON"
fi
cmake --build "$BUILD"
