#!/usr/bin/env bash
# Builds attnfuse with AddressSanitizer + UndefinedBehaviorSanitizer
# (LLVM's LLVM_USE_SANITIZER="Address;Undefined": -fsanitize=address,undefined,
# UBSan without vptr/function, no recovery) into BUILD (default build-asan),
# then runs the lit suite and a fuzz batch (test/fuzz/fuzz.py) with it.
# Debian's libMLIR.so/libLLVM.so are not instrumented: what they do is not
# checked, what attnfuse's code does is.
#
# Usage: scripts/build-sanitized.sh [BUILD] [FUZZ_MINUTES (default 5)]
# Exit status non-zero if the build, a lit test or the fuzz batch fails.
# Tests that load attnfuse into an uninstrumented process (the Python package
# in python3, the mlir-opt plugin) cannot run under ASan and are left out, and
# so is the lit suite's fuzz batch (test/fuzz), which runs afterwards instead.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-asan}"
FUZZ_MINUTES="${2:-5}"
"$ROOT/scripts/install-deps.sh" || exit 1

export CCACHE_BASEDIR="$ROOT"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/attnfuse-ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
PYTHON="${PYTHON:-$(command -v python3)}"
LIT="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/lit"

start=$(date +%s)
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DLLVM_USE_LINKER=lld -DLLVM_USE_SANITIZER="Address;Undefined" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT="$LIT" -DPython3_EXECUTABLE="$PYTHON" || exit 1
fi
cmake --build "$BUILD" || exit 1
cmake --build "$BUILD" --target mlir-doc || exit 1  # test/Docs compares them
built=$(date +%s)

# detect_odr_violation=0: globals that both the instrumented tools and the
# uninstrumented libMLIR.so define (the same LLVM/MLIR symbols) are not
# one-definition-rule bugs of ours. detect_leaks=0: MLIR's global registries
# and the JIT keep memory alive on purpose until exit. allow_user_poisoning=0:
# LLVM's headers poison BumpPtrAllocator slabs in our instrumented code, and
# the uninstrumented libMLIR.so hands that memory out without unpoisoning it
# (false use-after-poison reports in the parser).
export ASAN_OPTIONS="detect_odr_violation=0:detect_leaks=0:allow_user_poisoning=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
status=0
"$PYTHON" "$LIT" -sv "$BUILD/test" --filter-out '(python|Embedding|fuzz)/' \
  2>&1 | tee "$BUILD/lit-asan.log" | grep -E "^(FAIL|UNRESOLVED|XPASS)|Total|Passed|Failed|Excluded|Unsupported" || true
grep -qE "^(FAIL|UNRESOLVED|XPASS):" "$BUILD/lit-asan.log" && status=1
lit_done=$(date +%s)

"$PYTHON" "$ROOT/test/fuzz/fuzz.py" --bin "$BUILD/bin" --minutes "$FUZZ_MINUTES" \
  --seed "${FUZZ_SEED:-0}" --out "$BUILD/fuzz-asan" || status=1
end=$(date +%s)
echo "build-sanitized: build $((built - start)) s, lit $((lit_done - built)) s, fuzz $((end - lit_done)) s; status $status"
exit $status
