#!/usr/bin/env bash
# On the GPU machine: the backward GPU tests (test/Integration/GPU/backward_*.mlir,
# each RUN line, as scripts/run-gpu-tests.sh runs them), compute-sanitizer's
# memcheck and racecheck on one backward test per tensor-core family
# (SANITIZE_FAMILIES, SANITIZE_TOOLS), and, when PKL is
# given, bench/bench_backward.py run PKL. Logs under $OUT (default .).
# Usage: scripts/gpu-backward-check.sh BIN [PKL]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$1"; PKL="${2:-}"; LOG="${OUT:-.}"
pass=0; fail=0
for t in "$ROOT"/test/Integration/GPU/backward_*.mlir; do
  dir="$(dirname "$t")"
  while IFS= read -r line; do
    cmd="${line#*RUN: }"; cmd="${cmd//%s/$t}"; cmd="${cmd//%S/$dir}"
    if out=$(eval "timeout ${TEST_TIMEOUT:-120} $BIN/$cmd" 2>&1); then s=PASS; pass=$((pass+1)); else s=FAIL; fail=$((fail+1)); fi
    echo "$s $(basename "$t") [${line##*--seed=}]: ${out##*$'\n'}"
  done < <(grep -E "^// RUN: attnfuse-run" "$t")
done | tee "$LOG/tests.log" | cut -c1-300
echo "tests: $(grep -c ^PASS "$LOG/tests.log") pass, $(grep -c ^FAIL "$LOG/tests.log") fail"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for family in ${SANITIZE_FAMILIES:-mma_sync wgmma}; do
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    timeout 240 "$CS" --tool "$tool" --error-exitcode 9 "$BIN/attnfuse-run" \
      "$ROOT/test/Integration/GPU/backward_mma_causal_gqa_tails_bf16.mlir" \
      --target=cuda --check=fa --seed=11 --pipeline-options="mma=$family" \
      > "$LOG/sanitizer_${family}_$tool.log" 2>&1
    echo "$family $tool rc=$?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$LOG/sanitizer_${family}_$tool.log" | head -3 | tr '\n' ' ')"
  done
done
if [ -n "$PKL" ]; then
  PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-300}" python3 "$ROOT/bench/bench_backward.py" run "$PKL" 2>&1 | tee "$LOG/bench.log"
fi
