#!/usr/bin/env bash
# One round on the GPU machine (no MLIR there), as the device tool runs it
# in the repository's copy, with $OUT for the files that come back. Carry
# bundle-slim.tar.xz (see below) and, for the benchmarks, .gpu-artifacts
# (scripts/build-gpu-artifacts.sh) and FlashAttention-4 (fa4 below).
#
#   scripts/device-round.sh checks     the bundle unpacked into /tmp/af (kept
#                                      for later calls on the warm machine),
#                                      tanh.approx.f32's error, every GPU
#                                      integration test (6 at a time), the
#                                      torch op's tests (--quick)
#   scripts/device-round.sh forward    bench_attention.py over .gpu-artifacts
#                                      (ONLY= the substring of --only,
#                                      default _c1) and --ab _exact
#   scripts/device-round.sh training   bench_training.py, plain and --softcap 30
#   scripts/device-round.sh decode     bench_decode.py --quick
#   scripts/device-round.sh cache      decode over caches: compute-sanitizer
#                                      (memcheck, racecheck) on the key
#                                      lengths and paged forward kernels,
#                                      then bench_decode.py --quick with key
#                                      lengths and pages of 16, 64, 256
#                                      against the contiguous kernels and
#                                      the peers (after checks)
#   scripts/device-round.sh backward   bench_backward.py over
#                                      .gpu-artifacts/backward.pkl (here:
#                                      bench_backward.py compile
#                                      .gpu-artifacts/backward.pkl VARIANT...,
#                                      e.g. wgmma wgmma:dq-column-split=true),
#                                      then the backward GPU tests and
#                                      sanitizers (gpu-backward-check.sh;
#                                      after checks, which unpacks the bundle)
#   scripts/device-round.sh fa4 PART   installs FlashAttention-4 from three
#                                      carried parts, one call each, c1, c2,
#                                      then c3 (which installs)
#
# Here, before: scripts/build-bundle.sh, then the slim bundle (attnfuse-run,
# a stub over the Python package's library, and the package: 16 MB; the
# tracked tree leaves about 38 MB a call):
#   tar -cf - bundle/bin/attnfuse-run bundle/python | xz -T2 > bundle-slim.tar.xz
# and FA4 in three parts of < 34 MB (fa4 split, run here):
#   scripts/device-round.sh fa4-split DIR   (DIR/c1, DIR/c2, DIR/c3)
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
FA4="/tmp/fa4site:/tmp/fa4site/nvidia_cutlass_dsl/dsl_packages"
export PYTHONPATH="$FA4:/tmp/af/bundle/python${PYTHONPATH:+:$PYTHONPATH}"
case "${1:-}" in
checks)
  mkdir -p /tmp/af && tar xJf bundle-slim.tar.xz -C /tmp/af
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
  python3 test/GPU/tanh_approx_error.py | tee "$OUT/tanh.txt"
  ls test/Integration/GPU/*.mlir |
    xargs -P 6 -n 1 scripts/run-gpu-tests.sh /tmp/af/bundle/bin > "$OUT/gpu-tests.txt" 2>&1
  echo "integration: $(grep -c '^PASS' "$OUT/gpu-tests.txt") PASS, $(grep -c '^FAIL' "$OUT/gpu-tests.txt") FAIL"
  grep -A12 '^FAIL' "$OUT/gpu-tests.txt" | head -60
  scripts/run-gpu-tests.sh --torch /tmp/af/bundle/python --quick > "$OUT/torch.txt" 2>&1
  echo "torch rc=$?: $(grep -c '^PASS' "$OUT/torch.txt") PASS, $(grep -c '^FAIL' "$OUT/torch.txt") FAIL"
  grep -A3 "^FAIL" "$OUT/torch.txt" | head -40 ;;
forward)
  python3 bench/bench_attention.py .gpu-artifacts --only "${ONLY:-_c1}" > "$OUT/fwd.txt" 2>&1
  sed -n '/^GPU:/,$p' "$OUT/fwd.txt"
  python3 bench/bench_attention.py .gpu-artifacts --ab _exact > "$OUT/ab.txt" 2>&1
  tail -6 "$OUT/ab.txt" ;;
training)
  python3 bench/bench_training.py --rounds 2 2>&1 | grep -v "Warning\|exe_args" | tee "$OUT/train.txt"
  python3 bench/bench_training.py --softcap 30 --max-head-dim 128 --rounds 2 2>&1 |
    grep -v "Warning\|exe_args" | tee "$OUT/train_softcap.txt" ;;
decode)
  python3 bench/bench_decode.py --quick > "$OUT/decode.txt" 2>&1; tail -14 "$OUT/decode.txt" ;;
cache)
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
  L=test/Integration/GPU/forward_key_lengths_bf16.mlir
  P=test/Integration/GPU/forward_paged_kv_bf16.mlir
  for t in memcheck racecheck; do
    for run in "$L --entry=mtp --seed=41" "$L --entry=decode --seed=45 --pipeline-options=mma=mma_sync" \
               "$P --entry=decode16 --seed=51" "$P --entry=mtp256 --seed=56 --pipeline-options=mma=mma_sync"; do
      timeout 120 $CS --tool $t --error-exitcode 9 /tmp/af/bundle/bin/attnfuse-run $run --target=cuda --check=fa > "$OUT/san.log" 2>&1
      echo "$t rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log") [$run]"
    done
  done
  python3 bench/bench_decode.py --quick --variant lengths --variant pages=16 \
    --variant pages=64 --variant pages=256 > "$OUT/cache.txt" 2>&1
  tail -9 "$OUT/cache.txt" ;;
backward)
  timeout 240 python3 bench/bench_backward.py run .gpu-artifacts/backward.pkl 2>&1 |
    tee "$OUT/backward.txt" | grep -E "^B=|attnfuse|cuDNN"
  mkdir -p "$OUT/checks"
  OUT="$OUT/checks" scripts/gpu-backward-check.sh /tmp/af/bundle/bin 2>&1 |
    grep -E "^FAIL|tests:|rc=" ;;
fa4)
  P="${2:?fa4 needs the part folder}"; mkdir -p /tmp/fa4parts
  for f in "$P"/cu13.p.a[ab]; do [ -f "$f" ] && cp "$f" /tmp/fa4parts/ && echo "parked $(basename "$f")"; done
  if [ -f "$P/cu13.p.ac" ]; then
    W=/tmp/fa4wheels; mkdir -p $W
    cat /tmp/fa4parts/cu13.p.aa /tmp/fa4parts/cu13.p.ab "$P/cu13.p.ac" > "$W/$(cat "$P/cu13.name")"
    cp "$P"/*.whl $W/
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/fa4site $W/*.whl
    python3 -c "from flash_attn.cute import flash_attn_func; print('FA4 installed')"
  fi ;;
fa4-split)
  D="${2:?fa4-split needs an output folder}"; T=$(mktemp -d)
  bash ../shared/tools/fa4-fetch.sh "$T" > /dev/null
  mkdir -p "$D/c1" "$D/c2" "$D/c3"
  cat "$T"/part1/cu13.part.aa "$T"/part2/cu13.part.ab > "$T/cu13.whl"
  split -b 34000000 "$T/cu13.whl" "$T/cu13.p."
  mv "$T/cu13.p.aa" "$D/c1/"; mv "$T/cu13.p.ab" "$D/c2/"; mv "$T/cu13.p.ac" "$D/c3/"
  cp "$T"/part2/*.whl "$T"/part2/cu13.name "$D/c3/"; rm -rf "$T"
  du -sh "$D"/c1 "$D"/c2 "$D"/c3 ;;
*)
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { print }' "$0"; exit 2 ;;
esac
