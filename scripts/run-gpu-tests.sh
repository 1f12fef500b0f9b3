#!/usr/bin/env bash
# Runs on a machine with a GPU but without lit/FileCheck (the GPU machine),
# with the attnfuse-run of BIN (default: bundle/bin, from
# scripts/build-bundle.sh).
#
#   scripts/run-gpu-tests.sh [BIN] [FILE...]
#     test/Integration/GPU (or the FILEs given): executes each test's
#     `// RUN: attnfuse-run ...` lines (and its rm, mkdir and cmp lines:
#     bitwise comparisons of dumped outputs) with %s, %S and %t (a
#     temporary folder per file) substituted. Prints
#     PASS/FAIL per line and exits non-zero on any failure. Files run one at
#     a time; in parallel: ls test/Integration/GPU/*.mlir | xargs -P N -n 1
#     scripts/run-gpu-tests.sh BIN
#
#   scripts/run-gpu-tests.sh --torch [PYDIR] [--quick]
#     attnfuse.torch: test/GPU/torch_attention.py, train_gpt.py and
#     ddp_two_processes.py with the Python package of PYDIR (default
#     bundle/python). Exits non-zero on any failure.
#
#   scripts/run-gpu-tests.sh --corpus [BIN] [FILE...]
#     Every corpus file (test/Corpus/*/*.mlir, or the FILEs given) through
#     attnfuse-run --target=cuda --check=fa --int-bound=N (N from
#     test/Corpus/manifest.json, default 2: token ids of the exported models
#     in range; the whole function, glue and all, on the
#     GPU). Prints one line per file and pass/fail/refused counts per source
#     (the corpus folder) and in all; exits non-zero if any file fails,
#     errors, crashes or times out ("refused" is not a failure: a
#     function the GPU path declines with a located error, e.g. an
#     attn.attention whose score_mod uses a value a kernel cannot take, which
#     convert-attn-to-gpu rejects). CORPUS_TIMEOUT (seconds per file, default
#     900) and CORPUS_ARGS (extra attnfuse-run options) tune it.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ "${1:-}" = "--torch" ]; then
  # attnfuse.torch (docs/PyTorch.md) with the package of PYDIR (default:
  # bundle/python): the op's checks, the small GPT against SDPA, DDP with
  # two processes. Extra arguments go to torch_attention.py (--quick).
  shift
  PYDIR="$ROOT/bundle/python"
  if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then PYDIR="$1"; shift; fi
  export PYTHONPATH="$PYDIR${PYTHONPATH:+:$PYTHONPATH}"
  fail=0
  for t in "torch_attention.py $*" train_gpt.py ddp_two_processes.py; do
    if python3 "$ROOT"/test/GPU/$t; then echo "PASS $t"; else
      echo "FAIL $t"; fail=1; fi
  done
  exit $fail
fi

if [ "${1:-}" = "--corpus" ]; then
  shift
  BIN="${1:-$ROOT/bundle/bin}"
  [ $# -gt 0 ] && shift
  files=("$@")
  [ ${#files[@]} -gt 0 ] || files=("$ROOT"/test/Corpus/*/*.mlir)
  timeout_s="${CORPUS_TIMEOUT:-900}"
  declare -A count
  sources=()
  kinds=(pass fail "refused (captures)" "refused (host)" error crash timeout)
  bad=0
  for f in "${files[@]}"; do
    src="$(basename "$(dirname "$f")")"
    [[ " ${sources[*]} " == *" $src "* ]] || sources+=("$src")
    # The file's integer input bound from test/Corpus/manifest.json (2 when
    # it names none), as in the lit tests of the corpus.
    bound=$(python3 - "$f" <<'PY'
import json, os, sys
path = os.path.abspath(sys.argv[1])
corpus = os.path.dirname(os.path.dirname(path))
entry = json.load(open(os.path.join(corpus, "manifest.json")))["files"].get(
    os.path.relpath(path, corpus), {})
print(entry.get("int_bound", 2))
PY
)
    out=$(timeout "$timeout_s" "$BIN/attnfuse-run" "$f" --target=cuda \
      --check=fa --int-bound="$bound" ${CORPUS_ARGS:-} 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
      kind=pass
    elif [ $rc -eq 1 ]; then
      kind=fail
    elif [ $rc -eq 124 ]; then
      kind=timeout
    elif [ $rc -eq 2 ] && grep -q "the score_mod region uses .* from outside it" <<<"$out"; then
      kind="refused (captures)"
    elif [ $rc -eq 2 ] && grep -q "on the GPU: --target=cuda runs functions" <<<"$out"; then
      kind="refused (host)"
    elif [ $rc -eq 2 ]; then
      kind=error
    else
      kind=crash
    fi
    case "$kind" in pass|refused*) ;; *) bad=1 ;; esac
    count["$src/$kind"]=$(( ${count["$src/$kind"]:-0} + 1 ))
    count["all/$kind"]=$(( ${count["all/$kind"]:-0} + 1 ))
    # The verdict line, or the first error line (the last line if none).
    msg=$(grep -m1 -E "^attnfuse-run: @|error:" <<<"$out" || true)
    [ -n "$msg" ] || msg="${out##*$'\n'}"
    echo "$(tr a-z A-Z <<<"${kind%% *}")${kind#"${kind%% *}"} $src/$(basename "$f") (rc=$rc): ${msg:0:400}"
  done
  echo
  for src in "${sources[@]}" all; do
    line="$src:"
    for k in "${kinds[@]}"; do
      line+=" $k=${count["$src/$k"]:-0}"
    done
    echo "$line"
  done
  exit $bad
fi

BIN="${1:-$ROOT/bundle/bin}"
[ $# -gt 0 ] && shift
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$ROOT"/test/Integration/GPU/*.mlir)
fail=0
for t in "${files[@]}"; do
  dir="$(dirname "$t")"
  tmp="$(mktemp -d)"
  while IFS= read -r line; do
    cmd="${line#*RUN: }"
    cmd="${cmd//%s/$t}"; cmd="${cmd//%S/$dir}"; cmd="${cmd//%t/$tmp/t}"
    # attnfuse-run from BIN; rm, mkdir and cmp (a test comparing dumped
    # outputs bitwise) as they are.
    case "$cmd" in attnfuse-run*) cmd="$BIN/$cmd" ;; esac
    if out=$(eval "$cmd" 2>&1); then s=PASS; else s=FAIL; fail=1; fi
    what="${line#*--check=}"
    [ "$what" = "$line" ] && what="${line#*RUN: }"
    echo "$s $(basename "$t") [$what]: ${out##*$'\n'}"
  done < <(grep -E "^// RUN: (attnfuse-run|rm |mkdir |cmp )" "$t")
  rm -rf "$tmp"
done
exit $fail
