#!/usr/bin/env bash
# Runs test/Integration/GPU on a machine with a GPU but without lit/FileCheck
# (the GPU machine): executes each test's `// RUN: attnfuse-run ...` lines with
# %s and %S substituted, using the attnfuse-run of BIN (default: bundle/bin).
# Prints PASS/FAIL per line and exits non-zero on any failure.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:-$ROOT/bundle/bin}"
fail=0
for t in "$ROOT"/test/Integration/GPU/*.mlir; do
  dir="$(dirname "$t")"
  while IFS= read -r line; do
    cmd="${line#*RUN: }"
    cmd="${cmd//%s/$t}"; cmd="${cmd//%S/$dir}"
    cmd="$BIN/$cmd"
    if out=$(eval "$cmd" 2>&1); then s=PASS; else s=FAIL; fail=1; fi
    echo "$s $(basename "$t"): ${out##*$'\n'}"
  done < <(grep -E "^// RUN: attnfuse-run" "$t")
done
exit $fail
