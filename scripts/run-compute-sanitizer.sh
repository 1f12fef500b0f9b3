#!/usr/bin/env bash
# Runs every GPU check configuration of every kernel family under
# compute-sanitizer's memcheck, racecheck, synccheck and initcheck (on the GPU
# machine, with the artifacts of scripts/build-gpu-artifacts.sh ... check).
# The families are bench/gpu_configs.py FAMILIES, so a new family is covered
# as soon as it is listed there (a family without check configurations fails).
# Only attnfuse's kernels (names attn_fwd*) are checked, not PyTorch's, and
# the outputs get no guard bands (memcheck sees stray writes itself).
#
# Usage: scripts/run-compute-sanitizer.sh [ARTIFACTS (default .gpu-artifacts)]
# (TOOLS="memcheck racecheck" runs only those tools, e.g. to split the run.)
# Logs: $OUT/compute-sanitizer/TOOL-FAMILY.log (OUT default: ./sanitizer-out).
# Prints one line per tool and family (errors, configurations checked) and a
# total; exit status 1 if any tool reports an error or a check fails.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ART="${1:-$ROOT/.gpu-artifacts}"
SAN="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}"
LOGS="${OUT:-$PWD/sanitizer-out}/compute-sanitizer"
mkdir -p "$LOGS"
FAMILIES=$(python3 -c "import sys; sys.path.insert(0, '$ROOT/bench'); \
import gpu_configs; print(' '.join(gpu_configs.FAMILIES))")
status=0; total_errors=0; runs=0
for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  for fam in $FAMILIES; do
    log="$LOGS/$tool-$fam.log"
    start=$(date +%s)
    "$SAN" --tool "$tool" "${extra[@]}" --kernel-name kns=attn_fwd \
      --print-limit 100 python3 "$ROOT/test/GPU/check_gpu.py" "$ART" \
      --family "$fam" --guard 0 > "$log" 2>&1
    rc=$?
    errors=$(grep -oE "ERROR SUMMARY: [0-9]+" "$log" | tail -1 | grep -oE "[0-9]+$")
    hazards=$(grep -oE "RACECHECK SUMMARY: [0-9]+ hazards" "$log" | grep -oE "[0-9]+" | head -1)
    configs=$(grep -oE "^[0-9]+/[0-9]+ configurations pass" "$log" | tail -1)
    checked=${configs#*/}; checked=${checked%% *}
    [ -n "$errors" ] || errors="?"
    ok=PASS
    if [ "$rc" -ne 0 ] || [ "$errors" != 0 ] || [ "${hazards:-0}" != 0 ] ||
       [ -z "$configs" ] || [ "${checked:-0}" = 0 ]; then ok=FAIL; status=1; fi
    [ "$errors" = "?" ] || total_errors=$((total_errors + errors))
    runs=$((runs + 1))
    echo "$ok $tool $fam: $errors errors${hazards:+, $hazards hazards}, ${configs:-no configurations run} ($(( $(date +%s) - start )) s) -> $log"
  done
done
echo "compute-sanitizer: $runs runs (families: $FAMILIES; tools: ${TOOLS:-all 4}), $total_errors errors; status $status"
exit $status
