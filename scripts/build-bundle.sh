#!/usr/bin/env bash
# Builds the self-contained bundle of attnfuse for a machine without LLVM/MLIR
# (the GPU machine): attnfuse-opt, attnfuse-run and libAttnFuseCAPI.so linked
# statically against MLIR/LLVM (only glibc >= 2.36, zlib and zstd stay
# dynamic), plus the
# Python package. Output: bundle/ (stripped) and bundle.tar.xz.
# Usage: scripts/build-bundle.sh [out-dir]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/bundle}"
BUILD="${BUNDLE_BUILD_DIR:-$ROOT/build-bundle}"
"$ROOT/scripts/install-deps.sh"
export CCACHE_BASEDIR="$ROOT"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/attnfuse-ccache}"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DLLVM_USE_LINKER=lld -DATTNFUSE_LINK_MLIR_DYLIB=OFF \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
fi
cmake --build "$BUILD" --target attnfuse-opt attnfuse-run AttnFuseCAPI
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/python/attnfuse"
cp "$BUILD/bin/attnfuse-opt" "$BUILD/bin/attnfuse-run" "$OUT/bin/"
cp -L "$BUILD/lib/libAttnFuseCAPI.so" "$OUT/python/attnfuse/"
cp "$ROOT"/python-bindings/attnfuse/*.py "$OUT/python/attnfuse/"
cp "$ROOT/examples/attention.mlir" "$OUT/"
strip "$OUT/bin/"* "$OUT/python/attnfuse/libAttnFuseCAPI.so"
# What is left dynamic must be part of any Debian/Ubuntu base system, or
# the bundle's own library (attnfuse-run is a stub over it).
for f in "$OUT/bin/"* "$OUT/python/attnfuse/libAttnFuseCAPI.so"; do
  if ldd "$f" | grep -vE "linux-vdso|ld-linux|lib(c|m|dl|rt|pthread|z|zstd)\.so" \
      | grep -vE "libAttnFuseCAPI\.so => $OUT/bin/\.\./python/attnfuse/" \
      | grep -q "=>"; then
    echo "error: $f depends on more than glibc:" >&2; ldd "$f" >&2; exit 1
  fi
done
tar -C "$(dirname "$OUT")" -cJf "$OUT.tar.xz" "$(basename "$OUT")"
du -sh "$OUT" "$OUT.tar.xz"
