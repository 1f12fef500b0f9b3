#!/usr/bin/env bash
# Builds the attnfuse wheel for machines without LLVM/MLIR: the bundle's
# libAttnFuseCAPI.so (scripts/build-bundle.sh: MLIR/LLVM linked in
# statically, only glibc, zlib and zstd dynamic) with the Python package.
# Usage: scripts/build-wheel.sh [out-dir]  (default dist/)
#   pip install dist/attnfuse-*-py3-none-linux_x86_64.whl
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/dist}"
"$ROOT/scripts/build-bundle.sh" >/dev/null
VERSION="0.1.0+g$(git -C "$ROOT" rev-parse --short=9 HEAD 2>/dev/null || echo local)"
python3 "$ROOT/scripts/make_wheel.py" "$ROOT/bundle/python/attnfuse" \
  "$ROOT/bundle/python/attnfuse/libAttnFuseCAPI.so" "$OUT" --version "$VERSION"
