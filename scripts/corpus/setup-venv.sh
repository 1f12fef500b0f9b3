#!/usr/bin/env bash
# Creates (or completes) the Python venv of the corpus generator, from PyPI only.
# Idempotent: a second run installs nothing new.
#
#   scripts/corpus/setup-venv.sh            # venv at <repo>/.venv-corpus (git-ignored)
#   CORPUS_VENV=/path scripts/corpus/setup-venv.sh
#   scripts/corpus/setup-venv.sh --tflite   # the TensorFlow venv of generate_tflite.py,
#                                           # at <repo>/.venv-corpus-tf or $CORPUS_TF_VENV
#   scripts/corpus/setup-venv.sh --jax      # the JAX/Flax + IREE venv of generate_jax.py
#                                           # (and IREE's tools for generate_iree_onnx.py),
#                                           # at <repo>/.venv-corpus-jax or $CORPUS_JAX_VENV
#
# Then: $CORPUS_VENV/bin/python scripts/corpus/generate.py
#       $CORPUS_TF_VENV/bin/python scripts/corpus/generate_tflite.py
#
# torch: PyPI has no CPU-only torch wheel for Linux x86_64 (the CPU builds live on
# another index, which is not used here). The PyPI wheel is a CUDA build; we install it
# with --no-deps and add only the CUDA runtime libraries that libtorch links at load
# time (requirements-torch.txt). triton and cuda-bindings are left out: exporting
# never needs them. About 4.5 GB on disk, of which ~3.5 GB are CUDA libraries.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${CORPUS_VENV:-$repo/.venv-corpus}"
python="${PYTHON:-python3}"

# A venv at $1 unless one is there already.
ensure_venv() {
  [ -x "$1/bin/python" ] || "$python" -m venv "$1"
}

# One of the extra venvs: at $1, the requirements $2 (in this folder), checked
# by importing with the Python code $3 and by the first $5 lines of
# `$1/bin/$4 --version` (the IREE tool it brings).
extra_venv() {
  local venv="$1" requirements="$2" check="$3" tool="$4" lines="$5"
  ensure_venv "$venv"
  "$venv/bin/python" -m pip --disable-pip-version-check install -q -r "$here/$requirements"
  "$venv/bin/python" -c "$check"
  "$venv/bin/$tool" --version | head -"$lines"
}

if [ "${1:-}" = "--tflite" ]; then
  extra_venv "${CORPUS_TF_VENV:-$repo/.venv-corpus-tf}" requirements-tflite.txt \
    "import tensorflow as tf; tf.mlir.experimental.tflite_to_tosa_bytecode; print('corpus tflite venv ok: tensorflow', tf.__version__)" \
    iree-opt 3
  exit 0
fi

if [ "${1:-}" = "--jax" ]; then
  extra_venv "${CORPUS_JAX_VENV:-$repo/.venv-corpus-jax}" requirements-jax.txt \
    "import jax, flax; print('corpus jax venv ok: jax', jax.__version__, 'flax', flax.__version__)" \
    iree-compile 2
  exit 0
fi

ensure_venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install -q --upgrade "pip>=24"
# torch and the CUDA runtime libraries it links, without their declared dependencies.
"${pip[@]}" install -q --no-deps -r "$here/requirements-torch.txt"
# Everything else, with dependencies (all pinned, so pip only checks them).
"${pip[@]}" install -q -r "$here/requirements.txt"

HF_HUB_OFFLINE=1 "$venv/bin/python" - <<'PY'
import torch, torch_mlir, transformers, onnx
from torch_mlir import fx  # noqa: F401
print("corpus venv ok: torch", torch.__version__, "transformers", transformers.__version__,
      "onnx", onnx.__version__)
PY
