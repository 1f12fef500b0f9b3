#!/usr/bin/env bash
# Runs on a machine without LLVM/MLIR (the GPU machine): unpacks
# bundle.tar.xz (scripts/build-bundle.sh) and checks that its tools and its
# Python package work there: attnfuse-run executes the bundled unfused example
# through the attnfuse pipeline and compares it with the naive lowering and
# fp64; Python compiles it and runs it on numpy arrays.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"
tar -C "$TMP" -xJf "${1:-$ROOT/bundle.tar.xz}"
B="$TMP/bundle"
echo "== host: $(uname -m), $(ldd --version | head -1), $(python3 --version)"
"$B/bin/attnfuse-run" "$B/attention.mlir"
"$B/bin/attnfuse-run" "$B/attention.mlir" --check=fa
"$B/bin/attnfuse-opt" "$B/attention.mlir" --attn-raise-attention=summary \
  -o /dev/null 2>&1 | tail -1
PYTHONPATH="$B/python" python3 - "$B/attention.mlir" <<'PY'
import sys
import numpy as np
import attnfuse

text = open(sys.argv[1]).read()
r = attnfuse.compile(text)
print("python: compiled,", len(r.ir.splitlines()) if hasattr(r, "ir") else "?", "lines of LLVM dialect IR")
rng = np.random.default_rng(0)
args = [rng.standard_normal(s).astype(np.float32) for s in
        [(2, 8, 128, 64), (2, 2, 128, 64), (2, 2, 128, 64)]]
import ml_dtypes
bf = [a.astype(ml_dtypes.bfloat16) for a in args]
out = attnfuse.run(text, "attention", *bf)
q, k, v = (a.astype(np.float64) for a in bf)
k, v = np.repeat(k, 4, axis=1), np.repeat(v, 4, axis=1)
s = q @ k.transpose(0, 1, 3, 2) / 8.0
s = np.where(np.tril(np.ones((128, 128), bool)), s, -np.inf)
p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
err = np.abs(out.astype(np.float64) - p @ v).max()
print(f"python: run on numpy, max |O - fp64| = {err:.2e}",
      "PASS" if err < 3e-2 else "FAIL")
sys.exit(0 if err < 3e-2 else 1)
PY
