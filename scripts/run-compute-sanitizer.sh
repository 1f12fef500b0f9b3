#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck, synccheck and initcheck over every
# kernel family of bench/gpu_configs.py FAMILIES, on the GPU machine: the
# small configurations of role sanitize, each launched once per tool in a
# process of its own (test/GPU/launch_kernel.py: ctypes + libcuda, no
# PyTorch), several at a time, each bounded in time; initcheck reports
# classified by address (test/GPU/sanitize.py says how).
# Compile the artifacts first, here:
#   scripts/build-gpu-artifacts.sh .gpu-sanitize sm_90a sanitize
#
# Usage: scripts/run-compute-sanitizer.sh [ARTIFACTS (default .gpu-sanitize)]
#          [sanitize.py options: --jobs N (8), --timeout S per launch (90),
#           --budget S (no launch starts after S s of wall time),
#           --tools memcheck,racecheck,..., --family F,
#           --racecheck-report hazard|analysis|all (all), --strict,
#           --tool-args 'racecheck:--racecheck-memcpy-async no']
# (TOOLS="memcheck racecheck" also selects tools.) Writes summary.txt,
# summary.json and logs.tar.xz to $OUT (default ./sanitizer-out); prints one
# line per tool and family and a total; exit status 1 if any run fails.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ART="${1:-$ROOT/.gpu-sanitize}"
[ $# -gt 0 ] && shift
extra=()
[ -n "${TOOLS:-}" ] && extra=(--tools "$(echo $TOOLS | tr ' ' ',')")
exec python3 "$ROOT/test/GPU/sanitize.py" "$ART" \
  --out "${OUT:-$PWD/sanitizer-out}" "${extra[@]}" "$@"
